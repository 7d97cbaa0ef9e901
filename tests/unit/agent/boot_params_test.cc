// What tnk-agent reads at boot: the tnk.* kernel parameters, /etc/hosts, the virtio-serial port lookup.
#include "agent/boot_params.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "temp_dir.h"

namespace tnk::agent {
namespace {

TEST(AgentBootParamsTest, ReadsTheTnkWordsAndIgnoresTheRest) {
  auto p = parse_boot_params(
      "console=ttyS0 quiet tnk.token=abc123 root=/dev/vda tnk.mount=/workspace tnk.host=10.0.2.2 "
      "tnk.port=tnk.agent tnk.hostname=proj tnk.ip=10.0.2.15/24 tnk.unknown=x\n");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->token, "abc123");
  EXPECT_EQ(p->mount, "/workspace");
  EXPECT_EQ(p->host, "10.0.2.2");
  EXPECT_EQ(p->port, "tnk.agent");
  EXPECT_EQ(p->hostname, "proj");
  EXPECT_EQ(p->ip, "10.0.2.15/24");
}

TEST(AgentBootParamsTest, DefaultsAndErrors) {
  auto p = parse_boot_params("tnk.token=t");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->port, kDefaultPortName);
  EXPECT_EQ(p->host, "10.0.2.2");
  EXPECT_EQ(p->mount, "");
  EXPECT_EQ(p->root, "");  // init stays on the kernel's root
  EXPECT_EQ(parse_boot_params("quiet").error().message, "kernel command line: tnk.token= is missing");
  EXPECT_FALSE(parse_boot_params("tnk.token=t tnk.mount=workspace").ok());
  EXPECT_FALSE(parse_boot_params("tnk.token=t tnk.host=example.org").ok());
  EXPECT_FALSE(parse_boot_params("tnk.token=t tnk.ip=10.0.2.15").ok());
}

TEST(AgentBootParamsTest, CmdlineRoundTrips) {
  BootParams p;
  p.token = "tok";
  p.mount = "/workspace";
  p.hostname = "h";
  p.ip = "10.0.2.15/24";
  p.git_dir = "/home/u/code/main/.git";
  p.root = "/dev/vda";
  auto back = parse_boot_params("console=ttyS0 " + boot_cmdline(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->token, "tok");
  EXPECT_EQ(back->mount, "/workspace");
  EXPECT_EQ(back->git_dir, "/home/u/code/main/.git");
  EXPECT_EQ(back->root, "/dev/vda");
  EXPECT_FALSE(parse_boot_params("tnk.token=t tnk.root=vda").ok());
  EXPECT_FALSE(parse_boot_params("tnk.token=t tnk.gitdir=relative").ok());
  EXPECT_EQ(back->hostname, "h");
  EXPECT_EQ(back->ip, "10.0.2.15/24");
}

TEST(AgentBootParamsTest, HostsFileNamesTheHostTwice) {
  BootParams p;
  p.host = "10.0.2.2";
  p.hostname = "proj";
  std::string hosts = hosts_file(p);
  EXPECT_NE(hosts.find("127.0.0.1\tlocalhost\n"), std::string::npos);
  EXPECT_NE(hosts.find("127.0.1.1\tproj\n"), std::string::npos);
  EXPECT_NE(hosts.find("10.0.2.2\thost.lima.internal host.tnk.internal\n"), std::string::npos);
}

TEST(AgentBootParamsTest, FindsThePortByNameInSysfs) {
  tnk::testing_support::TempDir sys("tnk-virtio-ports");
  ASSERT_TRUE(make_dirs(sys.path() / "vport0p0").ok());
  ASSERT_TRUE(make_dirs(sys.path() / "vport0p1").ok());
  ASSERT_TRUE(write_file_atomic(sys.path() / "vport0p0" / "name", "org.qemu.guest_agent.0\n").ok());
  ASSERT_TRUE(write_file_atomic(sys.path() / "vport0p1" / "name", "tnk.agent\n").ok());
  auto port = find_virtio_port(sys.path(), "tnk.agent");
  ASSERT_TRUE(port.has_value());
  EXPECT_EQ(*port, "/dev/vport0p1");
  EXPECT_FALSE(find_virtio_port(sys.path(), "other").has_value());
  EXPECT_FALSE(find_virtio_port(sys.path() / "missing", "tnk.agent").has_value());
}

TEST(AgentBootParamsTest, Ipv4Prefix) {
  auto p = parse_ipv4_prefix("10.0.2.15/24");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->address, 0x0A00020Fu);
  EXPECT_EQ(p->prefix, 24);
  for (const char* bad : {"10.0.2.15", "10.0.2.15/", "10.0.2.15/33", "10.0.2.15/0", "x/24", "10.0.2.15/2a"}) {
    EXPECT_FALSE(parse_ipv4_prefix(bad).ok()) << bad;
  }
  // inet_pton stops at a NUL (found with tests/fuzz/agent_words).
  EXPECT_FALSE(parse_ipv4_prefix(std::string_view("10.0.2.15\0x/24", 14)).ok());
}

}  // namespace
}  // namespace tnk::agent
