#include "sandbox/resolve.h"

#include <algorithm>
#include <ctime>

#include "config/api_key.h"
#include "core/phase_timer.h"
#include "core/strings.h"
#include "host/host_probe.h"
#include "inference/model_cache.h"
#include "naming/backend_kind.h"
#include "naming/naming.h"
#include "specs/profiles.h"
#include "specs/revision.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::sandbox {

std::map<std::string, std::string> agent_env_shown(const Resolved& r) {
  std::map<std::string, std::string> shown = r.agent.url_env;
  for (const auto& name : r.agent.token_env) shown[name] = kTokenShown;
  return shown;
}

namespace {

bool profile_exists(const std::filesystem::path& config_dir, const std::string& profile) {
  auto profiles = specs::list_profiles(config_dir);
  return std::find(profiles.begin(), profiles.end(), profile) != profiles.end();
}

std::string available_profiles(const std::filesystem::path& config_dir) {
  return join(specs::list_profiles(config_dir));
}

Status choose_profile(Context& ctx, const Config& config, const ResolveOptions& options, Resolved& r) {
  const auto& config_dir = ctx.paths.config_dir;
  if (options.profile) {
    TNK_RETURN_IF_ERROR(specs::validate_profile_name(*options.profile));
    if (!profile_exists(config_dir, *options.profile)) {
      return not_found(
          "unknown profile '" + *options.profile + "'",
          "available profiles: " + available_profiles(config_dir) + " (`tnk init` installs the bundled ones)");
    }
    r.profile = *options.profile;
    r.profile_source = "--profile";
    return ok_status();
  }
  if (r.record) {
    r.profile = r.record->profile;
    r.profile_source = "sandbox record";
    return ok_status();
  }
  const std::string& wanted = config.default_provision_profile.value;
  if (specs::validate_profile_name(wanted).ok() && profile_exists(config_dir, wanted)) {
    r.profile = wanted;
    r.profile_source = "config";
    return ok_status();
  }
  r.profile = "base";
  r.profile_source = "fallback";
  r.notes.push_back("default profile '" + wanted + "' is not installed, using 'base' (run `tnk init` to install it)");
  return ok_status();
}

Status choose_backend(Context& ctx, const Config& config, const ResolveOptions& options, Resolved& r) {
  r.backend_source = options.backend ? "--backend" : "config";
  TNK_ASSIGN_OR_RETURN(BackendKind wanted,
                       backend_kind(options.backend ? *options.backend : config.default_backend.value));
  if (r.record) {
    if (options.backend && wanted != BackendKind::kAuto && wanted != r.record->backend) {
      return usage_error(
          "sandbox " + r.id + " was created with the '" + to_string(r.record->backend) + "' backend",
          std::string("`tnk sandbox delete` it first to recreate it with --backend ") + to_string(wanted));
    }
    r.backend = r.record->backend;
    r.backend_source = "sandbox record";
    return ok_status();
  }
  if (wanted == BackendKind::kAuto) {
    auto automatic = host::choose_auto_backend(host::gather_host_facts(ctx.env));
    r.backend = automatic.backend;
    r.backend_source = "auto";
    r.backend_why = automatic.why;
    r.backend_weaker_note = automatic.weaker_note;
  } else {
    r.backend = wanted;
  }
  return ok_status();
}

void fill_runtime_env(Context& ctx, const Config& config, Resolved& r) {
  std::string guest_url = guest_inference_url(config);
  r.runtime_env = {
      {"TNK_INFERENCE_URL", guest_url},
      {"TNK_OPENAI_URL", guest_url},
      {"TNK_MODEL_NAME", r.model.model_name},
      {"TNK_ENGINE_RUNTIME", config.default_engine_runtime.value},
      {"TNK_WORKSPACE_MOUNT", r.manifest.workspace_mount},
      {"TNK_SPECS_REV", specs::specs_revision(ctx.paths.config_dir, ctx.paths.memo_dir())},
  };
  r.runtime_env["TNK_CTX_WINDOW"] = std::to_string(r.model.context_window);
  // The agent settings' URLs are values tnk derives, like TNK_INFERENCE_URL: handed in and audited with
  // them. Their token variables are the supervisor's to set (SupervisorConfig::gateway.token_env).
  r.agent = specs::agent_settings(r.manifest.agent_env, guest_url);
  for (const auto& [name, value] : r.agent.url_env) r.runtime_env[name] = value;
}

// tnk's own directories are never a project: sharing them would hand the sandbox its config,
// specs and other sandboxes' state (the original mounted ~/.config/tnk read-write: its bug 5).
Status refuse_tnk_dirs(const Context& ctx, const workspace::Project& project) {
  for (const auto& dir : {ctx.paths.config_dir, ctx.paths.state_dir, ctx.paths.cache_dir}) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(dir, ec);
    if (ec) continue;
    if (workspace::is_within(canonical, project.dir) || workspace::is_within(project.dir, canonical)) {
      return usage_error("project " + project.dir.string() + " overlaps tnk's own directory " + canonical.string(),
                         "keep workspace_root apart from tnk's config, state and cache directories");
    }
  }
  return ok_status();
}

