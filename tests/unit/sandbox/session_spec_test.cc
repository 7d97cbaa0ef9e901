// One session as every backend runs it (src/sandbox/session_spec.h): the contract's environment and
// the audit records around a session, read back from the log.
#include "sandbox/session_spec.h"
#include "sandbox_test_util.h"

namespace tnk::testing_sandbox {
namespace {

sandbox::Resolved resolved_with_runtime() {
  sandbox::Resolved r;
  r.id = "tnk-demo";
  r.runtime_env = {{"TNK_MODEL_NAME", "qwen"}, {"TNK_CTX_WINDOW", "4096"}};
  return r;
}

TEST(SandboxSessionEnvironment, TakesOnlyTheTerminalVariablesFromTheHost) {
  Env host(std::map<std::string, std::string>{
      {"TERM", "xterm-256color"},
      {"COLORTERM", "truecolor"},
      {"COLUMNS", "120"},
      {"LINES", "40"},
      {"LANG", "C.UTF-8"},
      {"PATH", "/usr/local/bin:/usr/bin"},
      {"HOME", "/home/u"},
      {"LC_ALL", "C"},
      {"OPENAI_API_KEY", "sk-secret"},
      {"SSH_AUTH_SOCK", "/run/user/1000/ssh"},
      {"TNK_MODEL_NAME", "from-the-host"},
  });
  EXPECT_EQ(sandbox::session_environment(host, resolved_with_runtime(), {"B=2", "A=1"}),
            (std::vector<std::string>{"TERM=xterm-256color", "COLORTERM=truecolor", "COLUMNS=120", "LINES=40",
                                      "LANG=C.UTF-8", "TNK_CTX_WINDOW=4096", "TNK_MODEL_NAME=qwen", "B=2", "A=1"}));
}

TEST(SandboxSessionEnvironment, UnsetHostVariablesAreLeftOut) {
  Env host(std::map<std::string, std::string>{{"LANG", "de_DE.UTF-8"}, {"PATH", "/usr/bin"}});
  EXPECT_EQ(sandbox::session_environment(host, resolved_with_runtime(), {}),
            (std::vector<std::string>{"LANG=de_DE.UTF-8", "TNK_CTX_WINDOW=4096", "TNK_MODEL_NAME=qwen"}));
  EXPECT_EQ(sandbox::session_environment(Env(), sandbox::Resolved{}, {"X=1"}), (std::vector<std::string>{"X=1"}));
}

class SandboxSessionAuditTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    auto writer = audit::AuditWriter::open(log_path());
    ASSERT_TRUE(writer.ok());
    writer_.emplace(std::move(*writer));
    r_ = resolved_with_runtime();
  }
  fs::path log_path() const { return root_ / "audit" / "session.ndjson"; }

  std::optional<audit::AuditWriter> writer_;
  sandbox::Resolved r_;
};

TEST_F(SandboxSessionAuditTest, ExitStatusUpTo128IsAnExitCode) {
  for (int status : {0, 1, 2, 127, 128}) sandbox::audit_session_exit(writer_, r_, status);
  auto records = audit_records(log_path());
  ASSERT_EQ(records.size(), 5u);
  std::vector<int> codes;
  for (const auto& rec : records) {
    EXPECT_EQ(rec["event"], "session_exit");
    EXPECT_EQ(rec["container_id"], "tnk-demo");
    EXPECT_FALSE(rec.contains("signal")) << rec.dump();
    codes.push_back(rec["exit_code"].get<int>());
  }
  EXPECT_EQ(codes, (std::vector<int>{0, 1, 2, 127, 128}));
}

TEST_F(SandboxSessionAuditTest, ExitStatus128PlusNIsSignalN) {
  for (int status : {129, 137, 143, 192}) sandbox::audit_session_exit(writer_, r_, status);
  auto records = audit_records(log_path());
  ASSERT_EQ(records.size(), 4u);
  std::vector<int> signals;
  for (const auto& rec : records) {
    EXPECT_TRUE(rec["exit_code"].is_null()) << rec.dump();
    signals.push_back(rec["signal"].get<int>());
  }
  EXPECT_EQ(signals, (std::vector<int>{1, 9, 15, 64}));
}

