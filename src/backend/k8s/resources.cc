#include "backend/k8s/resources.h"

#include <map>

#include "backend/k8s/objects.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

// The plural resource name of each kind tnk creates, reads or deletes.
const std::map<std::string, std::string>& plurals() {
  static const std::map<std::string, std::string> table = {
      {"Secret", "secrets"},
      {"Service", "services"},
      {"Pod", "pods"},
      {"PersistentVolumeClaim", "persistentvolumeclaims"},
      {"NetworkPolicy", "networkpolicies"},
      {"RuntimeClass", "runtimeclasses"},
      {"Sandbox", "sandboxes"},
      {"SandboxTemplate", "sandboxtemplates"},
      {"SandboxWarmPool", "sandboxwarmpools"},
  };
  return table;
}

std::string group_prefix(const std::string& api_version) {
  return api_version == "v1" ? "/api/v1" : "/apis/" + api_version;
}

}  // namespace

std::string collection_path(const std::string& api_version, const std::string& kind, const std::string& ns) {
  return group_prefix(api_version) + "/namespaces/" + ns + "/" + plurals().at(kind);
}

std::string collection_path(const json& object) {
  return collection_path(object.at("apiVersion"), object.at("kind"), object.at("metadata").at("namespace"));
}

std::string object_path(const json& object) {
  return collection_path(object) + "/" + object.at("metadata").at("name").get<std::string>();
}

const json& member(const json& object, const char* key) {
  static const json empty = json::object();
  if (!object.is_object()) return empty;
  auto found = object.find(key);
  return found != object.end() && found->is_object() ? *found : empty;
}

std::string runtime_class_path(const std::string& name) { return "/apis/node.k8s.io/v1/runtimeclasses/" + name; }

ObjectRef sandbox_ref(const std::string& id) { return {kSandboxApiVersion, kSandboxKind, names_of(id).sandbox}; }
ObjectRef supervisor_pod_ref(const std::string& id) { return {"v1", "Pod", names_of(id).supervisor}; }
ObjectRef keys_secret_ref(const std::string& id) { return {"v1", "Secret", names_of(id).keys}; }

std::vector<ObjectRef> sandbox_owned_objects(const std::string& id) {
  const Names names = names_of(id);
  return {sandbox_ref(id),
          supervisor_pod_ref(id),
          {"v1", "Service", names.supervisor},
          {"networking.k8s.io/v1", "NetworkPolicy", names.supervisor},
          {"networking.k8s.io/v1", "NetworkPolicy", names.agent_policy},
          keys_secret_ref(id),
          {"v1", "PersistentVolumeClaim", "home-" + names.sandbox},
          {"v1", "PersistentVolumeClaim", "workspace-" + names.sandbox}};
}

}  // namespace tnk::k8s
