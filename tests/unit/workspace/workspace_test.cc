#include "workspace/workspace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace tnk::workspace {
namespace {
namespace fs = std::filesystem;

// A real directory tree under /tmp:
//   base/home/u                 fake $HOME
//   base/home/u/code            workspace root
//   base/home/u/code/proj/sub/deeper
//   base/home/u/code/proj/escape -> base/outside
//   base/home/u/code2/other     sibling with a common string prefix
//   base/home/u/afile           a regular file
//   base/outside
//   base/link-code -> home/u/code,  base/link-home -> home/u
class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tnk-workspace-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    ASSERT_EQ(chmod(tmpl, 0755), 0);
    base_ = fs::canonical(tmpl);
    home_ = base_ / "home" / "u";
    root_ = home_ / "code";
    fs::create_directories(root_ / "proj" / "sub" / "deeper");
    fs::create_directories(home_ / "code2" / "other");
    fs::create_directories(base_ / "outside");
    fs::create_directory_symlink(root_, base_ / "link-code");
    fs::create_directory_symlink(home_, base_ / "link-home");
    fs::create_directory_symlink(base_ / "outside", root_ / "proj" / "escape");
    std::ofstream(home_ / "afile") << "x";
  }
  void TearDown() override {
    for (const auto& p : chmodded_) fs::permissions(p, fs::perms::owner_all);
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  Result<Project> resolve(const fs::path& cwd) { return resolve_project(root_, home_, cwd); }

  static void expect_error(const Result<Project>& r, ErrorKind kind, const std::string& message,
                           const std::string& hint_part = {}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, kind);
    EXPECT_EQ(r.error().message, message);
    if (!hint_part.empty()) {
      EXPECT_NE(r.error().hint.find(hint_part), std::string::npos) << r.error().hint;
    }
  }

  fs::path base_, home_, root_;
  std::vector<fs::path> chmodded_;
};

TEST_F(WorkspaceTest, ProjectTop) {
  auto r = resolve(root_ / "proj");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->root, root_);
  EXPECT_EQ(r->dir, root_ / "proj");
  EXPECT_EQ(r->name, "proj");
  EXPECT_TRUE(r->relative_cwd.empty());
  EXPECT_EQ(guest_workdir(*r, "/workspace"), "/workspace");
}

TEST_F(WorkspaceTest, NestedSubdirectoryMapsToSameProject) {
  auto r = resolve(root_ / "proj" / "sub" / "deeper");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "proj");
  EXPECT_EQ(r->dir, root_ / "proj");
  EXPECT_EQ(r->relative_cwd, fs::path("sub") / "deeper");
  EXPECT_EQ(guest_workdir(*r, "/workspace"), "/workspace/sub/deeper");
  EXPECT_EQ(guest_workdir(*r, "/workspace/"), "/workspace/sub/deeper");
  EXPECT_EQ(guest_workdir(*r, "/"), "/sub/deeper");
}

TEST_F(WorkspaceTest, NonCanonicalCwdIsNormalized) {
  auto r = resolve(root_ / "proj" / "sub" / ".." / "sub" / "." / "deeper");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->relative_cwd, fs::path("sub") / "deeper");
}

// Bug 31: symlinked paths on either side must map to the same project and workdir.
TEST_F(WorkspaceTest, Bug31SymlinkedCwd) {
  auto r = resolve(base_ / "link-code" / "proj" / "sub");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->dir, root_ / "proj");
  EXPECT_EQ(r->relative_cwd, fs::path("sub"));
  EXPECT_EQ(guest_workdir(*r, "/workspace"), "/workspace/sub");
}

TEST_F(WorkspaceTest, Bug31SymlinkedRoot) {
  auto r = resolve_project(base_ / "link-code", home_, root_ / "proj" / "sub");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->root, root_);
  EXPECT_EQ(r->name, "proj");
  EXPECT_EQ(r->relative_cwd, fs::path("sub"));
}

TEST_F(WorkspaceTest, Bug31SymlinkedHome) {
  auto r = resolve_project(base_ / "link-home" / "code", base_ / "link-home", root_ / "proj");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->dir, root_ / "proj");
}

