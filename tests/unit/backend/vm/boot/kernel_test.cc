// The guest kernel's recipe, name, build steps, config check and progress lines, and the kernels store,
// without compiling anything (a real build takes minutes: `tnk image build --vm`).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "backend/vm/boot/boot_files_store.h"
#include "backend/vm/boot/kernel.h"
#include "core/files.h"
#include "temp_dir.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

KernelRecipe sample_recipe() {
  KernelRecipe r;
  r.fragment = "CONFIG_64BIT=y\n# CONFIG_MODULES is not set\n";
  r.source_version = "6.1.192-3";
  r.compiler = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0";
  return r;
}

TEST(KernelRecipe, IdIsTheUpstreamVersionAndTheRecipeHash) {
  KernelRecipe r = sample_recipe();
  std::string id = kernel_id(r);
  EXPECT_TRUE(id.starts_with("linux-6.1.192-")) << id;
  EXPECT_EQ(id.size(), std::string("linux-6.1.192-").size() + 12);
  EXPECT_EQ(id.substr(id.size() - 12), kernel_recipe_hash(r).substr(0, 12));
  EXPECT_EQ(kernel_id(r), kernel_id(sample_recipe()));  // stable
  for (auto change : {+[](KernelRecipe& k) { k.fragment += "CONFIG_X=y\n"; },
                      +[](KernelRecipe& k) { k.source_version = "6.1.192-4"; },
                      +[](KernelRecipe& k) { k.compiler = "gcc 13"; }, +[](KernelRecipe& k) { k.format = 2; }}) {
    KernelRecipe other = sample_recipe();
    change(other);
    EXPECT_NE(kernel_id(other), id);
  }
}

TEST(KernelRecipe, FragmentSettingsAndWhatAConfigLacks) {
  std::string fragment = "# a comment\nCONFIG_A=y\n\n# CONFIG_B is not set\n# CONFIG_C is not set\nCONFIG_D=y\n";
  EXPECT_EQ(fragment_settings(fragment),
            (std::vector<std::string>{"CONFIG_A=y", "# CONFIG_B is not set", "# CONFIG_C is not set", "CONFIG_D=y"}));
  // B is explicitly unset, C absent altogether (its menu is off): both fine. D dropped by Kconfig.
  std::string config = "CONFIG_A=y\n# CONFIG_B is not set\n# CONFIG_D is not set\n";
  EXPECT_EQ(missing_settings(fragment, config), std::vector<std::string>{"CONFIG_D=y"});
  EXPECT_EQ(missing_settings("# CONFIG_E is not set\n", "CONFIG_E=y\n"),
            std::vector<std::string>{"# CONFIG_E is not set"});
}

TEST(KernelRecipe, TheFragmentIsFoundBesideTheBinaryOrUnderItsPrefix) {
  testing_support::TempDir dir;
  fs::create_directories(dir.path() / "build/share/tnk/kernel");
  std::ofstream(dir.path() / "build/share/tnk/kernel" / kKernelFragmentName) << "CONFIG_64BIT=y\n";
  EXPECT_EQ(*find_kernel_fragment(dir.path() / "build/tnk"),
            dir.path() / "build/share/tnk/kernel" / kKernelFragmentName);
  fs::create_directories(dir.path() / "usr/bin");
  fs::create_directories(dir.path() / "usr/share/tnk/kernel");
  std::ofstream(dir.path() / "usr/share/tnk/kernel" / kKernelFragmentName) << "CONFIG_64BIT=y\n";
  EXPECT_EQ(*find_kernel_fragment(dir.path() / "usr/bin/tnk"),
            dir.path() / "usr/share/tnk/kernel" / kKernelFragmentName);
  auto missing = find_kernel_fragment(dir.path() / "elsewhere/tnk");  // no fallback to the source tree
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
}

