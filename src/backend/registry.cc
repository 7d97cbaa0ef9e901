#include "backend/registry.h"

#include "backend/k8s/k8s_backend.h"
#include "backend/lima/lifecycle.h"
#include "core/phase_timer.h"
#include "host/linux_backends.h"
#if TNK_LINUX_BACKENDS
#include "backend/supervised/supervised_backend.h"
#endif

namespace tnk::backend {

Result<std::unique_ptr<sandbox::Backend>> open_backend(Context& ctx, BackendKind kind) {
  switch (kind) {
    case BackendKind::kLima: return lima::make_lima_backend();
    case BackendKind::kNs:
    case BackendKind::kVm:
#if TNK_LINUX_BACKENDS
      return supervised::make_supervised_backend(kind);
#else
      return failed(std::string("the ") + to_string(kind) +
                        " backend is not part of this build of tnk (built with TNK_LINUX_BACKENDS=OFF)",
                    "use --backend lima (see `tnk doctor`), or build tnk on Linux with the default options");
#endif
    case BackendKind::kK8s: {
      TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
      return k8s::make_k8s_backend(*config, ctx.paths.home);
    }
    case BackendKind::kAuto: break;
  }
  return failed("the backend 'auto' must be resolved to a backend before it is opened");
}

namespace {

// Whether the sandbox runs, as its backend sees it; notes when that cannot be told.
void observe_state(Context& ctx, sandbox::Resolved& r) {
  auto backend = open_backend(ctx, r.record->backend);
  if (!backend) {
    r.notes.push_back("cannot tell whether " + r.id + " runs: " + backend.error().message);
    return;
  }
  sandbox::Observed seen = (*backend)->observe(ctx.paths, r.id);
  if (seen.problem)
    r.notes.push_back("cannot ask " + std::string(to_string(r.record->backend)) + " whether " + r.id +
                      " runs: " + *seen.problem);
  r.state = seen.state;
}

}  // namespace

Result<sandbox::Resolved> resolve(Context& ctx, const sandbox::ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, sandbox::resolve(ctx, options));
  std::optional<sandbox::StartedWith> started;
  if (r.record) {
    observe_state(ctx, r);
    mark_phase("observe");
    if (options.keep_started_endpoint && r.state == state::SandboxState::kRunning && r.record->started_at) {
      started = sandbox::load_started_with(state::Store(ctx.paths.sandboxes_dir()), r.id, *r.record->started_at);
    }
  }
  TNK_RETURN_IF_ERROR(sandbox::settle_endpoint(ctx, r, started));
  return r;
}

}  // namespace tnk::backend
