#include "runner/config.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <set>
#include <sstream>

#include "bridge/error_codes.h"
#include "bridge/names.h"
#include "bridge/yaml_strict.h"
#include "runner/listen_address.h"

namespace kakeya::runner {
namespace {

bool is_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// [A-Za-z0-9._-]{1,64}, and not "." or ".." (these names become path components).
bool valid_id(std::string_view s) {
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  for (char c : s) {
    if (!is_id_char(c)) return false;
  }
  return true;
}

std::string home_directory() {
  if (const char* h = std::getenv("HOME"); h != nullptr && h[0] != '\0') return h;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return {};
}

constexpr const char* kTopKeys[] = {
    "remote_url",   "credentials_file", "branch_patterns", "runner_id",    "labels",           "work_dir",
    "catalog_path", "models",           "poll_interval_s", "poll_jitter",  "heartbeat_s",      "lease_s",
    "max_jobs",     "secret_env",       "log_cap_bytes",   "kill_grace_s", "shutdown_grace_s", "tool_dirs",
    "identity",     "git_timeout_s",    "publish_retry_s", "request_signing", "metrics_listen",
    "health_poll_failure_s", "keep_failed_jobs", "keep_failed_jobs_bytes"};

// scheme://user:password@host... carries a secret that would end up in logs and status files.
bool url_has_password(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  const std::string_view rest = url.substr(scheme + 3);
  const std::string_view authority = rest.substr(0, rest.find('/'));
  const std::size_t at = authority.rfind('@');
  return at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos;
}

Result<RunnerConfig> parse_node(const bridge::YamlNode& root, const std::filesystem::path& origin) {
  using bridge::YamlNode;
  if (root.is_null()) {
    return root.error(errc::kMissingKey, "the config is empty; remote_url, work_dir and catalog_path are required");
  }
  KAKEYA_TRY(root.check_map("the runner config", {std::begin(kTopKeys), std::end(kTopKeys)}));
  RunnerConfig c;
  c.source_path = origin;
  const std::filesystem::path base_dir = origin.parent_path();
  const std::filesystem::path home = home_directory();
  auto path = [&](const YamlNode& n, const std::string& what) { return n.path(what, base_dir, home); };

  for (const char* key : {"remote_url", "work_dir", "catalog_path"}) KAKEYA_TRY(root.require(key, "the runner config"));
  {
    const YamlNode url = root.get("remote_url");
    KAKEYA_ASSIGN_OR_RETURN(c.remote_url, url.string("remote_url"));
    if (c.remote_url.empty() || c.remote_url.find_first_of(" \t\r\n") != std::string::npos) {
      return url.error(errc::kBadValue, "remote_url '" + c.remote_url + "' must be a non-empty URL without spaces");
    }
    if (url_has_password(c.remote_url)) {
      return url.error(errc::kBadValue, "remote_url must not embed a password (user:password@); use credentials_file");
    }
  }
  if (root.has("credentials_file")) {
    KAKEYA_ASSIGN_OR_RETURN(c.credentials_file, path(root.get("credentials_file"), "credentials_file"));
  }
  if (const YamlNode patterns = root.get("branch_patterns"); patterns.present()) {
    KAKEYA_ASSIGN_OR_RETURN(c.branch_patterns, patterns.string_list("branch_patterns"));
    if (c.branch_patterns.empty()) return patterns.error(errc::kBadValue, "branch_patterns must not be empty");
    for (std::size_t i = 0; i < c.branch_patterns.size(); ++i) {
      const std::string& p = c.branch_patterns[i];
      bool bad = p.empty() || p[0] == '/' || p.rfind("refs/", 0) == 0 || p.find("..") != std::string::npos;
      for (char ch : p) bad = bad || static_cast<unsigned char>(ch) <= ' ' || ch == '\x7f';
      if (bad) {
        return patterns[i].error(errc::kBadValue,
                                 "branch_patterns[" + std::to_string(i) + "] = '" + p +
                                     "' must be a branch-name glob like 'kakeya/req/**' (no refs/ prefix, spaces or '..')");
      }
    }
  }
  if (const YamlNode id = root.get("runner_id"); !id.is_null()) {
    KAKEYA_ASSIGN_OR_RETURN(c.runner_id, id.string("runner_id"));
    if (!valid_id(c.runner_id)) {
      return id.error(errc::kBadValue, "runner_id '" + c.runner_id + "' must match [A-Za-z0-9._-]{1,64}");
    }
  } else {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0 || !valid_id(host)) {
      return root.error(errc::kBadValue, std::string("runner_id is not set and the hostname '") + host +
                                             "' is not a valid runner id ([A-Za-z0-9._-]{1,64}); set runner_id");
    }
    c.runner_id = host;
  }
  if (const YamlNode labels = root.get("labels"); labels.present()) {
    KAKEYA_ASSIGN_OR_RETURN(c.labels, labels.string_list("labels"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      if (!valid_id(c.labels[i])) {
        return labels[i].error(errc::kBadValue, "labels[" + std::to_string(i) + "] = '" + c.labels[i] +
                                                    "' must match [A-Za-z0-9._-]{1,64}");
      }
      if (!seen.insert(c.labels[i]).second) {
        return labels[i].error(errc::kBadValue, "label '" + c.labels[i] + "' is listed twice");
      }
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(c.work_dir, path(root.get("work_dir"), "work_dir"));
  KAKEYA_ASSIGN_OR_RETURN(c.catalog_path, path(root.get("catalog_path"), "catalog_path"));
  if (const YamlNode models = root.get("models"); !models.is_null()) {
    KAKEYA_TRY(models.check_map("models"));
    for (const auto& [key, value] : models.entries()) {
      KAKEYA_ASSIGN_OR_RETURN(std::string role, key.string("model name"));
      if (!valid_id(role)) return key.error(errc::kBadValue, "model name '" + role + "' must match [A-Za-z0-9._-]{1,64}");
      KAKEYA_ASSIGN_OR_RETURN(c.models[role], path(value, "models." + role));
    }
  }
  // Optional numbers: the default stays when the key is absent.
  auto number = [&](const char* key, double& out, double lo, double hi) -> Status {
    if (!root.get(key).present()) return ok_status();
    KAKEYA_ASSIGN_OR_RETURN(out, root.get(key).number(key, lo, hi));
    return ok_status();
  };
  KAKEYA_TRY(number("poll_interval_s", c.poll_interval_s, 0.05, 3600));
  KAKEYA_TRY(number("poll_jitter", c.poll_jitter, 0, 0.999));
  KAKEYA_TRY(number("heartbeat_s", c.heartbeat_s, 0.05, 86400));
  KAKEYA_TRY(number("lease_s", c.lease_s, 0.1, 604800));
  if (c.heartbeat_s >= c.lease_s) {
    const YamlNode at = root.get("heartbeat_s").present() ? root.get("heartbeat_s")
                        : root.get("lease_s").present()   ? root.get("lease_s")
                                                          : root;
    std::ostringstream os;
    os << "heartbeat_s (" << c.heartbeat_s << ") must be less than lease_s (" << c.lease_s
       << "), or other runners take the job over while it is alive";
    return at.error(errc::kOutOfRange, os.str());
  }
  if (root.get("max_jobs").present()) {
    KAKEYA_ASSIGN_OR_RETURN(int64_t n, root.get("max_jobs").integer("max_jobs", 1, 64));
    c.max_jobs = static_cast<int>(n);
  }
  if (const YamlNode secret = root.get("secret_env"); secret.present()) {
    KAKEYA_ASSIGN_OR_RETURN(c.secret_env, secret.string_list("secret_env"));
    for (std::size_t i = 0; i < c.secret_env.size(); ++i) {
      if (!bridge::is_env_name(c.secret_env[i])) {
        return secret[i].error(errc::kBadValue, "secret_env[" + std::to_string(i) + "] = '" + c.secret_env[i] +
                                                    "' is not an environment variable name " +
                                                    std::string(bridge::kEnvNamePattern));
      }
    }
  }
  if (root.get("log_cap_bytes").present()) {
    KAKEYA_ASSIGN_OR_RETURN(c.log_cap_bytes, root.get("log_cap_bytes").byte_size("log_cap_bytes", 1u << 10, 1u << 30));
  }
  KAKEYA_TRY(number("kill_grace_s", c.kill_grace_s, 0, 3600));
  KAKEYA_TRY(number("shutdown_grace_s", c.shutdown_grace_s, 0, 86400));
  if (root.get("git_timeout_s").present()) {
    KAKEYA_ASSIGN_OR_RETURN(int64_t t, root.get("git_timeout_s").integer("git_timeout_s", 1, 3600));
    c.git_timeout_s = static_cast<int>(t);
  }
  KAKEYA_TRY(number("publish_retry_s", c.publish_retry_s, 0, 86400));
  if (const YamlNode dirs = root.get("tool_dirs"); dirs.present()) {
    if (!dirs.is_list()) return dirs.error(errc::kBadType, "tool_dirs must be a list, got " + dirs.describe());
    c.tool_dirs.clear();
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      KAKEYA_ASSIGN_OR_RETURN(std::filesystem::path p, path(dirs[i], "tool_dirs[" + std::to_string(i) + "]"));
      c.tool_dirs.push_back(std::move(p));
    }
  }
  if (const YamlNode id = root.get("identity"); id.present()) {
    KAKEYA_TRY(id.check_map("identity", {"name", "email", "signing_key"}));
    if (id.get("name").present()) {
      KAKEYA_ASSIGN_OR_RETURN(c.identity.name, id.get("name").string("identity.name"));
      if (c.identity.name.empty() || c.identity.name.find_first_of("<>\n\r") != std::string::npos) {
        return id.get("name").error(errc::kBadValue, "identity.name '" + c.identity.name +
                                                         "' must be non-empty without <, > or newlines");
      }
    }
    if (id.get("email").present()) {
      KAKEYA_ASSIGN_OR_RETURN(c.identity.email, id.get("email").string("identity.email"));
      const std::string& e = c.identity.email;
      if (e.find('@') == std::string::npos || e.find_first_of("<> \t\n\r") != std::string::npos) {
        return id.get("email").error(errc::kBadValue, "identity.email '" + e + "' must look like user@host");
      }
    }
    if (const YamlNode key = id.get("signing_key"); key.present()) {
      KAKEYA_ASSIGN_OR_RETURN(c.identity.signing_key, path(key, "identity.signing_key"));
      std::error_code ec;
      if (!std::filesystem::is_regular_file(c.identity.signing_key, ec)) {
        return key.error(errc::kNotFound, "identity.signing_key '" + c.identity.signing_key.string() +
                                              "' is not a readable file (an SSH private key, or a public key "
                                              "whose private half is in ssh-agent)");
      }
    }
  }
  if (const YamlNode rs = root.get("request_signing"); rs.present()) {
    KAKEYA_TRY(rs.check_map("request_signing", {"allowed_signers", "presets"}));
    KAKEYA_TRY(rs.require("allowed_signers", "request_signing"));
    KAKEYA_TRY(rs.require("presets", "request_signing"));
    RequestSigningPolicy policy;
    KAKEYA_ASSIGN_OR_RETURN(policy.allowed_signers_file,
                            path(rs.get("allowed_signers"), "request_signing.allowed_signers"));
    auto signers = bridge::AllowedSigners::load_file(policy.allowed_signers_file);
    if (!signers.ok()) {
      return rs.get("allowed_signers").error(signers.error().code,
                                             "request_signing.allowed_signers: " + signers.error().message);
    }
    policy.signers = std::move(signers).value();
    const YamlNode presets = rs.get("presets");
    KAKEYA_TRY(presets.check_map("request_signing.presets"));
    for (const auto& [key, value] : presets.entries()) {
      KAKEYA_ASSIGN_OR_RETURN(std::string principal, key.string("a principal of request_signing.presets"));
      const std::string what = "request_signing.presets." + principal;
      if (!value.is_list()) return value.error(errc::kBadType, what + " must be a list of presets, got " + value.describe());
      KAKEYA_ASSIGN_OR_RETURN(policy.presets[principal], value.string_list(what));
    }
    c.request_signing = std::move(policy);
  }
  if (const YamlNode listen = root.get("metrics_listen"); !listen.is_null()) {
    KAKEYA_ASSIGN_OR_RETURN(std::string text, listen.string("metrics_listen"));
    if (auto a = parse_listen_address(text); !a.ok()) return listen.error(errc::kBadValue, a.error().message);
    c.metrics_listen = text;
  }
  KAKEYA_TRY(number("health_poll_failure_s", c.health_poll_failure_s, 1, 604800));
  if (root.get("keep_failed_jobs").present()) {
    KAKEYA_ASSIGN_OR_RETURN(int64_t n, root.get("keep_failed_jobs").integer("keep_failed_jobs", 0, 1000));
    c.keep_failed_jobs = static_cast<int>(n);
  }
  if (root.get("keep_failed_jobs_bytes").present()) {
    KAKEYA_ASSIGN_OR_RETURN(c.keep_failed_jobs_bytes, root.get("keep_failed_jobs_bytes")
                                                          .byte_size("keep_failed_jobs_bytes", std::size_t{1} << 20,
                                                                     std::size_t{1} << 40));
  }
  return c;
}

}  // namespace

Result<RunnerConfig> parse_runner_config(std::string_view yaml_text, const std::filesystem::path& origin) {
  const std::filesystem::path abs_origin =
      origin.is_absolute() ? origin : std::filesystem::absolute(origin).lexically_normal();
  KAKEYA_ASSIGN_OR_RETURN(bridge::YamlDocument doc, bridge::YamlDocument::parse(yaml_text, abs_origin.string()));
  return parse_node(doc.root(), abs_origin);
}

Result<RunnerConfig> load_runner_config(const std::filesystem::path& path) {
  const std::filesystem::path abs_origin =
      path.is_absolute() ? path : std::filesystem::absolute(path).lexically_normal();
  KAKEYA_ASSIGN_OR_RETURN(bridge::YamlDocument doc, bridge::YamlDocument::load_file(abs_origin));
  return parse_node(doc.root(), abs_origin);
}

Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role,
                                            const std::filesystem::path& home_dir) {
  if (!valid_id(role)) return make_error(errc::kBadValue, "model role '" + role + "' must match [A-Za-z0-9._-]{1,64}");
  std::error_code ec;
  if (const auto it = config.models.find(role); it != config.models.end()) {
    if (!std::filesystem::exists(it->second, ec)) {
      return make_error(errc::kNotFound, "model role '" + role + "' is set to " + it->second.string() + " in " +
                                         config.source_path.string() + " but that file does not exist");
    }
    return it->second;
  }
  if (!home_dir.empty()) {
    const std::filesystem::path p = home_dir / ".kakeya" / "models" / role;
    if (std::filesystem::exists(p, ec)) return p;
  }
  return make_error(errc::kNotFound, "model role '" + role + "' not configured (set models." + role + " in " +
                                     config.source_path.string() + " or place ~/.kakeya/models/" + role + ")");
}

Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role) {
  return resolve_model(config, role, home_directory());
}

bool preset_runnable(const RunnerConfig& config, const bridge::PresetSpec& preset, std::string* why) {
  for (const auto& label : preset.labels) {
    if (std::find(config.labels.begin(), config.labels.end(), label) == config.labels.end()) {
      *why = "runner lacks label '" + label + "'";
      return false;
    }
  }
  for (const auto& role : preset.models) {
    auto p = resolve_model(config, role);
    if (!p.ok()) {
      *why = p.error().message;
      return false;
    }
  }
  return true;
}

}  // namespace kakeya::runner
