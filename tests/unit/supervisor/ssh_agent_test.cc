// The SSH routes' agent in the supervisor: the host signature check against RFC 8032's Ed25519 vectors
// (and forged ones), the fingerprints records carry, the ssh command git runs inside, and the relay
// answering a crafted client through a stand-in host agent (src/supervisor/ssh_*.h).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <thread>

#include "core/unique_fd.h"
#include "net/base64.h"
#include "net/ssh_wire.h"
#include "supervisor/ssh_agent_relay.h"
#include "supervisor/ssh_command.h"
#include "supervisor/ssh_host_signature.h"

namespace tnk::supervisor {
namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string blob(const std::string& type, const std::string& raw) {
  std::string out;
  net::put_string(out, type);
  net::put_string(out, raw);
  return out;
}

// RFC 8032, section 7.1, TEST 1 (the empty message) and TEST 2 (one byte, 0x72).
const std::string kKey1 =
    blob("ssh-ed25519", unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"));
const std::string kSig1 =
    blob("ssh-ed25519", unhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                              "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"));
const std::string kKey2 =
    blob("ssh-ed25519", unhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"));
const std::string kSig2 =
    blob("ssh-ed25519", unhex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                              "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"));

TEST(SshHostSignature, VerifiesEd25519AndRefusesForgeries) {
  EXPECT_TRUE(verify_host_signature(kKey1, kSig1, ""));
  EXPECT_TRUE(verify_host_signature(kKey2, kSig2, "\x72"));
  EXPECT_FALSE(verify_host_signature(kKey2, kSig2, "\x73"));  // another session identifier
  EXPECT_FALSE(verify_host_signature(kKey1, kSig2, "\x72"));  // another host's key
  std::string flipped = kSig2;
  flipped[flipped.size() - 40] ^= 1;
  EXPECT_FALSE(verify_host_signature(kKey2, flipped, "\x72"));
  EXPECT_FALSE(verify_host_signature(kKey2, kSig2.substr(0, kSig2.size() - 1), "\x72"));
  EXPECT_FALSE(verify_host_signature(blob("ssh-rsa", kKey2.substr(15)), kSig2, "\x72"));  // another type
  EXPECT_FALSE(verify_host_signature("", "", ""));
}

TEST(SshAgentRelay, FingerprintsAreSshKeygens) {
  // ssh-keygen -l of "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea"
  EXPECT_EQ(ssh_fingerprint(kKey1), "SHA256:bbXpuKG6zhzdmnxq256TlqzFBzRl2f6OOg722cYNbU8");
  EXPECT_NE(ssh_fingerprint(kKey1), ssh_fingerprint(kKey2));
}

TEST(SshCommand, KnowsTheRoutesHostKeysAndTunnelsThroughTheProxy) {
  net::SshRoute route{"git.example.com", 22, kKey1, {}};
  net::SshRoute other{"192.0.2.7", 2222, kKey2, {}};
  EXPECT_EQ(ssh_known_hosts_line(route), "git.example.com ssh-ed25519 " + net::base64_encode(kKey1));
  EXPECT_EQ(ssh_known_hosts_line(other), "[192.0.2.7]:2222 ssh-ed25519 " + net::base64_encode(kKey2));
  std::string command = git_ssh_command({route, other}, "127.0.0.1", 3128);
  EXPECT_TRUE(command.starts_with("ssh -o 'ProxyCommand=/bin/bash -c '\\''exec 3<>/dev/tcp/127.0.0.1/3128 "))
      << command;
  EXPECT_NE(command.find("CONNECT %%s:%%s HTTP/1.1"), std::string::npos) << command;
  EXPECT_TRUE(command.ends_with("-o 'KnownHostsCommand=/usr/bin/printf \"%%s\\n\" \"" + ssh_known_hosts_line(route) +
                                "\" \"" + ssh_known_hosts_line(other) + "\"'"))
      << command;
}

// A stand-in host agent that answers every read with `answer`.
class HostAgent {
 public:
  explicit HostAgent(std::string answer) {
    int up[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up);
    upstream_.reset(up[0]);
    host_agent_ = std::thread([fd = up[1], answer] {
      char buffer[65536];
      while (::read(fd, buffer, sizeof buffer) > 0) {
        std::string framed = net::agent_frame(answer);
        (void)!::write(fd, framed.data(), framed.size());
      }
      ::close(fd);
    });
  }
  ~HostAgent() {
    upstream_.reset();
    host_agent_.join();
  }
  UniqueFd upstream_;
  std::thread host_agent_;
};

TEST(SshAgentRelay, AnUnboundSignRequestIsRefusedAndRecorded) {
  // A real listening socket, so that accept() has a client.
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;  // the abstract name: nothing on disk
  std::string name = "tnk-ssh-agent-test-" + std::to_string(::getpid());
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  HostAgent host_agent(std::string(1, static_cast<char>(net::kAgentSignResponse)) + "sig");
  int stop[2];
  ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
  std::vector<SshSignEvent> events;
  net::SshRoute route{"git.example.com", 22, kKey1, {kKey2}};
  std::thread relay([&] {
    (void)serve_ssh_agent(listener.get(), host_agent.upstream_.get(), {route}, stop[0],
                          [&](const SshSignEvent& e) { events.push_back(e); });
  });
  UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), length), 0);
  std::string request(1, static_cast<char>(net::kAgentSignRequest));
  net::put_string(request, kKey2);
  net::put_string(request, "data");
  net::put_u32(request, 0);
  std::string framed = net::agent_frame(request) + net::agent_frame(std::string(1, 17));  // then an add-identity
  ASSERT_EQ(::write(client.get(), framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  char buffer[64];
  std::string answers;
  while (answers.size() < 10) {
    ssize_t n = ::read(client.get(), buffer, sizeof buffer);
    ASSERT_GT(n, 0);
    answers.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_EQ(answers, net::agent_frame(net::agent_failure()) + net::agent_frame(net::agent_failure()));
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  relay.join();
  ::close(stop[0]);
  ::close(stop[1]);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].identity, ssh_fingerprint(kKey2));
  EXPECT_EQ(events[0].host, "");
  EXPECT_EQ(to_json(events[0])["event"], "ssh_sign");
  EXPECT_EQ(ssh_sign_event_from_json(to_json(events[0])).reason, events[0].reason);
}

}  // namespace
}  // namespace tnk::supervisor
