#include "bridge/known_hosts.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "bridge/ssh_wire.h"

namespace kakeya::bridge {
namespace {

constexpr std::size_t kMaxFileBytes = 4 << 20;

// OpenSSH's match_pattern: '*' any run, '?' any one character (iterative, no recursion).
bool glob_match(std::string_view s, std::string_view p) {
  std::size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++si;
      ++pi;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `|1|salt|hmac`: HMAC-SHA1(salt, name) == hmac.
bool hashed_match(std::string_view entry, const std::string& name) {
  const std::string_view body = entry.substr(3);
  const std::size_t bar = body.find('|');
  if (bar == std::string_view::npos) return false;
  auto salt = base64_decode(body.substr(0, bar), "salt");
  auto mac = base64_decode(body.substr(bar + 1), "hash");
  if (!salt.ok() || !mac.ok() || salt->size() != 20 || mac->size() != 20) return false;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()), reinterpret_cast<const unsigned char*>(name.data()),
           name.size(), out, &len) == nullptr) {
    return false;
  }
  return len == mac->size() && std::string_view(reinterpret_cast<const char*>(out), len) == *mac;
}

// Whether the hostnames field names `name` (lower-case): a hashed entry, or a pattern list in
// which some pattern matches and no negated one does.
bool hosts_match(std::string_view hosts, const std::string& name) {
  if (hosts.starts_with("|1|")) return hashed_match(hosts, name);
  bool matched = false;
  std::size_t start = 0;
  while (start <= hosts.size()) {
    const std::size_t comma = std::min(hosts.find(',', start), hosts.size());
    std::string_view pat = hosts.substr(start, comma - start);
    start = comma + 1;
    const bool negated = !pat.empty() && pat[0] == '!';
    if (negated) pat.remove_prefix(1);
    if (pat.empty() || !glob_match(name, lower(pat))) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

std::vector<std::string_view> split_blanks(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::string known_hosts_name(std::string_view host, int port) {
  const std::string h = lower(host);
  if (port <= 0 || port == 22) return h;
  return "[" + h + "]:" + std::to_string(port);
}

HostKeyCheck check_known_host_text(std::string_view text, const std::string& origin, std::string_view host, int port,
                                   const SshPublicKey& key) {
  const std::string name = known_hosts_name(host, port);
  std::string other_keys;   // same type, other key: "line N (SHA256:...)"
  std::string other_types;  // other key types known for the host
  std::string known_at;     // the first line that pins this very key (a @revoked line still wins)
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> f = split_blanks(line);
    if (f.empty() || f[0].starts_with("#")) continue;
    std::string_view marker;
    if (f[0].starts_with("@")) {
      marker = f[0];
      f.erase(f.begin());
    }
    if (f.size() < 3 || marker == "@cert-authority") continue;
    auto k = parse_public_key_text(std::string(f[1]) + " " + std::string(f[2]));
    if (!k.ok()) continue;  // ssh skips lines it cannot read
    const std::string at = origin + ":" + std::to_string(line_no);
    if (marker == "@revoked") {
      if (*k == key) return {HostKeyVerdict::Revoked, "key " + key.fingerprint() + " is marked @revoked at " + at};
      continue;
    }
    if (!marker.empty() || !hosts_match(f[0], name)) continue;
    if (*k == key) {
      if (known_at.empty()) known_at = at;
      continue;
    }
    if (k->type == key.type) {
      other_keys += (other_keys.empty() ? "" : ", ") + at + " (" + k->fingerprint() + ")";
    } else {
      other_types += (other_types.empty() ? "" : ", ") + k->type + " at " + at;
    }
  }
  if (!known_at.empty()) return {HostKeyVerdict::Known, "matches " + known_at};
  const std::string presented = key.type + " " + key.fingerprint();
  if (!other_keys.empty()) {
    return {HostKeyVerdict::Changed, "the server " + name + " presented " + presented + " but " + origin +
                                         " pins other " + key.type + " key(s) for it: " + other_keys};
  }
  std::string detail = "no " + key.type + " key for " + name + " in " + origin + " (the server presented " +
                       presented + ")";
  if (!other_types.empty()) detail += "; it knows other key types for the host: " + other_types;
  return {HostKeyVerdict::Unknown, detail};
}

HostKeyCheck check_known_host(const std::filesystem::path& path, std::string_view host, int port,
                              const SshPublicKey& key) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const std::string presented = key.type + " " + key.fingerprint();
  if (ec) {
    return {HostKeyVerdict::Unknown, "known_hosts file '" + path.string() + "' cannot be read (" + ec.message() +
                                         "); the server " + known_hosts_name(host, port) + " presented " + presented};
  }
  if (size > kMaxFileBytes) {
    return {HostKeyVerdict::Unknown, "known_hosts file '" + path.string() + "' is larger than " +
                                         std::to_string(kMaxFileBytes) + " bytes; not read"};
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return check_known_host_text(ss.str(), path.string(), host, port, key);
}

}  // namespace kakeya::bridge
