#pragma once
// Fixed paths and names of the git bus, protocol v1 (DESIGN.md §2). Paths are relative to
// the root of a request branch's tree and use `/`; directory constants end with `/`.

#include <string_view>

namespace kakeya::bridge {

inline constexpr std::string_view kKakeyaDir = ".kakeya/";
inline constexpr std::string_view kRequestPath = ".kakeya/request.json";  // written by the client
inline constexpr std::string_view kRunDir = ".kakeya/run/";                // written by the runner
inline constexpr std::string_view kStatusPath = ".kakeya/run/status.json";
inline constexpr std::string_view kSummaryPath = ".kakeya/run/summary.json";
inline constexpr std::string_view kLogsDir = ".kakeya/run/logs/";
inline constexpr std::string_view kResultsDir = ".kakeya/run/results/";
inline constexpr std::string_view kGatePath = ".kakeya/run/gate.json";
inline constexpr std::string_view kCancelPath = ".kakeya/run/cancel.json";  // written by the client

// Request branches: refs/heads/<prefix><preset>-<nonce>[<suffix>] (bridge/branch.h).
inline constexpr std::string_view kDefaultBranchPrefix = "kakeya/req/";
// Runner state branches: refs/heads/kakeya/runners/<runner-id>. Never requests.
inline constexpr std::string_view kRunnerBranchPrefix = "kakeya/runners/";
inline constexpr std::string_view kRefsHeadsPrefix = "refs/heads/";

}  // namespace kakeya::bridge
