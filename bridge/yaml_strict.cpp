#include "bridge/yaml_strict.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "bridge/error_codes.h"
#include "bridge/units.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

std::string format_number(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// How values and keys appear in messages: one line, escaped, bounded (bridge/utf8.h).
constexpr std::size_t kShownBytes = 120;
std::string shown(std::string_view text) { return printable(text, kShownBytes); }

// The 1-based number of the first line of `text` that is not well-formed UTF-8 (0 when all are).
// Lines split at '\n', which is never part of a multi-byte sequence.
std::size_t first_ill_formed_line(std::string_view text) {
  std::size_t line = 1;
  for (std::size_t start = 0; start <= text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (!is_valid_utf8(text.substr(start, end - start))) return line;
    start = end + 1;
  }
  return 0;
}

// -?[0-9]+
bool is_integer_text(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// [-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?
bool is_decimal_text(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  std::size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

}  // namespace

// ---- YamlNode ----

std::string YamlNode::where() const {
  std::string w = *origin_;
  if (mark_.line >= 0) w += ":" + std::to_string(mark_.line + 1) + ":" + std::to_string(mark_.column + 1);
  return w;
}

Error YamlNode::error(ErrorCode code, std::string_view reason) const {
  return make_error(code, where() + ": " + std::string(reason));
}

bool YamlNode::is_null() const { return !present_ || node_.IsNull(); }
bool YamlNode::is_map() const { return present_ && node_.IsMap(); }
bool YamlNode::is_list() const { return present_ && node_.IsSequence(); }
bool YamlNode::is_scalar() const { return present_ && node_.IsScalar(); }
bool YamlNode::plain() const { return is_scalar() && node_.Tag() == "?"; }

std::string YamlNode::describe() const {
  if (is_scalar()) return node_.Tag() == "!" ? "\"" + shown(node_.Scalar()) + "\"" : "`" + shown(node_.Scalar()) + "`";
  if (is_null()) return "nothing (null)";
  return is_map() ? "a mapping" : "a list";
}

Status YamlNode::check_map(std::string_view what, const std::vector<std::string_view>& allowed) const {
  if (!is_map()) return error(errc::kBadType, std::string(what) + " must be a mapping, got " + describe());
  std::set<std::string, std::less<>> seen;
  for (const auto& [key, value] : entries()) {
    if (!key.is_scalar()) return key.error(errc::kBadType, std::string(what) + " has a non-scalar key");
    const std::string& k = key.node_.Scalar();
    if (!seen.insert(k).second) {
      return key.error(errc::kDuplicateKey, "duplicate key `" + shown(k) + "` in " + std::string(what));
    }
    bool known = allowed.empty();
    for (std::string_view a : allowed) known = known || a == k;
    if (!known) return key.error(errc::kUnknownKey, "unknown key `" + shown(k) + "` in " + std::string(what));
  }
  return ok_status();
}

Status YamlNode::check_map(std::string_view what) const { return check_map(what, {}); }

YamlNode YamlNode::get(std::string_view key) const {
  for (const auto& [k, v] : entries()) {
    if (k.is_scalar() && k.node_.Scalar() == key) return v;
  }
  return absent();
}

Result<YamlNode> YamlNode::require(std::string_view key, std::string_view what) const {
  YamlNode v = get(key);
  if (v.is_null()) return error(errc::kMissingKey, std::string(what) + " needs `" + std::string(key) + "`");
  return v;
}

std::vector<std::pair<YamlNode, YamlNode>> YamlNode::entries() const {
  std::vector<std::pair<YamlNode, YamlNode>> out;
  if (!is_map()) return out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    out.emplace_back(YamlNode(it->first, it->first.Mark(), origin_, true),
                     YamlNode(it->second, it->second.Mark(), origin_, true));
  }
  return out;
}

std::size_t YamlNode::size() const { return is_list() ? node_.size() : 0; }

YamlNode YamlNode::operator[](std::size_t i) const {
  const YAML::Node item = node_[i];
  return YamlNode(item, item.Mark(), origin_, true);
}

Result<std::string> YamlNode::string(std::string_view what) const {
  if (!is_scalar()) return error(errc::kBadType, std::string(what) + " must be a string, got " + describe());
  return node_.Scalar();
}

Result<int64_t> YamlNode::integer(std::string_view what, int64_t lo, int64_t hi) const {
  if (!plain() || !is_integer_text(node_.Scalar())) {
    return error(errc::kBadType, std::string(what) + " must be an integer, got " + describe());
  }
  const std::string& s = node_.Scalar();
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return error(errc::kOutOfRange, std::string(what) + " " + shown(s) + " is outside the 64-bit integer range");
  }
  if (v < lo || v > hi) {
    return error(errc::kOutOfRange, std::string(what) + " " + shown(s) + " is outside " + std::to_string(lo) + ".." +
                                        std::to_string(hi));
  }
  return v;
}

