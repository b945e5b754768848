#pragma once
// The name rules of the preset catalog and the job environment, one function per rule, so
// that the catalog loader, the argv placeholder parser, the runner config and the process
// spawner can never disagree about what a name is. (Preset names and nonces: bridge/request.h.)

#include <string_view>

namespace kakeya::bridge {

// An environment variable name as POSIX defines the portable ones (XBD 8.1: upper-case letters,
// digits and `_`, not starting with a digit): ^[A-Z_][A-Z0-9_]{0,127}$. Used for env_allowlist
// and `${ENV:NAME}` in the catalog, secret_env in the runner config and every name the runner
// puts into a job's environment.
inline constexpr std::string_view kEnvNamePattern = "^[A-Z_][A-Z0-9_]{0,127}$";
bool is_env_name(std::string_view name);

// A preset parameter name, `{name}` in argv: ^[a-z][a-z0-9_]{0,39}$.
inline constexpr std::string_view kParamNamePattern = "^[a-z][a-z0-9_]{0,39}$";
bool is_param_name(std::string_view name);

// A model role, `${MODEL:role}` in argv and `models:` of a preset: ^[a-z][a-z0-9_-]{0,39}$.
inline constexpr std::string_view kModelRolePattern = "^[a-z][a-z0-9_-]{0,39}$";
bool is_model_role(std::string_view role);

}  // namespace kakeya::bridge
