#include "client/target.h"

#include <algorithm>

#include "bridge/utf8.h"

namespace kakeya::client {
namespace {

constexpr std::string_view kHeads = "refs/heads/";

// A request suffix starts with '-', '.' or '_' (bridge/branch.h), so only those may follow a nonce.
bool is_suffix_start(char c) { return c == '-' || c == '.' || c == '_'; }

}  // namespace

bool leaf_has_nonce(std::string_view leaf, std::string_view nonce) {
  if (nonce.empty()) return false;
  std::string needle = "-" + std::string(nonce);
  for (std::size_t pos = leaf.find(needle); pos != std::string_view::npos;
       pos = leaf.find(needle, pos + 1)) {
    if (pos == 0) continue;  // no preset part before the nonce
    std::size_t end = pos + needle.size();
    if (end == leaf.size() || is_suffix_start(leaf[end])) return true;
  }
  return false;
}

Result<std::string> resolve_target(std::string_view arg, std::string_view prefix,
                                   const std::vector<std::string>& branches) {
  if (arg.starts_with(kHeads)) arg.remove_prefix(kHeads.size());
  if (arg.empty()) return make_error(errc::kUsage, "empty BRANCH|NONCE argument");
  auto advertised = [&](std::string_view name) { return std::find(branches.begin(), branches.end(), name) != branches.end(); };
  if (advertised(arg)) return std::string(arg);
  // Without the namespace: "env-probe-<nonce>" under the session's prefix first, then any branch
  // that ends with "/<arg>" ("req/env-probe-<nonce>", or a leaf under another prefix).
  if (const std::string under = std::string(prefix) + std::string(arg); advertised(under)) return under;
  std::vector<std::string> tails;
  for (const auto& b : branches) {
    if (b.size() > arg.size() && b.ends_with(arg) && b[b.size() - arg.size() - 1] == '/') tails.push_back(b);
  }
  if (tails.size() == 1) return tails.front();
  if (tails.size() > 1) {
    std::string list;
    for (const auto& m : tails) list += (list.empty() ? "" : ", ") + m;
    return make_error(errc::kAmbiguous, "'" + bridge::printable(arg) + "' ends " + std::to_string(tails.size()) +
                                            " branches: " + list + " (give the whole branch)");
  }
  if (arg.find('/') != std::string_view::npos) {
    return make_error(errc::kNotFound, "branch '" + bridge::printable(arg) + "' does not exist on the remote");
  }
  std::vector<std::string> matches;
  for (const auto& b : branches) {
    if (!b.starts_with(prefix)) continue;
    std::string_view leaf = std::string_view(b).substr(prefix.size());
    if (leaf.find('/') != std::string_view::npos) continue;
    if (leaf_has_nonce(leaf, arg)) matches.push_back(b);
  }
  if (matches.empty()) {
    return make_error(errc::kNotFound, "no request branch under '" + std::string(prefix) + "' has nonce '" +
                                       bridge::printable(arg) + "'");
  }
  if (matches.size() > 1) {
    std::string list;
    for (const auto& m : matches) list += (list.empty() ? "" : ", ") + m;
    return make_error(errc::kAmbiguous, "nonce '" + bridge::printable(arg) + "' matches " +
                                       std::to_string(matches.size()) + " branches: " + list);
  }
  return matches.front();
}

}  // namespace kakeya::client
