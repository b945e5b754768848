#include "bridge/version.h"

#include "kakeya/version.h"

namespace kakeya {

std::string engine_version() { return std::string(KAKEYA_VERSION) + "+" + KAKEYA_GIT_COMMIT; }
std::string build_info() { return std::string(KAKEYA_COMPILER) + " " + KAKEYA_BUILD_TYPE; }

}  // namespace kakeya

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer suppressions, compiled into every binary (this file is linked by all of them).
// Third-party code only: libgit2 1.5 (Debian) leaks PCRE2 match frames inside the library, and
// Mesa's Vulkan loader/ICDs (lavapipe, LLVM) keep allocations after vkDestroyInstance, and
// OpenSSL 3 (libcrypto, via libgit2) keeps one 128-byte init allocation to exit.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpcre2-8.so\nleak:libgit2.so\nleak:libvulkan\nleak:libLLVM\nleak:libcrypto.so\n";
}
#endif
