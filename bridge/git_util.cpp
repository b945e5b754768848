#include "bridge/git_util.h"

#include <mutex>

namespace kakeya::bridge::git {

void ensure_init() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

Error last_error(ErrorCode code, const std::string& what) {
  const git_error* e = git_error_last();
  std::string detail = (e != nullptr && e->message != nullptr) ? e->message : "(no libgit2 detail)";
  return make_error(code, what + ": " + detail);
}

Result<git_oid> parse_oid(const std::string& hex, const std::string& field) {
  git_oid oid;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstrn(&oid, hex.data(), hex.size()) != 0) {
    return make_error(errc::kBadOid, field + " '" + hex + "' is not a 40-hex-digit object id");
  }
  return oid;
}

std::string to_hex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return std::string(buf);
}

}  // namespace kakeya::bridge::git
