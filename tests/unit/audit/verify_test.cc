// verify_log: a clean log passes; each kind of damage is reported at a pinned line with a pinned
// message (docs/audit-format.md, "Verifying").
#include <gtest/gtest.h>

#include "audit/chain.h"
#include "audit/events.h"
#include "audit/sha256.h"
#include "audit/verify.h"
#include "audit/writer.h"
#include "audit_test_util.h"

namespace tnk::audit {
namespace {

using nlohmann::json;
using testing::join_lines;
using testing::overwrite;
using testing::slurp;
using testing::split_lines;
using testing::TempDir;
namespace fs = std::filesystem;

class VerifyTest : public ::testing::Test {
 protected:
  // Writes `n` records through AuditWriter and returns the lines.
  std::vector<std::string> make_log(int n) {
    auto w = AuditWriter::open(log_, [] { return int64_t{1736935867}; });
    EXPECT_TRUE(w.ok());
    for (int i = 0; i < n; ++i) EXPECT_TRUE(w->append(sandbox_stop("tnk-p", "reason " + std::to_string(i))).ok());
    return split_lines(slurp(log_));
  }
  // What verify_log reports, checked against the in-memory reader on the same bytes (the fuzz targets'),
  // so that every damage below is found alike by both.
  VerifyReport verify() {
    auto report = verify_log(log_);
    EXPECT_TRUE(report.ok());
    if (!report.ok()) return VerifyReport{};
    EXPECT_EQ(to_json(verify_log_bytes(slurp(log_))), to_json(*report));
    return *report;
  }
  void expect_broken(size_t bad_line, size_t records, const std::string& problem) {
    VerifyReport r = verify();
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.bad_line, bad_line);
    EXPECT_EQ(r.records, records);
    EXPECT_EQ(r.problem, problem);
  }

  TempDir tmp_;
  fs::path log_ = tmp_.path() / "audit.ndjson";
};

TEST_F(VerifyTest, CleanLogIsOk) {
  auto lines = make_log(5);
  VerifyReport r = verify();
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.records, 5u);
  EXPECT_EQ(r.bad_line, 0u);
  EXPECT_EQ(r.problem, "");
  EXPECT_EQ(r.last_hash, sha256_hex(lines[4]));
  EXPECT_EQ(to_json(r), json::parse(R"({"records": 5, "ok": true, "bad_line": null, "problem": null,
                                        "last_hash": ")" +
                                    sha256_hex(lines[4]) + R"("})"));
}

TEST_F(VerifyTest, EmptyFileIsOkWithNoRecords) {
  testing::overwrite(log_, "");
  VerifyReport r = verify();
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.records, 0u);
  EXPECT_EQ(r.last_hash, std::string(kGenesisPrev));
}

// Decision: an edit that leaves seq and prev alone shows at the NEXT line, whose prev no longer
// matches; the message names both lines.
TEST_F(VerifyTest, EditedRecordShowsAtTheNextLine) {
  auto lines = make_log(5);
  json edited = json::parse(lines[2]);
  edited["reason"] = "nothing to see";
  lines[2] = edited.dump();
  testing::overwrite(log_, join_lines(lines));
  expect_broken(4, 3, "record edited: prev hash of line 4 does not match line 3");
}

TEST_F(VerifyTest, EditedSeqShowsAtTheEditedLine) {
  auto lines = make_log(5);
  json edited = json::parse(lines[2]);
  edited["seq"] = 9;
  lines[2] = edited.dump();
  testing::overwrite(log_, join_lines(lines));
  expect_broken(3, 2, "records 3-8 missing: seq jumps from 2 to 9");
}

TEST_F(VerifyTest, EditedFirstPrevIsCaught) {
  auto lines = make_log(2);
  json edited = json::parse(lines[0]);
  edited["prev"] = std::string(64, 'f');
  lines[0] = edited.dump();
  testing::overwrite(log_, join_lines(lines));
  expect_broken(1, 0, "record edited: prev hash of line 1 is not 64 zeros");
}

TEST_F(VerifyTest, DeletedRecordShowsWhereSeqJumps) {
  auto lines = make_log(5);
  lines.erase(lines.begin() + 2);
  testing::overwrite(log_, join_lines(lines));
  expect_broken(3, 2, "record 3 missing: seq jumps from 2 to 4");
}

TEST_F(VerifyTest, DeletedFirstRecordIsCaught) {
  auto lines = make_log(3);
  lines.erase(lines.begin());
  testing::overwrite(log_, join_lines(lines));
  expect_broken(1, 0, "record 1 missing: the log starts at seq 2");
}

TEST_F(VerifyTest, DuplicatedRecordIsCaught) {
  auto lines = make_log(4);
  lines.insert(lines.begin() + 3, lines[2]);
  testing::overwrite(log_, join_lines(lines));
  expect_broken(4, 3, "record duplicated or out of order: seq goes from 3 to 3 at line 4");
}

