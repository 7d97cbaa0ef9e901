// Where an object lives in Kubernetes' REST API, and the names of what one sandbox has on a cluster
// (its own objects, and the claims agent-sandbox's controller makes for it). Pure.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tnk::k8s {

// The collection an object of this apiVersion and kind is created in, within `ns`:
// "/api/v1/namespaces/<ns>/pods", "/apis/agents.x-k8s.io/v1beta1/namespaces/<ns>/sandboxes".
std::string collection_path(const std::string& api_version, const std::string& kind, const std::string& ns);
// The same for an object as the plan makes it (its apiVersion, kind and metadata.namespace).
std::string collection_path(const nlohmann::json& object);
// The object itself: its collection and "/<metadata.name>".
std::string object_path(const nlohmann::json& object);
// A RuntimeClass (cluster-scoped).
std::string runtime_class_path(const std::string& name);

// The object `key` of `object` as the API server sent it, or an empty object when either is not an object
// or the member is missing or null: what the cluster answers is read without throwing on a surprise.
const nlohmann::json& member(const nlohmann::json& object, const char* key);

// Sandbox's apiVersion and kind, which the runner reads and patches.
inline constexpr const char* kSandboxApiVersion = "agents.x-k8s.io/v1beta1";
inline constexpr const char* kSandboxKind = "Sandbox";

// An object of one sandbox, by apiVersion, kind and name.
struct ObjectRef {
  std::string api_version, kind, name;
  std::string path(const std::string& ns) const { return collection_path(api_version, kind, ns) + "/" + name; }
};

// Everything that belongs to the sandbox `id` alone, in the order a delete removes it: the Sandbox
// first (its pod goes with it), then the supervisor's objects, then the claims agent-sandbox's controller
// made from the Sandbox's volumeClaimTemplates ("<claim>-<sandbox>"). The SandboxTemplate and its deny-all
// policy are shared by every sandbox of the profile's fingerprint and are not among them.
std::vector<ObjectRef> sandbox_owned_objects(const std::string& id);

// The Sandbox and the supervisor's Pod of the sandbox `id`.
ObjectRef sandbox_ref(const std::string& id);
ObjectRef supervisor_pod_ref(const std::string& id);
ObjectRef keys_secret_ref(const std::string& id);

}  // namespace tnk::k8s
