// The image recipe: what default_recipe takes from the host's apt sources, hash stability (and
// change on any change), and the mmdebstrap command line (golden).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "image/recipe.h"

namespace tnk::image {
namespace {

using Strings = std::vector<std::string>;

const char* const kKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg";

std::vector<AptSource> host_like() {
  return {{"http://mirror.example/debian", {"bookworm", "bookworm-updates"}, {"main"}, kKeyring, ""},
          {"http://mirror.example/debian-security", {"bookworm-security"}, {"main"}, kKeyring, ""},
          {"https://third.example/node", {"nodistro"}, {"main"}, "/usr/share/keyrings/node.gpg", ""}};
}

Recipe fixed_recipe() {
  auto recipe = default_recipe(host_like());
  EXPECT_TRUE(recipe.ok());
  recipe->architecture = "amd64";  // the golden values do not depend on the test machine
  recipe->local_ca_files.clear();  // nor on the CAs its admin added
  recipe->local_ca_digest.clear();
  return *recipe;
}

TEST(Recipe, LocalCasAreCopiedInAndChangeTheImage) {
  auto dir = std::filesystem::temp_directory_path() / ("tnk-ca-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "company.crt") << "-----BEGIN CERTIFICATE-----\nAAA\n";
  std::ofstream(dir / "notes.txt") << "not a certificate";
  Recipe recipe = fixed_recipe();
  std::string without = image_id(recipe);
  ASSERT_TRUE(add_local_cas(recipe, dir).ok());
  EXPECT_EQ(recipe.local_ca_files, Strings({(dir / "company.crt").string()}));
  std::string with = image_id(recipe);
  EXPECT_NE(with, without);
  auto hooks = customize_hooks(recipe);
  EXPECT_NE(hooks.back().find("cp " + (dir / "company.crt").string()), std::string::npos);
  EXPECT_NE(hooks.back().find("update-ca-certificates"), std::string::npos);
  std::ofstream(dir / "company.crt") << "changed";  // a renewed certificate is a new image
  ASSERT_TRUE(add_local_cas(recipe, dir).ok());
  EXPECT_NE(image_id(recipe), with);
  std::filesystem::remove_all(dir);
}

TEST(Recipe, DefaultTakesTheHostsDebianMirrorsOnly) {
  auto r = fixed_recipe();
  ASSERT_EQ(r.mirrors.size(), 2u);
  EXPECT_EQ(r.mirrors[0].uri, "http://mirror.example/debian");
  EXPECT_EQ(r.mirrors[0].suites, Strings({"bookworm", "bookworm-updates"}));
  EXPECT_EQ(r.mirrors[0].components, Strings({"main"}));
  EXPECT_EQ(r.mirrors[0].signed_by, kKeyring);
  EXPECT_EQ(r.mirrors[1].uri, "http://mirror.example/debian-security");
  EXPECT_EQ(r.mirrors[1].suites, Strings({"bookworm-security"}));
  EXPECT_EQ(r.suite, "bookworm");
  EXPECT_TRUE(std::is_sorted(r.packages.begin(), r.packages.end()));
  for (const char* p : {"bash", "git", "curl", "ca-certificates", "ripgrep", "less", "procps", "sudo"}) {
    EXPECT_NE(std::find(r.packages.begin(), r.packages.end(), p), r.packages.end()) << p;
  }
}

TEST(Recipe, OtherReleasesOnTheHostStillGiveBookwormAndNoUpdatesWhenAbsent) {
  auto r = default_recipe({{"http://m.example/debian", {"trixie"}, {"main", "contrib"}, "", ""}});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->mirrors.size(), 1u);
  EXPECT_EQ(r->mirrors[0].suites, Strings({"bookworm"}));
  EXPECT_EQ(r->mirrors[0].components, Strings({"main"}));
}

TEST(Recipe, NoDebianMirrorIsNotFoundWithAHint) {
  auto r = default_recipe({{"http://ubuntu.example/ubuntu", {"jammy"}, {"main"}, "", ""}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(r.error().hint.find("bookworm main"), std::string::npos);
}

TEST(Recipe, IdIsSuiteAndTwelveHexOfTheHash) {
  auto r = fixed_recipe();
  std::string hash = recipe_hash(r);
  ASSERT_EQ(hash.size(), 64u);
  EXPECT_EQ(image_id(r), "debian-bookworm-" + hash.substr(0, 12));
  EXPECT_EQ(recipe_hash(fixed_recipe()), hash);  // deterministic
}

// Pins the canonical form: if this changes, every cached image is rebuilt. That is right when the
// recipe really changed (then update the value here); it is a bug when only the code moved.
TEST(Recipe, HashIsStable) { EXPECT_EQ(image_id(fixed_recipe()), "debian-bookworm-1852505f354f"); }

TEST(Recipe, AnyChangeChangesTheHash) {
  const std::string base = recipe_hash(fixed_recipe());
  std::vector<std::pair<const char*, std::function<void(Recipe&)>>> changes = {
      {"format", [](Recipe& r) { r.format += 1; }},
      {"suite", [](Recipe& r) { r.suite = "trixie"; }},
      {"architecture", [](Recipe& r) { r.architecture = "arm64"; }},
      {"variant", [](Recipe& r) { r.variant = "minbase"; }},
      {"mirror uri", [](Recipe& r) { r.mirrors[0].uri = "http://other.example/debian"; }},
      {"mirror suites", [](Recipe& r) { r.mirrors[0].suites.pop_back(); }},
      {"components", [](Recipe& r) { r.mirrors[0].components.push_back("contrib"); }},
      {"signed-by", [](Recipe& r) { r.mirrors[1].signed_by = ""; }},
      {"mirror order", [](Recipe& r) { std::swap(r.mirrors[0], r.mirrors[1]); }},
      {"packages", [](Recipe& r) { r.packages.push_back("vim"); }},
      {"dpkg options", [](Recipe& r) { r.dpkg_options.pop_back(); }},
      {"apt options", [](Recipe& r) { r.apt_options.clear(); }},
      {"user name", [](Recipe& r) { r.user.name = "bot"; }},
      {"uid", [](Recipe& r) { r.user.uid = 1001; }},
      {"gid", [](Recipe& r) { r.user.gid = 1001; }},
      {"home", [](Recipe& r) { r.user.home = "/home/bot"; }},
      {"shell", [](Recipe& r) { r.user.shell = "/bin/sh"; }},
      {"sudo", [](Recipe& r) { r.user.passwordless_sudo = false; }},
      {"hostname", [](Recipe& r) { r.hostname = "box"; }},
      {"workspace", [](Recipe& r) { r.workspace_dir = "/work"; }},
  };
  for (auto& [name, change] : changes) {
    Recipe r = fixed_recipe();
    change(r);
    EXPECT_NE(recipe_hash(r), base) << name;
  }
}

TEST(Recipe, JsonCarriesTheHookCommands) {
  auto json = recipe_to_json(fixed_recipe());
  EXPECT_EQ(json["hooks"]["customize"].size(), customize_hooks(fixed_recipe()).size());
  EXPECT_TRUE(json["hooks"]["setup"].empty());  // the keyring is the standard one
  EXPECT_EQ(json["user"]["uid"], 1000);
}

TEST(Recipe, MmdebstrapArgvGolden) {
  Strings expected = {
      "mmdebstrap",
      "--mode=root",
      "--format=directory",
      "--variant=apt",
      "--architectures=amd64",
      "--include=bash,ca-certificates,curl,git,gzip,less,netbase,openssh-client,procps,ripgrep,sudo,tar,xz-utils",
      "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-include=/usr/share/doc/*/copyright",
      "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/info/*",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      "--dpkgopt=path-include=/usr/share/locale/locale.alias",
      "--dpkgopt=path-exclude=/usr/share/lintian/*",
      "--aptopt=Acquire::Retries \"3\"",
      "--customize-hook=chroot \"$1\" groupadd --gid 1000 agent",
      "--customize-hook=chroot \"$1\" useradd --uid 1000 --gid 1000 --create-home --home-dir /home/agent "
      "--shell /bin/bash agent",
      "--customize-hook=echo 'agent ALL=(ALL:ALL) NOPASSWD: ALL' > \"$1/etc/sudoers.d/agent\" && chmod 0440 "
      "\"$1/etc/sudoers.d/agent\" && chroot \"$1\" visudo -cqf /etc/sudoers.d/agent",
      "--customize-hook=echo sandbox > \"$1/etc/hostname\"",
      "--customize-hook=printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost "
      "ip6-loopback\\n' sandbox > \"$1/etc/hosts\"",
      "--customize-hook=rm -f \"$1/etc/resolv.conf\" && : > \"$1/etc/resolv.conf\"",
      "--customize-hook=mkdir -p \"$1/workspace\" && chmod 0755 \"$1/workspace\"",
      "bookworm",
      "/cache/images/.build-x-1/rootfs",
      "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bookworm main",
      "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian "
      "bookworm-updates main",
      "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian-security "
      "bookworm-security main",
  };
  EXPECT_EQ(mmdebstrap_argv(fixed_recipe(), "/cache/images/.build-x-1/rootfs"), expected);
}

TEST(Recipe, KeyringOutsideUsrShareIsCopiedInBeforeApt) {
  auto r = default_recipe({{"http://m.example/debian", {"bookworm"}, {"main"}, "/etc/apt/keyrings/m.gpg", ""}});
  ASSERT_TRUE(r.ok());
  auto hooks = setup_hooks(*r);
  ASSERT_EQ(hooks.size(), 1u);
  EXPECT_EQ(hooks[0], "mkdir -p \"$1/etc/apt/keyrings\" && cp /etc/apt/keyrings/m.gpg \"$1/etc/apt/keyrings/m.gpg\"");
  auto argv = mmdebstrap_argv(*r, "/t");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--setup-hook=" + hooks[0]), argv.end());
}

TEST(Recipe, ValuesThatWouldReachAShellAreRefused) {
  auto r = fixed_recipe();
  r.user.name = "agent; rm -rf /";
  EXPECT_FALSE(check_recipe(r).ok());
  r = fixed_recipe();
  r.mirrors[0].signed_by = "/tmp/a b.gpg";
  EXPECT_FALSE(check_recipe(r).ok());
  r = fixed_recipe();
  r.mirrors[0].uri = "http://m.example/$(id)";
  EXPECT_FALSE(check_recipe(r).ok());
  r = fixed_recipe();
  r.workspace_dir = "relative";
  EXPECT_FALSE(check_recipe(r).ok());
  EXPECT_FALSE(default_recipe({{"http://m.example/debian\"x", {"bookworm"}, {"main"}, "", ""}}).ok());
  EXPECT_TRUE(check_recipe(fixed_recipe()).ok());
}

}  // namespace
}  // namespace tnk::image
