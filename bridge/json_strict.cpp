#include "bridge/json_strict.h"

#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "bridge/json_text.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

using nlohmann::json;

// Input iterator over a char buffer that counts how many characters the lexer consumed,
// so SAX callbacks (which get no position) can report where they are.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* p, std::size_t* consumed) : p_(p), consumed_(consumed) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    if (consumed_ != nullptr) ++*consumed_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_ = nullptr;
  std::size_t* consumed_ = nullptr;
};

// Longest parser detail (nlohmann's message with its `last read` token) quoted in an error.
constexpr std::size_t kMaxParseDetailBytes = 160;
// Longest key quoted whole in a key path; longer keys are cut (at a character boundary).
constexpr std::size_t kMaxPathKeyBytes = 64;

std::string line_col(std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

bool identifier_like(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Builds the DOM like nlohmann's json_sax_dom_parser, but refuses duplicate keys and
// excessive depth, and remembers where it was for error messages.
class StrictSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  StrictSax(std::string_view text, const std::size_t* consumed) : text_(text), consumed_(consumed) {}

  bool null() { return put(json(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return put(json(v)) != nullptr; }
  bool string(string_t& v) { return put(json(std::move(v))) != nullptr; }
  bool binary(binary_t&) { return fail(errc::kParseError, "binary values are not JSON", current_path()); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_array() {
    frames_.pop_back();
    return true;
  }

  bool key(string_t& k) {
    Frame& f = frames_.back();
    std::string path = json_path_append_key(f.path, k);
    if (f.node->contains(k)) {
      std::size_t end = *consumed_ == 0 ? 0 : *consumed_ - 1;
      return fail(errc::kDuplicateKey, "duplicate key `" + path + "` at " + line_col(text_, end), path);
    }
    f.pending_key = k;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix;
    // we print our own position.
    auto colon = what.find(": ");
    if (what.rfind("[json.exception", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
    // nlohmann quotes the raw bytes it last read (`last read: '...'`), which may be anything:
    // invalid UTF-8, NUL, newlines, kilobytes of one string. Show them escaped and bounded.
    what = printable(what, kMaxParseDetailBytes);
    std::size_t offset = position == 0 ? 0 : position - 1;
    std::string path = current_path();
    return fail(errc::kParseError, "invalid JSON at " + line_col(text_, offset) + " (in `" + path + "`): " + what,
                path);
  }

  bool failed() const { return error_.has_value(); }
  const Error& error() const { return *error_; }
  json& root() { return root_; }

 private:
  struct Frame {
    json* node;
    std::string path;
    std::string pending_key;
  };

  std::string current_path() const {
    if (frames_.empty()) return "<root>";
    const Frame& f = frames_.back();
    if (f.node->is_object() && !f.pending_key.empty()) return json_path_append_key(f.path, f.pending_key);
    return f.path.empty() ? "<root>" : f.path;
  }

  bool fail(ErrorCode code, std::string message, std::string) {
    if (!error_) error_ = Error{code, std::move(message)};
    return false;
  }

  // Places `v` at the current position; returns where it lives, or nullptr on error.
  json* put(json v) { return put_with_path(std::move(v), nullptr); }

  json* put_with_path(json v, std::string* path_out) {
    if (frames_.empty()) {
      root_ = std::move(v);
      if (path_out) *path_out = "";
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_object()) {
      if (path_out) *path_out = json_path_append_key(f.path, f.pending_key);
      json& slot = (*f.node)[f.pending_key];
      slot = std::move(v);
      f.pending_key.clear();  // errors after this value are about the object, not this key
      return &slot;
    }
    if (path_out) *path_out = json_path_append_index(f.path, f.node->size());
    f.node->push_back(std::move(v));
    return &f.node->back();
  }

  bool open(json container) {
    if (frames_.size() >= kJsonMaxDepth) {
      std::size_t end = *consumed_ == 0 ? 0 : *consumed_ - 1;
      const std::string path = current_path();
      return fail(errc::kTooDeep,
                  "JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels at " +
                      line_col(text_, end) + " (in `" + path + "`)",
                  path);
    }
    std::string path;
    json* node = put_with_path(std::move(container), &path);
    frames_.push_back(Frame{node, std::move(path), {}});
    return true;
  }

  std::string_view text_;
  const std::size_t* consumed_;
  json root_;
  std::vector<Frame> frames_;
  std::optional<Error> error_;
};

}  // namespace

std::string json_path_append_key(std::string_view path, std::string_view key) {
  std::string out(path);
  if (key.size() > kMaxPathKeyBytes) {
    // A hostile document may use a 60 KiB key: name it by its start.
    out += '[';
    out += to_json_text(json(std::string(utf8_head(key, kMaxPathKeyBytes))));
    out += "...]";
  } else if (identifier_like(key)) {
    if (!out.empty()) out += '.';
    out += key;
  } else {
    out += '[';
    out += to_json_text(json(std::string(key)));
    out += ']';
  }
  return out;
}

std::string json_path_append_index(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

std::string json_excerpt(const nlohmann::json& value) {
  constexpr std::size_t kMax = 77;  // + "..." = 80
  return printable(to_json_text(value), kMax);
}

Result<nlohmann::json> parse_json_strict(std::string_view text) {
  std::size_t consumed = 0;
  StrictSax sax(text, &consumed);
  CountingIterator first(text.data(), &consumed);
  CountingIterator last(text.data() + text.size(), nullptr);
  bool ok = false;
  try {
    ok = json::sax_parse(first, last, &sax, json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const std::exception& e) {
    return make_error(errc::kParseError, "invalid JSON: " + printable(e.what(), kMaxParseDetailBytes));
  }
  if (sax.failed()) return sax.error();
  if (!ok) return make_error(errc::kParseError, "invalid JSON");
  return std::move(sax.root());
}

}  // namespace kakeya::bridge
