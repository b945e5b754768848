// Entry point placeholder; replaced by the full CLI.
#include <CLI/CLI.hpp>
#include "bridge/version.h"
int main(int argc, char** argv) {
  CLI::App app{"runner"};
  app.set_version_flag("--version", kakeya::engine_version());
  CLI11_PARSE(app, argc, argv);
  return 0;
}
