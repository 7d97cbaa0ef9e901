// tnk: a per-project sandbox for AI coding agents. See README.md and docs/.
#include <cstring>

#include "cli/app.h"
#include "host/linux_backends.h"
#if TNK_LINUX_BACKENDS
#include "backend/ns/disk_watch.h"
#include "backend/supervised/engines.h"
#include "supervisor/launch.h"
#include "supervisor/supervisor_main.h"
#endif

int main(int argc, char** argv) {
#if TNK_LINUX_BACKENDS  // the supervisor of an ns or vm sandbox is tnk itself, re-executed
  if (argc == 3 && std::strcmp(argv[1], tnk::supervisor::kSuperviseArg) == 0) {
    if (std::strcmp(argv[0], "tnk") != 0) return tnk::supervisor::reexec_as_tnk(argv);  // from systemd-run
    return tnk::supervisor::supervisor_main(tnk::supervised::make_engine);
  }
  if (argc >= 2 && std::strcmp(argv[1], tnk::ns::kDiskWatchArg) == 0) {  // started by an ns sandbox's supervisor
    return tnk::ns::disk_watch_main(argc, argv);
  }
#endif
  return tnk::cli::run(argc, argv);
}
