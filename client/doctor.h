#pragma once
// `kakeya doctor`: can this client talk to the bus? Each check ok/FAIL with its reason.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/settings.h"

namespace kakeya::client {

struct DoctorCheck {
  std::string name;    // "remote", "credentials", "reachable", "push", "catalog"
  bool ok = false;
  std::string detail;  // the reason (never a secret)
};

// Runs the checks in order: remote configured; credentials load (the source actually used,
// bridge::Credentials::source, never the secret); remote reachable (ls_remote); push permission in the namespace (create-only push of
// an empty commit to refs/heads/<ns>/doctor-probe-<nonce>, then delete_cas it — retried on the
// tip a runner may have moved it to); preset catalog loads (N presets). Checks that depend on
// a failed one are reported as FAIL "skipped: ...".
std::vector<DoctorCheck> run_doctor(const GlobalOptions& opts);

nlohmann::json doctor_to_json(const std::vector<DoctorCheck>& checks);

}  // namespace kakeya::client
