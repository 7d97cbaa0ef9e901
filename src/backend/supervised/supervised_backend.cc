#include "backend/supervised/supervised_backend.h"

#include "backend/supervised/lifecycle.h"
#include "backend/supervised/provision.h"
#include "backend/supervised/session_run.h"
#include "state/store.h"

namespace tnk::supervised {
namespace {

using sandbox::Resolved;

class SupervisedBackend final : public sandbox::Backend {
 public:
  explicit SupervisedBackend(BackendKind kind) : kind_(kind) {}

  BackendKind kind() const override { return kind_; }
  sandbox::Capabilities capabilities() const override {
    return {.port_forwards = true,
            .running_network = true,
            .agent_ping = kind_ == BackendKind::kVm,
            .protected_paths = true};
  }
  // The supervisor's pid file and the process behind it: a record never says whether it runs.
  sandbox::Observed observe(const Paths& paths, const std::string& id) override {
    return {state::observe(state::Store(paths.sandboxes_dir()), id), std::nullopt};
  }
  Result<sandbox::StartOutcome> ensure_running(Context& ctx, const Resolved& r,
                                               const std::filesystem::path& audit_log) override {
    return supervised::ensure_running(ctx, r, audit_log);
  }
  Status provision_if_needed(Context& ctx, const Resolved& r, const sandbox::ProvisionRequest& request,
                             std::optional<audit::AuditWriter>& audit) override {
    return supervised::provision_if_needed(ctx, r, request, audit);
  }
  Result<int> run_session(Context& ctx, const Resolved& r, const sandbox::SessionSpec& spec,
                          std::optional<audit::AuditWriter>& audit) override {
    return supervised::run_session(ctx, r, spec, audit);
  }
  Status stop(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) override {
    return stop_sandbox(paths, id, grace, log);
  }
  // Everything an ns or vm sandbox owns lives in its state directory.
  Status remove_outside_state(const std::string&, Log&) override { return ok_status(); }
  Result<sandbox::StartPlan> start_plan(Context&, const Resolved& r) override {
    sandbox::StartPlan plan;
    plan.id = r.id;
    plan.backend = to_string(kind_);
    plan.profile = r.profile;
    plan.state = state::to_string(r.state);
    return plan;
  }
  // The supervisor enforces every policy itself.
  std::vector<std::string> network_limits(const Resolved&) const override { return {}; }

 private:
  BackendKind kind_;
};

}  // namespace

std::unique_ptr<sandbox::Backend> make_supervised_backend(BackendKind kind) {
  return std::make_unique<SupervisedBackend>(kind);
}

}  // namespace tnk::supervised
