// The lima backend's plan against golden files (tests/unit/backend/lima/golden/<case>.txt): the instance
// YAML and every limactl command line, for the five cases of issue 6. No Lima runs here.
// After an intended change: TNK_UPDATE_GOLDEN=1 ./tnk_unit_tests --gtest_filter='LimaPlan*', then
// review the diff of the golden files.
#include <gtest/gtest.h>

#include <sstream>

#include "backend/lima/manifest_keys.h"
#include "backend/lima/plan.h"
#include "golden.h"
#include "naming/naming.h"

namespace tnk::lima {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

InstanceSpec plain_spec(const std::string& id, const std::string& project) {
  InstanceSpec spec;
  spec.id = id;
  spec.project_dir = "/Users/ann/code/" + project;
  spec.mount_point = "/workspace";
  spec.cpus = 2;  // tnk.toml's [sandbox] defaults, as lima_instance_spec fills them in
  spec.memory_bytes = 2 * kGiB;
  spec.disk_bytes = 8 * kGiB;
  return spec;
}

// The whole plan of one sandbox, as text: YAML, then each command line as a JSON-ish argv list.
std::string render_plan(const InstanceSpec& spec) {
  auto yaml = instance_yaml(spec);
  EXPECT_TRUE(yaml.ok());
  std::ostringstream out;
  out << "==== " << kInstanceYamlFile << "\n" << (yaml ? *yaml : std::string()) << "==== limactl\n";
  std::string yaml_path = "/Users/ann/.local/state/tnk/sandboxes/" + spec.id + "/" + kInstanceYamlFile;
  std::vector<std::string> env = {"TERM=xterm-256color", "TNK_INFERENCE_URL=http://host.lima.internal:8080/v1"};
  for (const auto& argv :
       {list_argv(), create_argv(spec.id, yaml_path), start_argv(spec.id), stop_argv(spec.id, false),
        stop_argv(spec.id, true), delete_argv(spec.id, true),
        shell_argv(spec.id, spec.mount_point + "/src", env, {"bash", "-lc", "echo 'hi there'"}, true),
        shell_argv(spec.id, spec.mount_point, env, {"id", "-u"}, false, true),
        copy_argv("/Users/ann/.config/tnk/sandbox.d/provision.d/pi.sh", spec.id,
                  std::string(kGuestProvisionDir) + "/pi.sh")}) {
    out << display_command(argv) << "\n";
  }
  out << "==== not enforced (network " << to_string(spec.network) << ")\n";
  for (const auto& limit : network_limits(spec.network)) out << limit << "\n";
  return out.str();
}

void expect_golden(const std::string& name, const std::string& actual) {
  testing_support::expect_golden("backend/lima/golden/" + name + ".txt", actual);
}

TEST(LimaPlanGolden, PlainProject) { expect_golden("plain", render_plan(plain_spec("tnk-demo", "demo"))); }

TEST(LimaPlanGolden, NameWithHashSuffix) {
  auto id = naming::sandbox_id("my.proj", 63);
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(id->starts_with("tnk-myproj-")) << *id;
  expect_golden("hash_suffix", render_plan(plain_spec(*id, "my.proj")));
}

TEST(LimaPlanGolden, ProfileResourcesAndMountPoint) {
  auto spec = plain_spec("tnk-big", "big");
  spec.cpus = 6;
  spec.memory_bytes = 1536ull * 1024 * 1024;
  spec.disk_bytes = 40 * kGiB;
  spec.mount_point = "/home/agent/src";
  expect_golden("resources_mount", render_plan(spec));
}

TEST(LimaPlanGolden, NetworkNone) {
  auto spec = plain_spec("tnk-demo", "demo");
  spec.network = NetworkPolicy::kNone;
  expect_golden("network_none", render_plan(spec));
}

TEST(LimaPlanGolden, OnePortForwardFromTheManifest) {
  auto forward = parse_port_forward("13000:3000");  // a manifest's `ports: ["13000:3000"]` (host:guest)
  ASSERT_TRUE(forward.ok()) << forward.error().message;
  auto spec = plain_spec("tnk-web", "web");
  spec.port_forwards = {*forward};
  expect_golden("port_forward", render_plan(spec));
}

TEST(LimaPlan, EveryGuestPortIsIgnoredUnlessAsked) {
  auto yaml = instance_yaml(plain_spec("tnk-demo", "demo"));
  ASSERT_TRUE(yaml.ok());
  EXPECT_NE(yaml->find("guestPortRange: [1, 65535]"), std::string::npos) << *yaml;
  EXPECT_EQ(yaml->find("guestPort:"), std::string::npos) << *yaml;
  EXPECT_NE(yaml->find("forwardAgent: false"), std::string::npos);
  EXPECT_NE(yaml->find("loadDotSSHPubKeys: false"), std::string::npos);
}

TEST(LimaPlan, ExactlyOneMountTheProject) {
  auto yaml = instance_yaml(plain_spec("tnk-demo", "demo"));
  ASSERT_TRUE(yaml.ok());
  size_t locations = 0;
  for (auto at = yaml->find("location:"); at != std::string::npos; at = yaml->find("location:", at + 1)) ++locations;
  EXPECT_EQ(locations, 1u) << *yaml;
  EXPECT_NE(yaml->find("location: /Users/ann/code/demo"), std::string::npos);
}

TEST(LimaPlan, ProjectPathsThatNeedQuotingStayOneYamlString) {
  auto spec = plain_spec("tnk-x", "x");
  spec.project_dir = "/Users/ann/code/a: b # c";
  auto yaml = instance_yaml(spec);
  ASSERT_TRUE(yaml.ok());
  EXPECT_NE(yaml->find("location: \"/Users/ann/code/a: b # c\""), std::string::npos) << *yaml;
}

TEST(LimaPlan, PinnedImageReplacesTheTemplate) {
  auto options = parse_lima_options(
      "lima:\n  containerd: true\n  image:\n    location: https://example.org/u.img\n    arch: aarch64\n"
      "    digest: sha256:abc\n",
      "m.yaml");
  ASSERT_TRUE(options.ok()) << options.error().message;
  auto spec = plain_spec("tnk-demo", "demo");
  spec.image = options->image;
  spec.containerd = options->containerd;
  auto yaml = instance_yaml(spec);
  ASSERT_TRUE(yaml.ok());
  EXPECT_EQ(yaml->find("base:"), std::string::npos) << *yaml;
  EXPECT_NE(yaml->find("location: https://example.org/u.img"), std::string::npos) << *yaml;
  EXPECT_NE(yaml->find("digest: sha256:abc"), std::string::npos) << *yaml;
  EXPECT_NE(yaml->find("system: true"), std::string::npos) << *yaml;
}

TEST(LimaPlan, ShellArgvPassesWordsUnchangedAfterEnv) {
  auto argv = shell_argv("tnk-demo", "/workspace", {"A=1"}, {"printf", "%s\n", "a b"}, false);
  EXPECT_EQ(argv, (Argv{"limactl", "--tty=false", "shell", "--workdir", "/workspace", "tnk-demo", "env", "--", "A=1",
                        "printf", "%s\n", "a b"}));
}

TEST(LimaPlan, FormatSize) {
  EXPECT_EQ(format_size(4 * kGiB), "4GiB");
  EXPECT_EQ(format_size(1536ull * 1024 * 1024), "1536MiB");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(LimaPlan, AnyFreeHostPortBecomesTheGuestPort) {
  auto spec = plain_spec("tnk-web", "web");
  spec.port_forwards = {PortForward{0, 8000}};
  auto yaml = instance_yaml(spec);
  ASSERT_TRUE(yaml.ok());
  EXPECT_NE(yaml->find("guestPort: 8000\n    hostIP: 127.0.0.1\n    hostPort: 8000"), std::string::npos) << *yaml;
}

TEST(LimaManifestKeys, RejectsBadImagesAndContainerd) {
  auto bad_containerd = parse_lima_options("lima:\n  containerd: maybe\n", "m.yaml");
  ASSERT_FALSE(bad_containerd.ok());
  EXPECT_NE(bad_containerd.error().message.find("m.yaml: lima.containerd"), std::string::npos)
      << bad_containerd.error().message;
  auto bad_digest = parse_lima_options("lima:\n  image: {location: x, digest: md5:1}\n", "m.yaml");
  ASSERT_FALSE(bad_digest.ok());
  auto none = parse_lima_options("profile: base\n", "m.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->containerd);
  EXPECT_FALSE(none->image);
}

}  // namespace
}  // namespace tnk::lima
