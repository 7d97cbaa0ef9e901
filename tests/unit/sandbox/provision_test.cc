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

  sandbox::ProvisionFingerprint fingerprints() {
    auto f = sandbox::provision_fingerprint(ctx(), r_);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? *f : sandbox::ProvisionFingerprint{};
  }
  std::string fingerprint() { return fingerprints().full; }

  // A provisioner that counts its calls and keeps what it was given; the guest token is `token`.
  sandbox::Provisioner counting(Status result = ok_status()) {
    sandbox::Provisioner p;
    p.run = [this, result](const ProvisionFiles& files, const sandbox::ProvisionFingerprint& fp,
                           const sandbox::ProvisionRun& run) {
      ++calls_;
      seen_files_ = files;
      seen_fingerprint_ = fp.full;
      ended_agent_processes_ = run.end_agent_processes;
      forgot_tokens_ = run.forget_guest_tokens;
      if (result.ok()) save_fingerprints(fp);  // as a real run does (ProvisionOutput::finish)
      return result;
    };
    p.guest_token_present = [this]() -> Result<bool> {
      ++token_checks_;
      return token_;
    };
    return p;
  }

  void save_fingerprints(const sandbox::ProvisionFingerprint& fp, std::optional<bool> token = std::nullopt) {
    state::Store store(paths_.sandboxes_dir());
    auto record = store.load("tnk-demo");
    ASSERT_TRUE(record.ok() && *record);
    (*record)->provision_fingerprint = fp.full;
    (*record)->provision_inputs_fingerprint = fp.inputs;
    if (token) (*record)->provision_token = *token;
    ASSERT_TRUE(store.save(**record).ok());
  }

  // The record a successful run left, with provision-lib's token inside.
  void save_provisioned_record() {
    save_record(BackendKind::kNs, "dev");
    save_fingerprints(fingerprints(), true);
  }

  Status provision(const sandbox::ProvisionRequest& request = {}, Status result = ok_status()) {
    return sandbox::provision_if_needed(ctx(), r_, request, counting(std::move(result)));
  }

  sandbox::Resolved r_;
  int calls_ = 0;
  int token_checks_ = 0;
  bool token_ = true;
  bool ended_agent_processes_ = false;
  bool forgot_tokens_ = false;
  ProvisionFiles seen_files_;
  std::string seen_fingerprint_;
};

TEST_F(SandboxProvisionTest, FilesAreTheScriptsAndTheLibAndTheRootPhaseRunsFirst) {
  auto files = sandbox::read_provision_files(ctx(), r_);
  ASSERT_TRUE(files.ok());
  ASSERT_TRUE(*files);
  EXPECT_EQ((*files)->script_name, "dev.sh");
  EXPECT_EQ((*files)->root_script_name, "");
  std::vector<std::string> names;
  for (const auto& [name, text] : (*files)->files) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"dev.sh", "lib/provision-lib.sh"}));
  auto script = read_file(*r_.provision_script);
  ASSERT_TRUE(script.ok());
  EXPECT_EQ((*files)->files.at("dev.sh"), *script);
  const std::string before = fingerprint();

  write_spec("sandbox.d/provision.d/dev.root.sh", "apt-get install -y gcc\n");
  r_.provision_root_script = paths_.config_dir / "sandbox.d/provision.d/dev.root.sh";
  files = sandbox::read_provision_files(ctx(), r_);
  ASSERT_TRUE(files.ok() && *files);
  EXPECT_EQ((*files)->root_script_name, "dev.root.sh");
  EXPECT_EQ((*files)->files.at("dev.root.sh"), "apt-get install -y gcc\n");
  std::vector<std::pair<session::Identity, std::string>> phases;
  for (const auto& phase : sandbox::provision_phases(**files)) phases.emplace_back(phase.identity, phase.script_name);
  EXPECT_EQ(phases,
            (decltype(phases){{session::Identity::kRoot, "dev.root.sh"}, {session::Identity::kAgent, "dev.sh"}}));
  EXPECT_NE(fingerprint(), before);  // the root phase is an input like the script

  r_.provision_script.reset();  // only a root phase
  files = sandbox::read_provision_files(ctx(), r_);
  ASSERT_TRUE(files.ok() && *files);
  EXPECT_EQ(sandbox::provision_phases(**files).size(), 1u);
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
  ASSERT_TRUE(provision().ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(seen_fingerprint_, fingerprint());
  EXPECT_EQ(seen_files_.script_name, "dev.sh");
  EXPECT_EQ(seen_files_.files.size(), 2u);
}

