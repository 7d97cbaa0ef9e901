// Profiles and manifests (src/specs/profiles.h, src/specs/manifest.h).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "specs/manifest.h"
#include "specs/profiles.h"
#include "specs_test_util.h"

namespace tnk::specs {
namespace {
using testing_specs::kBundledSpecs;
using testing_specs::parse;
namespace fs = std::filesystem;

class SpecsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tnk-specs-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    config_ = root_ / "a" / "b" / "config";
    fs::create_directories(config_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& content) {
    fs::path p = config_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

  fs::path root_, config_;
};

// --- profile names -------------------------------------------------------------------------------------

TEST(SpecsProfileName, AcceptsLettersDigitsDashUnderscore) {
  for (const std::string& name : std::vector<std::string>{"pi", "dev_2", "a-b", "B", "x-", std::string(64, 'a')}) {
    EXPECT_TRUE(validate_profile_name(name).ok()) << name;
  }
}

TEST(SpecsProfileName, RefusesEverythingElse) {
  for (const std::string& name :
       std::vector<std::string>{"../../x", "a/b", "", "-x", "a b", "a.b", "é", "a\n", std::string(65, 'a')}) {
    Status st = validate_profile_name(name);
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_EQ(st.error().kind, ErrorKind::kUsage);
  }
  EXPECT_EQ(validate_profile_name("../../x").error().message,
            "invalid profile name '../../x': use letters, digits, '-' and '_'");
}

// Bug 8: the original joined the profile name to the manifest path before validating it.
TEST_F(SpecsTest, Bug8_TraversalRefusedBeforeAnyPathIsBuilt) {
  write("x.yaml", "profile: x\n");  // what sandbox.d/manifests/../../x.yaml would reach
  write("sandbox.d/provision.d/x.sh", "#!/bin/sh\n");
  for (const char* name : {"../../x", "a/b", "", "-x"}) {
    EXPECT_EQ(find_manifest(config_, name).error().kind, ErrorKind::kUsage) << name;
    EXPECT_EQ(load_manifest(config_, name, nullptr).error().kind, ErrorKind::kUsage) << name;
    EXPECT_EQ(provision_script(config_, name).error().kind, ErrorKind::kUsage) << name;
  }
}

// --- listing and lookup --------------------------------------------------------------------------------

TEST_F(SpecsTest, ListProfilesWithoutSpecsIsBase) {
  EXPECT_EQ(list_profiles(config_), std::vector<std::string>{"base"});
  EXPECT_EQ(list_profiles(root_ / "missing"), std::vector<std::string>{"base"});
}

TEST_F(SpecsTest, ListProfilesFromScriptsAndManifests) {
  write("sandbox.d/provision.d/pi.sh", "");
  write("sandbox.d/provision.d/pi.root.sh", "");  // pi's root phase: no profile of its own
  write("sandbox.d/provision.d/dev.sh", "");
  write("sandbox.d/provision.d/rooted.root.sh", "");    // a profile with only a root phase
  write("sandbox.d/provision.d/provision-lib.sh", "");  // a stray copy of the library is no profile
  write("sandbox.d/provision.d/lib/provision-lib.sh", "");
  write("sandbox.d/provision.d/lib/inner.sh", "");  // not directly in provision.d
  write("sandbox.d/provision.d/bad name.sh", "");   // fails validation: skipped
  write("sandbox.d/provision.d/README.md", "");
  write("sandbox.d/manifests/base-sandbox.yaml", "");
  write("sandbox.d/manifests/pi.yaml", "");
  write("sandbox.d/manifests/big.yaml", "");  // a manifest-only profile
  write("sandbox.d/manifests/gpu-sandbox.yaml", "");
  EXPECT_EQ(list_profiles(config_), (std::vector<std::string>{"base", "big", "dev", "gpu", "pi", "rooted"}));
}

TEST_F(SpecsTest, ManifestLookupOrder) {
  const fs::path dir = config_ / "sandbox.d/manifests";
  EXPECT_FALSE(find_manifest(config_, "pi")->path.has_value());  // nothing at all

  write("sandbox.d/manifests/base-sandbox.yaml", "");
  ManifestChoice c = *find_manifest(config_, "pi");
  EXPECT_EQ(c.path, dir / "base-sandbox.yaml");
  EXPECT_TRUE(c.fell_back_to_base);
  c = *find_manifest(config_, "base");
  EXPECT_EQ(c.path, dir / "base-sandbox.yaml");
  EXPECT_FALSE(c.fell_back_to_base);

  write("sandbox.d/manifests/pi-sandbox.yaml", "");
  c = *find_manifest(config_, "pi");
  EXPECT_EQ(c.path, dir / "pi-sandbox.yaml");
  EXPECT_FALSE(c.fell_back_to_base);

  write("sandbox.d/manifests/pi.yaml", "");
  EXPECT_EQ(find_manifest(config_, "pi")->path, dir / "pi.yaml");
}

TEST_F(SpecsTest, ProvisionScript) {
  write("sandbox.d/provision.d/pi.sh", "");
  write("sandbox.d/manifests/big.yaml", "");
  EXPECT_EQ(provision_script(config_, "pi")->value(), config_ / "sandbox.d/provision.d/pi.sh");
  EXPECT_FALSE(provision_script(config_, "base")->has_value());
  EXPECT_FALSE(provision_script(config_, "big")->has_value());
  EXPECT_FALSE(provision_root_script(config_, "pi"));
  write("sandbox.d/provision.d/pi.root.sh", "");
  write("sandbox.d/provision.d/rooted.root.sh", "");
  EXPECT_EQ(provision_root_script(config_, "pi"), config_ / "sandbox.d/provision.d/pi.root.sh");
  EXPECT_FALSE(provision_script(config_, "rooted")->has_value());  // a known profile: only a root phase
  EXPECT_EQ(provision_root_script(config_, "rooted"), config_ / "sandbox.d/provision.d/rooted.root.sh");
  Result<std::optional<fs::path>> unknown = provision_script(config_, "nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(unknown.error().message,
            "unknown profile 'nope': no " + (config_ / "sandbox.d/provision.d/nope.sh").string());
  EXPECT_EQ(unknown.error().hint,
            "available profiles: base, big, pi, rooted; `tnk init --force` refreshes the bundled ones");
  EXPECT_EQ(provision_lib_dir(config_), config_ / "sandbox.d/provision.d/lib");
}

TEST_F(SpecsTest, ProvisionScriptWithoutSpecsSuggestsInit) {
  Result<std::optional<fs::path>> r = provision_script(config_, "pi");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().hint, "no specs are installed in " + config_.string() + "; run `tnk init` to install them");
}

// --- manifests -----------------------------------------------------------------------------------------

TEST(SpecsManifest, BundledManifestsParse) {
  const fs::path dir = fs::path(kBundledSpecs) / "sandbox.d/manifests";
  std::vector<std::string> warnings;
  Manifest base = *load_manifest(kBundledSpecs, "base", &warnings);
  EXPECT_EQ(base.profile, "base");
  EXPECT_EQ(base.cpus, 1u);
  EXPECT_EQ(base.memory_bytes, 2ull << 30);
  EXPECT_EQ(base.disk_bytes, 8ull << 30);
  EXPECT_EQ(base.workspace_mount, "/workspace");
  EXPECT_EQ(base.network, NetworkPolicy::kInference);
  EXPECT_TRUE(base.unknown_keys.empty());
  EXPECT_EQ(base.source, dir / "base-sandbox.yaml");

  Manifest pi = *load_manifest(kBundledSpecs, "pi", &warnings);
  EXPECT_EQ(pi.profile, "pi");
  EXPECT_EQ(pi.memory_bytes, 2ull << 30);
  EXPECT_EQ(pi.network, NetworkPolicy::kInference);
  EXPECT_EQ(pi.provision_allow_domains, std::vector<std::string>{"@npm"});

  Manifest dev = *load_manifest(kBundledSpecs, "dev", &warnings);
  EXPECT_EQ(dev.cpus, 2u);
  EXPECT_EQ(dev.memory_bytes, 4ull << 30);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST(SpecsManifest, BundledProfilesHaveScriptsOrAreBase) {
  EXPECT_EQ(list_profiles(kBundledSpecs), (std::vector<std::string>{"base", "dev", "pi"}));
  EXPECT_TRUE(provision_script(kBundledSpecs, "pi")->has_value());
  EXPECT_TRUE(provision_script(kBundledSpecs, "dev")->has_value());
  EXPECT_FALSE(provision_script(kBundledSpecs, "base")->has_value());
}

// Sizes share tnk.toml's syntax (config/size.h); a bare number is GiB, as in the original.
TEST(SpecsManifest, Sizes) {
  auto memory = [](const std::string& text) -> std::optional<uint64_t> {
    Result<Manifest> m = parse("resources:\n  memory: " + text + "\n");
    return m.ok() ? m->memory_bytes : std::nullopt;
  };
  EXPECT_EQ(memory("2GiB"), 2ull << 30);
  EXPECT_EQ(memory("512MiB"), 512ull << 20);
  EXPECT_EQ(memory("2G"), 2ull << 30);
  EXPECT_EQ(memory("2gb"), 2ull << 30);
  EXPECT_EQ(memory("2"), 2ull << 30);
  EXPECT_EQ(memory("1.5GiB"), 3ull << 29);
  EXPECT_EQ(memory("1T"), 1ull << 40);
  EXPECT_EQ(parse("resources:\n  disk: 8GiB\n")->disk_bytes, 8ull << 30);
  for (const char* bad : {"GiB", "0", "0GiB", "-1G", "2XB", "1e3", "99999999999999999999", "20000000T", "[1]"}) {
    EXPECT_FALSE(memory(bad).has_value()) << bad;
  }
}

TEST(SpecsManifest, EmptyManifestIsDefaults) {
  Manifest m = *parse("# nothing\n");
  EXPECT_FALSE(m.cpus.has_value());
  EXPECT_EQ(m.workspace_mount, "/workspace");
  EXPECT_FALSE(m.network.has_value());
}

TEST(SpecsManifest, BadYamlNamesFileLineColumn) {
  Result<Manifest> r = parse("profile: pi\nresources:\n  cpus: 1\n   memory: 2GiB\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kFailed);
  EXPECT_EQ(r.error().message, "/x/m.yaml:4:10: invalid YAML: illegal map value");
  EXPECT_EQ(parse("profile: pi\nresources:\n  cpus: [1, 2\n").error().message,
            "/x/m.yaml:4:1: invalid YAML: end of sequence flow not found");
}

TEST(SpecsManifest, WrongTypeNamesFileLineColumnAndKey) {
  Result<Manifest> r = parse("profile: pi\nresources:\n  cpus: \"many\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "/x/m.yaml:3:9: resources.cpus: must be a whole number of CPUs from 1 to 1024, got 'many'");
  EXPECT_EQ(r.error().hint, "for example `cpus: 2` under `resources:`");
  r = parse("resources:\n  memory: lots\n");
  EXPECT_EQ(r.error().message, "/x/m.yaml:2:11: resources.memory: must be a size such as 2GiB, got 'lots'");
  EXPECT_EQ(r.error().hint, "for example `memory: 2GiB` (or 512MiB) under `resources:`");
  EXPECT_EQ(parse("resources: 4\n").error().message, "/x/m.yaml:1:12: resources: must be a mapping of keys");
  EXPECT_EQ(parse("- a\n").error().message, "/x/m.yaml:1:1: a manifest must be a mapping of keys");
  EXPECT_EQ(parse("resources:\n  cpus: 0\n").error().kind, ErrorKind::kFailed);
}

TEST(SpecsManifest, UnknownKeysAreCollectedWithLines) {
  Manifest m = *parse(
      "profile: pi\nimage: debian\nresources:\n  cpus: 4\n  gpus: 1\nsecurity:\n"
      "  network: none\n  workspace_mode: direct\nports:\n  - 8080\n");
  EXPECT_EQ(m.unknown_keys, (std::vector<std::string>{"image (line 2)", "resources.gpus (line 5)",
                                                      "security.workspace_mode (line 8)"}));
  EXPECT_EQ(m.cpus, 4u);
  EXPECT_EQ(m.network, NetworkPolicy::kNone);
}

TEST(SpecsManifest, NetworkPolicies) {
  EXPECT_EQ(parse("security:\n  network: restricted\n")->network, NetworkPolicy::kInference);
  EXPECT_EQ(parse("security:\n  network: NONE\n")->network, NetworkPolicy::kNone);
  EXPECT_EQ(parse("security:\n  network: allowlist\n")->network, NetworkPolicy::kAllowlist);
  Result<Manifest> host = parse("security:\n  network: host\n");
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().message, "/x/m.yaml:2:12: security.network: unknown network policy 'host'");
  EXPECT_NE(host.error().hint.find("`open` is the closest"), std::string::npos);
}

}  // namespace
}  // namespace tnk::specs
