// tnk: a per-project sandbox for AI coding agents. See README.md and docs/.
#include <cstring>

#include "cli/app.h"
#include "host/linux_backends.h"
#if TNK_LINUX_BACKENDS
#include "backend/supervised/engines.h"
#include "supervisor/launch.h"
#include "supervisor/supervisor_main.h"
#endif

int main(int argc, char** argv) {
#if TNK_LINUX_BACKENDS  // the supervisor of an ns or vm sandbox is tnk itself, re-executed
  if (argc == 3 && std::strcmp(argv[1], tnk::supervisor::kSuperviseArg) == 0) {
    return tnk::supervisor::supervisor_main(tnk::supervised::make_engine);
  }
#endif
  return tnk::cli::run(argc, argv);
}
