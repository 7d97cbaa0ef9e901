// `tnk init` (install_specs), the specs revision and the bundled specs location.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "core/subprocess.h"
#include "specs/install.h"
#include "specs/revision.h"
#include "specs_test_util.h"

namespace tnk::specs {
namespace {
using testing_specs::kBundledSpecs;
namespace fs = std::filesystem;

class SpecsInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tnk-install-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    config_ = root_ / "home/.config/tnk";
  }
  void TearDown() override { fs::remove_all(root_); }

  Result<InstallReport> install(const std::string& source = "", bool force = false) {
    return install_specs(config_, InstallOptions{source, force, kBundledSpecs}, log_);
  }
  static void write(const fs::path& p, const std::string& content) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  static std::string read(const fs::path& p) { return read_file(p).ok() ? *read_file(p) : "<missing>"; }
  // Runs git in `dir`; fails the test on a non-zero exit.
  static std::string git(const fs::path& dir, std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", dir.string(), "-c", "user.name=t", "-c", "user.email=t@example.com"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions o;
    o.capture_stdout = o.capture_stderr = true;
    Result<ProcessResult> r = run_process(argv, o);
    EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->err : r.error().message);
    return r.ok() ? r->out : "";
  }
  // A git repository holding a copy of the bundled specs, one commit.
  fs::path make_repo() {
    fs::path repo = root_ / "repo";
    fs::copy(kBundledSpecs, repo, fs::copy_options::recursive);
    git(repo, {"init", "-q"});
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "specs"});
    return repo;
  }
  bool stage_left_behind() const {
    for (const auto& e : fs::directory_iterator(config_.parent_path())) {
      if (e.path().filename().string().starts_with(".tnk-init-")) return true;
    }
    return false;
  }

  fs::path root_, config_;
  std::ostringstream log_text_;
  Log log_{log_text_};
};

TEST_F(SpecsInstallTest, BundledIntoEmptyConfigDir) {
  Result<InstallReport> r = install();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->installed, (std::vector<std::string>{"sandbox.d", "provider.d"}));
  EXPECT_EQ(r->source, std::string("bundled specs (") + kBundledSpecs + ")");
  EXPECT_TRUE(fs::is_regular_file(config_ / "sandbox.d/manifests/base-sandbox.yaml"));
  EXPECT_TRUE(fs::is_regular_file(config_ / "sandbox.d/provision.d/lib/provision-lib.sh"));
  EXPECT_TRUE(fs::is_regular_file(config_ / "provider.d/llama-default.ini"));
  EXPECT_FALSE(fs::exists(config_ / "tnk.toml"));  // written by the config module, not here
  EXPECT_FALSE(fs::exists(config_ / "README.md"));
  EXPECT_EQ(read(config_ / ".specs-rev"), "local\n");
  EXPECT_EQ(r->revision, "sha256:" + specs_tree_hash(config_).substr(0, 12));
  EXPECT_EQ(r->revision, "sha256:" + directory_hash(fs::path(kBundledSpecs) / "sandbox.d").substr(0, 12));
  EXPECT_FALSE(stage_left_behind());
  EXPECT_NE(log_text_.str().find("info: installed: sandbox.d, provider.d\n"), std::string::npos) << log_text_.str();
}

TEST_F(SpecsInstallTest, SecondInstallWithoutForceIsRefused) {
  ASSERT_TRUE(install().ok());
  Result<InstallReport> again = install();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(again.error().message, "specs already installed in " + config_.string());
  EXPECT_EQ(again.error().hint, "use `tnk init --force` to refresh them (your tnk.toml is kept)");
  EXPECT_FALSE(stage_left_behind());
}

