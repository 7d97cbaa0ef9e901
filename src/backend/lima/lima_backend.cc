// The lima backend behind sandbox::Backend: every call goes to limactl (lifecycle.cc, session.cc,
// dry_run.cc). Lima answers whether an instance runs; one `limactl list` serves every sandbox a
// command asks about.
#include "backend/lima/lifecycle.h"

namespace tnk::lima {
namespace {

class LimaBackend final : public sandbox::Backend {
 public:
  BackendKind kind() const override { return BackendKind::kLima; }
  // Lima forwards the manifest's `ports:` itself, at start; there is no supervisor to ask.
  sandbox::Capabilities capabilities() const override { return {}; }

  sandbox::Observed observe(const Paths&, const std::string& id) override {
    if (!states_) states_ = lima_states();
    return {states_->state_of(id), states_->problem};
  }
  Result<sandbox::StartOutcome> ensure_running(Context& ctx, const sandbox::Resolved& r,
                                               const std::filesystem::path&) override {
    states_.reset();
    return ensure_running_lima(ctx, r);
  }
  Status provision_if_needed(Context& ctx, const sandbox::Resolved& r, const sandbox::ProvisionRequest& request,
                             std::optional<audit::AuditWriter>& audit) override {
    return provision_lima_if_needed(ctx, r, request, audit);
  }
  Result<int> run_session(Context& ctx, const sandbox::Resolved& r, const sandbox::SessionSpec& spec,
                          std::optional<audit::AuditWriter>& audit) override {
    return run_lima_session(ctx, r, spec, audit);
  }
  Status stop(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) override {
    return stop_lima(paths, id, grace, log);
  }
  Status remove_outside_state(const std::string& id, Log& log) override { return delete_lima_instance(id, log); }
  Result<sandbox::StartPlan> start_plan(Context& ctx, const sandbox::Resolved& r) override {
    return lima_start_plan(ctx, r);
  }
  std::vector<std::string> network_limits(const sandbox::Resolved& r) const override {
    return lima::network_limits(r.network);
  }

 private:
  std::optional<LimaStates> states_;
};

}  // namespace

std::unique_ptr<sandbox::Backend> make_lima_backend() { return std::make_unique<LimaBackend>(); }

}  // namespace tnk::lima
