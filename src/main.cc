// tnk: a per-project sandbox for AI coding agents. See README.md and docs/.
#include <cstring>

#include "cli/app.h"
#include "supervisor/launch.h"
#include "supervisor/supervisor_main.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], tnk::supervisor::kSuperviseArg) == 0) {
    return tnk::supervisor::supervisor_main();
  }
  return tnk::cli::run(argc, argv);
}
