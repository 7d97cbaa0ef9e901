// Every object the k8s backend plans, for every case of k8s_cases.h, validated as an API server would
// see it: the agent-sandbox kinds against their CRDs' v1beta1 openAPIV3Schema (crds/, copied unchanged),
// the built-in kinds against schemas made from Kubernetes' Python client (schemas/builtin.json, Kubernetes
// 1.22), the supervisor's PodSpec and the NetworkPolicy rules also against the newer schemas the CRDs
// embed, and every name and label against Kubernetes' rules. Then the validator itself, shown failing on
// a misspelt field, a wrong type, a missing required field and a value outside an enum.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>

#include "backend/k8s/egress_probe.h"
#include "backend/k8s/names.h"
#include "k8s_cases.h"
#include "openapi_validator.h"
#include "yaml_json_util.h"

namespace tnk::k8s {
namespace {

using nlohmann::json;
using testing_support::OpenApiValidator;

const std::string kDir = std::string(TNK_SOURCE_DIR) + "/tests/unit/backend/k8s/";

json crd_schema(const std::string& file) {
  json crd = testing_support::yaml_to_json(YAML::LoadFile(kDir + "crds/" + file));
  for (const auto& version : crd["spec"]["versions"]) {
    if (version["name"] == "v1beta1") return version["schema"]["openAPIV3Schema"];
  }
  ADD_FAILURE() << "no v1beta1 in " << file;
  return json::object();
}

struct Schemas {
  json builtin;                       // {"kinds", "definitions"}
  std::map<std::string, json> kinds;  // kind -> schema, metadata as ObjectMeta
  std::map<std::string, std::string> api_versions;
  json pod_spec;        // the PodSpec the Sandbox CRD embeds
  json policy_ingress;  // the NetworkPolicy rules the SandboxTemplate CRD embeds
  json policy_egress;
};

const Schemas& schemas() {
  static const Schemas loaded = [] {
    Schemas s;
    std::ifstream in(kDir + "schemas/builtin.json");
    s.builtin = json::parse(in);
    const json object_meta = {{"$ref", "#/definitions/V1ObjectMeta"}};
    const std::pair<const char*, const char*> crds[] = {
        {"Sandbox", "agents.x-k8s.io_sandboxes.yaml"},
        {"SandboxTemplate", "extensions.agents.x-k8s.io_sandboxtemplates.yaml"},
        {"SandboxWarmPool", "extensions.agents.x-k8s.io_sandboxwarmpools.yaml"}};
    for (const auto& [kind, file] : crds) {
      json schema = crd_schema(file);
      schema["properties"]["metadata"] = object_meta;  // the API server checks ObjectMeta itself
      s.kinds[kind] = schema;
    }
    s.api_versions = {{"Sandbox", "agents.x-k8s.io/v1beta1"},
                      {"SandboxTemplate", "extensions.agents.x-k8s.io/v1beta1"},
                      {"SandboxWarmPool", "extensions.agents.x-k8s.io/v1beta1"},
                      {"Pod", "v1"},
                      {"Secret", "v1"},
                      {"Service", "v1"},
                      {"NetworkPolicy", "networking.k8s.io/v1"}};
    for (const auto& [kind, schema] : s.builtin["kinds"].items()) s.kinds[kind] = schema;
    s.pod_spec = s.kinds["Sandbox"]["properties"]["spec"]["properties"]["podTemplate"]["properties"]["spec"];
    const json& policy = s.kinds["SandboxTemplate"]["properties"]["spec"]["properties"]["networkPolicy"];
    s.policy_ingress = policy["properties"]["ingress"];
    s.policy_egress = policy["properties"]["egress"];
    return s;
  }();
  return loaded;
}

std::vector<std::string> validate(const json& schema, const json& value, const std::string& path = "") {
  return OpenApiValidator(schemas().builtin).validate(schema, value, path);
}

// Names and labels as Kubernetes checks them outside the schemas (apimachinery's validation).
std::vector<std::string> check_names(const json& object) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  static const std::regex kLabelValue("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?");
  static const std::regex kQualified(
      R"((([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)");
  std::vector<std::string> problems;
  const json& meta = object["metadata"];
  std::string name = meta.value("name", "");
  if (name.size() > kMaxDnsLabel || !std::regex_match(name, kLabel)) problems.push_back("name " + name);
  for (const char* field : {"labels", "annotations"}) {
    const json entries = meta.value(field, json::object());
    for (const auto& [key, value] : entries.items()) {
      if (!std::regex_match(key, kQualified)) problems.push_back(std::string(field) + " key " + key);
      if (std::string(field) == "labels" && (value.get<std::string>().size() > kMaxDnsLabel ||
                                             !std::regex_match(value.get<std::string>(), kLabelValue))) {
        problems.push_back("label value " + value.dump());
      }
    }
  }
  return problems;
}

// One object as the API server would check it: its kind's schema, Kubernetes' name rules, its namespace.
void expect_valid(const json& object, const std::string& ns) {
  std::string kind = object.value("kind", "");
  SCOPED_TRACE(kind + " " + object["metadata"].value("name", ""));
  ASSERT_TRUE(schemas().kinds.count(kind)) << "no schema for " << kind;
  EXPECT_EQ(object["apiVersion"], schemas().api_versions.at(kind));
  EXPECT_EQ(validate(schemas().kinds.at(kind), object), std::vector<std::string>{});
  EXPECT_EQ(check_names(object), std::vector<std::string>{});
  EXPECT_EQ(object["metadata"]["namespace"], ns);
  if (kind == "Pod") {
    EXPECT_EQ(validate(schemas().pod_spec, object["spec"], ".spec"), std::vector<std::string>{});
  }
  if (kind == "NetworkPolicy") {
    const json& spec = object["spec"];
    EXPECT_EQ(validate(schemas().policy_ingress, spec.value("ingress", json::array()), ".spec.ingress"),
              std::vector<std::string>{});
    EXPECT_EQ(validate(schemas().policy_egress, spec.value("egress", json::array()), ".spec.egress"),
              std::vector<std::string>{});
  }
}

TEST(K8sSchema, EveryPlannedObjectValidates) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& object : plan_objects(c.sandbox, c.cluster)) expect_valid(object, c.cluster.ns);
  }
}

