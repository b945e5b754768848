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
  if (seg.empty() || seg.front() == '.' || ends_with(seg, ".lock") || ends_with(seg, ".")) return false;
  if (seg.find("..") != std::string_view::npos) return false;
  return std::all_of(seg.begin(), seg.end(), ref_char);
}

Error bad_branch(std::string_view what, std::string_view value, std::string_view why) {
  return make_error(errc::kBadBranch, std::string(what) + " \"" + printable(value, kMaxShownBranchBytes) + "\" " +
                                     std::string(why));
}

constexpr std::string_view kSuffixStarts = "-._";

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

bool is_valid_request_branch(std::string_view b) {
  if (b.empty() || b.size() > kMaxBranchNameBytes || is_runner_branch(b)) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = b.find('/', start);
    if (!valid_segment(b.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start))) {
      return false;
    }
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

bool is_valid_branch_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() >= kMaxBranchNameBytes || prefix.front() == '/') return false;
  if (prefix.find("//") != std::string_view::npos || prefix.find("..") != std::string_view::npos) return false;
  if (!std::all_of(prefix.begin(), prefix.end(), [](char c) { return c == '/' || ref_char(c); })) return false;
  if (prefix.substr(0, kRunnerBranchPrefix.size()) == kRunnerBranchPrefix) return false;
  // The complete segments follow git's rules; the last, partial one continues into the preset,
  // so it only may not start with '.' (the whole name is checked again when assembled).
  std::size_t start = 0;
  while (true) {
    const std::size_t end = prefix.find('/', start);
    if (end == std::string_view::npos) return prefix[start] != '.' || start == prefix.size();
    if (!valid_segment(prefix.substr(start, end - start))) return false;
    start = end + 1;
    if (start == prefix.size()) return true;  // ends with '/'
  }
}

bool is_valid_branch_suffix(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 64 || kSuffixStarts.find(s[0]) == std::string_view::npos) return false;
  if (!std::all_of(s.begin(), s.end(), ref_char)) return false;
  return s.find("..") == std::string_view::npos && !ends_with(s, ".") && !ends_with(s, ".lock");
}

std::string request_branch_name(std::string_view prefix, std::string_view preset, std::string_view nonce,
                                std::string_view suffix) {
  std::string out(prefix);
  out += preset;
  out += '-';
  out += nonce;
  out += suffix;
  return out;
}

Status check_request_branch_parts(std::string_view prefix, std::string_view preset, std::string_view nonce,
                                  std::string_view suffix) {
  if (!is_valid_branch_prefix(prefix)) {
    return bad_branch("prefix", prefix,
                      "must be [A-Za-z0-9._/-] ending with '/' or inside a segment (e.g. kakeya/req/, "
                      "agents/kakeya-), following git ref rules, outside kakeya/runners/");
  }
  if (!is_valid_preset_name(preset)) return bad_branch("preset", preset, "must match ^[a-z][a-z0-9-]{1,40}$");
  if (!is_valid_nonce(nonce)) return bad_branch("nonce", nonce, "must match ^[a-z0-9][a-z0-9-]{3,63}$");
  if (!is_valid_branch_suffix(suffix)) {
    return bad_branch("suffix", suffix,
                      "must start with '-', '.' or '_' followed by at most 63 of [A-Za-z0-9._-]");
  }
  const std::string name = request_branch_name(prefix, preset, nonce, suffix);
  if (!is_valid_request_branch(name)) {
    return bad_branch("branch", name,
                      "is not a valid request branch (at most " + std::to_string(kMaxBranchNameBytes) +
                          " bytes, each segment following git ref rules)");
  }
  return ok_status();
}

Status check_branch_matches(std::string_view branch_name, const RequestManifest& manifest) {
  const std::string_view b = strip_heads_prefix(branch_name);
  if (is_runner_branch(b)) return bad_branch("branch", b, "is a runner state branch, not a request");
  const std::string expected = manifest.preset + "-" + manifest.nonce;
  if (is_valid_request_branch(b)) {
    for (std::size_t at = b.find(expected); at != std::string_view::npos; at = b.find(expected, at + 1)) {
      if (is_valid_branch_prefix(b.substr(0, at)) && is_valid_branch_suffix(b.substr(at + expected.size()))) {
        return ok_status();
      }
    }
  }
  return make_error(errc::kBranchMismatch, "branch \"" + printable(b, kMaxShownBranchBytes) + "\" is not <prefix>" +
                                           expected + "[suffix] (request preset \"" + manifest.preset +
                                           "\", nonce \"" + manifest.nonce + "\")");
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
