#pragma once
// Who may ask this runner for what: an optional policy that request commits be SSH-signed (the
// format git uses with gpg.format=ssh, bridge/commit_signature.h) by a key in an allowed-signers
// file, and which presets each signer (principal) may run. Off by default.
//
//   request_signing:
//     allowed_signers: /etc/kakeya/request_signers   # git's allowed-signers format
//     presets:                                       # principal -> presets it may run
//       alice@example.com: [generate, env-probe]
//       ci@example.com: ["*"]                        # "*" = every preset of the catalog
//
// A queued request whose tip commit (the request commit: the client's commit that holds
// .kakeya/request.json over the workload tree) is unsigned, signed by a key the file does not
// allow, or signed by principals none of which may run its preset is `rejected` with the reason;
// so is a claimed one this runner would take over (authorize_claimed_request).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bridge/allowed_signers.h"
#include "bridge/gitbus.h"
#include "bridge/result.h"

namespace kakeya::runner {

inline constexpr std::string_view kAnyPreset = "*";

struct RequestSigningPolicy {
  std::filesystem::path allowed_signers_file;             // absolute
  bridge::AllowedSigners signers;                         // read from it when the config is loaded
  std::map<std::string, std::vector<std::string>> presets;  // principal -> presets ("*" = any)
};

// Checks the signature of the request commit `commit` (in the bus cache) against `policy` for a
// run of `preset`. Returns the principal that authorises it. Errors (their messages are the
// rejection reasons; each names the commit): `not_signed`, `bad_key`, `bad_signature`,
// `untrusted_signer` (bridge/commit_signature.h), `unauthorised_signer` (a good, allowed signature
// whose principals may not run `preset`; names them and what they may run); `not_fetched`,
// `repository` (the commit cannot be read).
Result<std::string> authorize_request(bridge::GitBus& bus, const RequestSigningPolicy& policy,
                                      const std::string& commit, const std::string& preset);

// The same for a request that is already claimed (its tip a runner commit), before this runner
// takes it over: a claim vouches for nothing (anyone can push a status.json that says "claimed"),
// so the request commit under the tip (bridge/run_history.h) is checked as above, and the
// commits above it may change only files under .kakeya/run/ (a changed request.json or workload
// would run something nobody signed). Errors: authorize_request's; `tampered` naming the first
// paths changed outside .kakeya/run/; read_run_history's.
Result<std::string> authorize_claimed_request(bridge::GitBus& bus, const RequestSigningPolicy& policy,
                                              const std::string& tip, const std::string& branch,
                                              const std::string& preset);

}  // namespace kakeya::runner
