// Bare `tnk`: is tnk set up, does the inference endpoint answer, which sandboxes exist.
#include <filesystem>

#include "backend/list.h"
#include "cli/command.h"
#include "sandbox/resolve.h"

namespace tnk::cli {
namespace {

Result<int> run_status(Context& ctx) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  std::error_code ec;
  bool configured = std::filesystem::is_directory(ctx.paths.config_dir / "sandbox.d", ec);
  std::string url = host_inference_url(*config);
  inference::ModelInfo info = sandbox::probe_endpoint(ctx, url);
  TNK_ASSIGN_OR_RETURN(std::vector<backend::SandboxRow> rows, backend::list_sandboxes(ctx));

  nlohmann::json inference = {{"url", url}, {"reachable", info.reachable}};
  inference["model"] = info.model_id ? nlohmann::json(*info.model_id) : nlohmann::json();
  inference["context_window"] = info.context_window ? nlohmann::json(*info.context_window) : nlohmann::json();
  inference["problem"] = info.problem.empty() ? nlohmann::json() : nlohmann::json(info.problem);
  nlohmann::json doc = {{"configured", configured}, {"inference", inference}, {"sandboxes", backend::to_json(rows)}};

  ctx.out.document(doc, [&](std::ostream& os) {
    os << "tnk: " << (configured ? "configured" : "not configured (run `tnk init`)") << '\n';
    os << "inference  " << url << "  ";
    if (info.reachable && info.model_id) {
      os << "up, model " << *info.model_id;
      if (info.context_window) os << ", context " << *info.context_window;
    } else {
      os << (info.reachable ? "answers, but " : "down: ") << info.problem;
    }
    os << '\n';
    if (rows.empty()) {
      os << "sandboxes  none\n";
    } else {
      os << '\n' << backend::render_table(rows);
    }
  });
  return kExitOk;
}

}  // namespace

void add_status_command(CLI::App& root, CommandTable& table) { table.add(&root, run_status); }

}  // namespace tnk::cli
