// The kernel's socket tables as doctor reads them (src/inference/listeners.h).
#include "inference/listeners.h"

#include <gtest/gtest.h>

namespace tnk::inference {
namespace {

// Real lines of /proc/net/tcp and tcp6: a listener on 127.0.0.1:8080, one on 0.0.0.0:11434, one on
// 192.168.1.5:8000, and an established connection (state 01), which is no listener.
constexpr const char* kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n"
    "   1: 00000000:2CAA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0\n"
    "   2: 0501A8C0:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0\n"
    "   3: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1\n";
constexpr const char* kTcp6 =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue\n"
    "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000\n"
    "   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000\n"
    "   2: 0000000000000000FFFF00000100007F:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000\n"
    "   3: garbage\n";

TEST(InferenceListeners, Ipv4ListenersAndWhatTheyExpose) {
  auto l = parse_proc_net_tcp(kTcp, false);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(to_string(l[0]), "127.0.0.1:8080");
  EXPECT_TRUE(l[0].loopback);
  EXPECT_FALSE(l[0].wildcard);
  EXPECT_EQ(to_string(l[1]), "0.0.0.0:11434");
  EXPECT_TRUE(l[1].wildcard);
  EXPECT_FALSE(l[1].loopback);
  EXPECT_EQ(to_string(l[2]), "192.168.1.5:8000");
  EXPECT_FALSE(l[2].loopback || l[2].wildcard);
}

TEST(InferenceListeners, Ipv6ListenersIncludingMappedLoopback) {
  auto l = parse_proc_net_tcp(kTcp6, true);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(to_string(l[0]), "[::1]:8080");
  EXPECT_TRUE(l[0].loopback);
  EXPECT_EQ(to_string(l[1]), "[::]:8081");
  EXPECT_TRUE(l[1].wildcard);
  EXPECT_EQ(to_string(l[2]), "[::ffff:127.0.0.1]:8082");
  EXPECT_TRUE(l[2].loopback);
}

TEST(InferenceListeners, NothingFromGarbage) {
  EXPECT_TRUE(parse_proc_net_tcp("", false).empty());
  EXPECT_TRUE(parse_proc_net_tcp("x y z 0A\n   0: 0100007F 0 0A\n", false).empty());
  EXPECT_TRUE(parse_proc_net_tcp(kTcp6, false).empty());  // 32-digit addresses are not IPv4
}

}  // namespace
}  // namespace tnk::inference
