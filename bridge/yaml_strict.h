#pragma once
// The one strict YAML reader of Kakeya: the preset catalog (bridge/catalog.h) and the runner
// config (runner/config.h) are both read through it, so they agree on what a key, an integer or
// a path is and report problems the same way.
//
// yaml-cpp parses the text; this layer refuses what YAML lets through but a configuration must
// not mean, and turns every problem into an Error whose message starts with `origin:line:col: `
// (1-based, from yaml-cpp's marks; just `origin: ` where no position is known):
//  - text that is not well-formed UTF-8 (YAML 1.2 streams are Unicode; bridge/utf8.h), so every
//    string read from a document is valid UTF-8;
//  - a key given twice in one mapping (yaml-cpp keeps both), a key that is not a scalar, and a
//    key the mapping does not declare (YamlNode::check_map);
//  - quoted numbers and booleans: only plain scalars are numbers or booleans, so "5" is the
//    string 5 and `yes`/`on` are strings (YAML 1.2 core: `true` and `false` only);
//  - integers other than -?[0-9]+ (no `+5`, `0x1f`, `1e3`, `5.0`), numbers other than plain
//    decimals (no `.inf`, `.nan`, hex), and values outside the bounds a getter is given.
// Error codes (bridge/error_codes.h): io (unreadable file), too_large (above kMaxYamlBytes),
// parse_error (not YAML), unknown_key, duplicate_key, missing_key, bad_type, out_of_range,
// bad_value. Messages name the value as `what` (the caller's name for it, e.g. "preset `x`
// timeout_s" or "max_jobs") and quote what was found: `5` for a plain scalar, "5" for a quoted
// one, a mapping, a list, nothing (null); found text is shown with bridge/utf8.h printable (one
// line, control characters escaped, at most 120 bytes).
//
// No function here throws; lookups never insert into the document.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "bridge/result.h"

namespace kakeya::bridge {

// Documents above this size are refused before parsing (configuration files are kilobytes).
inline constexpr std::size_t kMaxYamlBytes = 4u << 20;  // 4 MiB

class YamlNode {
 public:
  // ---- position and messages ----
  // "origin:line:col" of this node (for an absent key: of the mapping it is missing from).
  std::string where() const;
  // 1-based line of this node; 0 when unknown.
  int line() const { return mark_.line + 1; }
  // Error{code, "where(): reason"}.
  Error error(ErrorCode code, std::string_view reason) const;

  // ---- what it is ----
  bool present() const { return present_; }  // false for a key that is not in its mapping
  bool is_null() const;                       // absent, `~`, `null` or an empty value
  bool is_map() const;
  bool is_list() const;
  bool is_scalar() const;
  // The node for messages: `text` (plain scalar), "text" (quoted), a mapping, a list, nothing (null).
  std::string describe() const;

  // ---- mappings ----
  // Requires a mapping whose keys are unique scalars, each listed in `allowed`. Errors: bad_type
  // ("<what> must be a mapping, got ..."), duplicate_key, unknown_key (both name the key).
  Status check_map(std::string_view what, const std::vector<std::string_view>& allowed) const;
  // The same for free-form mappings (any keys, still unique scalars).
  Status check_map(std::string_view what) const;
  // The value under `key`; an absent node when this is not a mapping or has no such key.
  YamlNode get(std::string_view key) const;
  // Whether `key` is present with a non-null value.
  bool has(std::string_view key) const { return !get(key).is_null(); }
  // The value under `key`, or missing_key "<what> needs `key`" when it is absent or null.
  Result<YamlNode> require(std::string_view key, std::string_view what) const;
  // Key and value nodes in file order (empty unless a mapping).
  std::vector<std::pair<YamlNode, YamlNode>> entries() const;

  // ---- lists ----
  std::size_t size() const;                  // items of a list, 0 otherwise
  YamlNode operator[](std::size_t i) const;  // REQUIRES: i < size()

  // ---- typed values; `what` names the value in messages ----
  // A scalar's text (plain or quoted). bad_type otherwise.
  Result<std::string> string(std::string_view what) const;
  // A plain -?[0-9]+ scalar in [lo, hi]. bad_type, out_of_range ("<what> 0 is outside 1..86400").
  Result<int64_t> integer(std::string_view what, int64_t lo = std::numeric_limits<int64_t>::min(),
                          int64_t hi = std::numeric_limits<int64_t>::max()) const;
  // A plain finite decimal number (integer or fraction, optional exponent) in [lo, hi].
  Result<double> number(std::string_view what, double lo = -std::numeric_limits<double>::max(),
                        double hi = std::numeric_limits<double>::max()) const;
  // Plain `true` or `false`.
  Result<bool> boolean(std::string_view what) const;
  // A list of scalars; absent or null is the empty list. Items are named `<what>[i]`.
  Result<std::vector<std::string>> string_list(std::string_view what) const;
  // A byte size (bridge/units.h parse_byte_size: 4096, 8MiB, "512 KiB") in [lo, hi] bytes.
  Result<std::size_t> byte_size(std::string_view what, std::size_t lo, std::size_t hi) const;
  // A non-empty path: "~" and "~/..." are taken relative to `home` (bad_value when `home` is
  // empty), other relative paths relative to `base_dir`; lexically normalized.
  Result<std::filesystem::path> path(std::string_view what, const std::filesystem::path& base_dir,
                                     const std::filesystem::path& home) const;

 private:
  friend class YamlDocument;
  YamlNode(YAML::Node node, YAML::Mark mark, std::shared_ptr<const std::string> origin, bool present)
      : node_(std::move(node)), mark_(mark), origin_(std::move(origin)), present_(present) {}
  YamlNode absent() const { return YamlNode(YAML::Node(), mark_, origin_, false); }
  bool plain() const;  // a scalar without quotes or tag: the only kind that is a number or bool

  YAML::Node node_;   // meaningful only when present_
  YAML::Mark mark_;   // this node's mark (for an absent node: its mapping's)
  std::shared_ptr<const std::string> origin_;
  bool present_ = false;
};

class YamlDocument {
 public:
  // Parses `text`; `origin` (a path or a name) starts every message. Errors: too_large,
  // parse_error ("origin:line:col: invalid YAML: <yaml-cpp's reason>").
  static Result<YamlDocument> parse(std::string_view text, std::string origin);
  // Reads and parses a file; origin = the path as given. Errors: io (names the path and errno's
  // text), then those of parse.
  static Result<YamlDocument> load_file(const std::filesystem::path& path);

  // The top-level node (null for an empty document).
  YamlNode root() const;
  const std::string& origin() const { return *origin_; }

 private:
  YamlDocument(YAML::Node root, std::shared_ptr<const std::string> origin)
      : root_(std::move(root)), origin_(std::move(origin)) {}
  YAML::Node root_;
  std::shared_ptr<const std::string> origin_;
};

}  // namespace kakeya::bridge
