// The one port parser (src/net/port.h) that the policy's port lists, the allow-list and HTTP share.
#include <gtest/gtest.h>

#include "net/port.h"

namespace tnk {
namespace {

TEST(NetPort, AcceptsOneTo65535InDecimal) {
  EXPECT_EQ(parse_port("1"), 1);
  EXPECT_EQ(parse_port("8080"), 8080);
  EXPECT_EQ(parse_port("65535"), 65535);
  EXPECT_EQ(parse_port("080"), 80);  // leading zeros are digits too, as RFC 3986's port = *DIGIT
}

TEST(NetPort, RefusesEverythingElse) {
  for (const char* bad : {"", "0", "65536", "99999999999", "-1", "+80", " 80", "80 ", "8o", "0x50", "80:81"}) {
    EXPECT_EQ(parse_port(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace tnk
