// The sandboxes the k8s plan tests plan for: each bundled profile (specs/sandbox.d/manifests) under
// each network policy, and one with every [k8s] key and an id Kubernetes would refuse as a name.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/k8s/plan.h"
#include "specs/manifest.h"

namespace tnk::k8s {

struct PlanCase {
  std::string name;  // the golden file's stem
  SandboxSpec sandbox;
  ClusterSettings cluster;
};

inline constexpr uint64_t kTestGiB = uint64_t{1} << 30;
inline constexpr const char* kFingerprint = "3f9a0c5d7e21b4a86c0f1e2d3b4a5968778695a4b3c2d1e0f9e8d7c6b5a49382";

inline specs::Manifest bundled_manifest(const std::string& file) {
  std::string path = std::string(TNK_SOURCE_SPECS_DIR) + "/sandbox.d/manifests/" + file;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto manifest = specs::parse_manifest(text.str(), path);
  EXPECT_TRUE(manifest.ok()) << path;
  return manifest ? *manifest : specs::Manifest{};
}

inline SandboxSpec bundled_sandbox(const std::string& profile, const std::string& file, NetworkPolicy network) {
  specs::Manifest manifest = bundled_manifest(file);
  SandboxSpec sandbox;
  sandbox.id = "tnk-demo";
  sandbox.project = "demo";
  sandbox.profile = profile;
  sandbox.fingerprint = kFingerprint;
  sandbox.cpus = manifest.cpus.value_or(2);  // tnk.toml's [sandbox] defaults for what the manifest leaves out
  sandbox.memory_bytes = manifest.memory_bytes.value_or(2 * kTestGiB);
  sandbox.disk_bytes = manifest.disk_bytes.value_or(8 * kTestGiB);
  sandbox.workdir = manifest.workspace_mount;
  sandbox.network = network;
  sandbox.allow_domains = manifest.allow_domains;
  sandbox.open_ports = manifest.open_ports;
  sandbox.inference_upstream = "http://10.20.0.5:8080/v1";
  sandbox.tnk_version = "1.0.0";
  return sandbox;
}

inline std::vector<PlanCase> plan_cases() {
  std::vector<PlanCase> cases;
  const std::pair<const char*, const char*> profiles[] = {
      {"base", "base-sandbox.yaml"}, {"pi", "pi.yaml"}, {"dev", "dev.yaml"}};
  for (const auto& [profile, file] : profiles) {
    for (NetworkPolicy network :
         {NetworkPolicy::kNone, NetworkPolicy::kInference, NetworkPolicy::kAllowlist, NetworkPolicy::kOpen}) {
      cases.push_back({std::string(profile) + "_" + to_string(network), bundled_sandbox(profile, file, network), {}});
    }
  }
  PlanCase all{"every_setting", bundled_sandbox("pi", "pi.yaml", NetworkPolicy::kAllowlist), {}};
  all.sandbox.id = "tnk-My_Proj-1a2b3c4d";  // case and '_' kept by tnk's naming rule, refused by Kubernetes
  all.sandbox.project = "My_Proj";
  all.sandbox.allow_domains = {"docs.python.org", "*.readthedocs.io"};
  all.sandbox.open_ports = {8443};
  all.sandbox.routes = {{"github", "api.github.com", 443}, {"internal_ci", "ci.example.com", 8443}};
  all.sandbox.has_api_key = true;
  all.sandbox.inference_upstream = "http://127.0.0.1:8080/v1";
  all.cluster.ns = "agents";
  all.cluster.runtime_class = "gvisor";
  all.cluster.storage_class = "fast-ssd";
  all.cluster.image_registry = "registry.example.com/team";
  all.cluster.warm_pool = 2;
  cases.push_back(all);
  return cases;
}

}  // namespace tnk::k8s
