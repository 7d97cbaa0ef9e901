// The k8s backend's plan against golden files (tests/unit/backend/k8s/golden/<case>.yaml): the YAML
// stream `tnk sandbox start --backend k8s -n` prints, for each bundled profile under each network policy
// and for one sandbox with every [k8s] key. No cluster is involved (docs/k8s-backend.md).
// After an intended change: TNK_UPDATE_GOLDEN=1 ./tnk_unit_tests --gtest_filter='K8s*', then review the
// diff of the golden files.
#include <gtest/gtest.h>

#include "backend/k8s/names.h"
#include "golden.h"
#include "k8s_cases.h"
#include "output/yaml.h"

namespace tnk::k8s {
namespace {

TEST(K8sPlanGolden, EveryCase) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    std::string stream = to_yaml_stream(plan_objects(c.sandbox, c.cluster), plan_notes(c.sandbox, c.cluster));
    testing_support::expect_golden("backend/k8s/golden/" + c.name + ".yaml", stream);
  }
}

const nlohmann::json* find_kind(const std::vector<nlohmann::json>& objects, const std::string& kind) {
  for (const auto& object : objects) {
    if (object["kind"] == kind) return &object;
  }
  return nullptr;
}

TEST(K8sPlan, TheAgentPodReachesOnlyItsSupervisorAndUnderNoneNothing) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    auto objects = plan_objects(c.sandbox, c.cluster);
    for (const auto& object : objects) {
      if (object["kind"] != "NetworkPolicy" || object["metadata"]["name"] != object_name(c.sandbox.id) + "-agent") {
        continue;
      }
      const auto& egress = object["spec"]["egress"];
      if (c.sandbox.network == NetworkPolicy::kNone) {
        EXPECT_TRUE(egress.empty());
      } else {
        ASSERT_EQ(egress.size(), 1u);
        ASSERT_EQ(egress[0]["to"].size(), 1u);
        EXPECT_EQ(egress[0]["to"][0]["podSelector"]["matchLabels"]["tnk/role"], "supervisor");
        EXPECT_FALSE(egress[0]["to"][0].contains("namespaceSelector"));
        EXPECT_FALSE(egress[0]["to"][0].contains("ipBlock"));
      }
    }
    EXPECT_EQ(find_kind(objects, "Service") == nullptr, c.sandbox.network == NetworkPolicy::kNone);
  }
}

TEST(K8sPlan, OnlyTheSupervisorPodMountsTheSecretAndNothingMountsTheHost) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    auto objects = plan_objects(c.sandbox, c.cluster);
    const auto* sandbox = find_kind(objects, "Sandbox");
    const auto* pod = find_kind(objects, "Pod");
    ASSERT_NE(sandbox, nullptr);
    ASSERT_NE(pod, nullptr);
    const auto& agent = sandbox->at("spec").at("podTemplate").at("spec");
    EXPECT_FALSE(agent.contains("volumes"));  // the claims only: no hostPath, no Secret
    EXPECT_EQ(agent["automountServiceAccountToken"], false);
    EXPECT_EQ(agent["containers"].size(), 1u);  // no sidecar
    EXPECT_EQ(pod->at("spec").at("volumes").at(0).at("secret").at("secretName"), object_name(c.sandbox.id) + "-keys");
    EXPECT_EQ(find_kind(objects, "SandboxTemplate")->at("spec").at("networkPolicyManagement"), "Unmanaged");
  }
}

TEST(K8sNames, KubernetesNamesFromTnkIds) {
  EXPECT_EQ(object_name("tnk-demo"), "tnk-demo");
  std::string changed = object_name("tnk-My_Proj");  // lower case and '-', then the id's hash
  EXPECT_TRUE(changed.starts_with("tnk-my-proj-")) << changed;
  EXPECT_EQ(changed.size(), std::string("tnk-my-proj-").size() + 8);
  EXPECT_NE(object_name("tnk-a_b"), object_name("tnk-a-b"));
  EXPECT_NE(object_name("tnk-A"), object_name("tnk-a"));
  std::string long_id = "tnk-" + std::string(59, 'x');
  EXPECT_LE(object_name(long_id).size(), kMaxDnsLabel - kMaxNameSuffix);
  EXPECT_EQ(template_name("pi", kFingerprint), "tnk-pi-3f9a0c5d7e21");
  EXPECT_EQ(template_name("pi", ""), "tnk-pi-none");
  EXPECT_LE(template_name(std::string(200, 'P'), kFingerprint).size(), kMaxDnsLabel - kMaxNameSuffix);
  EXPECT_EQ(label_value("_my.proj_"), "my.proj");
  EXPECT_EQ(label_value(std::string(80, 'a')).size(), 63u);
  EXPECT_EQ(quantity(2 * kTestGiB), "2Gi");
  EXPECT_EQ(quantity(1536ull << 20), "1536Mi");
  EXPECT_EQ(quantity(1000), "1000");
  EXPECT_EQ(service_host_variable("tnk-demo-supervisor"), "TNK_DEMO_SUPERVISOR_SERVICE_HOST");
}

}  // namespace
}  // namespace tnk::k8s
