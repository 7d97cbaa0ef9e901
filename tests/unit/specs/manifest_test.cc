// Manifest field checks and load_manifest (fallbacks, warnings, the original tnk-specs format).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "specs/manifest.h"
#include "specs_test_util.h"

namespace tnk::specs {
namespace {
using testing_specs::parse;
namespace fs = std::filesystem;

class SpecsLoadManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tnk-manifest-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    config_ = templ;
  }
  void TearDown() override { fs::remove_all(config_); }
  void write_manifest(const std::string& name, const std::string& content) {
    fs::create_directories(config_ / "sandbox.d/manifests");
    std::ofstream(config_ / "sandbox.d/manifests" / name) << content;
  }
  fs::path config_;
};

// The original tnk-specs manifests (sandbox.d/manifests at e81509a), byte for byte.
constexpr const char* kOriginalBase =
    "# Container sandbox profile metadata\nprofile: base\nresources:\n  cpus: 1\n  memory: 2GiB\n"
    "mounts:\n  workspace: /workspace\n";
constexpr const char* kOriginalPi =
    "# Turnkey workspace profile metadata for Pi coding agent instances\nprofile: pi\nresources:\n  cpus: 1\n"
    "  memory: 2GiB\nmounts:\n  workspace: /workspace\n";
// Its older, container-era form, with keys tnk never used.
constexpr const char* kOriginalContainerPi =
    "# Turnkey workspace profile metadata for Pi coding agent instances\nprofile: pi\n"
    "image: docker.io/arm64v8/debian:13-slim\nresources:\n  cpus: 4\n  memory: 6GiB\nsecurity:\n"
    "  network: restricted\n  workspace_mode: direct\nmounts:\n  workspace: /workspace\nports:\n  - \"8080:8080\"\n";

TEST(SpecsManifestFields, PortsAreForwardsOnTheHostLoopback) {
  Manifest m = *parse("ports:\n  - \"8080:3000\"\n  - 5173\n");
  EXPECT_EQ(m.ports, (std::vector<PortForward>{{8080, 3000}, {5173, 5173}}));
  for (const char* bad : {"ports:\n  - \"0:80\"\n", "ports:\n  - \"80:99999\"\n", "ports:\n  - web\n",
                          "ports:\n  - 80\n  - \"80:81\"\n", "ports: 80\n"}) {
    Result<Manifest> r = parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("ports"), std::string::npos) << r.error().message;
  }
}

TEST(SpecsManifestFields, ProvisionPolicyAndAllowEntriesWithPorts) {
  Manifest m = *parse("network:\n  provision: open\n  allow:\n    - example.com:8443\n    - \"*.example.org\"\n");
  EXPECT_EQ(m.provision_network, NetworkPolicy::kOpen);
  EXPECT_EQ(m.allow_domains, (std::vector<std::string>{"example.com:8443", "*.example.org"}));
  EXPECT_FALSE(parse("network:\n  provision: inference\n").ok());
  EXPECT_FALSE(parse("network:\n  allow:\n    - example.com:0\n").ok());
  EXPECT_FALSE(parse("network:\n  allow:\n    - example.com:http\n").ok());
}

TEST(SpecsManifestFields, OpenPortsAreWholePortNumbers) {
  EXPECT_EQ(parse("network:\n  open_ports: [8080, 22, 8080]\n")->open_ports, (std::vector<uint16_t>{8080, 22}));
  EXPECT_TRUE(parse("security:\n  network: open\n")->open_ports.empty());
  Result<Manifest> r = parse("network:\n  open_ports: [22, 70000]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:2:20: network.open_ports: '70000' is not a port");
  r = parse("network:\n  open_ports: 8080\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:2:15: network.open_ports: must be a list");
  EXPECT_FALSE(parse("network:\n  open_ports: [ssh]\n").ok());
  EXPECT_FALSE(parse("network:\n  open_ports: [0]\n").ok());
  EXPECT_FALSE(parse("network:\n  open_ports: [[22]]\n").ok());
}

TEST(SpecsManifestFields, WorkspaceModeIsDirectOrReview) {
  EXPECT_FALSE(parse("profile: x\n")->review);
  EXPECT_FALSE(parse("workspace: direct\n")->review);
  EXPECT_TRUE(parse("workspace: review\n")->review);
  Result<Manifest> r = parse("workspace: staged\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:1:12: workspace: unknown mode 'staged'");
  EXPECT_NE(r.error().hint.find("`workspace: review`"), std::string::npos);
  EXPECT_FALSE(parse("workspace: [review]\n").ok());
}

