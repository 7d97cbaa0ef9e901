// The SSH routes' agent filter (src/net/ssh_agent_filter.h) with crafted messages: framing and bad
// lengths, binds (forged, forwarded, unlisted, twice), sign requests (unbound, another session, another
// key, not a user authentication), the identities answer, and every other message refused.
#include "net/ssh_agent_filter.h"
#include "net/base64.h"

#include <gtest/gtest.h>

#include "net/ssh_wire.h"

namespace tnk::net {
namespace {

std::string key_blob(const std::string& type, const std::string& raw) {
  std::string blob;
  put_string(blob, type);
  put_string(blob, raw);
  return blob;
}

const std::string kHostKey = key_blob("ssh-ed25519", std::string(32, 'H'));
const std::string kOtherHostKey = key_blob("ssh-ed25519", std::string(32, 'O'));
const std::string kIdentity = key_blob("ssh-ed25519", std::string(32, 'I'));
const std::string kUnlisted = key_blob("ssh-ed25519", std::string(32, 'U'));
const std::string kSession = std::string(32, 'S');

// The stand-in host signature: valid when it is "signed:" + the data, by any key.
bool fake_check(std::string_view, std::string_view signature, std::string_view data) {
  return signature == "signed:" + std::string(data);
}

AgentFilter filter() { return AgentFilter({{"git.example.com", 22, kHostKey, {kIdentity}}}, fake_check); }

std::string bind_message(const std::string& host_key, const std::string& session, const std::string& signature,
                         bool forwarding = false) {
  std::string body(1, static_cast<char>(kAgentExtension));
  put_string(body, "session-bind@openssh.com");
  put_string(body, host_key);
  put_string(body, session);
  put_string(body, signature);
  body.push_back(forwarding ? 1 : 0);
  return body;
}

std::string good_bind(AgentFilter& f) {
  return f.on_message(bind_message(kHostKey, kSession, "signed:" + kSession)).message;
}

std::string userauth(const std::string& session, const std::string& key, const std::string& method = "publickey",
                     const std::string& named_host_key = "") {
  std::string data;
  put_string(data, session);
  data.push_back(50);
  put_string(data, "git");
  put_string(data, "ssh-connection");
  put_string(data, method);
  data.push_back(1);
  put_string(data, "ssh-ed25519");
  put_string(data, key);
  if (!named_host_key.empty()) put_string(data, named_host_key);
  return data;
}

std::string sign(const std::string& key, const std::string& data) {
  std::string body(1, static_cast<char>(kAgentSignRequest));
  put_string(body, key);
  put_string(body, data);
  put_u32(body, 0);
  return body;
}

const std::string kFailure = agent_failure();
const std::string kSuccess(1, static_cast<char>(kAgentSuccess));

TEST(SshAgentFilter, FramesSplitWholeMessagesAndRefuseBadLengths) {
  std::string buffer = agent_frame("ab") + agent_frame("c").substr(0, 3), body;
  EXPECT_EQ(take_agent_message(buffer, body), AgentFrame::kMessage);
  EXPECT_EQ(body, "ab");
  EXPECT_EQ(take_agent_message(buffer, body), AgentFrame::kNeedMore);
  buffer += agent_frame("c").substr(3);
  EXPECT_EQ(take_agent_message(buffer, body), AgentFrame::kMessage);
  EXPECT_EQ(body, "c");
  std::string zero("\0\0\0\0", 4), huge;
  put_u32(huge, kMaxAgentMessage + 1);
  EXPECT_EQ(take_agent_message(zero, body), AgentFrame::kTooLong);
  EXPECT_EQ(take_agent_message(huge, body), AgentFrame::kTooLong);
}

TEST(SshAgentFilter, ABoundSessionsUserAuthenticationIsPassedOn) {
  AgentFilter f = filter();
  EXPECT_EQ(good_bind(f), kSuccess);
  AgentStep step = f.on_message(sign(kIdentity, userauth(kSession, kIdentity)));
  EXPECT_EQ(step.kind, AgentStep::Kind::kForward);
  EXPECT_EQ(step.message, sign(kIdentity, userauth(kSession, kIdentity)));
  ASSERT_TRUE(step.sign);
  EXPECT_TRUE(step.sign->allowed);
  EXPECT_EQ(step.sign->host, "git.example.com:22");
  EXPECT_EQ(step.sign->identity, kIdentity);
  // OpenSSH 8.9's host-bound method names the host key, which must be the bound one.
  EXPECT_EQ(
      f.on_message(sign(kIdentity, userauth(kSession, kIdentity, "publickey-hostbound-v00@openssh.com", kHostKey)))
          .kind,
      AgentStep::Kind::kForward);
  AgentStep other = f.on_message(
      sign(kIdentity, userauth(kSession, kIdentity, "publickey-hostbound-v00@openssh.com", kOtherHostKey)));
  EXPECT_EQ(other.message, kFailure);
  EXPECT_EQ(other.sign->reason, "the data to sign names another host key than the one bound");
}

TEST(SshAgentFilter, AnUnboundSignRequestIsRefused) {
  AgentFilter f = filter();
  AgentStep step = f.on_message(sign(kIdentity, userauth(kSession, kIdentity)));
  EXPECT_EQ(step.kind, AgentStep::Kind::kReply);
  EXPECT_EQ(step.message, kFailure);
  ASSERT_TRUE(step.sign);
  EXPECT_FALSE(step.sign->allowed);
  EXPECT_EQ(step.sign->reason, "the session is not bound to a host key (OpenSSH 8.9 or later binds it)");
}

TEST(SshAgentFilter, AForgedBindSignatureBindsNothing) {
  AgentFilter f = filter();
  EXPECT_EQ(f.on_message(bind_message(kHostKey, kSession, "signed:another session")).message, kFailure);
  AgentStep step = f.on_message(sign(kIdentity, userauth(kSession, kIdentity)));
  EXPECT_EQ(step.message, kFailure);
  EXPECT_EQ(step.sign->reason,
            "the session is bound to no SSH route's host: the host key's signature over the "
            "session identifier does not verify");
}

TEST(SshAgentFilter, AnUnlistedHostKeyOrAForwardedAgentBindsNothing) {
  AgentFilter unlisted = filter();
  EXPECT_EQ(unlisted.on_message(bind_message(kOtherHostKey, kSession, "signed:" + kSession)).message, kFailure);
  AgentStep step = unlisted.on_message(sign(kIdentity, userauth(kSession, kIdentity)));
  EXPECT_EQ(step.message, kFailure);
  EXPECT_EQ(step.sign->host, "");
  EXPECT_EQ(step.sign->host_key, kOtherHostKey);
  EXPECT_EQ(step.sign->reason,
            "the session is bound to no SSH route's host: the session's host key is not an SSH "
            "route's");
  AgentFilter forwarded = filter();
  EXPECT_EQ(forwarded.on_message(bind_message(kHostKey, kSession, "signed:" + kSession, true)).message, kFailure);
  EXPECT_EQ(forwarded.on_message(sign(kIdentity, userauth(kSession, kIdentity))).message, kFailure);
}

TEST(SshAgentFilter, ASecondBindEndsSigningOnTheConnection) {
  AgentFilter f = filter();
  EXPECT_EQ(good_bind(f), kSuccess);
  EXPECT_EQ(good_bind(f), kFailure);
  AgentStep step = f.on_message(sign(kIdentity, userauth(kSession, kIdentity)));
  EXPECT_EQ(step.message, kFailure);
  EXPECT_EQ(step.sign->reason, "the session is bound to no SSH route's host: the connection was bound twice");
}

TEST(SshAgentFilter, OnlyTheBoundSessionsUserAuthenticationForTheListedKeyIsSigned) {
  AgentFilter f = filter();
  good_bind(f);
  auto refused = [&](const std::string& key, const std::string& data) {
    AgentStep step = f.on_message(sign(key, data));
    EXPECT_EQ(step.message, kFailure);
    return step.sign ? step.sign->reason : std::string("no decision");
  };
  EXPECT_EQ(refused(kUnlisted, userauth(kSession, kUnlisted)),
            "the identity is not one the route of git.example.com:22 lists");
  EXPECT_EQ(refused(kIdentity, userauth(std::string(32, 'X'), kIdentity)),
            "the data to sign belongs to another session than the one bound");
  EXPECT_EQ(refused(kIdentity, userauth(kSession, kUnlisted)),
            "the data to sign names another key than the one asked to sign");
  EXPECT_EQ(refused(kIdentity, userauth(kSession, kIdentity, "password")),
            "the data to sign is not a publickey request");
  EXPECT_EQ(refused(kIdentity, "a git commit to sign"), "the data to sign is not a user authentication request");
  EXPECT_EQ(refused(kIdentity, userauth(kSession, kIdentity) + "x"), "the data to sign has bytes after the request");
  std::string not_userauth = userauth(kSession, kIdentity);
  not_userauth[4 + kSession.size()] = 51;
  EXPECT_EQ(refused(kIdentity, not_userauth), "the data to sign is not a user authentication request");
}

TEST(SshAgentFilter, MalformedMessagesAreRefusedWithoutADecision) {
  AgentFilter f = filter();
  good_bind(f);
  std::string good = sign(kIdentity, userauth(kSession, kIdentity));
  for (std::string body : {good.substr(0, good.size() - 1), good + "x", std::string(1, kAgentSignRequest),
                           std::string(1, kAgentSignRequest) + std::string("\xff\xff\xff\xff", 4), std::string()}) {
    AgentStep step = f.on_message(body);
    EXPECT_EQ(step.kind, AgentStep::Kind::kReply);
    EXPECT_EQ(step.message, kFailure);
    EXPECT_FALSE(step.sign);
  }
  std::string truncated_bind = bind_message(kHostKey, kSession, "signed:" + kSession);
  truncated_bind.pop_back();
  EXPECT_EQ(filter().on_message(truncated_bind).message, kFailure);
}

TEST(SshAgentFilter, EveryOtherMessageIsRefused) {
  AgentFilter f = filter();
  // add identity (17), remove (18), remove all (19), lock (22), unlock (23), add constrained (25), add smartcard (20)
  for (int type : {17, 18, 19, 20, 22, 23, 25, 1, 9, 200}) {
    AgentStep step = f.on_message(std::string(1, static_cast<char>(type)) + "payload");
    EXPECT_EQ(step.kind, AgentStep::Kind::kReply) << type;
    EXPECT_EQ(step.message, kFailure) << type;
  }
  std::string query(1, static_cast<char>(kAgentExtension));
  put_string(query, "query");
  EXPECT_EQ(f.on_message(query).message, kFailure);
}

TEST(SshAgentFilter, IdentitiesAreOnlyTheListedOnes) {
  AgentFilter f = filter();
  AgentStep step = f.on_message(std::string(1, static_cast<char>(kAgentRequestIdentities)));
  EXPECT_EQ(step.kind, AgentStep::Kind::kForward);
  EXPECT_TRUE(step.filter_identities);
  std::string answer(1, static_cast<char>(kAgentIdentitiesAnswer));
  put_u32(answer, 2);
  put_string(answer, kUnlisted);
  put_string(answer, "other@host");
  put_string(answer, kIdentity);
  put_string(answer, "me@host");
  std::string expected(1, static_cast<char>(kAgentIdentitiesAnswer));
  put_u32(expected, 1);
  put_string(expected, kIdentity);
  put_string(expected, "me@host");
  EXPECT_EQ(f.filter_identities(answer), expected);
  EXPECT_EQ(f.filter_identities(answer.substr(0, answer.size() - 1)), kFailure);
  EXPECT_EQ(f.filter_identities(kFailure), kFailure);
  std::string lying(1, static_cast<char>(kAgentIdentitiesAnswer));
  put_u32(lying, 1000);
  EXPECT_EQ(f.filter_identities(lying), kFailure);
}

TEST(SshWire, PublicKeyLinesAndBase64) {
  EXPECT_EQ(base64_encode("Man"), "TWFu");
  EXPECT_EQ(base64_encode("Ma"), "TWE=");
  EXPECT_EQ(base64_encode("M", false), "TQ");
  EXPECT_EQ(base64_decode("TWE="), "Ma");
  EXPECT_EQ(base64_decode("TQ"), "M");
  EXPECT_FALSE(base64_decode("T"));
  EXPECT_FALSE(base64_decode("TW!u"));
  std::string line = "ssh-ed25519 " + base64_encode(kIdentity) + " me@host";
  EXPECT_EQ(*parse_public_key_line(line), kIdentity);
  EXPECT_FALSE(parse_public_key_line("ssh-rsa " + base64_encode(kIdentity)));  // the blob says ssh-ed25519
  EXPECT_FALSE(parse_public_key_line("ssh-ed25519"));
  EXPECT_FALSE(parse_public_key_line("ssh-ed25519 !!!!"));
  EXPECT_EQ(ssh_blob_type(kIdentity), "ssh-ed25519");
  EXPECT_EQ(ssh_blob_type("\xff"), "");
}

}  // namespace
}  // namespace tnk::net