TEST_F(WorkspaceTest, SymlinkFromProjectToOutsideIsOutside) {
  auto r = resolve(root_ / "proj" / "escape");
  expect_error(r, ErrorKind::kUsage,
               "current directory is outside the configured workspace root (" + root_.string() + ")");
}

TEST_F(WorkspaceTest, RelativeRoot) {
  auto r = resolve_project("code", home_, root_ / "proj");
  expect_error(r, ErrorKind::kUsage, "workspace root 'code' is not an absolute path",
               "set workspace_root in tnk.toml to a path such as ~/code");
  EXPECT_EQ(r.error().hint, "set workspace_root in tnk.toml to a path such as ~/code");
}

TEST_F(WorkspaceTest, MissingRoot) {
  const fs::path missing = home_ / "missing";
  auto r = resolve_project(missing, home_, root_ / "proj");
  expect_error(r, ErrorKind::kNotFound, "workspace root '" + missing.string() + "' does not exist");
  EXPECT_EQ(r.error().hint, "create it with `mkdir -p " + missing.string() + "` or set TNK_WORKSPACE_ROOT");
}

TEST_F(WorkspaceTest, RootIsAFile) {
  auto r = resolve_project(home_ / "afile", home_, root_ / "proj");
  expect_error(r, ErrorKind::kUsage, "workspace root '" + (home_ / "afile").string() + "' is not a directory");
}

TEST_F(WorkspaceTest, RootIsSlash) {
  expect_error(resolve_project("/", home_, root_ / "proj"), ErrorKind::kUsage, "workspace root cannot be '/'");
}

TEST_F(WorkspaceTest, RootIsHome) {
  expect_error(resolve_project(home_, home_, root_ / "proj"), ErrorKind::kUsage,
               "security violation: workspace root cannot be the home directory; use a dedicated subdirectory "
               "(for example, ~/code)");
  // Also when spelled through a symlink.
  expect_error(resolve_project(base_ / "link-home", home_, root_ / "proj"), ErrorKind::kUsage,
               "security violation: workspace root cannot be the home directory; use a dedicated subdirectory "
               "(for example, ~/code)");
}

TEST_F(WorkspaceTest, RootIsParentOfHome) {
  const fs::path parent = base_ / "home";
  expect_error(resolve_project(parent, home_, root_ / "proj"), ErrorKind::kUsage,
               "security violation: workspace root '" + parent.string() + "' contains the home directory (" +
                   home_.string() + "); use a dedicated subdirectory (for example, ~/code)");
}

TEST_F(WorkspaceTest, RootOutsideHome) {
  expect_error(resolve_project(base_ / "outside", home_, base_ / "outside"), ErrorKind::kUsage,
               "workspace root must be inside '$HOME' (" + home_.string() + ")");
}

TEST_F(WorkspaceTest, CwdAtRoot) {
  auto r = resolve(root_);
  expect_error(r, ErrorKind::kUsage, "navigate into a project directory first");
  EXPECT_EQ(r.error().hint, "cd " + root_.string() + "/<project>");
  // Through the symlink too.
  expect_error(resolve(base_ / "link-code"), ErrorKind::kUsage, "navigate into a project directory first");
}

TEST_F(WorkspaceTest, CwdOutsideRoot) {
  auto r = resolve(base_ / "outside");
  expect_error(r, ErrorKind::kUsage,
               "current directory is outside the configured workspace root (" + root_.string() + ")");
  EXPECT_NE(r.error().hint.find(root_.string()), std::string::npos);
  EXPECT_NE(r.error().hint.find("TNK_WORKSPACE_ROOT"), std::string::npos);
  // The home directory itself is outside the root.
  expect_error(resolve(home_), ErrorKind::kUsage,
               "current directory is outside the configured workspace root (" + root_.string() + ")");
}

TEST_F(WorkspaceTest, SiblingWithCommonPrefixIsOutside) {
  expect_error(resolve(home_ / "code2" / "other"), ErrorKind::kUsage,
               "current directory is outside the configured workspace root (" + root_.string() + ")");
}

