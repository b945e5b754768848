#pragma once
// Size and depth limits of the git bus (protocol v1), checked BEFORE anything is parsed
// (docs/protocol.md "Limits", docs/security.md). A blob's size is read from its object header, so
// an oversized file is refused without reading it. Exceeding a limit on a request branch is a
// `rejected` receipt naming the path (or branch) and both sizes.

#include <cstddef>

namespace kakeya::bridge {

// .kakeya/request.json: 7 short fields and params whose strings are capped at 8 KiB each by the
// catalog; 64 KiB leaves room for several long string params.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;
// .kakeya/run/status.json: runner-written; the largest field is log_tail (2 KiB).
inline constexpr std::size_t kMaxStatusBytes = 64 * 1024;
// .kakeya/run/cancel.json: requested_by, created_at and a one-line reason.
inline constexpr std::size_t kMaxCancelBytes = 16 * 1024;

// A reason a runner writes into status.json or summary.json (a rejection, a failure), and the
// log_tail it keeps: one line, at most this many bytes (bridge::printable / utf8_tail cut it).
inline constexpr std::size_t kMaxReasonBytes = 2048;

// Runner-written files that clients read (a forged one is just as possible): summary.json lists
// argv, outputs and log counts; runner.json (kakeya/runners/<id>) a few fields.
inline constexpr std::size_t kMaxSummaryBytes = 1024 * 1024;
inline constexpr std::size_t kMaxRunnerDocBytes = 64 * 1024;

// A request branch's name without refs/heads/, in bytes (fits one file name: NAME_MAX).
inline constexpr std::size_t kMaxBranchNameBytes = 255;

// The ref advertisement of one ls-remote: refs with longer names are left out (never fetched);
// past kMaxAdvertisedRefs refs only the first are considered (in advertisement order, which git
// sorts by name) and the rest wait until branches are deleted (`kakeya gc`).
inline constexpr std::size_t kMaxRefNameBytes = 1024;
inline constexpr std::size_t kMaxAdvertisedRefs = 20000;

}  // namespace kakeya::bridge
