#pragma once
// The runner's own configuration (operator-owned YAML; see deploy/runner.example.yaml for
// every key with its default and bounds). Loading is strict: unknown or duplicate keys, wrong
// types and out-of-range values are errors that name `<file>:<line>:<col>` and the key.
// Relative paths (and "~/") are resolved against the config file's directory (and $HOME).

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/catalog.h"
#include "bridge/result.h"
#include "bridge/units.h"
#include "runner/request_signing.h"

namespace kakeya::runner {

struct RunnerConfig {
  std::string remote_url;                                   // required; no embedded password
  std::optional<std::filesystem::path> credentials_file;    // bridge/credentials format
  std::vector<std::string> branch_patterns{"kakeya/req/**"};  // globs over branch names
  std::string runner_id;                                    // default: hostname; [A-Za-z0-9._-]{1,64}
  std::vector<std::string> labels;                          // each [A-Za-z0-9._-]{1,64}, unique
  std::filesystem::path work_dir;                           // required; absolute after load
  std::filesystem::path catalog_path;                       // required; presets.yaml of this install
  std::map<std::string, std::filesystem::path> models;      // role or name -> GGUF path
  double poll_interval_s = 10;                              // [0.05, 3600]
  double poll_jitter = 0.2;                                 // fraction of poll_interval_s, [0, 1)
  double heartbeat_s = 30;                                  // [0.05, lease_s)
  double lease_s = 300;                                     // (heartbeat_s, 604800]
  int max_jobs = 1;                                         // [1, 64]
  std::vector<std::string> secret_env;                      // env names (bridge/names.h) whose values are redacted
  std::size_t log_cap_bytes = 8u << 20;                     // [1 KiB, 1 GiB]; "8MiB" accepted
  double kill_grace_s = 10;                                 // SIGTERM -> SIGKILL, [0, 3600]
  double shutdown_grace_s = 600;                            // running jobs on shutdown, [0, 86400]
  int git_timeout_s = 60;                                   // deadline of each git network op, integer [1, 3600]
  double publish_retry_s = 120;                             // final publish retries before spooling, [0, 86400]
  std::vector<std::filesystem::path> tool_dirs{"/usr/local/bin", "/usr/bin", "/bin"};  // argv[0] lookup
  // Runner commits: name, email and identity.signing_key (an SSH key file; unset = unsigned, the
  // default; set = every runner commit is SSH-signed, bridge/gitbus.h CommitAuthor).
  bridge::CommitAuthor identity{"kakeya-runner", "runner@kakeya.invalid"};
  // Unset (the default): request commits need no signature. Set: runner/request_signing.h.
  std::optional<RequestSigningPolicy> request_signing;
  // Observation (runner/metrics_server.h): loopback HOST:PORT for /metrics and /healthz; off
  // when absent. /healthz is unhealthy once polls have failed for health_poll_failure_s.
  std::optional<std::string> metrics_listen;
  double health_poll_failure_s = 300;                       // [1, 604800]
  // Workspace retention (runner/workspace.h): a job's directory under work_dir/jobs/ is removed
  // once its result is published, except for the newest keep_failed_jobs jobs that did not
  // succeed, which are kept while they take at most keep_failed_jobs_bytes together.
  int keep_failed_jobs = 5;                                 // [0, 1000]
  std::size_t keep_failed_jobs_bytes = std::size_t{1} << 30;  // [1 MiB, 1 TiB]; "1GiB" accepted

  std::filesystem::path source_path;  // the file this was loaded from (absolute), for messages
};

// Reads and validates `path` with the strict YAML reader (bridge/yaml_strict.h). Errors: "io"
// (unreadable), "too_large", "parse_error" (not YAML), "unknown_key", "duplicate_key",
// "missing_key", "bad_type", "out_of_range", "bad_value".
Result<RunnerConfig> load_runner_config(const std::filesystem::path& path);

// Same from text; `origin` names the file in messages and its directory anchors relative paths.
Result<RunnerConfig> parse_runner_config(std::string_view yaml_text, const std::filesystem::path& origin);

// Model registry lookup for `${MODEL:role}`: config `models.<role>` (the file must exist) >
// `<home>/.kakeya/models/<role>` if it exists > error "not_found":
// "model role 'x' not configured (set models.x in <config> or place ~/.kakeya/models/x)".
// `role` must match [A-Za-z0-9._-]{1,64} and not be "." or ".." ("bad_value").
Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role);
// Same with an explicit home directory (the one-argument form uses $HOME, then the passwd entry).
Result<std::filesystem::path> resolve_model(const RunnerConfig& config, const std::string& role,
                                            const std::filesystem::path& home_dir);

// Whether this runner can run `preset`: it has every label the preset requires and every model
// role the preset names resolves (resolve_model). When not, `why` says which is missing, e.g.
// "runner lacks label 'vulkan'" or resolve_model's message. Requests for such a preset wait for
// a runner that can run it, and runner.json does not advertise it.
bool preset_runnable(const RunnerConfig& config, const bridge::PresetSpec& preset, std::string* why);

// Byte sizes such as log_cap_bytes ("8MiB"): bridge/units.h.
using bridge::parse_byte_size;

}  // namespace kakeya::runner
