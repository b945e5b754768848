#include "runner/config.h"

#include <pwd.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

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

bool valid_env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

std::string home_directory() {
  if (const char* h = std::getenv("HOME"); h != nullptr && h[0] != '\0') return h;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return {};
}

// Reads YAML nodes; every error is `<origin>:<line>:<col>: <key>: reason`.
class Reader {
 public:
  explicit Reader(std::filesystem::path origin) : origin_(std::move(origin)) {}

  Error err(const std::string& code, const YAML::Mark& m, const std::string& reason) const {
    std::string where = origin_.string();
    if (m.line >= 0) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return make_error(code, where + ": " + reason);
  }
  Error err(const std::string& code, const YAML::Node& n, const std::string& reason) const {
    return err(code, n.Mark(), reason);
  }

  static std::string show(const YAML::Node& n) {
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    if (n.IsNull()) return "nothing";
    return n.IsMap() ? "a mapping" : "a list";
  }

  Result<std::string> string(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return err("bad_type", n, key + " must be a string, got " + show(n));
    return n.Scalar();
  }

  Result<double> number(const YAML::Node& n, const std::string& key, double lo, double hi) const {
    // Plain scalars only: a quoted "10" is a string.
    if (!n.IsScalar() || n.Tag() != "?") return err("bad_type", n, key + " must be a number, got " + show(n));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v) ||
        std::isalpha(static_cast<unsigned char>(s[0])) != 0) {
      return err("bad_type", n, key + " must be a finite number, got " + show(n));
    }
    if (v < lo || v > hi) return range_error(n, key, s, lo, hi);
    return v;
  }

  Result<long long> integer(const YAML::Node& n, const std::string& key, long long lo, long long hi) const {
    if (!n.IsScalar() || n.Tag() != "?") return err("bad_type", n, key + " must be an integer, got " + show(n));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) {
      return err("bad_type", n, key + " must be an integer, got " + show(n));
    }
    if (v < lo || v > hi) return range_error(n, key, s, static_cast<double>(lo), static_cast<double>(hi));
    return v;
  }

  Result<std::vector<std::string>> string_list(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) return err("bad_type", n, key + " must be a list, got " + show(n));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      KAKEYA_ASSIGN_OR_RETURN(std::string s, string(n[i], key + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(s));
    }
    return out;
  }

  // A path: "~/" expands to $HOME, relative paths are taken relative to the config's directory.
  Result<std::filesystem::path> path(const YAML::Node& n, const std::string& key) const {
    KAKEYA_ASSIGN_OR_RETURN(std::string s, string(n, key));
    if (s.empty()) return err("bad_value", n, key + " must not be empty");
    std::filesystem::path p;
    if (s == "~" || s.rfind("~/", 0) == 0) {
      const std::string home = home_directory();
      if (home.empty()) return err("bad_value", n, key + " uses ~ but no home directory is known");
      p = std::filesystem::path(home) / s.substr(s.size() > 1 ? 2 : 1);
    } else {
      p = s;
    }
    if (p.is_relative()) p = origin_.parent_path() / p;
    return p.lexically_normal();
  }

  // Requires a mapping with unique scalar keys, each in `allowed` (empty = any).
  Status check_map(const YAML::Node& n, const std::string& what, const std::set<std::string>& allowed) const {
    if (!n.IsMap()) return err("bad_type", n, what + " must be a mapping, got " + show(n));
    std::set<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) return err("bad_type", kv.first.Mark(), what + " has a non-scalar key");
      const std::string& k = kv.first.Scalar();
      if (!seen.insert(k).second) return err("duplicate_key", kv.first.Mark(), "duplicate key '" + k + "' in " + what);
      if (!allowed.empty() && allowed.count(k) == 0) {
        return err("unknown_key", kv.first.Mark(), "unknown key '" + k + "' in " + what);
      }
    }
    return ok_status();
  }

  const std::filesystem::path& origin() const { return origin_; }

 private:
  Error range_error(const YAML::Node& n, const std::string& key, const std::string& v, double lo, double hi) const {
    std::ostringstream os;
    os << key << " = " << v << " is out of range [" << lo << ", " << hi << "]";
    return err("out_of_range", n, os.str());
  }

  std::filesystem::path origin_;
};