// What the profile asks of the network; a running sandbox's own view is added by `inspect`.
nlohmann::json network_json(const Resolved& r) {
  nlohmann::json ports = nlohmann::json::array();
  for (const PortForward& f : r.manifest.ports) ports.push_back(to_string(f));
  return {{"policy", to_string(r.network)},
          {"source", r.network_source},
          {"allow", r.manifest.allow_domains},
          {"provision", to_string(r.manifest.provision_network.value_or(NetworkPolicy::kAllowlist))},
          {"provision_allow", r.manifest.provision_allow_domains},
          {"ports", ports}};
}

// The manifest's agent_env and what it sets, tokens redacted.
nlohmann::json agent_json(const Resolved& r) {
  nlohmann::json apis = nlohmann::json::array();
  for (specs::AgentApi api : r.manifest.agent_env) apis.push_back(specs::to_string(api));
  return {{"apis", apis}, {"env", agent_env_shown(r)}};
}

}  // namespace

inference::ModelInfo probe_endpoint(Context& ctx, const std::string& url) {
  auto cache = ctx.paths.cache_dir / state::kModelCacheFile;
  int64_t now = std::time(nullptr);
  if (auto cached = inference::read_cached(cache, url, now, inference::kModelCacheMaxAgeSeconds)) return *cached;
  // With the configured key, as the gateway asks; a key that cannot be read is the start's to report.
  std::string key;
  if (auto config = ctx.config()) {
    if (auto read = read_api_key(**config, ctx.env, ctx.paths.home)) key = *read;
  }
  auto info = inference::probe_models(url, std::chrono::seconds(1), key);
  inference::write_cache(cache, url, info, now);
  return info;
}

const std::vector<std::string>& runtime_env_names() {
  static const std::vector<std::string> names = {"TNK_INFERENCE_URL",  "TNK_OPENAI_URL", "TNK_MODEL_NAME",
                                                 "TNK_ENGINE_RUNTIME", "TNK_CTX_WINDOW", "TNK_WORKSPACE_MOUNT",
                                                 "TNK_SPECS_REV"};
  return names;
}