TEST(KernelRecipe, TheShippedFragmentAsksForWhatTheGuestNeeds) {
  auto text = read_file(fs::path(TNK_SOURCE_DIR) / "kernel" / kKernelFragmentName);
  ASSERT_TRUE(text.ok());
  auto settings = fragment_settings(*text);
  for (const char* needed :
       {"CONFIG_64BIT=y", "CONFIG_PVH=y", "CONFIG_KVM_GUEST=y", "CONFIG_VIRTIO_MMIO=y",
        "CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES=y", "CONFIG_VIRTIO_BLK=y", "CONFIG_VIRTIO_NET=y", "CONFIG_VIRTIO_CONSOLE=y",
        "CONFIG_VIRTIO_VSOCKETS=y", "CONFIG_VIRTIO_FS=y", "CONFIG_EXT4_FS=y", "CONFIG_OVERLAY_FS=y",
        "CONFIG_DEVTMPFS=y", "CONFIG_UNIX98_PTYS=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_SECCOMP_FILTER=y",
        "CONFIG_BINFMT_SCRIPT=y", "# CONFIG_MODULES is not set"}) {
    EXPECT_NE(std::find(settings.begin(), settings.end(), needed), settings.end()) << needed;
  }
}

TEST(KernelBuild, GoldenSteps) {
  auto steps = kernel_build_steps("/usr/src/linux-source-6.1.tar.xz", "/c/kernels/.build-k-1/src", 2);
  ASSERT_EQ(steps.size(), 4u);
  auto line = [](const KernelStep& s) {
    std::string out = s.phase + ":";
    for (const auto& a : s.argv) out += " " + a;
    return out;
  };
  EXPECT_EQ(line(steps[0]),
            "extract: tar -xf /usr/src/linux-source-6.1.tar.xz -C /c/kernels/.build-k-1/src --strip-components=1");
  EXPECT_EQ(line(steps[1]), "configure: make -C /c/kernels/.build-k-1/src ARCH=x86_64 tinyconfig");
  EXPECT_EQ(line(steps[2]), "configure: make -C /c/kernels/.build-k-1/src ARCH=x86_64 tnk-guest.config");
  EXPECT_EQ(line(steps[3]), "compile: make -C /c/kernels/.build-k-1/src ARCH=x86_64 -j2 vmlinux");
  EXPECT_EQ(kernel_build_steps("/t", "/s", 0)[3].argv[4], "-j1");
}

TEST(KernelBuild, ProgressEveryTenPercentOfCompiledFiles) {
  KernelProgress progress;
  std::vector<std::string> shown;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_FALSE(progress.feed("  LD      vmlinux.o"));
    if (auto line = progress.feed("  CC      kernel/x" + std::to_string(i) + ".o")) shown.push_back(*line);
  }
  EXPECT_EQ(progress.files(), 2000);
  ASSERT_EQ(shown.size(), 10u);
  EXPECT_EQ(shown.front(), "compiling: 1 files (~0%)");
  EXPECT_TRUE(shown.back().ends_with(" files (~90%)")) << shown.back();  // then silent: never 100% early
}

class KernelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    paths_.home = dir_.path();
    paths_.cache_dir = dir_.path() / "cache";
  }
  void fake_kernel(const std::string& id, bool with_json = true) {
    fs::path d = artifact_root(paths_, kKernelKind) / id;
    ASSERT_TRUE(make_dirs(d).ok());
    std::ofstream(d / kVmlinuxFile) << "ELF";
    if (with_json) {
      std::ofstream(d / "kernel.json") << nlohmann::json{
          {"schema", 1},
          {"id", id},
          {"size_bytes", 3},
          {"built_at", 1700000000},
          {"build_seconds", 200.5},
          {"recipe_hash", "ab"},
          {"recipe", {{"format", 1}}}}.dump();
    }
  }
  testing_support::TempDir dir_;
  Paths paths_;
};