TEST(SpecsManifestFields, ReadonlyPathsAreNormalizedAndChecked) {
  Manifest m = *parse("mounts:\n  readonly:\n    - .git/hooks\n    - ./.git/config\n    - .git/hooks/\n    - .envrc\n");
  EXPECT_EQ(m.readonly_paths, (std::vector<std::string>{".git/hooks", ".git/config", ".envrc"}));

  Result<Manifest> r = parse("mounts:\n  readonly:\n    - .git/hooks\n    - ../escape\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "/x/m.yaml:4:7: mounts.readonly: invalid read-only path '../escape': it must not "
            "contain '..'");
  EXPECT_FALSE(parse("mounts:\n  readonly:\n    - /etc/passwd\n").ok());
  EXPECT_FALSE(parse("mounts:\n  readonly:\n    - .\n").ok());
  EXPECT_FALSE(parse("mounts:\n  readonly:\n    - \"a\\nb\"\n").ok());
  r = parse("mounts:\n  readonly: .git/hooks\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:2:13: mounts.readonly: must be a list");
  EXPECT_EQ(r.error().hint, "write a list, for example `readonly: [.git/hooks]`");
}

TEST(SpecsManifestFields, AllowDomainsAreChecked) {
  Manifest m = *parse(
      "security:\n  network: allowlist\nnetwork:\n  allow:\n    - docs.python.org\n"
      "    - \"*.readthedocs.io\"\n    - docs.python.org\n");
  EXPECT_EQ(m.allow_domains, (std::vector<std::string>{"docs.python.org", "*.readthedocs.io"}));
  for (const char* bad : {"Docs.Python.org", "com", "*.com", "10.0.0.1", "a..b", "-a.com", "a_b.com", "http://a.com",
                          "a.com/x", "*", "*.*.a.com", "a.com:", "a.com:0", "a.com:65536", "a.com:https"}) {
    EXPECT_FALSE(validate_domain(bad).ok()) << bad;
  }
  EXPECT_TRUE(validate_domain("a.com:8443").ok());  // a port narrows an entry to it
  Result<Manifest> r = parse("network:\n  allow:\n    - Example.com\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:3:7: network.allow: invalid domain 'Example.com': it must be lowercase");
  EXPECT_EQ(parse("provision:\n  allow: [\"@debian\", pkgs.example.org]\n")->provision_allow_domains,
            (std::vector<std::string>{"@debian", "pkgs.example.org"}));
  EXPECT_FALSE(parse("provision:\n  allow: [\"@pypi\"]\n").ok());
}

TEST(SpecsManifestFields, WorkspaceMount) {
  EXPECT_EQ(parse("mounts:\n  workspace: /srv/project\n")->workspace_mount, "/srv/project");
  EXPECT_EQ(parse("mounts:\n  workspace: /home/agent/work\n")->workspace_mount, "/home/agent/work");
  for (const char* bad : {"workspace", "/", "/usr/src", "/etc", "/proc/x", "/tmp", "/home", "/work/../etc", "/work/./x",
                          "/work//x", "/work/"}) {
    EXPECT_FALSE(validate_workspace_mount(bad).ok()) << bad;
  }
  Result<Manifest> r = parse("mounts:\n  workspace: relative\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "/x/m.yaml:2:14: mounts.workspace: invalid workspace mount 'relative': it must be an absolute path");
  EXPECT_FALSE(parse("mounts:\n  workspace: \"/work\\tx\"\n").ok());
}

TEST_F(SpecsLoadManifestTest, OriginalFormatLoadsUnchanged) {
  write_manifest("base-sandbox.yaml", kOriginalBase);
  write_manifest("pi.yaml", kOriginalPi);
  std::vector<std::string> warnings;
  Manifest pi = *load_manifest(config_, "pi", &warnings);
  EXPECT_EQ(pi.profile, "pi");
  EXPECT_EQ(pi.cpus, 1u);
  EXPECT_EQ(pi.memory_bytes, 2ull << 30);
  EXPECT_EQ(pi.workspace_mount, "/workspace");
  EXPECT_FALSE(pi.network.has_value());  // the caller applies the configured default
  Manifest base = *load_manifest(config_, "base", &warnings);
  EXPECT_EQ(base.profile, "base");
  EXPECT_TRUE(warnings.empty());
}

TEST_F(SpecsLoadManifestTest, OriginalContainerFormatLoadsWithAWarning) {
  write_manifest("pi.yaml", kOriginalContainerPi);
  std::vector<std::string> warnings;
  Manifest pi = *load_manifest(config_, "pi", &warnings);
  EXPECT_EQ(pi.cpus, 4u);
  EXPECT_EQ(pi.memory_bytes, 6ull << 30);
  EXPECT_EQ(pi.network, NetworkPolicy::kInference);  // `restricted`
  EXPECT_EQ(pi.unknown_keys, (std::vector<std::string>{"image (line 3)", "security.workspace_mode (line 9)"}));
  EXPECT_EQ(pi.ports, (std::vector<PortForward>{{8080, 8080}}));  // its `ports:` is a forward here
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], (config_ / "sandbox.d/manifests/pi.yaml").string() +
                             ": ignoring keys tnk does not use: image (line 3), security.workspace_mode (line 9)");
}