TEST_F(VerifyTest, TruncatedLastLineIsCaught) {
  auto lines = make_log(5);
  std::string content = join_lines({lines.begin(), lines.begin() + 4}) + lines[4].substr(0, lines[4].size() / 2);
  testing::overwrite(log_, content);
  expect_broken(5, 4, "truncated or invalid JSON: line 5 does not end with a newline");
}

TEST_F(VerifyTest, CompleteJsonWithoutFinalNewlineIsTruncated) {
  std::string content = join_lines(make_log(2));
  content.pop_back();
  testing::overwrite(log_, content);
  expect_broken(2, 1, "truncated or invalid JSON: line 2 does not end with a newline");
}

TEST_F(VerifyTest, CutJsonFollowedByNewlineIsCaught) {
  auto lines = make_log(3);
  lines[2] = lines[2].substr(0, 20);
  testing::overwrite(log_, join_lines(lines));
  expect_broken(3, 2, "truncated or invalid JSON: line 3 does not parse");
}

TEST_F(VerifyTest, GarbageLinesAreCaught) {
  auto lines = make_log(3);
  for (const std::string& garbage : {std::string("hello world"), std::string(""), std::string("\x01\xff")}) {
    auto broken = lines;
    broken.insert(broken.begin() + 2, garbage);
    testing::overwrite(log_, join_lines(broken));
    expect_broken(3, 2, "truncated or invalid JSON: line 3 does not parse");
  }
  auto broken = lines;
  broken.insert(broken.begin() + 2, "[1,2]");
  testing::overwrite(log_, join_lines(broken));
  expect_broken(3, 2, "truncated or invalid JSON: line 3 is not a JSON object");
}

TEST_F(VerifyTest, MissingOrInvalidChainFieldsAreCaught) {
  auto lines = make_log(3);
  json j = json::parse(lines[1]);
  j.erase("seq");
  testing::overwrite(log_, join_lines({lines[0], j.dump(), lines[2]}));
  expect_broken(2, 1, "invalid seq: line 2 has no positive integer \"seq\"");

  j = json::parse(lines[1]);
  j["seq"] = "2";
  testing::overwrite(log_, join_lines({lines[0], j.dump(), lines[2]}));
  expect_broken(2, 1, "invalid seq: line 2 has no positive integer \"seq\"");

  j = json::parse(lines[1]);
  j["prev"] = "ABC";
  testing::overwrite(log_, join_lines({lines[0], j.dump(), lines[2]}));
  expect_broken(2, 1, "invalid prev: line 2 has no \"prev\" of 64 lowercase hex digits");
}

TEST_F(VerifyTest, BrokenReportAsJson) {
  auto lines = make_log(5);
  lines.erase(lines.begin() + 2);
  testing::overwrite(log_, join_lines(lines));
  json j = to_json(verify());
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["bad_line"], 3);
  EXPECT_EQ(j["records"], 2);
  EXPECT_EQ(j["problem"], "record 3 missing: seq jumps from 2 to 4");
}

// Lines that cross the verifier's read buffer, and a record larger than that buffer.
TEST_F(VerifyTest, LongLogAndLongRecordsAreOk) {
  make_log(2000);
  auto w = AuditWriter::open(log_);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(exec_invocation("tnk-p", {"bash", "-c", std::string(200000, 'x')}, false, {}, {})).ok());
  ASSERT_TRUE(w->append(sandbox_delete("tnk-p")).ok());
  VerifyReport r = verify();
  EXPECT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.records, 2002u);
}

// With a sink, every line that is a JSON object reaches it, also after the first broken one (what
// `tnk audit summary` counts); the report is the same as without one.
TEST_F(VerifyTest, SinkSeesEveryRecordAlsoAfterTheBreak) {
  auto lines = make_log(4);
  lines.insert(lines.begin() + 2, "not json");
  lines.push_back("[1]");
  overwrite(log_, join_lines(lines) + R"({"event":"cut)");
  std::vector<json> seen;
  auto report = verify_log(log_, [&](const json& record) { seen.push_back(record); });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->bad_line, 3u);
  EXPECT_EQ(report->problem, "truncated or invalid JSON: line 3 does not parse");
  EXPECT_EQ(report->records, 2u);
  EXPECT_EQ(to_json(*report), to_json(verify()));
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3]["reason"], "reason 3");
}

// A line still unfinished past 64 MiB is reported as such; the sink goes on with the next line.
TEST_F(VerifyTest, OverlongLineIsReportedAndSkipped) {
  auto lines = make_log(2);
  lines.insert(lines.begin() + 1, std::string(kMaxRecordBytes + 200000, 'x'));
  overwrite(log_, join_lines(lines));
  std::vector<json> seen;
  auto report = verify_log(log_, [&](const json& record) { seen.push_back(record); });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->bad_line, 2u);
  EXPECT_EQ(report->problem, "truncated or invalid JSON: line 2 is longer than 64 MiB");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1]["seq"], 2);
}

TEST_F(VerifyTest, UnreadableFileIsAnError) {
  auto report = verify_log(tmp_.path() / "nope.ndjson");
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(report.error().message.find("nope.ndjson"), std::string::npos);
}

}  // namespace
}  // namespace tnk::audit