Result<Resolved> resolve(Context& ctx, const ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  mark_phase("config");
  Resolved r;
  TNK_ASSIGN_OR_RETURN(r.project, workspace::resolve_project(config->workspace_root_path, ctx.paths.home, ctx.cwd));
  TNK_RETURN_IF_ERROR(refuse_tnk_dirs(ctx, r.project));
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(r.id, naming::sandbox_id(r.project.name, naming::max_sandbox_id_length(store.root())));
  const std::string project_id = r.id;
  if (!ctx.selected_sandbox.empty()) {
    TNK_ASSIGN_OR_RETURN(r.id, naming::select_sandbox(r.id, ctx.selected_sandbox));
  }
  TNK_ASSIGN_OR_RETURN(r.record, store.load(r.id));
  if (!r.record && r.id != project_id) {  // a fork is made by `fork`, never by a start
    return not_found("fork " + r.id + " does not exist", "`tnk sandbox fork` makes forks; `tnk sandbox ls` lists them");
  }
  if (r.record && r.record->project_dir != r.project.dir) {
    return failed(
        "sandbox " + r.id + " belongs to " + r.record->project_dir.string() + ", not " + r.project.dir.string(),
        "two project names map to the same sandbox id; rename one of the projects");
  }
  TNK_RETURN_IF_ERROR(choose_profile(ctx, *config, options, r));
  std::vector<std::string> warnings;
  TNK_ASSIGN_OR_RETURN(r.manifest, specs::load_manifest(ctx.paths.config_dir, r.profile, &warnings));
  for (const auto& w : warnings) r.notes.push_back(w);
  if (!r.manifest.source.empty()) r.manifest_file = r.manifest.source;
  // A created sandbox keeps the mount point it was created with.
  if (r.record) r.manifest.workspace_mount = r.record->mount_point;
  r.network = options.network ? *options.network : r.manifest.network.value_or(config->default_network.value);
  r.network_source = options.network ? "--network" : r.manifest.network ? "manifest" : "config";
  const bool fork = r.record && !r.record->parent.empty();
  r.review = fork || options.review || r.manifest.review;
  r.review_source = fork                ? "fork of " + r.record->parent
                    : options.review    ? "--review"
                    : r.manifest.review ? "manifest"
                                        : "default";
  TNK_ASSIGN_OR_RETURN(r.provision_script, specs::provision_script(ctx.paths.config_dir, r.profile));
  r.provision_root_script = specs::provision_root_script(ctx.paths.config_dir, r.profile);
  r.guest_workdir = workspace::guest_workdir(r.project, r.manifest.workspace_mount);
  TNK_RETURN_IF_ERROR(choose_backend(ctx, *config, options, r));
  mark_phase("project and specs");

  r.host_inference_url = host_inference_url(*config);
  return r;
}

Status settle_endpoint(Context& ctx, Resolved& r, const std::optional<StartedWith>& started) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  if (started) {
    r.model = started->model;
    if (!r.model.note.empty()) r.notes.push_back(r.model.note);  // what the start said of the endpoint
    if (started->inference_url != r.host_inference_url) {
      r.notes.push_back("tnk.toml now names the endpoint " + r.host_inference_url + ", but " + r.id +
                        " was started with " + started->inference_url +
                        " and keeps using it until it is stopped and started again");
    }
    r.host_inference_url = started->inference_url;
  } else {
    inference::ModelInfo info = probe_endpoint(ctx, r.host_inference_url);
    r.model = inference::resolve_runtime_model(info, config->model_name.value, config->context_window.value);
    if (!r.model.note.empty()) r.notes.push_back(r.model.note);
  }
  fill_runtime_env(ctx, *config, r);
  mark_phase("endpoint");
  return ok_status();
}

nlohmann::json to_json(const Resolved& r) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : r.runtime_env) env[k] = v;
  auto optional_path = [](const std::optional<std::filesystem::path>& p) {
    return p ? nlohmann::json(p->string()) : nlohmann::json();
  };
  return {
      {"id", r.id},
      {"project",
       {{"name", r.project.name}, {"dir", r.project.dir.string()}, {"workspace_root", r.project.root.string()}}},
      {"profile", {{"name", r.profile}, {"source", r.profile_source}}},
      {"manifest", optional_path(r.manifest_file)},
      {"provision_script", optional_path(r.provision_script)},
      {"provision_root_script", optional_path(r.provision_root_script)},
      {"mount", r.manifest.workspace_mount},
      {"workdir", r.guest_workdir},
      {"network", network_json(r)},
      {"workspace", {{"mode", r.review ? "review" : "direct"}, {"source", r.review_source}}},
      {"runtime_env", env},
      {"agent", agent_json(r)},
      {"inference",
       {{"url", r.host_inference_url},
        {"model", r.model.model_name},
        {"model_source", r.model.source},
        {"context_window", r.model.context_window},
        {"context_source", r.model.context_source}}},
      {"backend",
       {{"name", to_string(r.backend)},
        {"source", r.backend_source},
        {"why", r.backend_why},
        {"weaker", r.backend_weaker_note.empty() ? nlohmann::json() : nlohmann::json(r.backend_weaker_note)}}},
      {"state", state::to_string(r.state)},
      {"notes", r.notes},
  };
}

state::SandboxRecord new_record(const Resolved& r, std::string image_id) {
  state::SandboxRecord record;
  record.id = r.id;
  record.backend = r.backend;
  record.project_dir = r.project.dir;
  record.profile = r.profile;
  record.mount_point = r.manifest.workspace_mount;
  record.image_id = std::move(image_id);
  record.created_at = std::time(nullptr);
  return record;
}

}  // namespace tnk::sandbox
