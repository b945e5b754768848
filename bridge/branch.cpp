#include "bridge/branch.h"

#include <algorithm>

#include "bridge/layout.h"
#include "bridge/limits.h"
#include "bridge/utf8.h"

namespace kakeya::bridge {
namespace {

// Branch names in messages: escaped (printable) and bounded.
constexpr std::size_t kMaxShownBranchBytes = kMaxBranchNameBytes;

bool ref_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// One ref segment of [A-Za-z0-9._-]+ that git accepts.
bool valid_segment(std::string_view seg) {
  if (seg.empty() || seg.size() > 100 || seg.front() == '.' || ends_with(seg, ".lock") || ends_with(seg, ".")) {
    return false;
  }
  if (seg.find("..") != std::string_view::npos) return false;
  for (char c : seg) {
    if (!ref_char(c)) return false;
  }
  return true;
}

Error bad_branch(std::string_view what, std::string_view value, std::string_view why) {
  return make_error("bad_branch", std::string(what) + " \"" + printable(value, kMaxShownBranchBytes) + "\" " +
                                     std::string(why));
}

}  // namespace

std::string_view strip_heads_prefix(std::string_view ref) {
  if (ref.substr(0, kRefsHeadsPrefix.size()) == kRefsHeadsPrefix) ref.remove_prefix(kRefsHeadsPrefix.size());
  return ref;
}

std::string to_heads_ref(std::string_view branch) {
  if (branch.substr(0, kRefsHeadsPrefix.size()) == kRefsHeadsPrefix) return std::string(branch);
  return std::string(kRefsHeadsPrefix) + std::string(branch);
}

bool is_runner_branch(std::string_view branch) {
  std::string_view b = strip_heads_prefix(branch);
  return b.size() > kRunnerBranchPrefix.size() && b.substr(0, kRunnerBranchPrefix.size()) == kRunnerBranchPrefix;
}

std::string runner_branch_name(std::string_view runner_id) {
  return std::string(kRunnerBranchPrefix) + std::string(runner_id);
}

bool is_valid_namespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 200) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t end = ns.find('/', start);
    std::string_view seg = ns.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!valid_segment(seg)) return false;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string_view runners = kRunnerBranchPrefix.substr(0, kRunnerBranchPrefix.size() - 1);  // "kakeya/runners"
  if (ns == runners || is_runner_branch(ns)) return false;
  return true;
}

bool is_valid_branch_suffix(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 64 || (s[0] != '.' && s[0] != '_')) return false;
  for (char c : s) {
    if (!ref_char(c)) return false;
  }
  return s.find("..") == std::string_view::npos && !ends_with(s, ".") && !ends_with(s, ".lock");
}

std::string request_branch_name(std::string_view ns, std::string_view preset, std::string_view nonce,
                                std::string_view suffix) {
  std::string out(ns);
  out += '/';
  out += preset;
  out += '-';
  out += nonce;
  out += suffix;
  return out;
}

Status check_request_branch_parts(std::string_view ns, std::string_view preset, std::string_view nonce,
                                  std::string_view suffix) {
  if (!is_valid_namespace(ns)) {
    return bad_branch("namespace", ns,
                      "must be /-separated segments of [A-Za-z0-9._-] (git ref rules) outside kakeya/runners");
  }
  if (!is_valid_preset_name(preset)) return bad_branch("preset", preset, "must match ^[a-z][a-z0-9-]{1,40}$");
  if (!is_valid_nonce(nonce)) return bad_branch("nonce", nonce, "must match ^[a-z0-9][a-z0-9-]{3,63}$");
  if (!is_valid_branch_suffix(suffix)) {
    return bad_branch("suffix", suffix, "must start with `.` or `_` followed by at most 63 of [A-Za-z0-9._-]");
  }
  return ok_status();
}

Status check_branch_matches(std::string_view branch_name, const RequestManifest& manifest) {
  std::string_view b = strip_heads_prefix(branch_name);
  if (is_runner_branch(b)) return bad_branch("branch", b, "is a runner state branch, not a request");
  std::size_t slash = b.rfind('/');
  std::string expected = manifest.preset + "-" + manifest.nonce;
  if (slash == std::string_view::npos || !is_valid_namespace(b.substr(0, slash))) {
    return make_error("branch_mismatch", "branch \"" + printable(b, kMaxShownBranchBytes) + "\" is not <namespace>/" + expected +
                                             "[suffix] (request preset \"" + manifest.preset + "\", nonce \"" +
                                             manifest.nonce + "\")");
  }
  std::string_view tail = b.substr(slash + 1);
  if (tail.substr(0, expected.size()) != expected || !is_valid_branch_suffix(tail.substr(expected.size()))) {
    return make_error("branch_mismatch", "branch \"" + printable(b, kMaxShownBranchBytes) + "\" ends in \"" +
                                             printable(tail, kMaxShownBranchBytes) +
                                             "\" but the request says preset \"" + manifest.preset + "\", nonce \"" +
                                             manifest.nonce + "\" (expected \"" + expected + "[suffix]\")");
  }
  return ok_status();
}

bool glob_match(std::string_view pat, std::string_view name) {
  // Dynamic programming over (pattern position, name position): O(|pat| * |name|), no backtracking
  // blow-up. reach[j] = pattern prefix matches name prefix of length j.
  std::vector<char> reach(name.size() + 1, 0), next(name.size() + 1, 0);
  reach[0] = 1;
  std::size_t i = 0;
  while (i < pat.size()) {
    std::fill(next.begin(), next.end(), 0);
    if (pat[i] == '*') {
      bool dbl = i + 1 < pat.size() && pat[i + 1] == '*';
      // next[j]: some k <= j has reach[k] and name[k, j) is all non-'/' (for `*`) or anything (`**`).
      bool seen = false;
      for (std::size_t j = 0; j <= name.size(); ++j) {
        if (j > 0 && !dbl && name[j - 1] == '/') seen = false;
        if (reach[j]) seen = true;
        next[j] = seen ? 1 : 0;
      }
      i += dbl ? 2 : 1;
    } else {
      for (std::size_t j = 0; j < name.size(); ++j) {
        if (!reach[j]) continue;
        if (pat[i] == '?' ? name[j] != '/' : name[j] == pat[i]) next[j + 1] = 1;
      }
      i += 1;
    }
    reach.swap(next);
  }
  return reach[name.size()] != 0;
}

bool branch_glob_match(std::string_view pattern, std::string_view branch) {
  std::string_view b = strip_heads_prefix(branch);
  if (is_runner_branch(b)) return false;
  return glob_match(strip_heads_prefix(pattern), b);
}

bool branch_matches_any(const std::vector<std::string>& patterns, std::string_view branch) {
  for (const auto& p : patterns) {
    if (branch_glob_match(p, branch)) return true;
  }
  return false;
}

}  // namespace kakeya::bridge
