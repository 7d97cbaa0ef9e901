// sandbox/lifecycle.h in a build without the Linux backends (TNK_LINUX_BACKENDS=OFF, as on macOS):
// the ns and vm sandboxes cannot run, and every entry point says so. lifecycle.cc is the real one.
#include "backend/linux_backends.h"

#if !TNK_LINUX_BACKENDS
#include "sandbox/lifecycle.h"

namespace tnk::sandbox {
namespace {

Error not_in_this_build(const std::string& backend) {
  return failed("the " + backend + " backend is not part of this build of tnk (built with TNK_LINUX_BACKENDS=OFF)",
                "use --backend lima (see `tnk doctor`), or build tnk on Linux with the default options");
}

}  // namespace

Result<StartOutcome> ensure_running(Context&, const Resolved& resolved, const std::filesystem::path&) {
  return not_in_this_build(resolved.backend);
}

Status stop_sandbox(const Paths&, const std::string&, std::chrono::milliseconds, Log&) {
  return not_in_this_build("ns/vm");
}

void clean_after_crash(const Paths&, const std::string&) {}

}  // namespace tnk::sandbox
#endif
