// The agent protocol's JSON messages: round trips, defaults, and the errors that name the field.
#include "agent/messages.h"

#include <gtest/gtest.h>

namespace tnk::agent {
namespace {

std::string error_of(const Result<ExecRequest>& r) { return r.ok() ? "(ok)" : r.error().message; }

TEST(AgentMessagesTest, ExecRoundTrips) {
  ExecRequest r;
  r.argv = {"bash", "-lc", "echo \"hi\" ünïcode"};
  r.env = {"PATH=/usr/bin", "EMPTY=", "EQ=a=b"};
  r.cwd = "/workspace/p";
  r.uid = 1000;
  r.gid = 1000;
  r.groups = {27, 1000};
  r.tty = true;
  r.rows = 50;
  r.cols = 200;
  r.confined = true;
  auto payload = encode_exec(r);
  ASSERT_TRUE(payload.ok());
  auto back = parse_exec(*payload);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->env, r.env);
  EXPECT_EQ(back->cwd, r.cwd);
  EXPECT_EQ(back->uid, 1000u);
  EXPECT_EQ(back->groups, r.groups);
  EXPECT_TRUE(back->tty);
  EXPECT_EQ(back->rows, 50);
  EXPECT_EQ(back->cols, 200);
  EXPECT_TRUE(back->confined);
}

TEST(AgentMessagesTest, ExecDefaultsAndRefusals) {
  auto minimal = parse_exec(R"({"argv":["true"],"cwd":"/","uid":0,"gid":0})");
  ASSERT_TRUE(minimal.ok());
  EXPECT_FALSE(minimal->tty);
  EXPECT_EQ(minimal->rows, 24);
  EXPECT_TRUE(minimal->env.empty());
  EXPECT_FALSE(minimal->confined);  // an older host's request: not confined
  EXPECT_EQ(error_of(parse_exec(R"({"argv":[],"cwd":"/","uid":0,"gid":0})")),
            "agent message exec: field 'argv' must name a program");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"tmp","uid":0,"gid":0})")),
            "agent message exec: field 'cwd' must be an absolute path");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"env":["NOEQUALS"],"cwd":"/","uid":0,"gid":0})")),
            "agent message exec: field 'env' entries must be NAME=VALUE");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"env":["=v"],"cwd":"/","uid":0,"gid":0})")),
            "agent message exec: field 'env' entries must be NAME=VALUE");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x\u0000y"],"cwd":"/","uid":0,"gid":0})")),
            "agent message exec: field 'argv' must not contain NUL bytes");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","uid":4294967295,"gid":0})")),
            "agent message exec: field 'uid' must be an integer from 0 to 4294967294");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","uid":-1,"gid":0})")),
            "agent message exec: field 'uid' must be an integer from 0 to 4294967294");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","gid":0})")), "agent message exec: field 'uid' is missing");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","uid":0,"gid":0,"rows":70000})")),
            "agent message exec: field 'rows' must be an integer from 0 to 65535");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","uid":0,"gid":0,"groups":[-3]})")),
            "agent message exec: field 'groups' must be an array of group ids");
  EXPECT_EQ(error_of(parse_exec("[1,2]")), "agent message exec is not a JSON object");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":[[[[["deep"]]]]]})")), "agent message exec is nested too deeply");
  EXPECT_EQ(error_of(parse_exec(R"({"argv":[[[{}]]]})")), "agent message exec is nested too deeply");
  // Four containers inside one another still parse (and fail on the field's type, not on depth).
  EXPECT_EQ(error_of(parse_exec(R"({"argv":[[["four"]]],"cwd":"/","uid":0,"gid":0})")),
            "agent message exec: field 'argv' must be an array of strings");
  EXPECT_NE(error_of(parse_exec(R"({"argv":["x"],"cwd":"/","uid":0,"gid":0} trailing)")).find("is not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of(parse_exec("")).find("is not valid JSON: [json.exception.parse_error"), std::string::npos);
  EXPECT_NE(error_of(parse_exec("{")).find("is not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(parse_exec("\xff")).find("is not valid JSON"), std::string::npos);
}

TEST(AgentMessagesTest, ExecWithBytesThatAreNotUtf8CannotBeEncoded) {
  ExecRequest r;
  r.argv = {"cat", "caf\xe9"};
  auto payload = encode_exec(r);
  ASSERT_FALSE(payload.ok());
  EXPECT_NE(payload.error().message.find("not valid UTF-8"), std::string::npos);
}

TEST(AgentMessagesTest, ClockCarriesTheHostsTimeInNanoseconds) {
  EXPECT_EQ(*parse_clock(encode_clock(1'765'000'000'123'456'789)), 1'765'000'000'123'456'789);
  EXPECT_FALSE(parse_clock(R"({"unix_ns":-1})").ok());
  EXPECT_FALSE(parse_clock(R"({"unix_ns":"now"})").ok());
  EXPECT_FALSE(parse_clock("[]").ok());
}

TEST(AgentMessagesTest, ExitErrorAckResizeSignal) {
  auto exit = parse_exit(encode_exit({130, 2, ""}));
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->code, 130);
  EXPECT_EQ(exit->signal, 2);
  auto not_found = parse_exit(encode_exit({127, 0, "cannot run x: No such file or directory"}));
  ASSERT_TRUE(not_found.ok());
  EXPECT_EQ(not_found->error, "cannot run x: No such file or directory");
  EXPECT_FALSE(parse_exit(R"({"code":256})").ok());

  auto error = parse_error(encode_error({"bad \xff bytes", true}));
  ASSERT_TRUE(error.ok());
  EXPECT_TRUE(error->fatal);

  EXPECT_EQ(*parse_ack(encode_ack(4096)), 4096u);
  EXPECT_FALSE(parse_ack(R"({"bytes":0})").ok());
  EXPECT_FALSE(parse_ack(R"({"bytes":2147483648})").ok());

  auto size = parse_resize(encode_resize({40, 120}));
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->rows, 40);
  EXPECT_EQ(size->cols, 120);
  EXPECT_EQ(*parse_signal(encode_signal(15)), 15);
  EXPECT_FALSE(parse_signal(R"({"signal":0})").ok());
  EXPECT_FALSE(parse_signal(R"({"signal":"TERM"})").ok());
}

TEST(AgentMessagesTest, HelloAndFilePut) {
  auto hello = parse_hello(encode_hello({1, "tok"}));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->token, "tok");
  EXPECT_FALSE(parse_hello(R"({"version":1})").ok());
  EXPECT_FALSE(parse_hello(R"({"version":1,"token":")" + std::string(300, 'a') + "\"}").ok());

  auto put = parse_file_put(R"({"path":"/etc/x"})");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->mode, 0644u);
  EXPECT_FALSE(put->parents);
  EXPECT_FALSE(parse_file_put(R"({"path":"etc/x"})").ok());
  EXPECT_FALSE(parse_file_put(R"({"path":"/etc/"})").ok());
  EXPECT_FALSE(parse_file_put(R"({"path":"/x","mode":4096})").ok());
  auto round = parse_file_put(*encode_file_put({"/a/b", 0755, 1000, 1000, true}));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->mode, 0755u);
  EXPECT_TRUE(round->parents);
}

}  // namespace
}  // namespace tnk::agent
