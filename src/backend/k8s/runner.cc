#include "backend/k8s/runner.h"

#include <ctime>
#include <thread>

#include "backend/k8s/k8s_backend.h"
#include "backend/k8s/names.h"
#include "backend/k8s/resources.h"
#include "config/api_key.h"
#include "config/route_source.h"
#include "core/random_token.h"
#include "state/store.h"

namespace tnk::k8s {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Pulling the agent's image and binding its claims can take minutes on a busy cluster.
constexpr std::chrono::minutes kReadyTimeout{5};
constexpr std::chrono::seconds kProgressEvery{15};
constexpr std::chrono::seconds kStopMargin{30};

std::string kubectl_describe(const Cluster& cluster, const std::string& kind, const std::string& name) {
  return "`kubectl -n " + cluster.settings.ns + " describe " + kind + " " + name + "`";
}

// The condition `type` of an object's status, or null.
json condition(const json& object, const std::string& type) {
  const json& conditions = member(object, "status").value("conditions", json::array());
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return c;
  }
  return nullptr;
}

bool condition_true(const json& object, const std::string& type) {
  json c = condition(object, type);
  return c.is_object() && c.value("status", "") == "True";
}

std::string operating_mode(const json& sandbox) { return member(sandbox, "spec").value("operatingMode", "Running"); }

// "Ready is False (DependenciesNotReady: the pod is pending)": what the cluster says of readiness.
std::string readiness(const json& sandbox) {
  json c = condition(sandbox, "Ready");
  if (!c.is_object()) return "the cluster reports no Ready condition yet";
  return "Ready is " + c.value("status", "?") + " (" + c.value("reason", "") + ": " + c.value("message", "") + ")";
}

// The SandboxTemplate, its warm pool and its deny-all policy: shared by every sandbox of the fingerprint,
// they carry no sandbox's label.
bool is_template_object(const json& object) {
  return !member(member(object, "metadata"), "labels").contains("tnk/sandbox");
}

// The Secret's values, which the plan leaves empty: a token for this start, the endpoint's API key and
// each credential route's credential, read now from where tnk.toml says (as the other backends read them).
Status fill_keys(Context& ctx, json& secret) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  json& data = secret["stringData"];
  TNK_ASSIGN_OR_RETURN(data["token"], random_token());
  if (data.contains("inference-api-key")) {
    TNK_ASSIGN_OR_RETURN(data["inference-api-key"], read_api_key(*config, ctx.env, ctx.paths.home));
  }
  for (const auto& route : config->routes) {
    TNK_ASSIGN_OR_RETURN(data["route-" + secret_key(route.name)],
                         resolve_route_credential(*config, route, ctx.env, ctx.paths.home));
  }
  return ok_status();
}

json* find_kind(std::vector<json>& objects, const std::string& kind) {
  for (auto& object : objects) {
    if (object["kind"] == kind) return &object;
  }
  return nullptr;
}

// Removes what a failed first start created, newest first; what cannot be removed is named.
void roll_back(ClusterApi& api, const std::vector<json>& created, Log& log) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    auto removed = api.remove(object_path(*it));
    if (!removed) {
      log.warn("could not remove " + it->value("kind", "") + " " + (*it)["metadata"].value("name", "") +
               " after the failed start: " + removed.error().message);
    }
  }
}

// Creates each object in the plan's order. One that exists is kept (a shared template, or what an
// interrupted start left), but the Secret always gets this start's values. `created` lists what was new.
Status create_objects(ClusterApi& api, const std::vector<json>& objects, std::vector<json>& created, Log& log) {
  for (const auto& object : objects) {
    const std::string what = object.value("kind", "") + " " + object["metadata"].value("name", "");
    TNK_ASSIGN_OR_RETURN(bool made, api.create(collection_path(object), object));
    if (made) {
      created.push_back(object);
      log.verbose("created " + what);
    } else if (object["kind"] == "Secret") {
      TNK_RETURN_IF_ERROR(api.merge_patch(object_path(object), {{"stringData", object["stringData"]}}));
    } else if (!is_template_object(object)) {
      log.verbose(what + " exists already; kept");
    }
  }
  return ok_status();
}