TEST_F(SandboxSessionAuditTest, ExitStatusAboveTheSignalRangeIsAnExitCode) {
  for (int status : {193, 255}) sandbox::audit_session_exit(writer_, r_, status);
  auto records = audit_records(log_path());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["exit_code"], 193);
  EXPECT_EQ(records[1]["exit_code"], 255);
  EXPECT_FALSE(records[0].contains("signal"));
  EXPECT_FALSE(records[1].contains("signal"));
}

TEST_F(SandboxSessionAuditTest, ALostSessionEndsWithWhyItsEndWasNotSeen) {
  sandbox::audit_session_exit(writer_, r_, 0);
  sandbox::audit_session_lost(writer_, r_, "lost the connection to the sandbox's supervisor");
  auto records = audit_records(log_path());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].contains("lost")) << records[0].dump();
  EXPECT_EQ(records[1]["event"], "session_exit");
  EXPECT_TRUE(records[1]["exit_code"].is_null()) << records[1].dump();
  EXPECT_FALSE(records[1].contains("signal"));
  EXPECT_EQ(records[1]["lost"], "lost the connection to the sandbox's supervisor");
}

TEST_F(SandboxSessionAuditTest, StartRecordsNameUserVariablesButNeverTheirValues) {
  sandbox::SessionSpec spec;
  spec.argv = {"bash", "-lc", "make test"};
  spec.user_env = {"API_KEY=sk-very-secret", "DEBUG=1"};
  spec.tty = true;
  ASSERT_TRUE(sandbox::audit_session_start(writer_, r_, "/workspace/sub", spec).ok());
  auto records = audit_records(log_path());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["event"], "session_start");
  EXPECT_EQ(records[0]["workdir"], "/workspace/sub");
  EXPECT_EQ(records[0]["tty"], true);
  EXPECT_EQ(records[0]["runtime_env"], (nlohmann::json{{"TNK_CTX_WINDOW", "4096"}, {"TNK_MODEL_NAME", "qwen"}}));
  EXPECT_EQ(records[1]["event"], "exec_invocation");
  EXPECT_EQ(records[1]["argv"], (nlohmann::json{"bash", "-lc", "make test"}));
  EXPECT_EQ(records[1]["user_env_names"], (nlohmann::json{"API_KEY", "DEBUG"}));
  EXPECT_EQ(audit::testing::slurp(log_path()).find("sk-very-secret"), std::string::npos);
}

// Issue 16, item 3: with no room for session_start, the session is not run (the backends return this
// error before they start it), and the error names the log; StartRecords... above is the control.
TEST_F(SandboxSessionAuditTest, NoSessionRunsWhenItsStartRecordsCannotBeWritten) {
  sandbox::SessionSpec spec;
  spec.argv = {"true"};
  Status started = ok_status();
  {
    audit::testing::FileSizeLimit full(0);
    started = sandbox::audit_session_start(writer_, r_, "/workspace", spec);
  }
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message.find("not running the session: 2 audit records were not written: "
                                         "cannot write to audit log " +
                                         log_path().string()),
            0u)
      << started.error().message;
  EXPECT_NE(started.error().hint.find("tnk audit verify " + log_path().string()), std::string::npos);
  EXPECT_EQ(audit::testing::slurp(log_path()), "");
}

TEST_F(SandboxSessionAuditTest, WithoutAWriterNothingIsWritten) {
  std::optional<audit::AuditWriter> none;
  sandbox::audit_session_exit(none, r_, 0);
  EXPECT_TRUE(sandbox::audit_session_start(none, r_, "/workspace", sandbox::SessionSpec{}).ok());
  EXPECT_EQ(audit::testing::slurp(log_path()), "");
  EXPECT_EQ(err(), "");
}

}  // namespace
}  // namespace tnk::testing_sandbox
