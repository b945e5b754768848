#pragma once
// Errors as values: every fallible bridge/runner/engine function returns Result<T>.
// An Error carries a code from the closed list of bridge/error_codes.h (errc::kUnknownKey,
// "unknown_key" on the wire) and a message that names the offending field and value. No
// exceptions cross module boundaries.

#include <string>
#include <utility>
#include <variant>

#include "bridge/error_codes.h"

namespace kakeya {

struct Error {
  ErrorCode code;       // stable, machine-readable: errc::kBadType is "bad_type" on the wire
  std::string message;  // one line for humans, naming the offending thing

  std::string str() const { return std::string(code.str()) + ": " + message; }
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return std::get<T>(v_); }
  const T& operator*() const& { return std::get<T>(v_); }

  // REQUIRES: !ok()
  const Error& error() const& { return std::get<Error>(v_); }
  Error&& error() && { return std::get<Error>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace kakeya

// Propagate an error from an expression returning Result<...>.
#define KAKEYA_TRY(expr)                              \
  do {                                                \
    auto _kakeya_r = (expr);                          \
    if (!_kakeya_r.ok()) return std::move(_kakeya_r).error(); \
  } while (0)

#define KAKEYA_CONCAT_INNER(a, b) a##b
#define KAKEYA_CONCAT(a, b) KAKEYA_CONCAT_INNER(a, b)
// Assign the value of a Result to `lhs`, or return its error.
#define KAKEYA_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto KAKEYA_CONCAT(_kakeya_a_, __LINE__) = (expr);                         \
  if (!KAKEYA_CONCAT(_kakeya_a_, __LINE__).ok())                             \
    return std::move(KAKEYA_CONCAT(_kakeya_a_, __LINE__)).error();           \
  lhs = std::move(KAKEYA_CONCAT(_kakeya_a_, __LINE__)).value()