TEST_F(WorkspaceTest, MissingCwd) {
  auto r = resolve(root_ / "proj" / "gone");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
}

// Runs `fn` in a child process without privileges (as nobody when we are root, since root bypasses
// permission bits) and returns its exit status; 200 means the drop failed.
int run_unprivileged(const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(200);
    _exit(fn());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int kind_code(const Result<Project>& r) { return r.ok() ? 0 : exit_code_for(r.error().kind); }

TEST_F(WorkspaceTest, PermissionDeniedOnRoot) {
  const fs::path locked = home_ / "locked";
  fs::create_directories(locked / "code" / "proj");
  fs::permissions(locked, fs::perms::none);
  chmodded_.push_back(locked);
  const int code =
      run_unprivileged([&] { return kind_code(resolve_project(locked / "code", home_, locked / "code" / "proj")); });
  if (code == 200) GTEST_SKIP() << "cannot drop privileges to uid 65534 here";
  EXPECT_EQ(code, kExitPermission);
}

TEST_F(WorkspaceTest, PermissionDeniedOnCwd) {
  const fs::path locked = root_ / "proj" / "locked";
  fs::create_directories(locked / "inner");
  fs::permissions(locked, fs::perms::none);
  chmodded_.push_back(locked);
  const int code = run_unprivileged([&] { return kind_code(resolve(locked / "inner")); });
  if (code == 200) GTEST_SKIP() << "cannot drop privileges to uid 65534 here";
  EXPECT_EQ(code, kExitPermission);
}

TEST(IsWithin, ComponentWise) {
  EXPECT_TRUE(is_within("/home/u/code/p", "/home/u/code"));
  EXPECT_TRUE(is_within("/home/u/code", "/home/u/code"));
  EXPECT_TRUE(is_within("/home/u/code/", "/home/u/code"));
  EXPECT_TRUE(is_within("/home/u/code", "/home/u/code/"));
  EXPECT_TRUE(is_within("/anything", "/"));
  EXPECT_FALSE(is_within("/home/u/code2", "/home/u/code"));
  EXPECT_FALSE(is_within("/home/u/code2/x", "/home/u/code"));
  EXPECT_FALSE(is_within("/home/u", "/home/u/code"));
  EXPECT_FALSE(is_within("/home/u/codex", "/home/u/code/"));
}

TEST(ExpandUserPath, HomeForms) {
  const fs::path home = "/home/u";
  EXPECT_EQ(expand_user_path("~", home), fs::path("/home/u"));
  EXPECT_EQ(expand_user_path("~/", home), fs::path("/home/u"));
  EXPECT_EQ(expand_user_path("~/code", home), fs::path("/home/u/code"));
  EXPECT_EQ(expand_user_path("~/code/x", home), fs::path("/home/u/code/x"));
  EXPECT_EQ(expand_user_path("$HOME", home), fs::path("/home/u"));
  EXPECT_EQ(expand_user_path("$HOME/code", home), fs::path("/home/u/code"));
  EXPECT_EQ(expand_user_path("${HOME}", home), fs::path("/home/u"));
  EXPECT_EQ(expand_user_path("${HOME}/code", home), fs::path("/home/u/code"));
}

// Bug 36: "~foo" became "$HOMEfoo" in the original.
TEST(ExpandUserPath, Bug36OtherFormsAreLeftAlone) {
  const fs::path home = "/home/u";
  EXPECT_EQ(expand_user_path("~foo", home), fs::path("~foo"));
  EXPECT_EQ(expand_user_path("~user/code", home), fs::path("~user/code"));
  EXPECT_EQ(expand_user_path("$HOMEfoo", home), fs::path("$HOMEfoo"));
  EXPECT_EQ(expand_user_path("${HOME}foo", home), fs::path("${HOME}foo"));
  EXPECT_EQ(expand_user_path("/abs/~", home), fs::path("/abs/~"));
  EXPECT_EQ(expand_user_path("code", home), fs::path("code"));
  EXPECT_EQ(expand_user_path("~/code", fs::path()), fs::path("~/code"));
}

}  // namespace
}  // namespace tnk::workspace
