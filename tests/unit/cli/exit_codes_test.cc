// Every usage error's exit code, through the real command-line entry point (in process, with a
// temporary HOME). Exit codes come from error kinds, never from message text (the original's bug 33).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/app.h"
#include "core/error.h"

namespace tnk::cli {
namespace {
namespace fs = std::filesystem;

class CliExitCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tnk-cli-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    fs::create_directories(home_ / "code" / "demo");
    old_home_ = getenv("HOME") ? getenv("HOME") : "";
    old_cwd_ = fs::current_path();
    ::setenv("HOME", home_.c_str(), 1);
    ::setenv("TNK_SERVER_PORT", "9", 1);  // a port that refuses at once
    ::unsetenv("XDG_CONFIG_HOME");
    ::unsetenv("XDG_STATE_HOME");
    ::unsetenv("XDG_CACHE_HOME");
    fs::current_path(home_ / "code" / "demo");
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    ::setenv("HOME", old_home_.c_str(), 1);
    ::unsetenv("TNK_SERVER_PORT");
    fs::remove_all(home_);
  }

  static int run_tnk(std::vector<std::string> args) {
    args.insert(args.begin(), "tnk");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return run(static_cast<int>(args.size()), argv.data());
  }

  fs::path home_;
  std::string old_home_;
  fs::path old_cwd_;
};

TEST(ErrorKinds, MapToTheDocumentedExitCodes) {
  EXPECT_EQ(exit_code_for(ErrorKind::kFailed), 1);
  EXPECT_EQ(exit_code_for(ErrorKind::kUsage), 64);
  EXPECT_EQ(exit_code_for(ErrorKind::kNotFound), 66);
  EXPECT_EQ(exit_code_for(ErrorKind::kPermission), 77);
  EXPECT_EQ(sys_error(ENOENT, "x").kind, ErrorKind::kNotFound);
  EXPECT_EQ(sys_error(EACCES, "x").kind, ErrorKind::kPermission);
  EXPECT_EQ(sys_error(EIO, "x").kind, ErrorKind::kFailed);
  // A message that merely mentions "permission denied" is not a permission error (bug 33).
  EXPECT_EQ(exit_code_for(failed("limactl said: permission denied").kind), 1);
}

// Issue 16, item 3: a full or read-only file system says what to do; a hint given wins; other
// errors get none (the control).
TEST(CliSysErrorHint, FullAndReadOnlyFileSystemsGetAHint) {
  EXPECT_NE(sys_error(ENOSPC, "cannot write /s/x").hint.find("file system is full"), std::string::npos);
  EXPECT_NE(sys_error(EROFS, "cannot create /s/x").hint.find("read-only"), std::string::npos);
  EXPECT_EQ(sys_error(ENOSPC, "x", "mine").hint, "mine");
  EXPECT_EQ(sys_error(EIO, "x").hint, "");
  EXPECT_EQ(sys_error(ENOSPC, "cannot write /s/x").message, "cannot write /s/x: No space left on device");
}

TEST_F(CliExitCodes, HelpAndVersionSucceed) {
  EXPECT_EQ(run_tnk({"--help"}), 0);
  EXPECT_EQ(run_tnk({"sandbox", "shell", "--help"}), 0);
  EXPECT_EQ(run_tnk({"--version"}), 0);
  EXPECT_EQ(run_tnk({"version"}), 0);
}

TEST_F(CliExitCodes, ParseErrorsAreUsageErrors) {
  EXPECT_EQ(run_tnk({"--no-such-flag"}), 64);
  EXPECT_EQ(run_tnk({"no-such-command"}), 64);
  EXPECT_EQ(run_tnk({"-o", "xml", "version"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "exec"}), 64);           // ARGV is required
  EXPECT_EQ(run_tnk({"completion", "powershell"}), 64);  // not one of ours
  EXPECT_EQ(run_tnk({"shutdown", "--timeout", "soon"}), 64);
  EXPECT_EQ(run_tnk({"audit", "verify"}), 64);
}

TEST_F(CliExitCodes, InvalidValuesAreUsageErrors) {
  EXPECT_EQ(run_tnk({"sandbox", "stop", "--all", "--name", "tnk-x"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "stop", "--name", "homepage"}), 64);  // must start with tnk-
  EXPECT_EQ(run_tnk({"sandbox", "stop", "--name", "tnk-../x"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "shell", "--no-tty", "-e", "1X=y", "-c", "true"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "shell", "--no-tty", "-e", "TNK_MODEL_NAME=y", "-c", "true"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "shell", "--no-tty", "-e", "NOEQUALS", "-c", "true"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "exec", "-e", "A=1\nB", "--", "true"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "inspect", "--profile", "../../x"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "inspect", "--backend", "docker"}), 64);
  EXPECT_EQ(run_tnk({"sandbox", "shell", "-c", "true"}), 64);  // no terminal here and no --no-tty
  EXPECT_EQ(run_tnk({"sandbox", "start", "--shell"}), 64);     // --shell needs a terminal
}

TEST_F(CliExitCodes, WorkspaceErrorsAreUsageOrNotFound) {
  fs::current_path(home_);
  EXPECT_EQ(run_tnk({"sandbox", "inspect"}), 64);  // outside the workspace root
  fs::current_path(home_ / "code");
  EXPECT_EQ(run_tnk({"sandbox", "inspect"}), 64);  // the root itself, not a project
  fs::current_path(home_ / "code" / "demo");
  ::setenv("TNK_WORKSPACE_ROOT", (home_ / "missing").c_str(), 1);
  EXPECT_EQ(run_tnk({"sandbox", "inspect"}), 66);
  ::setenv("TNK_WORKSPACE_ROOT", home_.c_str(), 1);
  EXPECT_EQ(run_tnk({"sandbox", "inspect"}), 64);  // $HOME itself is refused
  ::unsetenv("TNK_WORKSPACE_ROOT");
}

TEST_F(CliExitCodes, NotFoundAndSuccess) {
  EXPECT_EQ(run_tnk({"sandbox", "inspect", "--profile", "nosuchprofile"}), 66);
  EXPECT_EQ(run_tnk({"audit", "verify", (home_ / "missing.ndjson").string()}), 66);
  EXPECT_EQ(run_tnk({"sandbox", "inspect"}), 0);
  EXPECT_EQ(run_tnk({"sandbox", "ls"}), 0);
  EXPECT_EQ(run_tnk({"sandbox", "stop", "--all"}), 0);
  EXPECT_EQ(run_tnk({"shutdown", "-n"}), 0);
}

}  // namespace
}  // namespace tnk::cli
