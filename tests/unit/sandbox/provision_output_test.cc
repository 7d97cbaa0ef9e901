// A provisioning run's output (src/sandbox/provision_output.h): lines into the audit log, the runner's
// failure line in the error, the fingerprint saved only after a successful run.
#include "sandbox/provision_output.h"
#include "sandbox_test_util.h"

namespace tnk::testing_sandbox {
namespace {

class SandboxProvisionOutputTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    save_record(BackendKind::kNs, "dev", "old");
    auto writer = audit::AuditWriter::open(log_path());
    ASSERT_TRUE(writer.ok());
    writer_.emplace(std::move(*writer));
    r_.id = "tnk-demo";
    r_.profile = "dev";
  }
  fs::path log_path() const { return root_ / "provision.ndjson"; }
  std::string saved_fingerprint() {
    auto record = state::Store(paths_.sandboxes_dir()).load("tnk-demo");
    EXPECT_TRUE(record.ok() && *record);
    return record.ok() && *record ? (*record)->provision_fingerprint : "";
  }
  // (stream, line) of each provision_output record.
  std::vector<std::pair<std::string, std::string>> output_lines() {
    std::vector<std::pair<std::string, std::string>> lines;
    for (const auto& rec : audit_records(log_path())) {
      if (rec["event"] == "provision_output") lines.emplace_back(rec["stream"], rec["line"]);
    }
    return lines;
  }

  std::optional<audit::AuditWriter> writer_;
  sandbox::Resolved r_;
};

TEST_F(SandboxProvisionOutputTest, SuccessRecordsLinesAndSavesTheFingerprint) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  output.add(1, "first li");
  output.add(1, "ne\nsecond\nunfinished");
  output.add(2, "warning: x\n");
  ASSERT_TRUE(output.finish(0, {"new-fingerprint", "new-inputs"}).ok());
  EXPECT_EQ(output_lines(),
            (std::vector<std::pair<std::string, std::string>>{
                {"stdout", "first line"}, {"stdout", "second"}, {"stderr", "warning: x"}, {"stdout", "unfinished"}}));
  auto records = audit_records(log_path());
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back()["event"], "provision_end");
  EXPECT_EQ(records.back()["profile"], "dev");
  EXPECT_EQ(records.back()["exit_code"], 0);
  EXPECT_EQ(saved_fingerprint(), "new-fingerprint");
  EXPECT_EQ(err(), "first line\nsecond\nwarning: x\nunfinished\ninfo: provisioned tnk-demo in 0 s\n");
}

TEST_F(SandboxProvisionOutputTest, FailureNamesTheRunnersLineAndKeepsTheOldFingerprint) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  output.add(2, "tnk: provisioning failed at dev.sh line 7: false\n");
  Status st = output.finish(3, {"new-fingerprint", "new-inputs"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "provisioning tnk-demo with profile dev failed (exit 3): provisioning failed at dev.sh line 7: false");
  EXPECT_EQ(st.error().hint,
            "the sandbox is running and usable; fix the script and run `tnk sandbox start` to try again");
  EXPECT_EQ(audit_records(log_path()).back()["exit_code"], 3);
  EXPECT_EQ(saved_fingerprint(), "old");
}

TEST_F(SandboxProvisionOutputTest, FailureWithoutARunnerLine) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  Status st = output.finish(1, {"new-fingerprint", "new-inputs"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "provisioning tnk-demo with profile dev failed (exit 1)");
}

TEST_F(SandboxProvisionOutputTest, ARunThatCouldNotStartReturnsItsError) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  Status st = output.finish(Result<int>(failed("cannot copy the script in")), {"new-fingerprint", "new-inputs"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "cannot copy the script in");
  EXPECT_EQ(audit_records(log_path()).back()["exit_code"], -1);
  EXPECT_EQ(saved_fingerprint(), "old");
}

// Security review L7: the script runs in the sandbox, so its lines reach the terminal (the log stream)
// only as safe text, each once it is complete; the audit log keeps the bytes as they were.
TEST_F(SandboxProvisionOutputTest, EchoesCompleteLinesWithoutControlSequences) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  output.add(1, "shown\nclip \x1b]52;c;cHduZWQ=\x07 end\n");
  output.add(2, "partial \x1b[2J");
  EXPECT_EQ(err(), "shown\nclip \\x1b]52;c;cHduZWQ=\\x07 end\n");
  ASSERT_TRUE(output.finish(Result<int>(0), {"new-fingerprint", "new-inputs"}).ok());
  EXPECT_EQ(err().find('\x1b'), std::string::npos);
  EXPECT_NE(err().find("partial \\x1b[2J\n"), std::string::npos) << err();
  EXPECT_EQ(output_lines()[1], (std::pair<std::string, std::string>("stdout", "clip \x1b]52;c;cHduZWQ=\x07 end")));
}

// Security review M5: output that never ends its line is recorded in bounded pieces as it arrives, not
// held until the run ends.
TEST_F(SandboxProvisionOutputTest, OutputWithoutNewlinesIsRecordedInBoundedPieces) {
  sandbox::ProvisionOutput output(ctx(), writer_, r_);
  const std::size_t piece = sandbox::ProvisionOutput::kMaxLineBytes;
  for (int i = 0; i < 40; ++i) output.add(1, std::string(piece / 4, 'x'));  // 10 pieces, no newline
  output.add(1, "tail\n");
  auto lines = output_lines();
  ASSERT_EQ(lines.size(), 11u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(lines[i].second, std::string(piece, 'x')) << i;
  EXPECT_EQ(lines[10].second, "tail");
  ASSERT_TRUE(output.finish(Result<int>(0), {"new-fingerprint", "new-inputs"}).ok());
}

}  // namespace
}  // namespace tnk::testing_sandbox
