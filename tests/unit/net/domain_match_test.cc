#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/domain_match.h"

namespace tnk::net {
namespace {

bool allowed(const std::vector<std::string>& allow, const std::string& host, uint16_t port,
             std::string* rule = nullptr) {
  return domain_allowed(allow, host, port, rule);
}

TEST(NetDomainMatch, ExactName) {
  std::vector<std::string> allow = {"example.org"};
  EXPECT_TRUE(allowed(allow, "example.org", 443));
  EXPECT_TRUE(allowed(allow, "example.org", 80));
  EXPECT_FALSE(allowed(allow, "www.example.org", 443));
  EXPECT_FALSE(allowed(allow, "example.org.evil.net", 443));
  EXPECT_FALSE(allowed(allow, "notexample.org", 443));
  EXPECT_FALSE(allowed(allow, "org", 443));
}

TEST(NetDomainMatch, WildcardMatchesSubdomainsOnly) {
  std::vector<std::string> allow = {"*.example.org"};
  EXPECT_TRUE(allowed(allow, "a.example.org", 443));
  EXPECT_TRUE(allowed(allow, "a.b.example.org", 443));
  EXPECT_FALSE(allowed(allow, "example.org", 443));
  EXPECT_FALSE(allowed(allow, "badexample.org", 443));
  EXPECT_FALSE(allowed(allow, ".example.org", 443));
  EXPECT_FALSE(allowed(allow, "a..example.org", 443));
}

TEST(NetDomainMatch, Ports) {
  std::vector<std::string> allow = {"example.org", "*.pkg.example:8443", "git.example:22"};
  EXPECT_FALSE(allowed(allow, "example.org", 22));
  EXPECT_FALSE(allowed(allow, "example.org", 8080));
  EXPECT_TRUE(allowed(allow, "a.pkg.example", 8443));
  EXPECT_FALSE(allowed(allow, "a.pkg.example", 443));  // an explicit port replaces the defaults
  EXPECT_TRUE(allowed(allow, "git.example", 22));
  EXPECT_FALSE(allowed(allow, "git.example", 80));
  EXPECT_TRUE(host_listed(allow, "git.example"));
  EXPECT_FALSE(host_listed(allow, "other.example"));
}

TEST(NetDomainMatch, CaseAndTrailingDot) {
  std::vector<std::string> allow = {"Example.ORG.", "*.Deb.Example"};
  std::string rule;
  EXPECT_TRUE(allowed(allow, "EXAMPLE.org", 443, &rule));
  EXPECT_EQ(rule, "Example.ORG.");
  EXPECT_TRUE(allowed(allow, "example.org.", 443));
  EXPECT_TRUE(allowed(allow, "Security.DEB.example.", 80, &rule));
  EXPECT_EQ(rule, "*.Deb.Example");
  EXPECT_FALSE(allowed(allow, "example.org..", 443));
}

TEST(NetDomainMatch, IpLiterals) {
  std::vector<std::string> allow = {"192.0.2.7", "[2001:DB8:0::1]:8443"};
  EXPECT_TRUE(allowed(allow, "192.0.2.7", 443));
  EXPECT_FALSE(allowed(allow, "192.0.2.70", 443));
  EXPECT_TRUE(allowed(allow, "2001:db8::1", 8443));
  EXPECT_FALSE(allowed(allow, "2001:db8::1", 443));
}

TEST(NetDomainMatch, InvalidEntriesNeverMatch) {
  std::vector<std::string> allow = {
      "", "*", "*.", "*example.org", "ex ample.org", "example.org:0", "example.org:x", "example.org:", "a:b:c", "[::1"};
  for (std::string host : {"example.org", "a.example.org", "ex ample.org", "::1"}) {
    EXPECT_FALSE(allowed(allow, host, 443)) << host;
  }
  for (const std::string& entry : allow) EXPECT_FALSE(check_allow_entry(entry).ok()) << entry;
  auto bad = check_allow_entry("*example.org");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"*example.org\""), std::string::npos);
  EXPECT_NE(bad.error().hint.find("*.example.org"), std::string::npos);
  for (std::string entry : {"example.org", "*.example.org:8443", "192.0.2.1", "[::1]:443", "deb.example."}) {
    EXPECT_TRUE(check_allow_entry(entry).ok()) << entry;
  }
}

TEST(NetDomainMatch, EmptyListAllowsNothing) { EXPECT_FALSE(allowed({}, "example.org", 443)); }

}  // namespace
}  // namespace tnk::net
