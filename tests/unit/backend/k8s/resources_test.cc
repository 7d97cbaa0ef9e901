// Where the runner sends each object of the plan (resources.h), and what it deletes: every object the
// plan makes for one sandbox alone is among sandbox_owned_objects, so that a delete leaves none of them
// behind, and nothing shared by the profile's other sandboxes is. Also the state a Sandbox object means.
#include <gtest/gtest.h>

#include <set>

#include "backend/k8s/resources.h"
#include "backend/k8s/runner.h"
#include "k8s_cases.h"

namespace tnk::k8s {
namespace {

using json = nlohmann::json;

TEST(K8sResources, PathsOfEachKind) {
  EXPECT_EQ(collection_path("v1", "Pod", "agents"), "/api/v1/namespaces/agents/pods");
  EXPECT_EQ(collection_path("networking.k8s.io/v1", "NetworkPolicy", "a"),
            "/apis/networking.k8s.io/v1/namespaces/a/networkpolicies");
  EXPECT_EQ(sandbox_ref("tnk-demo").path("a"), "/apis/agents.x-k8s.io/v1beta1/namespaces/a/sandboxes/tnk-demo");
  EXPECT_EQ(runtime_class_path("gvisor"), "/apis/node.k8s.io/v1/runtimeclasses/gvisor");
}

TEST(K8sResources, EveryPlannedObjectHasAPathAndADeleteRemovesAllOfOneSandboxsOwn) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    std::set<std::string> owned;
    for (const auto& ref : sandbox_owned_objects(c.sandbox.id)) owned.insert(ref.path(c.cluster.ns));
    for (const json& object : plan_objects(c.sandbox, c.cluster)) {
      std::string path = object_path(object);
      EXPECT_TRUE(path.starts_with(collection_path(object) + "/")) << path;
      const bool shared = !object["metadata"]["labels"].contains("tnk/sandbox");
      EXPECT_EQ(owned.count(path), shared ? 0u : 1u) << path;
    }
    const std::string name = sandbox_ref(c.sandbox.id).name;
    EXPECT_EQ(owned.count(collection_path("v1", "PersistentVolumeClaim", c.cluster.ns) + "/home-" + name), 1u);
    EXPECT_EQ(owned.count(collection_path("v1", "PersistentVolumeClaim", c.cluster.ns) + "/workspace-" + name), 1u);
  }
}

TEST(K8sResources, TheStateASandboxObjectMeans) {
  json ready = {{"type", "Ready"}, {"status", "True"}};
  json running = {{"spec", {{"operatingMode", "Running"}}}, {"status", {{"conditions", {ready}}}}};
  EXPECT_EQ(sandbox_state(std::nullopt), state::SandboxState::kAbsent);
  EXPECT_EQ(sandbox_state(running), state::SandboxState::kRunning);
  json suspended = running;
  suspended["spec"]["operatingMode"] = "Suspended";
  EXPECT_EQ(sandbox_state(suspended), state::SandboxState::kStopped);
  json not_ready = running;
  not_ready["status"]["conditions"][0]["status"] = "False";
  EXPECT_EQ(sandbox_state(not_ready), state::SandboxState::kBroken);
  EXPECT_EQ(sandbox_state(json{{"spec", json::object()}}), state::SandboxState::kBroken);  // no status yet
}

}  // namespace
}  // namespace tnk::k8s