TEST_F(KernelStoreTest, ListFindRemove) {
  fake_kernel("linux-6.1.192-0123456789ab");
  fake_kernel("linux-6.1.192-broken000000", false);
  ASSERT_TRUE(make_dirs(artifact_root(paths_, kKernelKind) / ".build-linux-6.1.192-aaaaaaaaaaaa-42").ok());
  auto list = list_kernels(paths_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);  // the work directory is not a kernel
  EXPECT_EQ((*list)[0].id, "linux-6.1.192-0123456789ab");
  EXPECT_TRUE((*list)[0].problem.empty());
  EXPECT_EQ((*list)[0].build_seconds, 200.5);
  EXPECT_NE((*list)[1].problem.find("not usable"), std::string::npos);
  EXPECT_TRUE(find_kernel(paths_, "linux-6.1.192-0123456789ab").ok());
  EXPECT_EQ(find_kernel(paths_, "linux-6.1.192-ffffffffffff").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(find_kernel(paths_, "../x").error().kind, ErrorKind::kUsage);
  ASSERT_TRUE(remove_artifact(paths_, kKernelKind, "linux-6.1.192-0123456789ab").ok());
  EXPECT_FALSE(fs::exists(artifact_root(paths_, kKernelKind) / "linux-6.1.192-0123456789ab"));
  EXPECT_EQ(list_kernels(paths_)->size(), 1u);
}

TEST_F(KernelStoreTest, EnsureReturnsAPresentKernelWithoutBuilding) {
  KernelRecipe r = sample_recipe();
  fake_kernel(kernel_id(r));
  Log log(std::cerr);
  KernelBuildOptions options;
  options.tarball = "/nonexistent.tar.xz";  // would fail if it tried to build
  auto k = ensure_kernel(paths_, r, log, options);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->vmlinux, artifact_root(paths_, kKernelKind) / kernel_id(r) / "vmlinux");
  options.force = true;
  EXPECT_EQ(ensure_kernel(paths_, r, log, options).error().kind, ErrorKind::kNotFound);  // names the tarball
}

TEST_F(KernelStoreTest, InstallReplacesAndWorkDirsAreFresh) {
  Log log(std::cerr);
  auto lock = lock_artifact(paths_, kKernelKind, "k-1", std::chrono::seconds(1), log);
  ASSERT_TRUE(lock.ok());
  ASSERT_TRUE(make_dirs(artifact_root(paths_, kKernelKind) / ".build-k-1-999999").ok());  // a dead build
  auto work = fresh_work_dir(paths_, kKernelKind, "k-1");
  ASSERT_TRUE(work.ok());
  EXPECT_FALSE(fs::exists(artifact_root(paths_, kKernelKind) / ".build-k-1-999999"));
  ASSERT_TRUE(install_artifact(paths_, kKernelKind, "k-1", *work, {{"size_bytes", 1}}).ok());
  auto found = find_artifact(paths_, kKernelKind, "k-1");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->doc["schema"], 1);
  auto again = fresh_work_dir(paths_, kKernelKind, "k-1");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(install_artifact(paths_, kKernelKind, "k-1", *again, {{"size_bytes", 2}}).ok());
  EXPECT_EQ(find_artifact(paths_, kKernelKind, "k-1")->doc["size_bytes"], 2);
}

TEST_F(KernelStoreTest, BuildArtifactInstallsWithItsTimesAndCleansUpAFailure) {
  Log log(std::cerr);
  auto lock = lock_artifact(paths_, kKernelKind, "k-2", std::chrono::seconds(1), log);
  ASSERT_TRUE(lock.ok());
  auto failed_build = build_artifact(paths_, kKernelKind, "k-2", "guest kernel k-2", [](const fs::path& work) {
    EXPECT_TRUE(write_file_atomic(work / kVmlinuxFile, "half").ok());
    return Result<nlohmann::json>(failed("make exited with status 2"));
  });
  ASSERT_FALSE(failed_build.ok());
  EXPECT_EQ(failed_build.error().message, "building guest kernel k-2: make exited with status 2");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(artifact_root(paths_, kKernelKind))) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"k-2.lock"}) << "the work directory is gone";
  EXPECT_EQ(find_artifact(paths_, kKernelKind, "k-2").error().kind, ErrorKind::kNotFound);

  auto built = build_artifact(paths_, kKernelKind, "k-2", "guest kernel k-2", [](const fs::path& work) {
    EXPECT_TRUE(write_file_atomic(work / kVmlinuxFile, "elf").ok());
    return Result<nlohmann::json>(nlohmann::json{{"size_bytes", 3}});
  });
  ASSERT_TRUE(built.ok()) << built.error().message;
  auto found = find_artifact(paths_, kKernelKind, "k-2", kVmlinuxFile);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->doc["size_bytes"], 3);
  EXPECT_TRUE(found->doc.contains("built_at"));
  EXPECT_TRUE(found->doc.contains("build_seconds"));

  fs::remove(found->dir / kVmlinuxFile);
  auto broken = find_artifact(paths_, kKernelKind, "k-2", kVmlinuxFile);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().message,
            "kernel k-2 is not usable: " + (found->dir / kVmlinuxFile).string() + " is missing");
  EXPECT_NE(broken.error().hint.find("tnk image rm k-2"), std::string::npos);
}

}  // namespace
}  // namespace tnk::vm::boot
