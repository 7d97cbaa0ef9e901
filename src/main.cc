// tnk: a per-project sandbox for AI coding agents. See README.md and docs/.
#include <cstring>

#include "backend/linux_backends.h"
#include "cli/app.h"
#if TNK_LINUX_BACKENDS
#include "supervisor/launch.h"
#include "supervisor/supervisor_main.h"
#endif

int main(int argc, char** argv) {
#if TNK_LINUX_BACKENDS  // the supervisor of an ns sandbox is tnk itself, re-executed
  if (argc == 3 && std::strcmp(argv[1], tnk::supervisor::kSuperviseArg) == 0) {
    return tnk::supervisor::supervisor_main();
  }
#endif
  return tnk::cli::run(argc, argv);
}