// doctor's egress probe: a deny-all policy that selects the confined pod and not the open one.
TEST(K8sSchema, TheEgressProbesObjectsValidate) {
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.name);
    EgressProbe probe = egress_probe(c.cluster, "0a1b2c3d");
    ASSERT_EQ(probe.objects.size(), 3u);
    for (const auto& object : probe.objects) expect_valid(object, c.cluster.ns);
    const json& selected = probe.objects[0]["spec"]["podSelector"]["matchLabels"];
    EXPECT_EQ(probe.objects[1]["metadata"]["labels"]["tnk/probe"], selected["tnk/probe"]);
    EXPECT_NE(probe.objects[2]["metadata"]["labels"]["tnk/probe"], selected["tnk/probe"]);
    EXPECT_FALSE(probe.objects[0]["spec"].contains("egress"));
  }
}

std::vector<json> every_setting_objects() {
  auto cases = plan_cases();
  return plan_objects(cases.back().sandbox, cases.back().cluster);
}

json object_of_kind(const std::string& kind) {
  for (const auto& object : every_setting_objects()) {
    if (object["kind"] == kind) return object;
  }
  ADD_FAILURE() << "no " << kind;
  return json::object();
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& problem : problems) {
    if (problem.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(K8sSchema, AMisspeltFieldFails) {
  json sandbox = object_of_kind("Sandbox");
  sandbox["spec"]["operatingmode"] = sandbox["spec"]["operatingMode"];
  sandbox["spec"].erase("operatingMode");
  auto problems = validate(schemas().kinds.at("Sandbox"), sandbox);
  EXPECT_TRUE(mentions(problems, ".spec.operatingmode: unknown field")) << testing::PrintToString(problems);

  json pod = object_of_kind("Pod");
  pod["spec"]["containers"][0]["imagee"] = "x";
  problems = validate(schemas().kinds.at("Pod"), pod);
  EXPECT_TRUE(mentions(problems, ".spec.containers[0].imagee: unknown field")) << testing::PrintToString(problems);
}

TEST(K8sSchema, AWrongTypeFails) {
  json pool = object_of_kind("SandboxWarmPool");
  pool["spec"]["replicas"] = "2";
  auto problems = validate(schemas().kinds.at("SandboxWarmPool"), pool);
  EXPECT_TRUE(mentions(problems, ".spec.replicas: is string, the schema says integer"))
      << testing::PrintToString(problems);

  json secret = object_of_kind("Secret");
  secret["stringData"]["token"] = 5;
  problems = validate(schemas().kinds.at("Secret"), secret);
  EXPECT_TRUE(mentions(problems, ".stringData.token: is number")) << testing::PrintToString(problems);
}

TEST(K8sSchema, AMissingRequiredFieldAndAValueOutsideTheEnumFail) {
  json templ = object_of_kind("SandboxTemplate");
  templ["spec"]["networkPolicyManagement"] = "unmanaged";
  templ["spec"]["podTemplate"].erase("spec");
  auto problems = validate(schemas().kinds.at("SandboxTemplate"), templ);
  EXPECT_TRUE(mentions(problems, "\"unmanaged\" is not one of")) << testing::PrintToString(problems);
  EXPECT_TRUE(mentions(problems, ".spec.podTemplate: required field \"spec\" missing"))
      << testing::PrintToString(problems);

  json pod = object_of_kind("Pod");
  pod["spec"].erase("containers");
  problems = validate(schemas().kinds.at("Pod"), pod);
  EXPECT_TRUE(mentions(problems, ".spec: required field \"containers\" missing")) << testing::PrintToString(problems);
}

TEST(K8sSchema, ABadNameOrLabelFails) {
  json service = object_of_kind("Service");
  service["metadata"]["name"] = "tnk-My_Proj-supervisor";
  service["metadata"]["labels"]["tnk/project"] = "_My Proj";
  auto problems = check_names(service);
  EXPECT_EQ(problems.size(), 2u) << testing::PrintToString(problems);
}

}  // namespace
}  // namespace tnk::k8s