TEST_F(SandboxProvisionTest, SkipsWhenTheRecordHoldsTheSameFingerprint) {
  save_record(BackendKind::kNs, "dev", fingerprint());
  log_.set_verbosity(Verbosity::kVerbose);
  ASSERT_TRUE(provision().ok());
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(err(), "debug: provisioning skipped: profile dev and its inputs are unchanged\n");
}

TEST_F(SandboxProvisionTest, RunsWhenTheRecordHoldsAnotherFingerprint) {
  std::string old = fingerprint();
  save_record(BackendKind::kNs, "dev", old);
  r_.runtime_env["TNK_MODEL_NAME"] = "llama";
  ASSERT_TRUE(provision().ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_NE(seen_fingerprint_, old);
}

TEST_F(SandboxProvisionTest, AFailedProvisionersErrorComesBack) {
  save_record(BackendKind::kNs, "dev", "");
  Status st = provision({}, failed("script failed at line 3", "fix it"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(st.error().kind, ErrorKind::kFailed);
  EXPECT_EQ(st.error().message, "script failed at line 3");
  EXPECT_EQ(st.error().hint, "fix it");
}

// Security review M3: the sandbox can change the model the endpoint reports first (Ollama's
// /api/copy), which must not make tnk provision a running sandbox again.
TEST_F(SandboxProvisionTest, ARunningSandboxIsNotReprovisionedForTheEndpointsModelAlone) {
  r_.model.source = "server";
  r_.model.context_source = "server";
  save_provisioned_record();
  r_.runtime_env["TNK_MODEL_NAME"] = "planted";
  r_.runtime_env["TNK_CTX_WINDOW"] = "8192";
  ASSERT_TRUE(provision({.sandbox_was_running = true}).ok());
  EXPECT_EQ(calls_, 0);
  EXPECT_NE(err().find("tnk sandbox start --reprovision"), std::string::npos) << err();
  // A sandbox that starts now has no agent process yet: the new model is applied.
  ASSERT_TRUE(provision({.sandbox_was_running = false}).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_FALSE(ended_agent_processes_);
}

TEST_F(SandboxProvisionTest, AConfiguredModelStillReprovisionsARunningSandboxAfterEndingTheAgentsProcesses) {
  r_.model.source = "config";
  save_provisioned_record();
  r_.runtime_env["TNK_MODEL_NAME"] = "llama";
  ASSERT_TRUE(provision({.sandbox_was_running = true}).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_TRUE(ended_agent_processes_);
  EXPECT_FALSE(forgot_tokens_);  // the script decides what its new inputs need
}

TEST_F(SandboxProvisionTest, ReprovisionRunsWithUnchangedInputs) {
  save_provisioned_record();
  ASSERT_TRUE(provision({.sandbox_was_running = true, .reprovision = true}).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_TRUE(ended_agent_processes_);
  EXPECT_TRUE(forgot_tokens_);
}

TEST_F(SandboxProvisionTest, StartRunsAgainWhenTheGuestTokenIsGoneAndOnlyThen) {
  save_provisioned_record();
  ASSERT_TRUE(provision({.check_guest_token = true}).ok());
  EXPECT_EQ(token_checks_, 1);
  EXPECT_EQ(calls_, 0);
  token_ = false;
  ASSERT_TRUE(provision({.check_guest_token = true}).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(token_checks_, 3);  // and once after the run
  EXPECT_TRUE(forgot_tokens_);
  // shell and exec never look.
  ASSERT_TRUE(provision({}).ok());
  EXPECT_EQ(token_checks_, 3);
}

TEST_F(SandboxProvisionTest, AScriptThatLeavesNoTokenIsNotRunAgainForItsAbsence) {
  token_ = false;
  save_record(BackendKind::kNs, "dev", "");
  ASSERT_TRUE(provision({}).ok());  // the run; the token is looked for once after it
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(token_checks_, 1);
  ASSERT_TRUE(provision({.check_guest_token = true}).ok());
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(token_checks_, 1);
}

TEST_F(SandboxProvisionTest, NoScriptNoCall) {
  r_.provision_script.reset();
  ASSERT_TRUE(provision().ok());
  EXPECT_EQ(calls_, 0);
}

}  // namespace
}  // namespace tnk::testing_sandbox
