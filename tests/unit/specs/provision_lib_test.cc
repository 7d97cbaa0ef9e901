// The bundled guest-side library specs/sandbox.d/provision.d/lib/provision-lib.sh, run with bash in a
// temporary HOME (no root, no network, nothing installed).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "core/files.h"
#include "core/subprocess.h"

namespace tnk {
namespace {
namespace fs = std::filesystem;

const fs::path kProvisionDir = fs::path(TNK_SOURCE_SPECS_DIR) / "sandbox.d/provision.d";

// A profile script that records each real run; "fail" as second argument makes it fail after init.
constexpr const char* kProfileScript = R"(set -Eeuo pipefail
source "$LIB"
_lib_init_provision_state "$1" "rev-1"
echo "RAN $1"
if [[ "${2:-}" == fail ]]; then exit 3; fi
_lib_finalize_provision_state
)";

class SpecsProvisionLibTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "tnk-provlib-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    home_ = templ;
    std::ofstream(home_ / "profile.sh") << kProfileScript;
  }
  void TearDown() override { fs::remove_all(home_); }

  ProcessResult bash(std::vector<std::string> args, const std::string& specs_rev = "git:abc1234") {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "XDG_STATE_HOME",
                                     "HOME=" + home_.string(),
                                     "LIB=" + (kProvisionDir / "lib/provision-lib.sh").string(),
                                     "TNK_SPECS_REV=" + specs_rev,
                                     "bash"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions o;
    o.capture_stdout = o.capture_stderr = true;
    Result<ProcessResult> r = run_process(argv, o);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : ProcessResult{};
  }
  ProcessResult run_profile(const std::string& profile, const std::string& specs_rev = "git:abc1234",
                            const std::string& mode = "") {
    return bash({(home_ / "profile.sh").string(), profile, mode}, specs_rev);
  }
  std::string token(const std::string& name) {
    Result<std::string> r = read_file(home_ / ".local/state/tnk" / name);
    return r.ok() ? *r : "<missing>";
  }

  fs::path home_;
};

TEST(SpecsProvisionScripts, AreValidBash) {
  for (const char* script : {"lib/provision-lib.sh", "pi.root.sh", "pi.sh", "dev.root.sh", "dev.sh"}) {
    Result<ProcessResult> r = run_process({"bash", "-n", (kProvisionDir / script).string()});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 0) << script;
  }
}

// Bug 19: one token shared by all profiles made alternating profiles reinstall every time.
TEST_F(SpecsProvisionLibTest, Bug19_AlternatingProfilesDoNotReinstall) {
  EXPECT_EQ(run_profile("pi").out, "[PROC] initiating installation tracking context for 'pi'...\nRAN pi\n");
  EXPECT_EQ(run_profile("dev").out, "[PROC] initiating installation tracking context for 'dev'...\nRAN dev\n");
  ProcessResult again = run_profile("pi");
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, "[INFO] environment match detected for 'pi'. skipping provision run.\n");
  EXPECT_EQ(run_profile("dev").out, "[INFO] environment match detected for 'dev'. skipping provision run.\n");
  EXPECT_EQ(token("provision-pi.lock"), "pi|git:abc1234|rev-1\n");
  EXPECT_EQ(token("provision-dev.lock"), "dev|git:abc1234|rev-1\n");
  EXPECT_EQ(token("provision.lock"), "dev|git:abc1234|rev-1\n");  // still written, as the original did
  EXPECT_EQ(fs::status(home_ / ".local/state/tnk/provision.lock").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(SpecsProvisionLibTest, NewSpecsRevisionRunsAgain) {
  run_profile("pi");
  EXPECT_NE(run_profile("pi", "git:def5678").out.find("RAN pi"), std::string::npos);
}

TEST_F(SpecsProvisionLibTest, OriginalSharedTokenIsHonoured) {
  fs::create_directories(home_ / ".local/state/tnk");
  std::ofstream(home_ / ".local/state/tnk/provision.lock") << "pi|git:abc1234|rev-1\n";
  EXPECT_EQ(run_profile("pi").out, "[INFO] environment match detected for 'pi'. skipping provision run.\n");
}

TEST_F(SpecsProvisionLibTest, FailureDropsThisProfilesTokens) {
  run_profile("dev");
  run_profile("pi");
  ProcessResult failed_run = run_profile("pi", "git:def5678", "fail");
  EXPECT_EQ(failed_run.exit_code, 3);
  EXPECT_EQ(failed_run.err, "[ERR] unexpected script termination. dropping tracking tokens.\n");
  EXPECT_EQ(token("provision-pi.lock"), "<missing>");
  EXPECT_EQ(token("provision.lock"), "<missing>");
  EXPECT_EQ(token("provision-dev.lock"), "dev|git:abc1234|rev-1\n");
}

TEST_F(SpecsProvisionLibTest, Helpers) {
  const std::string lib = (kProvisionDir / "lib/provision-lib.sh").string();
  const std::string file = (home_ / "rc").string();
  ProcessResult r = bash({"-c",
                          "source \"$LIB\"; printf 'x' > \"$1\"; _lib_append_once \"$1\" 'export A=1'; "
                          "_lib_append_once \"$1\" 'export A=1'; cat \"$1\"; _lib_json_string 'a\"b\\c'; echo; "
                          "_lib_require_env HOME TNK_NOPE_1 TNK_NOPE_2 || echo \"rc=$?\"",
                          "sh", file});
  EXPECT_EQ(r.out, "x\nexport A=1\n\"a\\\"b\\\\c\"\nrc=1\n");
  EXPECT_EQ(r.err, "[ERR] missing environment: TNK_NOPE_1 TNK_NOPE_2 (tnk sets these when it provisions a sandbox)\n");
}

// Only the root phase is root; in the agent phase the root helpers say where their work belongs (the id
// is faked: the unit tests may run as root).
TEST_F(SpecsProvisionLibTest, RootHelpersInTheAgentPhaseSayToMoveTheWorkToTheRootPhase) {
  const std::string script =
      "source \"$LIB\"; id() { echo 1000; }; _lib_apt_install tnk-not-a-package || echo \"rc=$?\"";
  ProcessResult r = bash({"-c", script, "/var/lib/tnk/provision/mine.sh"});
  EXPECT_EQ(r.out, "[INFO] installing Debian packages: tnk-not-a-package\nrc=1\n");
  EXPECT_NE(r.err.find("need root for: env DEBIAN_FRONTEND=noninteractive apt-get"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mine.sh runs as the agent, without sudo: move it into provision.d/mine.root.sh"),
            std::string::npos)
      << r.err;
  r = bash({"-c", "source \"$LIB\"; id() { echo 0; }; _lib_as_root echo as-root", "x.root.sh"});
  EXPECT_EQ(r.out, "as-root\n");
}

}  // namespace
}  // namespace tnk
