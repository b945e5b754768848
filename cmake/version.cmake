# Writes the build's version header (cmake/version.h.in) with the source tree's current commit.
# Run with -P at configure time and again at every build (the kakeya_version target), so that an
# incremental build after a commit stamps that commit, not the one CMake was configured at.
# configure_file leaves OUT untouched when its text is unchanged, so a build without a new commit
# recompiles nothing.
# Inputs (-D): SOURCE_DIR, IN, OUT, PROJECT_VERSION, CMAKE_BUILD_TYPE, CMAKE_CXX_COMPILER_ID,
# CMAKE_CXX_COMPILER_VERSION. Without git or outside a checkout the commit is "unknown".
execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE KAKEYA_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT KAKEYA_GIT_COMMIT)
  set(KAKEYA_GIT_COMMIT "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
