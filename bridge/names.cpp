#include "bridge/names.h"

#include <cstddef>

namespace kakeya::bridge {
namespace {

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// `first` for s[0], `rest` for every later character, length in [1, max_size].
bool name_matches(std::string_view s, std::size_t max_size, bool (*first)(char), bool (*rest)(char)) {
  if (s.empty() || s.size() > max_size || !first(s[0])) return false;
  for (char c : s.substr(1)) {
    if (!rest(c)) return false;
  }
  return true;
}

}  // namespace

bool is_env_name(std::string_view name) {
  return name_matches(
      name, 128, [](char c) { return is_upper(c) || c == '_'; },
      [](char c) { return is_upper(c) || is_digit(c) || c == '_'; });
}

bool is_param_name(std::string_view name) {
  return name_matches(name, 40, is_lower, [](char c) { return is_lower(c) || is_digit(c) || c == '_'; });
}

bool is_model_role(std::string_view role) {
  return name_matches(role, 40, is_lower, [](char c) { return is_lower(c) || is_digit(c) || c == '_' || c == '-'; });
}

}  // namespace kakeya::bridge