const std::set<std::string> kTopKeys = {
    "remote_url", "credentials_file", "branch_patterns", "runner_id",   "labels",        "work_dir",
    "catalog_path", "models",          "poll_interval_s", "poll_jitter", "heartbeat_s",  "lease_s",
    "max_jobs",   "secret_env",        "log_cap_bytes",   "kill_grace_s", "shutdown_grace_s",
    "tool_dirs",  "identity",          "git_timeout_s",   "publish_retry_s"};

// scheme://user:password@host... carries a secret that would end up in logs and status files.
bool url_has_password(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  const std::string_view rest = url.substr(scheme + 3);
  const std::string_view authority = rest.substr(0, rest.find('/'));
  const std::size_t at = authority.rfind('@');
  return at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos;
}

Result<RunnerConfig> parse_node(const Reader& rd, const YAML::Node& root) {
  if (root.IsNull() || !root.IsDefined()) {
    return rd.err("missing_key", YAML::Mark::null_mark(), "the config is empty; remote_url, work_dir and catalog_path are required");
  }
  KAKEYA_TRY(rd.check_map(root, "the runner config", kTopKeys));
  RunnerConfig c;
  c.source_path = rd.origin();

  auto node = [&](const char* key) -> YAML::Node { return root[key]; };
  auto has = [&](const char* key) { return static_cast<bool>(root[key]) && !root[key].IsNull(); };

  for (const char* key : {"remote_url", "work_dir", "catalog_path"}) {
    if (!has(key)) return rd.err("missing_key", root.Mark(), std::string("required key '") + key + "' is missing");
  }
  {
    KAKEYA_ASSIGN_OR_RETURN(c.remote_url, rd.string(node("remote_url"), "remote_url"));
    if (c.remote_url.empty() || c.remote_url.find_first_of(" \t\r\n") != std::string::npos) {
      return rd.err("bad_value", node("remote_url"), "remote_url '" + c.remote_url + "' must be a non-empty URL without spaces");
    }
    if (url_has_password(c.remote_url)) {
      return rd.err("bad_value", node("remote_url"),
                    "remote_url must not embed a password (user:password@); use credentials_file");
    }
  }
  if (has("credentials_file")) {
    KAKEYA_ASSIGN_OR_RETURN(std::filesystem::path p, rd.path(node("credentials_file"), "credentials_file"));
    c.credentials_file = p;
  }
  if (root["branch_patterns"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.branch_patterns, rd.string_list(node("branch_patterns"), "branch_patterns"));
    if (c.branch_patterns.empty()) return rd.err("bad_value", node("branch_patterns"), "branch_patterns must not be empty");
    for (std::size_t i = 0; i < c.branch_patterns.size(); ++i) {
      const std::string& p = c.branch_patterns[i];
      bool bad = p.empty() || p[0] == '/' || p.rfind("refs/", 0) == 0 || p.find("..") != std::string::npos;
      for (char ch : p) bad = bad || static_cast<unsigned char>(ch) <= ' ' || ch == '\x7f';
      if (bad) {
        return rd.err("bad_value", node("branch_patterns")[i],
                      "branch_patterns[" + std::to_string(i) + "] = '" + p +
                          "' must be a branch-name glob like 'kakeya/req/**' (no refs/ prefix, spaces or '..')");
      }
    }
  }
  if (has("runner_id")) {
    KAKEYA_ASSIGN_OR_RETURN(c.runner_id, rd.string(node("runner_id"), "runner_id"));
    if (!valid_id(c.runner_id)) {
      return rd.err("bad_value", node("runner_id"), "runner_id '" + c.runner_id + "' must match [A-Za-z0-9._-]{1,64}");
    }
  } else {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0 || !valid_id(host)) {
      return rd.err("bad_value", root.Mark(),
                    std::string("runner_id is not set and the hostname '") + host +
                        "' is not a valid runner id ([A-Za-z0-9._-]{1,64}); set runner_id");
    }
    c.runner_id = host;
  }
  if (root["labels"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.labels, rd.string_list(node("labels"), "labels"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      if (!valid_id(c.labels[i])) {
        return rd.err("bad_value", node("labels")[i], "labels[" + std::to_string(i) + "] = '" + c.labels[i] + "' must match [A-Za-z0-9._-]{1,64}");
      }
      if (!seen.insert(c.labels[i]).second) {
        return rd.err("bad_value", node("labels")[i], "label '" + c.labels[i] + "' is listed twice");
      }
    }
  }
  KAKEYA_ASSIGN_OR_RETURN(c.work_dir, rd.path(node("work_dir"), "work_dir"));
  KAKEYA_ASSIGN_OR_RETURN(c.catalog_path, rd.path(node("catalog_path"), "catalog_path"));
  if (has("models")) {
    const YAML::Node m = node("models");
    KAKEYA_TRY(rd.check_map(m, "models", {}));
    for (const auto& kv : m) {
      const std::string role = kv.first.Scalar();
      if (!valid_id(role)) return rd.err("bad_value", kv.first.Mark(), "model name '" + role + "' must match [A-Za-z0-9._-]{1,64}");
      KAKEYA_ASSIGN_OR_RETURN(c.models[role], rd.path(kv.second, "models." + role));
    }
  }
  if (root["poll_interval_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.poll_interval_s, rd.number(node("poll_interval_s"), "poll_interval_s", 0.05, 3600));
  }
  if (root["poll_jitter"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.poll_jitter, rd.number(node("poll_jitter"), "poll_jitter", 0, 0.999));
  }
  if (root["heartbeat_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.heartbeat_s, rd.number(node("heartbeat_s"), "heartbeat_s", 0.05, 86400));
  }
  if (root["lease_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.lease_s, rd.number(node("lease_s"), "lease_s", 0.1, 604800));
  }
  if (c.heartbeat_s >= c.lease_s) {
    const YAML::Node at = root["heartbeat_s"] ? node("heartbeat_s") : (root["lease_s"] ? node("lease_s") : root);
    std::ostringstream os;
    os << "heartbeat_s (" << c.heartbeat_s << ") must be less than lease_s (" << c.lease_s
       << "), or other runners take the job over while it is alive";
    return rd.err("out_of_range", at, os.str());
  }
  if (root["max_jobs"]) {
    KAKEYA_ASSIGN_OR_RETURN(long long n, rd.integer(node("max_jobs"), "max_jobs", 1, 64));
    c.max_jobs = static_cast<int>(n);
  }
  if (root["secret_env"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.secret_env, rd.string_list(node("secret_env"), "secret_env"));
    for (std::size_t i = 0; i < c.secret_env.size(); ++i) {
      if (!valid_env_name(c.secret_env[i])) {
        return rd.err("bad_value", node("secret_env")[i],
                      "secret_env[" + std::to_string(i) + "] = '" + c.secret_env[i] + "' is not an environment variable name");
      }
    }
  }
  if (root["log_cap_bytes"]) {
    const YAML::Node n = node("log_cap_bytes");
    KAKEYA_ASSIGN_OR_RETURN(std::string text, rd.string(n, "log_cap_bytes"));
    auto bytes = parse_byte_size(text);
    if (!bytes.ok()) return rd.err("bad_type", n, "log_cap_bytes: " + bytes.error().message);
    if (*bytes < 1024 || *bytes > (std::size_t{1} << 30)) {
      return rd.err("out_of_range", n, "log_cap_bytes = " + text + " is out of range [1KiB, 1GiB]");
    }
    c.log_cap_bytes = *bytes;
  }
  if (root["kill_grace_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.kill_grace_s, rd.number(node("kill_grace_s"), "kill_grace_s", 0, 3600));
  }
  if (root["shutdown_grace_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.shutdown_grace_s, rd.number(node("shutdown_grace_s"), "shutdown_grace_s", 0, 86400));
  }
  if (root["git_timeout_s"]) {
    double t = 0;
    KAKEYA_ASSIGN_OR_RETURN(t, rd.number(node("git_timeout_s"), "git_timeout_s", 1, 3600));
    c.git_timeout_s = static_cast<int>(t);
  }
  if (root["publish_retry_s"]) {
    KAKEYA_ASSIGN_OR_RETURN(c.publish_retry_s, rd.number(node("publish_retry_s"), "publish_retry_s", 0, 86400));
  }
  if (root["tool_dirs"]) {
    const YAML::Node n = node("tool_dirs");
    if (!n.IsSequence()) return rd.err("bad_type", n, "tool_dirs must be a list, got " + Reader::show(n));
    c.tool_dirs.clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      KAKEYA_ASSIGN_OR_RETURN(std::filesystem::path p, rd.path(n[i], "tool_dirs[" + std::to_string(i) + "]"));
      c.tool_dirs.push_back(std::move(p));
    }
  }
  if (root["identity"]) {
    const YAML::Node id = node("identity");
    KAKEYA_TRY(rd.check_map(id, "identity", {"name", "email"}));
    if (id["name"]) {
      KAKEYA_ASSIGN_OR_RETURN(c.identity.name, rd.string(id["name"], "identity.name"));
      if (c.identity.name.empty() || c.identity.name.find_first_of("<>\n\r") != std::string::npos) {
        return rd.err("bad_value", id["name"], "identity.name '" + c.identity.name + "' must be non-empty without <, > or newlines");
      }
    }
    if (id["email"]) {
      KAKEYA_ASSIGN_OR_RETURN(c.identity.email, rd.string(id["email"], "identity.email"));
      const std::string& e = c.identity.email;
      if (e.find('@') == std::string::npos || e.find_first_of("<> \t\n\r") != std::string::npos) {
        return rd.err("bad_value", id["email"], "identity.email '" + e + "' must look like user@host");
      }
    }
  }
  return c;
}

}  // namespace

Result<std::size_t> parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 18) return make_error("bad_value", "'" + std::string(text) + "' is not a byte size like 8MiB");
  const unsigned long long n = std::stoull(std::string(text.substr(0, i)));
  std::string_view unit = text.substr(i);
  if (!unit.empty() && unit[0] == ' ') unit.remove_prefix(1);
  unsigned long long mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  if (unit == "KiB") mult = 1ull << 10;
  if (unit == "MiB") mult = 1ull << 20;
  if (unit == "GiB") mult = 1ull << 30;
  if (mult == 0) {
    return make_error("bad_value", "'" + std::string(text) + "' has an unknown unit (use B, KiB, MiB or GiB)");
  }
  if (n > (1ull << 40) / mult) return make_error("bad_value", "'" + std::string(text) + "' is too large");
  return static_cast<std::size_t>(n * mult);
}

Result<RunnerConfig> parse_runner_config(std::string_view yaml_text, const std::filesystem::path& origin) {
  const std::filesystem::path abs_origin =
      origin.is_absolute() ? origin : std::filesystem::absolute(origin).lexically_normal();
  const Reader rd(abs_origin);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return rd.err("parse_error", e.mark, e.msg);
  }
  try {
    return parse_node(rd, root);
  } catch (const YAML::Exception& e) {  // defensive: yaml-cpp accessors may throw
    return rd.err("parse_error", e.mark, e.msg);
  }
}

Result<RunnerConfig> load_runner_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("io_error", "cannot read runner config " + path.string() + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_runner_config(ss.str(), path);
}

Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role,
                                            const std::filesystem::path& home_dir) {
  if (!valid_id(role)) return make_error("bad_value", "model role '" + role + "' must match [A-Za-z0-9._-]{1,64}");
  std::error_code ec;
  if (const auto it = config.models.find(role); it != config.models.end()) {
    if (!std::filesystem::exists(it->second, ec)) {
      return make_error("not_found", "model role '" + role + "' is set to " + it->second.string() + " in " +
                                         config.source_path.string() + " but that file does not exist");
    }
    return it->second;
  }
  if (!home_dir.empty()) {
    const std::filesystem::path p = home_dir / ".kakeya" / "models" / role;
    if (std::filesystem::exists(p, ec)) return p;
  }
  return make_error("not_found", "model role '" + role + "' not configured (set models." + role + " in " +
                                     config.source_path.string() + " or place ~/.kakeya/models/" + role + ")");
}

Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role) {
  return resolve_model(config, role, home_directory());
}

}  // namespace kakeya::runner
