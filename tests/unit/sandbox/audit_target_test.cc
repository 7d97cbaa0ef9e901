// Where a command's audit records go (src/sandbox/audit_target.h): --audit-log, else
// <audit_dir>/<id>.ndjson under `audit = true`, else nowhere.
#include "sandbox/audit_target.h"
#include "sandbox_test_util.h"

namespace tnk::testing_sandbox {
namespace {

using sandbox::open_audit;

TEST_F(SandboxTest, AuditTargetNowhereByDefault) {
  auto writer = open_audit(ctx(), "", "tnk-demo");
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(*writer);
  EXPECT_FALSE(fs::exists(paths_.default_audit_dir()));
}

TEST_F(SandboxTest, AuditTargetConfigGivesAuditDirSlashId) {
  write_config("audit = true\n");
  auto writer = open_audit(ctx(), "", "tnk-demo");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(*writer);
  EXPECT_EQ((*writer)->path(), root_ / "state" / "tnk" / "audit" / "tnk-demo.ndjson");
  EXPECT_TRUE(fs::is_regular_file((*writer)->path()));
}

TEST_F(SandboxTest, AuditTargetConfiguredAuditDir) {
  write_config("audit = true\naudit_dir = \"" + (root_ / "elsewhere").string() + "\"\n");
  auto writer = open_audit(ctx(), "", "tnk-demo");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(*writer);
  EXPECT_EQ((*writer)->path(), root_ / "elsewhere" / "tnk-demo.ndjson");
}

TEST_F(SandboxTest, AuditTargetFlagWithoutConfig) {
  auto writer = open_audit(ctx(), (root_ / "flag.ndjson").string(), "tnk-demo");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(*writer);
  EXPECT_EQ((*writer)->path(), root_ / "flag.ndjson");
}

TEST_F(SandboxTest, AuditTargetFlagWinsOverConfig) {
  write_config("audit = true\n");
  auto writer = open_audit(ctx(), (root_ / "flag.ndjson").string(), "tnk-demo");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(*writer);
  EXPECT_EQ((*writer)->path(), root_ / "flag.ndjson");
  EXPECT_FALSE(fs::exists(paths_.default_audit_dir() / "tnk-demo.ndjson"));
}

TEST_F(SandboxTest, AuditTargetRelativeFlagIsBelowTheCwd) {
  ctx().cwd = project_dir() / "sub";
  auto writer = open_audit(ctx(), "logs/a.ndjson", "tnk-demo");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(*writer);
  EXPECT_EQ((*writer)->path(), project_dir() / "sub" / "logs" / "a.ndjson");
}

// Security review L6: the sandbox can write its project, so no audit log goes there; the same name
// outside the project is accepted.
TEST_F(SandboxTest, AuditTargetInsideTheProjectIsRefusedOutsideAccepted) {
  ctx().cwd = project_dir() / "sub";
  auto inside = open_audit(ctx(), "logs/a.ndjson", "tnk-demo", project_dir());
  ASSERT_FALSE(inside.ok());
  EXPECT_EQ(inside.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(inside.error().message, "refusing audit log " + (project_dir() / "sub" / "logs" / "a.ndjson").string() +
                                        ": it is inside the project directory " + project_dir().string() +
                                        ", which the sandbox can write");
  EXPECT_FALSE(fs::exists(project_dir() / "sub" / "logs"));
  auto outside = open_audit(ctx(), (home() / "logs" / "a.ndjson").string(), "tnk-demo", project_dir());
  ASSERT_TRUE(outside.ok()) << outside.error().message;
  EXPECT_TRUE(fs::is_regular_file(home() / "logs" / "a.ndjson"));
}

TEST_F(SandboxTest, AuditTargetAuditDirInsideTheProjectIsRefused) {
  write_config("audit = true\naudit_dir = \"" + (project_dir() / "audit").string() + "\"\n");
  auto writer = open_audit(ctx(), "", "tnk-demo", project_dir());
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error().kind, ErrorKind::kUsage);
  EXPECT_FALSE(fs::exists(project_dir() / "audit"));
}

TEST_F(SandboxTest, AuditTargetBrokenConfigIsTheError) {
  write_config("audit = \"maybe\"\n");
  auto writer = open_audit(ctx(), "", "tnk-demo");
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.error().message.find(paths_.config_file().string()), std::string::npos) << writer.error().message;
}

TEST_F(SandboxTest, AuditAppendWritesToTheWriterAndNothingWithout) {
  auto writer = open_audit(ctx(), (root_ / "a.ndjson").string(), "tnk-demo");
  ASSERT_TRUE(writer.ok());
  sandbox::audit_append(*writer, {{"event", "test"}, {"n", 1}});
  std::optional<audit::AuditWriter> none;
  sandbox::audit_append(none, {{"event", "lost"}});
  auto records = audit_records(root_ / "a.ndjson");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["event"], "test");
  EXPECT_EQ(records[0]["n"], 1);
  EXPECT_EQ(records[0]["seq"], 1);
}

// Issue 16, item 3: a lost record makes the command fail, naming the log; none lost, no error.
TEST_F(SandboxTest, AuditOutcomeFailsOnlyWhenARecordWasLost) {
  auto writer = open_audit(ctx(), (root_ / "a.ndjson").string(), "tnk-demo");
  ASSERT_TRUE(writer.ok());
  sandbox::audit_append(*writer, {{"event", "kept"}});
  EXPECT_TRUE(sandbox::audit_outcome(*writer).ok());
  EXPECT_TRUE(sandbox::audit_outcome(std::nullopt).ok());
  {
    audit::testing::FileSizeLimit full(audit::testing::slurp(root_ / "a.ndjson").size());
    sandbox::audit_append(*writer, {{"event", "lost"}});
  }
  Status outcome = sandbox::audit_outcome(*writer);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(exit_code_for(outcome.error().kind), kExitFailed);
  EXPECT_NE(outcome.error().message.find("1 audit record was not written: cannot write to audit log " +
                                         (root_ / "a.ndjson").string()),
            std::string::npos)
      << outcome.error().message;
  EXPECT_EQ(audit_records(root_ / "a.ndjson").size(), 1u);
}

}  // namespace
}  // namespace tnk::testing_sandbox
