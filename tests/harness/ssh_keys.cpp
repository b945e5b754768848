#include "tests/harness/ssh_keys.h"

#include <fstream>

#include "bridge/child_process.h"

namespace kakeya::testing {

Result<std::filesystem::path> make_ssh_key(const std::filesystem::path& dir, const std::string& name,
                                           const std::string& type, int bits, const std::string& comment) {
  const std::filesystem::path key = dir / name;
  std::vector<std::string> argv{"ssh-keygen", "-q", "-t", type, "-N", "", "-C", comment, "-f", key.string()};
  if (bits > 0) {
    argv.push_back("-b");
    argv.push_back(std::to_string(bits));
  }
  KAKEYA_ASSIGN_OR_RETURN(bridge::ChildOutput r, bridge::run_child(argv, "", 60));
  if (!r.succeeded()) {
    return make_error(errc::kChildFailed, "`" + bridge::describe_argv(argv) + "` failed: " + r.err);
  }
  return key;
}

std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace kakeya::testing
