// Policy names and port forward specs, as manifests, tnk.toml and the command line write them.
#include <gtest/gtest.h>

#include "net/policy.h"

namespace tnk {
namespace {

TEST(NetPolicy, NamesAndTheOriginalsRestricted) {
  EXPECT_EQ(parse_network_policy("none"), NetworkPolicy::kNone);
  EXPECT_EQ(parse_network_policy("Restricted"), NetworkPolicy::kInference);
  EXPECT_EQ(parse_network_policy("ALLOWLIST"), NetworkPolicy::kAllowlist);
  EXPECT_EQ(parse_network_policy("open"), NetworkPolicy::kOpen);
  EXPECT_EQ(parse_network_policy("host"), std::nullopt);
  for (auto p : {NetworkPolicy::kNone, NetworkPolicy::kInference, NetworkPolicy::kAllowlist, NetworkPolicy::kOpen}) {
    EXPECT_EQ(parse_network_policy(to_string(p)), p);
  }
}

TEST(NetPolicy, PortForwardSpecs) {
  EXPECT_EQ(*parse_port_forward("8080:3000"), (PortForward{8080, 3000}));
  EXPECT_EQ(*parse_port_forward("5173"), (PortForward{5173, 5173}));
  EXPECT_EQ(to_string(PortForward{8080, 3000}), "8080:3000");
  for (const char* bad : {"", ":", "0", "8080:", ":80", "65536", "80:0", "http", "80:81:82", "-1", "1.5"}) {
    auto parsed = parse_port_forward(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage);
    EXPECT_EQ(parsed.error().hint, "write HOSTPORT:GUESTPORT (8080:3000) or one PORT for both sides, each 1-65535");
  }
}

}  // namespace
}  // namespace tnk