TEST_F(SpecsLoadManifestTest, FallbackAndDefaults) {
  std::vector<std::string> warnings;
  Manifest none = *load_manifest(config_, "pi", &warnings);
  EXPECT_EQ(none.profile, "pi");
  EXPECT_EQ(none.workspace_mount, "/workspace");
  EXPECT_TRUE(none.source.empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "no manifest for profile 'pi' and no base-sandbox.yaml in " +
                             (config_ / "sandbox.d/manifests").string() + ": using the defaults");

  write_manifest("base-sandbox.yaml", kOriginalBase);
  warnings.clear();
  Manifest fallback = *load_manifest(config_, "pi", &warnings);
  EXPECT_EQ(fallback.profile, "base");
  EXPECT_EQ(fallback.source, config_ / "sandbox.d/manifests/base-sandbox.yaml");
  EXPECT_EQ(warnings, std::vector<std::string>{"no manifest for profile 'pi', using base-sandbox.yaml"});
}

TEST_F(SpecsLoadManifestTest, AllowListWithoutAllowlistPolicyWarns) {
  write_manifest("pi.yaml", "security:\n  network: inference\nnetwork:\n  allow: [example.com]\n");
  std::vector<std::string> warnings;
  ASSERT_TRUE(load_manifest(config_, "pi", &warnings).ok());
  EXPECT_EQ(warnings, std::vector<std::string>{(config_ / "sandbox.d/manifests/pi.yaml").string() +
                                               ": network.allow is only used with `security.network: allowlist`"});
}

TEST_F(SpecsLoadManifestTest, OpenPortsWithoutAnOpenPolicyWarn) {
  std::string file = (config_ / "sandbox.d/manifests/pi.yaml").string();
  write_manifest("pi.yaml", "security:\n  network: allowlist\nnetwork:\n  open_ports: [22]\n");
  std::vector<std::string> warnings;
  ASSERT_TRUE(load_manifest(config_, "pi", &warnings).ok());
  EXPECT_EQ(warnings, std::vector<std::string>{file + ": network.open_ports is only used with `security.network: "
                                                      "open` or `network.provision: open`"});
  for (const char* open : {"security:\n  network: open\nnetwork:\n", "network:\n  provision: open\n"}) {
    write_manifest("pi.yaml", std::string(open) + "  open_ports: [22]\n");
    warnings.clear();
    ASSERT_TRUE(load_manifest(config_, "pi", &warnings).ok()) << open;
    EXPECT_EQ(warnings, std::vector<std::string>{}) << open;
  }
}

TEST_F(SpecsLoadManifestTest, ParseErrorIsAnErrorNotASilentFallback) {
  write_manifest("pi.yaml", "resources:\n  cpus: many\n");
  Result<Manifest> r = load_manifest(config_, "pi", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, (config_ / "sandbox.d/manifests/pi.yaml").string() +
                                   ":2:9: resources.cpus: must be a whole number of CPUs from 1 to 1024, got 'many'");
}

}  // namespace
}  // namespace tnk::specs
