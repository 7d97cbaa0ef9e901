// The provisioning proxy's per-run credential (src/net/proxy_credential.h).
#include "net/proxy_credential.h"

#include <gtest/gtest.h>

namespace tnk::net {
namespace {

RequestHead with_headers(std::vector<std::pair<std::string, std::string>> headers) {
  RequestHead head;
  head.headers = std::move(headers);
  return head;
}

TEST(ProxyCredential, BasicIsBase64OfUserColonPassword) {
  EXPECT_EQ(basic_credential("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");  // RFC 7617
  EXPECT_EQ(basic_credential("tnk", "ab"), "Basic dG5rOmFi");
  EXPECT_EQ(basic_credential("tnk", "a"), "Basic dG5rOmE=");
}

TEST(ProxyCredential, OnlyTheExactValueInOneHeaderPasses) {
  std::string expected = basic_credential("tnk", "0123456789abcdef");
  EXPECT_TRUE(carries_credential(with_headers({{"Proxy-Authorization", expected}}), expected));
  EXPECT_TRUE(carries_credential(with_headers({{"proxy-authorization", "basic " + expected.substr(6)}}), expected));
  EXPECT_FALSE(carries_credential(with_headers({}), expected));
  EXPECT_FALSE(carries_credential(with_headers({{"Authorization", expected}}), expected));
  EXPECT_FALSE(carries_credential(with_headers({{"Proxy-Authorization", basic_credential("tnk", "0123456789abcdee")}}),
                                  expected));
  EXPECT_FALSE(carries_credential(with_headers({{"Proxy-Authorization", "Bearer " + expected.substr(6)}}), expected));
  EXPECT_FALSE(carries_credential(with_headers({{"Proxy-Authorization", expected.substr(6)}}), expected));
  EXPECT_FALSE(carries_credential(with_headers({{"Proxy-Authorization", expected}, {"Proxy-Authorization", "Basic x"}}),
                                  expected));
}

}  // namespace
}  // namespace tnk::net