// A suspended (or not ready) Sandbox: the supervisor's pod again (stop removed it), fresh keys, Running.
Status resume(ClusterApi& api, std::vector<json>& objects, const std::string& sandbox_path, Log& log) {
  std::vector<json> again;
  for (const auto& object : objects) {
    if (object["kind"] == "Secret" || object["kind"] == "Pod") again.push_back(object);
  }
  std::vector<json> created;
  TNK_RETURN_IF_ERROR(create_objects(api, again, created, log));
  return api.merge_patch(sandbox_path, {{"spec", {{"operatingMode", "Running"}}}});
}

// Waits for the Sandbox's Ready condition and the supervisor's pod, with a line of progress now and then.
Status wait_until_ready(ClusterApi& api, const Cluster& cluster, const std::string& id, Log& log) {
  const std::string sandbox_path = sandbox_ref(id).path(cluster.settings.ns);
  const ObjectRef supervisor = supervisor_pod_ref(id);
  const auto began = Clock::now();
  auto next_note = began + kProgressEvery;
  std::chrono::milliseconds pause{100};
  for (;;) {
    TNK_ASSIGN_OR_RETURN(auto sandbox, api.get(sandbox_path));
    if (!sandbox) return failed("the Sandbox " + sandbox_ref(id).name + " went away while it started");
    TNK_ASSIGN_OR_RETURN(auto pod, api.get(supervisor.path(cluster.settings.ns)));
    std::string phase = pod ? member(*pod, "status").value("phase", "Pending") : "absent";
    if (condition_true(*sandbox, "Ready") && phase == "Running") return ok_status();
    std::string where = readiness(*sandbox) + "; its supervisor's pod is " + phase;
    if (Clock::now() - began > kReadyTimeout) {
      return failed(
          "sandbox " + id + " was not ready within " + std::to_string(kReadyTimeout.count()) + " minutes: " + where,
          kubectl_describe(cluster, "sandbox", sandbox_ref(id).name) + " and " +
              kubectl_describe(cluster, "pod", supervisor.name) + " say why");
    }
    if (Clock::now() > next_note) {
      log.info("still waiting for the cluster to make " + id + " ready: " + where);
      next_note += kProgressEvery;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace

state::SandboxState sandbox_state(const std::optional<json>& sandbox) {
  if (!sandbox) return state::SandboxState::kAbsent;
  if (operating_mode(*sandbox) == "Suspended") return state::SandboxState::kStopped;
  // Running but not Ready: its pod failed or is not there yet; a start waits for it again.
  return condition_true(*sandbox, "Ready") ? state::SandboxState::kRunning : state::SandboxState::kBroken;
}

Status check_runtime_class(ClusterApi& api, const Cluster& cluster) {
  const std::string opt_in = "set k8s.allow_runc = true in tnk.toml to run the agent in a plain container anyway";
  if (!cluster.settings.runtime_class) {
    if (cluster.allow_runc) return ok_status();
    return failed(
        "k8s.runtime_class is not set: the agent's pod would run in the cluster's default runtime, a plain "
        "container, which is not the boundary tnk promises",
        "name a gVisor or Kata RuntimeClass of the cluster (`kubectl get runtimeclass`) in tnk.toml, or " + opt_in);
  }
  const std::string& name = *cluster.settings.runtime_class;
  TNK_ASSIGN_OR_RETURN(auto found, api.get(runtime_class_path(name)));
  if (!found) {
    return failed("the cluster has no RuntimeClass '" + name + "' (k8s.runtime_class in tnk.toml)",
                  "`kubectl get runtimeclass` lists the ones it has");
  }
  const std::string handler = found->value("handler", "");
  if (handler == "runc" && !cluster.allow_runc) {
    return failed("the RuntimeClass '" + name +
                      "' runs plain containers (handler runc), which is not the "
                      "boundary tnk promises",
                  "name a gVisor or Kata RuntimeClass (`kubectl get runtimeclass`), or " + opt_in);
  }
  return ok_status();
}

namespace {

// ensure_running_k8s under the sandbox's lock, with its record as it was (`existing`).
Result<sandbox::StartOutcome> start_locked(Context& ctx, const sandbox::Resolved& r, const Cluster& cluster,
                                           ClusterApi& api, const std::optional<state::SandboxRecord>& existing) {
  const ObjectRef ref = sandbox_ref(r.id);
  const std::string sandbox_path = ref.path(cluster.settings.ns);
  TNK_ASSIGN_OR_RETURN(auto found, api.get(sandbox_path));
  if (found && !existing) {
    return failed("the cluster has a Sandbox " + ref.name + " in namespace " + cluster.settings.ns +
                      ", but tnk did not create it",
                  "tnk will not take over a Sandbox it has no record of; remove it (`kubectl -n " +
                      cluster.settings.ns + " delete sandbox " + ref.name + "`) and start again");
  }
  sandbox::StartOutcome outcome;
  if (existing && sandbox_state(found) == state::SandboxState::kRunning) {
    outcome.already_running = true;
    outcome.record = *existing;
    return outcome;
  }
  TNK_RETURN_IF_ERROR(check_runtime_class(api, cluster));
  TNK_ASSIGN_OR_RETURN(SandboxSpec spec, sandbox_spec(ctx, r));
  std::vector<json> objects = plan_objects(spec, cluster.settings);
  TNK_RETURN_IF_ERROR(fill_keys(ctx, *find_kind(objects, "Secret")));
  std::vector<json> created;
  Status applied = ok_status();
  if (found) {
    ctx.log.info("resuming sandbox " + ref.name + " on the cluster (namespace " + cluster.settings.ns + ")");
    applied = resume(api, objects, sandbox_path, ctx.log);
  } else {
    if (existing) ctx.log.note("the cluster has no Sandbox " + ref.name + " any more; creating it again");
    ctx.log.info("creating sandbox " + ref.name + " on the cluster (namespace " + cluster.settings.ns + ", " +
                 std::to_string(objects.size()) + " objects)");
    applied = create_objects(api, objects, created, ctx.log);
  }
  if (applied.ok()) applied = wait_until_ready(api, cluster, r.id, ctx.log);
  if (!applied.ok()) {
    roll_back(api, created, ctx.log);
    return applied.error();
  }
  if (existing) {
    outcome.record = *existing;
  } else {
    const json& pod = (*find_kind(objects, kSandboxKind))["spec"]["podTemplate"]["spec"];
    outcome.record = sandbox::new_record(r, pod["containers"][0].value("image", ""));
  }
  outcome.created = !existing;
  outcome.record.started_at = std::time(nullptr);
  return outcome;
}

}  // namespace

Result<sandbox::StartOutcome> ensure_running_k8s(Context& ctx, const sandbox::Resolved& r, const Cluster& cluster,
                                                 ClusterApi& api) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(FileLock lock, store.lock(r.id, ctx.log));
  TNK_ASSIGN_OR_RETURN(auto existing, store.load(r.id));  // again: another tnk may have created it meanwhile
  auto started = start_locked(ctx, r, cluster, api, existing);
  if (!started) {
    if (!existing) (void)store.remove(r.id);  // a failed first start leaves no state behind
    return started;
  }
  if (!started->already_running) TNK_RETURN_IF_ERROR(store.save(started->record));
  return started;
}

Status stop_k8s(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, const Cluster& cluster,
                ClusterApi& api, Log& log) {
  const ObjectRef ref = sandbox_ref(id);
  TNK_ASSIGN_OR_RETURN(auto found, api.get(ref.path(cluster.settings.ns)));
  if (found && operating_mode(*found) != "Suspended") {
    TNK_RETURN_IF_ERROR(api.merge_patch(ref.path(cluster.settings.ns), {{"spec", {{"operatingMode", "Suspended"}}}}));
  }
  TNK_RETURN_IF_ERROR(api.remove(supervisor_pod_ref(id).path(cluster.settings.ns)));
  // The agent's pod has the Sandbox's name; the cluster removes it once the Sandbox is suspended.
  const ObjectRef agent_pod{"v1", "Pod", ref.name};
  const auto deadline = Clock::now() + grace + kStopMargin;
  for (;;) {
    TNK_ASSIGN_OR_RETURN(auto pod, api.get(agent_pod.path(cluster.settings.ns)));
    if (!pod) break;
    if (Clock::now() > deadline) {
      return failed("the agent's pod of " + id + " is still there after the Sandbox was suspended",
                    kubectl_describe(cluster, "pod", ref.name) + " says why");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return state::Store(paths.sandboxes_dir()).mark_stopped(id, log);
}

Status delete_k8s_objects(const std::string& id, const Cluster& cluster, ClusterApi& api, Log& log) {
  for (const ObjectRef& object : sandbox_owned_objects(id)) {
    TNK_ASSIGN_OR_RETURN(bool removed, api.remove(object.path(cluster.settings.ns)));
    if (removed) log.verbose("deleted " + object.kind + " " + object.name);
  }
  return ok_status();
}

}  // namespace tnk::k8s