Result<double> YamlNode::number(std::string_view what, double lo, double hi) const {
  if (!plain() || !is_decimal_text(node_.Scalar())) {
    return error(errc::kBadType, std::string(what) + " must be a finite number, got " + describe());
  }
  std::string_view s = node_.Scalar();
  if (s[0] == '+') s.remove_prefix(1);  // from_chars takes no '+'
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    return error(errc::kBadType, std::string(what) + " must be a finite number, got " + describe());
  }
  if (v < lo || v > hi) {
    return error(errc::kOutOfRange, std::string(what) + " " + shown(node_.Scalar()) + " is outside " + format_number(lo) +
                                        ".." + format_number(hi));
  }
  return v;
}

Result<bool> YamlNode::boolean(std::string_view what) const {
  if (plain() && node_.Scalar() == "true") return true;
  if (plain() && node_.Scalar() == "false") return false;
  return error(errc::kBadType, std::string(what) + " must be true or false, got " + describe());
}

Result<std::vector<std::string>> YamlNode::string_list(std::string_view what) const {
  std::vector<std::string> out;
  if (is_null()) return out;
  if (!is_list()) return error(errc::kBadType, std::string(what) + " must be a list, got " + describe());
  out.reserve(size());
  for (std::size_t i = 0; i < size(); ++i) {
    KAKEYA_ASSIGN_OR_RETURN(std::string s, (*this)[i].string(std::string(what) + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::size_t> YamlNode::byte_size(std::string_view what, std::size_t lo, std::size_t hi) const {
  if (!is_scalar()) return error(errc::kBadType, std::string(what) + " must be a byte size, got " + describe());
  auto bytes = parse_byte_size(node_.Scalar());
  if (!bytes.ok()) return error(errc::kBadType, std::string(what) + ": " + bytes.error().message);
  if (*bytes < lo || *bytes > hi) {
    return error(errc::kOutOfRange, std::string(what) + " " + shown(node_.Scalar()) + " is outside " + std::to_string(lo) +
                                        ".." + std::to_string(hi) + " bytes");
  }
  return *bytes;
}

Result<std::filesystem::path> YamlNode::path(std::string_view what, const std::filesystem::path& base_dir,
                                             const std::filesystem::path& home) const {
  KAKEYA_ASSIGN_OR_RETURN(std::string s, string(what));
  if (s.empty()) return error(errc::kBadValue, std::string(what) + " must not be empty");
  std::filesystem::path p;
  if (s == "~" || s.starts_with("~/")) {
    if (home.empty()) return error(errc::kBadValue, std::string(what) + " uses ~ but no home directory is known");
    p = home / s.substr(s.size() > 1 ? 2 : 1);
  } else {
    p = s;
  }
  if (p.is_relative()) p = base_dir / p;
  return p.lexically_normal();
}

// ---- YamlDocument ----

Result<YamlDocument> YamlDocument::parse(std::string_view text, std::string origin) {
  auto shared_origin = std::make_shared<const std::string>(std::move(origin));
  if (text.size() > kMaxYamlBytes) {
    return make_error(errc::kTooLarge, *shared_origin + ": " + std::to_string(text.size()) + " bytes is above the " +
                                           std::to_string(kMaxYamlBytes) + "-byte limit of a YAML document");
  }
  if (const std::size_t line = first_ill_formed_line(text); line != 0) {
    return make_error(errc::kParseError, *shared_origin + ":" + std::to_string(line) +
                                             ": invalid YAML: the line is not well-formed UTF-8");
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    YamlNode at(YAML::Node(), e.mark, shared_origin, false);
    return at.error(errc::kParseError, "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc on a hostile document
    return make_error(errc::kParseError, *shared_origin + ": invalid YAML: " + e.what());
  }
  return YamlDocument(std::move(root), std::move(shared_origin));
}

Result<YamlDocument> YamlDocument::load_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::kIo, "cannot read " + path.string() + ": " + std::strerror(errno));
  std::string text(kMaxYamlBytes + 1, '\0');  // one byte more than allowed: parse() refuses it
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return make_error(errc::kIo, "cannot read " + path.string() + ": " + std::strerror(errno));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse(text, path.string());
}

YamlNode YamlDocument::root() const { return YamlNode(root_, root_.Mark(), origin_, true); }

}  // namespace kakeya::bridge
