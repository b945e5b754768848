#include "runner/branch_view.h"

#include "bridge/json_text.h"
#include "bridge/layout.h"
#include "bridge/limits.h"

namespace kakeya::runner {

namespace {

// Reads `path` (a regular file of at most `max_bytes`) into `text`, or describes why not in
// `error` (the message names the path).
void read_bounded(bridge::GitBus& bus, const std::string& tip, std::string_view path, std::size_t max_bytes,
                  std::optional<std::string>& text, std::string& error) {
  auto r = bus.read_file(tip, std::string(path), max_bytes);
  if (r.ok()) {
    text = std::move(r).value();
  } else {
    error = r.error().message;
  }
}

}  // namespace

Result<BranchView> read_branch_view(bridge::GitBus& bus, const std::string& ref, const std::string& tip) {
  BranchView v;
  v.ref = ref;
  v.tip = tip;
  KAKEYA_TRY(bus.check_commit(tip));
  read_bounded(bus, tip, bridge::kRequestPath, bridge::kMaxRequestBytes, v.request_json, v.request_error);

  std::optional<std::string> status_text;
  read_bounded(bus, tip, bridge::kStatusPath, bridge::kMaxStatusBytes, status_text, v.status_error);
  if (status_text) {
    auto st = bridge::parse_status(*status_text);
    if (st.ok()) {
      v.status = std::move(st).value();
    } else {
      v.status_error = "invalid " + std::string(bridge::kStatusPath) + ": " + st.error().message;
    }
  }

  std::optional<std::string> cancel_text;
  read_bounded(bus, tip, bridge::kCancelPath, bridge::kMaxCancelBytes, cancel_text, v.cancel_error);
  v.cancel_requested = cancel_text.has_value() || !v.cancel_error.empty();
  if (cancel_text) {
    auto c = bridge::parse_cancel(*cancel_text);
    if (c.ok()) {
      v.cancel = std::move(c).value();
    } else {
      v.cancel_error = "invalid " + std::string(bridge::kCancelPath) + ": " + c.error().message;
    }
  }
  return v;
}

Result<BranchView> fetch_branch_view(bridge::GitBus& bus, const std::string& ref) {
  KAKEYA_ASSIGN_OR_RETURN(auto oids, bus.fetch({ref}));
  auto it = oids.find(ref);
  if (it == oids.end() || it->second.empty()) {
    return make_error(errc::kRefGone, "request branch " + ref + " no longer exists on the remote");
  }
  return read_branch_view(bus, ref, it->second);
}

Result<std::string> make_runner_commit(bridge::GitBus& bus, const std::string& parent,
                                       const std::vector<bridge::FileChange>& changes,
                                       const std::string& what, const bridge::CommitAuthor& author) {
  return bus.make_commit(parent, parent, changes, "kakeya-runner: " + what + " [skip ci]", author);
}

bridge::FileChange status_change(const bridge::RunStatus& status) {
  return bridge::FileChange{std::string(bridge::kStatusPath), bridge::status_json_text(status)};
}

}  // namespace kakeya::runner
