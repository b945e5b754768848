#include "client/session.h"

#include <cstdlib>
#include <system_error>

#include "bridge/branch.h"
#include "bridge/credentials.h"
#include "client/target.h"

namespace kakeya::client {

Result<Session> open_session(const GlobalOptions& opts) {
  KAKEYA_ASSIGN_OR_RETURN(std::string remote, resolve_remote(opts));
  KAKEYA_TRY(validate_prefix(opts.prefix));
  KAKEYA_ASSIGN_OR_RETURN(auto creds, bridge::load_credentials(remote, opts.credentials_file));
  KAKEYA_ASSIGN_OR_RETURN(auto cache, resolve_cache_dir(opts, remote));
  std::error_code ec;
  std::filesystem::create_directories(cache, ec);
  if (ec) {
    return make_error(errc::kIo, "cannot create cache directory '" + cache.string() + "': " + ec.message());
  }
  KAKEYA_ASSIGN_OR_RETURN(auto bus, bridge::GitBus::open(remote, cache, std::move(creds)));
  return Session{std::move(remote), opts.prefix, std::move(bus)};
}

Result<std::vector<std::string>> list_remote_branches(bridge::GitBus& bus) {
  KAKEYA_ASSIGN_OR_RETURN(auto refs, bus.ls_remote("refs/heads/"));
  std::vector<std::string> out;
  out.reserve(refs.size());
  constexpr std::string_view kHeads = "refs/heads/";
  for (const auto& r : refs) {
    if (r.name.starts_with(kHeads)) out.push_back(r.name.substr(kHeads.size()));
  }
  return out;
}

std::string head_ref(const std::string& branch) { return bridge::to_heads_ref(branch); }

bridge::CommitAuthor client_author(const std::string& requested_by) {
  bool looks_like_address = requested_by.find('@') != std::string::npos &&
                            requested_by.find_first_of(" <>\n") == std::string::npos;
  bridge::CommitAuthor author{"kakeya", looks_like_address ? requested_by : "kakeya@localhost"};
  if (const char* key = std::getenv("KAKEYA_SIGNING_KEY"); key != nullptr && key[0] != '\0') author.signing_key = key;
  return author;
}

}  // namespace kakeya::client

namespace kakeya::client {

Result<bridge::PresetCatalog> load_catalog(const GlobalOptions& opts) {
  KAKEYA_ASSIGN_OR_RETURN(auto path, resolve_catalog_path(opts));
  return bridge::PresetCatalog::load_file(path);
}

Result<std::string> resolve_branch_arg(Session& session, const std::string& arg) {
  KAKEYA_ASSIGN_OR_RETURN(auto branches, list_remote_branches(session.bus));
  return resolve_target(arg, session.prefix, branches);
}

}  // namespace kakeya::client
