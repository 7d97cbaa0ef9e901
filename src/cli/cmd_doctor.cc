// tnk doctor: checks with a fix line each; exit 1 when a required one fails.
#include <filesystem>
#include <memory>

#include "backend/doctor_checks.h"
#include "cli/command.h"
#include "config/api_key.h"
#include "core/files.h"
#include "core/strings.h"
#include "doctor/doctor.h"
#include "host/host_probe.h"
#include "inference/endpoint_doctor.h"
#include "inference/http_client.h"
#include "sandbox/resolve.h"
#include "session/control_client.h"
#include "specs/manifest.h"
#include "specs/profiles.h"
#include "state/layout.h"
#include "state/liveness.h"
#include "state/store.h"
#include "workspace/workspace.h"

namespace tnk::cli {
namespace {

doctor::Outcome from_error(const Error& error) { return {doctor::Status::kFail, error.message, error.hint}; }

void add_core_checks(Context& ctx, doctor::Registry& registry) {
  registry.add({"config", "configuration", true, [&ctx]() -> doctor::Outcome {
                  auto config = ctx.config();
                  if (!config) return from_error(config.error());
                  if (!(*config)->file_exists) {
                    return {doctor::Status::kInfo, "no " + ctx.paths.config_file().string() + ", using defaults",
                            "`tnk config init` writes a commented template"};
                  }
                  return {doctor::Status::kOk, ctx.paths.config_file().string() + " parses", ""};
                }});
  registry.add({"workspace_root", "workspace root", true, [&ctx]() -> doctor::Outcome {
                  auto config = ctx.config();
                  if (!config) return {doctor::Status::kFail, "cannot check it: the configuration does not load", ""};
                  auto root = workspace::check_workspace_root((*config)->workspace_root_path, ctx.paths.home);
                  if (!root) return from_error(root.error());
                  return {doctor::Status::kOk, root->string(), ""};
                }});
  registry.add(
      {"specs", "specs", true, [&ctx]() -> doctor::Outcome {
         std::error_code ec;
         auto manifests = specs::manifests_dir(ctx.paths.config_dir);
         if (!std::filesystem::is_directory(manifests, ec)) {
           return {doctor::Status::kFail, "not installed (" + manifests.string() + " is missing)", "run `tnk init`"};
         }
         return {doctor::Status::kOk, "profiles: " + join(specs::list_profiles(ctx.paths.config_dir)), ""};
       }});
  registry.add({"inference", "inference endpoint", false, [&ctx]() -> doctor::Outcome {
                  auto config = ctx.config();
                  if (!config) return {doctor::Status::kFail, "cannot check it: the configuration does not load", ""};
                  std::string url = host_inference_url(**config);
                  auto info = sandbox::probe_endpoint(ctx, url);
                  if (info.reachable && info.model_id) {
                    std::string ctx_text =
                        info.context_window ? ", context " + std::to_string(*info.context_window) : "";
                    return {doctor::Status::kOk, url + " answers, model " + *info.model_id + ctx_text, ""};
                  }
                  return {doctor::Status::kWarn, url + ": " + info.problem,
                          "start your inference server (llama-server, ollama, vllm ...) or set inference_url / "
                          "server_port in tnk.toml; sandboxes still start without it"};
                }});
}

// The endpoint's known mistakes (inference/endpoint_doctor.h), for the default profile's needs.
void add_endpoint_checks(Context& ctx, doctor::Registry& registry) {
  auto config = ctx.config();
  if (!config) return;  // the configuration check says why
  inference::EndpointSetup setup;
  setup.url = host_inference_url(**config);
  auto key = read_api_key(**config, ctx.env, ctx.paths.home);
  if (key) {
    setup.key = *key;
  } else {
    setup.key_error = key.error();
  }
  setup.key_source = api_key_source(**config, ctx.paths.home);
  setup.profile = (*config)->default_provision_profile.value;
  if (auto manifest = specs::load_manifest(ctx.paths.config_dir, setup.profile, nullptr)) {
    setup.min_context_window = manifest->min_context_window;
  }
  setup.configured_context = (*config)->context_window.value;
  inference::add_endpoint_checks(
      registry, setup,
      [](const std::string& url, const std::string& bearer) {
        return inference::http_get(url, std::chrono::seconds(1), bearer);
      },
      [](const std::string& path) -> std::optional<std::string> {
        auto text = read_file(path);
        return text ? std::optional<std::string>(*text) : std::nullopt;
      });
}

// One check per running sandbox whose policy has an egress proxy: its supervisor asks the proxy from
// inside the sandbox, as a session's HTTP_PROXY would.
void add_proxy_checks(Context& ctx, doctor::Registry& registry) {
  state::Store store(ctx.paths.sandboxes_dir());
  auto ids = store.list_ids();
  if (!ids) return;
  for (const auto& id : *ids) {
    if (state::live_sandbox_pids(store, id).empty()) continue;
    auto ctl = store.file(id, state::kControlSocket);
    auto network = session::request_network(ctl, session::network_op(true), std::chrono::seconds(5));
    if (!network || !(*network)["proxy"].is_object()) continue;
    nlohmann::json proxy = (*network)["proxy"];
    registry.add({"net_proxy_" + id, "egress proxy of " + id, true, [id, proxy]() -> doctor::Outcome {
                    std::string answer = proxy.value("answer", "");
                    if (proxy.value("answers", false)) {
                      return {doctor::Status::kOk, proxy.value("address", "") + " inside answers: " + answer, ""};
                    }
                    return {doctor::Status::kFail, "the proxy does not answer inside " + id + ": " + answer,
                            "restart the sandbox in its project: `tnk sandbox stop && tnk sandbox start` (its "
                            "log: supervisor.log in its state directory)"};
                  }});
  }
}

}  // namespace

void add_doctor_command(CLI::App& root, CommandTable& table) {
  auto* cmd = root.add_subcommand("doctor", "Check that tnk can work here, with a fix for each problem");
  describe(*cmd,
           "Check the configuration, workspace root, specs, inference endpoint and what each backend needs on "
           "this host. Exit 1 when a required check fails. With --backend k8s, the cluster too.",
           "tnk doctor -o json");
  auto backend = std::make_shared<std::string>();
  cmd->add_option("--backend", *backend,
                  "k8s: also check the cluster of [k8s] in tnk.toml (kubectl reaches it, agent-sandbox is installed, "
                  "the runtime class, and that NetworkPolicy egress holds: two probe pods, deleted again)");
  table.add(cmd, [backend](Context& ctx) -> Result<int> {
    doctor::Registry registry;
    add_core_checks(ctx, registry);
    add_endpoint_checks(ctx, registry);
    backend::add_doctor_checks(registry, host::gather_host_facts(ctx.env), ctx.paths);
    add_proxy_checks(ctx, registry);
    if (!backend->empty()) TNK_RETURN_IF_ERROR(backend::add_cluster_checks(ctx, registry, *backend));
    auto results = doctor::run_checks(registry);
    ctx.out.document(doctor::to_json(results),
                     [&](std::ostream& os) { os << doctor::render_text(results, ctx.out.color()); });
    return doctor::passed(results) ? kExitOk : kExitFailed;
  });
}

}  // namespace tnk::cli
