#include "bridge/version.h"

#include "kakeya/version.h"

namespace kakeya {

std::string engine_version() { return std::string(KAKEYA_VERSION) + "+" + KAKEYA_GIT_COMMIT; }
std::string build_info() { return std::string(KAKEYA_COMPILER) + " " + KAKEYA_BUILD_TYPE; }

}  // namespace kakeya