TEST_F(SpecsInstallTest, ForceRefreshesAndKeepsTomlAndUserFiles) {
  ASSERT_TRUE(install().ok());
  write(config_ / "tnk.toml", "server_port = 9000\n");
  write(config_ / "notes.txt", "mine\n");
  write(config_ / "sandbox.d/manifests/pi.yaml", "profile: pi\n# edited\n");
  write(config_ / "sandbox.d/manifests/mine.yaml", "profile: mine\n");
  Result<InstallReport> r = install("", true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(read(config_ / "tnk.toml"), "server_port = 9000\n");
  EXPECT_EQ(read(config_ / "notes.txt"), "mine\n");
  EXPECT_EQ(read(config_ / "sandbox.d/manifests/pi.yaml"),
            read(fs::path(kBundledSpecs) / "sandbox.d/manifests/pi.yaml"));
  EXPECT_FALSE(fs::exists(config_ / "sandbox.d/manifests/mine.yaml"));
  // The replaced, locally changed sandbox.d is kept, and the user is told where.
  EXPECT_EQ(read(config_ / ".specs-old/sandbox.d/manifests/mine.yaml"), "profile: mine\n");
  EXPECT_FALSE(fs::exists(config_ / ".specs-old/provider.d"));  // unchanged: not kept
  EXPECT_NE(log_text_.str().find("warning: " + (config_ / "sandbox.d").string() + " differed"), std::string::npos);
  EXPECT_FALSE(stage_left_behind());
}

// Bug 28: the original's init did nothing at all once `tnk config init` had written tnk.toml.
TEST_F(SpecsInstallTest, Bug28_InstallAfterOnlyTnkTomlExists) {
  write(config_ / "tnk.toml", "# my config\n");
  Result<InstallReport> r = install();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(read(config_ / "tnk.toml"), "# my config\n");
  EXPECT_TRUE(fs::is_directory(config_ / "sandbox.d"));
}

TEST_F(SpecsInstallTest, LocalDirectorySkipsGitAndSymlinks) {
  fs::path src = make_repo();
  fs::create_symlink("/etc/passwd", src / "sandbox.d/manifests/evil.yaml");
  Result<InstallReport> r = install(src.string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->source, "directory " + src.string());
  EXPECT_FALSE(fs::exists(fs::symlink_status(config_ / "sandbox.d/manifests/evil.yaml")));
  EXPECT_FALSE(fs::exists(config_ / ".git"));
  EXPECT_EQ(read(config_ / ".specs-rev"), "local\n");
  EXPECT_TRUE(r->revision.starts_with("sha256:"));
}

// Bug 20: the revision must follow the installed specs, also after `init --force` from git.
TEST_F(SpecsInstallTest, Bug20_GitUrlRecordsTheRevisionAndRefreshChangesIt) {
  fs::path repo = make_repo();
  std::string head = git(repo, {"rev-parse", "--short=7", "HEAD"}).substr(0, 7);
  Result<InstallReport> r = install("file://" + repo.string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->source, "git file://" + repo.string());
  EXPECT_EQ(r->revision, "git:" + head);
  EXPECT_EQ(read(config_ / ".specs-rev"), "git:" + head + "\n");
  EXPECT_EQ(specs_revision(config_, root_ / "memo"), "git:" + head);
  EXPECT_FALSE(fs::exists(config_ / ".git"));

  write(repo / "sandbox.d/manifests/pi.yaml", "profile: pi\nresources:\n  cpus: 2\n");
  git(repo, {"commit", "-q", "-am", "more cpus"});
  std::string head2 = git(repo, {"rev-parse", "--short=7", "HEAD"}).substr(0, 7);
  r = install("file://" + repo.string(), true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(specs_revision(config_, root_ / "memo"), "git:" + head2);
  EXPECT_NE(head, head2);

  // Back to a directory source: the content hash again, not the stale commit.
  r = install("", true);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(specs_revision(config_, root_ / "memo").starts_with("sha256:"));
}

TEST_F(SpecsInstallTest, FailingSourceLeavesPreviousSpecsIntact) {
  ASSERT_TRUE(install().ok());
  write(config_ / "sandbox.d/manifests/pi.yaml", "profile: pi\n# mine\n");
  const std::string rev = specs_revision(config_, root_ / "memo");
  Result<InstallReport> r = install("file://" + (root_ / "no-such-repo").string(), true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kFailed);
  EXPECT_TRUE(r.error().message.starts_with("failed to clone specs from file://")) << r.error().message;
  EXPECT_EQ(read(config_ / "sandbox.d/manifests/pi.yaml"), "profile: pi\n# mine\n");
  EXPECT_EQ(specs_revision(config_, root_ / "memo"), rev);
  EXPECT_FALSE(stage_left_behind());

  write(root_ / "empty/README.md", "not specs\n");
  r = install((root_ / "empty").string(), true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not look like tnk specs"), std::string::npos);
  EXPECT_EQ(install((root_ / "missing").string(), true).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(install("not a url", true).error().kind, ErrorKind::kUsage);
  EXPECT_EQ(install("-uhttps://x", true).error().kind, ErrorKind::kUsage);
  EXPECT_EQ(read(config_ / "sandbox.d/manifests/pi.yaml"), "profile: pi\n# mine\n");
  EXPECT_FALSE(stage_left_behind());
}

TEST_F(SpecsInstallTest, ForceDoesNotReplaceASymlinkedManagedDir) {
  fs::create_directories(config_);
  fs::create_directory_symlink(kBundledSpecs + std::string("/sandbox.d"), config_ / "sandbox.d");
  Result<InstallReport> r = install("", true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_TRUE(fs::is_symlink(config_ / "sandbox.d"));
}

TEST_F(SpecsInstallTest, MissingBundledSpecs) {
  Result<InstallReport> r = install_specs(config_, InstallOptions{"", false, root_ / "nowhere"}, log_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(r.error().message, "the bundled specs were not found at " + (root_ / "nowhere").string());
}

// --- revision ------------------------------------------------------------------------------------------

TEST_F(SpecsInstallTest, RevisionChangesWhenASpecsFileChanges) {
  ASSERT_TRUE(install().ok());
  const std::string before = specs_revision(config_, root_ / "memo");
  ASSERT_EQ(before.size(), 19u);  // "sha256:" + 12 hex
  write(config_ / "sandbox.d/provision.d/pi.sh", read(config_ / "sandbox.d/provision.d/pi.sh") + "# edit\n");
  const std::string after = specs_revision(config_, root_ / "memo");
  EXPECT_NE(before, after);
  write(config_ / "provider.d/llama-default.ini", "runtime = llama\n");  // outside sandbox.d: no change
  EXPECT_EQ(specs_revision(config_, root_ / "memo"), after);
  write(config_ / "sandbox.d/provision.d/extra.sh", "");  // a new file, even empty
  const std::string added = specs_revision(config_, root_ / "memo");
  EXPECT_NE(added, after);
  EXPECT_EQ(specs_revision(config_, {}), added);  // remembered or computed: the same
  fs::remove(config_ / "sandbox.d/provision.d/extra.sh");
  EXPECT_EQ(specs_revision(config_, root_ / "memo"), after);
}

TEST_F(SpecsInstallTest, RevisionOfAConfigDirThatIsACheckout) {
  fs::path repo = make_repo();  // the original's init made ~/.config/tnk a clone
  std::string head = git(repo, {"rev-parse", "--short=7", "HEAD"}).substr(0, 7);
  EXPECT_EQ(specs_revision(repo, root_ / "memo"), "git:" + head);
  write(repo / ".specs-rev", "local\n");  // after our `init --force` from a directory
  EXPECT_TRUE(specs_revision(repo, root_ / "memo").starts_with("sha256:"));
  write(repo / ".specs-rev", "garbage\n");
  EXPECT_TRUE(specs_revision(repo, root_ / "memo").starts_with("sha256:"));
}

TEST_F(SpecsInstallTest, BundledSpecsDir) {
  fs::path build = root_ / "build";
  fs::create_directories(build / "share/tnk/specs");
  EXPECT_EQ(bundled_specs_dir(build / "tnk"), build / "share/tnk/specs");
  fs::path prefix = root_ / "usr";
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share/tnk/specs");
  EXPECT_EQ(bundled_specs_dir(prefix / "bin/tnk"), prefix / "share/tnk/specs");
  // No fallback to the source tree: a relocated or broken install says so instead of using it.
  EXPECT_EQ(bundled_specs_dir(root_ / "elsewhere/tnk"), fs::path());
}

}  // namespace
}  // namespace tnk::specs
