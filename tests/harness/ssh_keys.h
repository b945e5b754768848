#pragma once
// Throwaway SSH keys for tests, made by the real `ssh-keygen` (argv, no shell).
#include <filesystem>
#include <string>

#include "bridge/result.h"

namespace kakeya::testing {

// Writes an unencrypted key pair `dir/name` + `dir/name.pub` (mode 0600 / 0644) of `type`
// ("ed25519", "rsa", "ecdsa"; `bits` for rsa/ecdsa, 0 = ssh-keygen's default) with comment
// `comment`. Returns the private key path. Error `child_failed` with ssh-keygen's stderr.
Result<std::filesystem::path> make_ssh_key(const std::filesystem::path& dir, const std::string& name,
                                           const std::string& type = "ed25519", int bits = 0,
                                           const std::string& comment = "kakeya-test");

// The first line of `path` (e.g. a .pub file: "<type> <base64> <comment>"), without the newline.
std::string first_line(const std::filesystem::path& path);

}  // namespace kakeya::testing
