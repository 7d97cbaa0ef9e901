// Provisioning shared by every backend (src/sandbox/provision.h): the files copied in, the fingerprint
// that decides whether a run is needed, and provision_if_needed's run-or-skip around a Provisioner.
#include "sandbox/provision.h"
#include "sandbox_test_util.h"

namespace tnk::testing_sandbox {
namespace {

using sandbox::ProvisionFiles;

class SandboxProvisionTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    r_.id = "tnk-demo";
    r_.project.dir = project_dir();
    r_.profile = "dev";
    r_.provision_script = paths_.config_dir / "sandbox.d/provision.d/dev.sh";
    r_.runtime_env = {{"TNK_MODEL_NAME", "qwen"}, {"TNK_CTX_WINDOW", "4096"}};
  }

  std::string fingerprint() {
    auto f = sandbox::provision_fingerprint(ctx(), r_);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? *f : "";
  }

  // A provisioner that counts its calls and keeps what it was given.
  sandbox::Provisioner counting(Status result = ok_status()) {
    return [this, result](const ProvisionFiles& files, const std::string& fp) {
      ++calls_;
      seen_files_ = files;
      seen_fingerprint_ = fp;
      return result;
    };
  }

  sandbox::Resolved r_;
  int calls_ = 0;
  ProvisionFiles seen_files_;
  std::string seen_fingerprint_;
};

TEST_F(SandboxProvisionTest, FilesAreTheScriptAndTheLib) {
  auto files = sandbox::read_provision_files(ctx(), r_);
  ASSERT_TRUE(files.ok());
  ASSERT_TRUE(*files);
  EXPECT_EQ((*files)->script_name, "dev.sh");
  std::vector<std::string> names;
  for (const auto& [name, text] : (*files)->files) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"dev.sh", "lib/provision-lib.sh"}));
  auto script = read_file(*r_.provision_script);
  ASSERT_TRUE(script.ok());
  EXPECT_EQ((*files)->files.at("dev.sh"), *script);
}

TEST_F(SandboxProvisionTest, NoScriptMeansNoFilesAndNoFingerprint) {
  r_.provision_script.reset();
  auto files = sandbox::read_provision_files(ctx(), r_);
  ASSERT_TRUE(files.ok());
  EXPECT_FALSE(*files);
  EXPECT_EQ(fingerprint(), "");
}

TEST_F(SandboxProvisionTest, FingerprintIsStableForTheSameInputs) {
  std::string first = fingerprint();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef"), std::string::npos) << first;
  EXPECT_EQ(fingerprint(), first);
}

TEST_F(SandboxProvisionTest, FingerprintIgnoresFilesOutsideScriptAndLib) {
  std::string before = fingerprint();
  write_spec("sandbox.d/manifests/dev.yaml", "profile: dev\nresources:\n  cpus: 8\n");
  write_spec("sandbox.d/provision.d/pi.sh", "echo another profile\n");
  write_spec("sandbox.d/provision.d/lib/nested/ignored.sh", "echo not a direct lib file\n");
  EXPECT_EQ(fingerprint(), before);
}

TEST_F(SandboxProvisionTest, FingerprintChangesWithTheScript) {
  std::string before = fingerprint();
  write_spec("sandbox.d/provision.d/dev.sh", "echo changed\n");
  EXPECT_NE(fingerprint(), before);
}

TEST_F(SandboxProvisionTest, FingerprintChangesWithALibFile) {
  std::string before = fingerprint();
  write_spec("sandbox.d/provision.d/lib/provision-lib.sh", "# changed\n");
  std::string edited = fingerprint();
  EXPECT_NE(edited, before);
  write_spec("sandbox.d/provision.d/lib/extra.sh", "# new\n");
  EXPECT_NE(fingerprint(), edited);
}

TEST_F(SandboxProvisionTest, FingerprintChangesWithTheProfile) {
  std::string before = fingerprint();
  r_.profile = "dev2";  // same script file, another profile name
  EXPECT_NE(fingerprint(), before);
}

TEST_F(SandboxProvisionTest, FingerprintChangesWithARuntimeValue) {
  std::string before = fingerprint();
  r_.runtime_env["TNK_MODEL_NAME"] = "llama";
  std::string changed_value = fingerprint();
  EXPECT_NE(changed_value, before);
  r_.runtime_env["TNK_MODEL_NAME"] = "qwen";
  EXPECT_EQ(fingerprint(), before);
  r_.runtime_env["TNK_SPECS_REV"] = "git:abcdef1";
  EXPECT_NE(fingerprint(), before);
}

// The backend has created the sandbox (and its record) before it provisions.
TEST_F(SandboxProvisionTest, RunsOnceWithTheFilesAndTheFingerprint) {
  save_record(BackendKind::kNs, "dev", "");
  ASSERT_TRUE(sandbox::provision_if_needed(ctx(), r_, counting()).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(seen_fingerprint_, fingerprint());
  EXPECT_EQ(seen_files_.script_name, "dev.sh");
  EXPECT_EQ(seen_files_.files.size(), 2u);
}

TEST_F(SandboxProvisionTest, SkipsWhenTheRecordHoldsTheSameFingerprint) {
  save_record(BackendKind::kNs, "dev", fingerprint());
  log_.set_verbosity(Verbosity::kVerbose);
  ASSERT_TRUE(sandbox::provision_if_needed(ctx(), r_, counting()).ok());
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(err(), "debug: provisioning skipped: profile dev and its inputs are unchanged\n");
}

TEST_F(SandboxProvisionTest, RunsWhenTheRecordHoldsAnotherFingerprint) {
  std::string old = fingerprint();
  save_record(BackendKind::kNs, "dev", old);
  r_.runtime_env["TNK_MODEL_NAME"] = "llama";
  ASSERT_TRUE(sandbox::provision_if_needed(ctx(), r_, counting()).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_NE(seen_fingerprint_, old);
}

TEST_F(SandboxProvisionTest, AFailedProvisionersErrorComesBack) {
  save_record(BackendKind::kNs, "dev", "");
  Status st = sandbox::provision_if_needed(ctx(), r_, counting(failed("script failed at line 3", "fix it")));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(st.error().kind, ErrorKind::kFailed);
  EXPECT_EQ(st.error().message, "script failed at line 3");
  EXPECT_EQ(st.error().hint, "fix it");
}

TEST_F(SandboxProvisionTest, NoScriptNoCall) {
  r_.provision_script.reset();
  ASSERT_TRUE(sandbox::provision_if_needed(ctx(), r_, counting()).ok());
  EXPECT_EQ(calls_, 0);
}

}  // namespace
}  // namespace tnk::testing_sandbox
