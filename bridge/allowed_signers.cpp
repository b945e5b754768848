#include "bridge/allowed_signers.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>

#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;

// Splits on blanks outside double quotes (quotes are kept in the tokens).
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    const std::size_t start = i;
    bool quoted = false;
    while (i < line.size() && (quoted || (line[i] != ' ' && line[i] != '\t'))) {
      if (line[i] == '"') quoted = !quoted;
      ++i;
    }
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

// Splits on `sep` outside double quotes.
std::vector<std::string_view> split_outside_quotes(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '"') quoted = !quoted;
    if (i == s.size() || (s[i] == sep && !quoted)) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string unquote(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return std::string(v);
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view part : split_outside_quotes(s, ',')) {
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

bool looks_like_key_type(std::string_view s) {
  return s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-");
}

std::string format_utc(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::optional<int64_t> parse_signer_time(std::string_view text) {
  bool utc = false;
  if (!text.empty() && (text.back() == 'Z' || text.back() == 'z')) {
    utc = true;
    text.remove_suffix(1);
  }
  if (text.size() != 8 && text.size() != 12 && text.size() != 14) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  auto num = [&](std::size_t pos, std::size_t n) { return std::stoi(std::string(text.substr(pos, n))); };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  if (text.size() >= 12) {
    tm.tm_hour = num(8, 2);
    tm.tm_min = num(10, 2);
  }
  if (text.size() == 14) tm.tm_sec = num(12, 2);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_isdst = -1;
  return static_cast<int64_t>(utc ? timegm(&tm) : std::mktime(&tm));
}

Result<AllowedSigners> AllowedSigners::load_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(errc::kIo, "cannot read allowed-signers file '" + path.string() + "': " + ec.message());
  if (size > kMaxFileBytes) {
    return make_error(errc::kTooLarge, "allowed-signers file '" + path.string() + "' is " + std::to_string(size) +
                                           " bytes, more than " + std::to_string(kMaxFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return make_error(errc::kIo, "cannot read allowed-signers file '" + path.string() + "'");
  return parse(ss.str(), path.string());
}

Result<AllowedSigners> AllowedSigners::parse(std::string_view text, std::string origin) {
  AllowedSigners out;
  out.origin_ = std::move(origin);
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto f = fields(line);
    if (f.empty() || f[0].starts_with("#")) continue;
    const std::string where = out.origin_ + ":" + std::to_string(line_no) + ": ";
    auto fail = [&](const std::string& why) { return make_error(errc::kBadKey, where + why); };
    if (f.size() < 3) return fail("expected 'principals [options] keytype base64-key', got '" + printable(line, 96) + "'");
    AllowedSigner s;
    s.line = line_no;
    s.principals = split_list(f[0]);
    if (s.principals.empty()) return fail("no principal");
    std::size_t key_at = 1;
    bool cert_authority = false;
    if (!looks_like_key_type(f[1])) {
      key_at = 2;
      for (std::string_view opt : split_outside_quotes(f[1], ',')) {
        const std::size_t eq = opt.find('=');
        const std::string_view name = opt.substr(0, eq);
        const std::string value = eq == std::string_view::npos ? std::string() : unquote(opt.substr(eq + 1));
        if (name == "cert-authority" && eq == std::string_view::npos) {
          cert_authority = true;
        } else if (name == "namespaces" && eq != std::string_view::npos) {
          s.namespaces = split_list(value);
        } else if ((name == "valid-after" || name == "valid-before") && eq != std::string_view::npos) {
          const auto t = parse_signer_time(value);
          if (!t) return fail(std::string(name) + " '" + printable(value, 32) + "' is not YYYYMMDD[HHMM[SS]][Z]");
          (name == "valid-after" ? s.valid_after : s.valid_before) = *t;
        } else {
          return fail("unknown option '" + printable(opt, 64) + "'");
        }
      }
    }
    if (f.size() <= key_at + 1) return fail("no key after the options");
    auto key = parse_public_key_text(std::string(f[key_at]) + " " + std::string(f[key_at + 1]));
    if (!key.ok()) return fail(key.error().message);
    s.key = std::move(key).value();
    if (cert_authority) continue;  // certificate signers are not supported: never matches a key
    out.entries_.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<std::string>> AllowedSigners::principals_for(const SshPublicKey& key, std::string_view ns,
                                                                int64_t time) const {
  std::vector<std::string> out;
  std::string refused;  // why lines that hold the key do not allow it
  for (const auto& e : entries_) {
    if (e.key != key) continue;
    const std::string at = origin_ + ":" + std::to_string(e.line);
    if (!e.namespaces.empty() && std::find(e.namespaces.begin(), e.namespaces.end(), ns) == e.namespaces.end()) {
      refused += "; " + at + " allows it only for namespaces other than '" + std::string(ns) + "'";
      continue;
    }
    if (e.valid_after && time < *e.valid_after) {
      refused += "; " + at + " allows it only from " + format_utc(*e.valid_after) + " (signed at " + format_utc(time) + ")";
      continue;
    }
    if (e.valid_before && time > *e.valid_before) {
      refused += "; " + at + " allows it only until " + format_utc(*e.valid_before) + " (signed at " + format_utc(time) + ")";
      continue;
    }
    for (const auto& p : e.principals) {
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  if (!out.empty()) return out;
  if (refused.empty()) {
    return make_error(errc::kUntrustedSigner, "signing key " + key.type + " " + key.fingerprint() + " is not in " + origin_);
  }
  return make_error(errc::kUntrustedSigner,
                    "signing key " + key.type + " " + key.fingerprint() + " is not allowed here" + refused);
}

}  // namespace kakeya::bridge
