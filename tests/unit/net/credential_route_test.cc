// A credential route's pure parts (src/net/credential_route.h): the header template and its rendering,
// the request target's split, and the method and path rules, each refusal paired with what passes.
#include "net/credential_route.h"

#include <gtest/gtest.h>

namespace tnk::net {
namespace {

CredentialRoute route_with(std::vector<std::string> methods, std::vector<std::string> paths) {
  CredentialRoute route;
  route.name = "gh";
  route.methods = std::move(methods);
  route.paths = std::move(paths);
  return route;
}

TEST(CredentialRoute, HeaderTemplatesAreCheckedAndRendered) {
  auto bearer = parse_header_template("Authorization: Bearer {credential}");
  ASSERT_TRUE(bearer.ok());
  EXPECT_EQ(bearer->name, "Authorization");
  EXPECT_EQ(render_header_value(*bearer, "tok"), "Bearer tok");
  EXPECT_EQ(credential_secrets(*bearer, "tok"), (std::vector<std::string>{"tok"}));
  auto basic = parse_header_template("Authorization:{basic:x-access-token}");
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(render_header_value(*basic, "tok"), "Basic eC1hY2Nlc3MtdG9rZW46dG9r");
  EXPECT_EQ(credential_secrets(*basic, "tok"), (std::vector<std::string>{"tok", "eC1hY2Nlc3MtdG9rZW46dG9r"}));
  auto custom = parse_header_template("X-Api-Key: {credential}");
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(render_header_value(*custom, "k"), "k");
}

TEST(CredentialRoute, BadHeaderTemplatesSayWhatIsWrong) {
  struct Case {
    const char* text;
    const char* why;
  } cases[] = {
      {"Authorization Bearer {credential}", "must be \"Name: value\""},
      {"Bad Name: {credential}", "not an HTTP token"},
      {"Proxy-Authorization: {credential}", "set by tnk itself"},
      {"Content-Length: {credential}", "set by tnk itself"},
      {"X-Key: fixed", "holds no {credential}"},
      {"X-Key: {credential}{credential}", "more than one placeholder"},
      {"X-Key: {basic:}", "{basic:USER} needs a user name"},
      {"X-Key: {basic:a:b}", "{basic:USER} needs a user name"},
      {"X-Key: a\r\nInjected: {credential}", "control characters"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_header_template(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(parsed.error().message.find(c.why), std::string::npos) << c.text << ": " << parsed.error().message;
  }
}

TEST(CredentialRoute, TargetsSplitIntoNameAndRest) {
  auto split = split_route_target("/r/github/me/repo.git/info/refs?service=git-upload-pack");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->name, "github");
  EXPECT_EQ(split->rest, "/me/repo.git/info/refs?service=git-upload-pack");
  EXPECT_EQ(split_route_target("/r/api")->rest, "/");
  EXPECT_EQ(split_route_target("/r/api?x=1")->rest, "/?x=1");
  EXPECT_FALSE(split_route_target("/v1/models"));
  EXPECT_FALSE(split_route_target("/r"));
}

TEST(CredentialRoute, MethodRulesRefuseWhatIsNotListed) {
  CredentialRoute route = route_with({"GET"}, {});
  EXPECT_FALSE(route_refusal(route, "GET", "/x"));
  auto refused = route_refusal(route, "DELETE", "/x");
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, "DELETE /x: the route 'gh' does not allow the method DELETE");
  EXPECT_FALSE(route_refusal(route_with({}, {}), "DELETE", "/x"));  // no list: every method
}

TEST(CredentialRoute, PathPrefixesEndAtASegment) {
  CredentialRoute route = route_with({}, {"/me/repo.git", "/org/"});
  for (const char* passes : {"/me/repo.git", "/me/repo.git/info/refs", "/org/x", "/org/"}) {
    EXPECT_FALSE(route_refusal(route, "GET", passes)) << passes;
  }
  for (const char* refused : {"/me/repo.gitx", "/me/other.git", "/org", "/"}) {
    auto why = route_refusal(route, "GET", refused);
    ASSERT_TRUE(why) << refused;
    EXPECT_NE(why->find("outside the paths of the route 'gh'"), std::string::npos) << *why;
  }
}

TEST(CredentialRoute, AmbiguousPathsAreRefusedEvenWithoutRules) {
  CredentialRoute route = route_with({}, {});
  EXPECT_FALSE(route_refusal(route, "GET", "/me/repo.git/info/refs"));
  for (const char* path : {"/me/../admin", "/me/%2e%2e/admin", "/a//b", "/./a"}) {
    EXPECT_TRUE(route_refusal(route, "GET", path)) << path;
  }
}

TEST(CredentialRoute, NamesAndUpstreamText) {
  EXPECT_TRUE(valid_route_name("github-2"));
  EXPECT_FALSE(valid_route_name("-x"));
  EXPECT_FALSE(valid_route_name("a_b"));
  EXPECT_FALSE(valid_route_name(""));
  EXPECT_EQ(upstream_url("github.com", 443), "https://github.com");
  EXPECT_EQ(upstream_url("127.0.0.1", 8443), "https://127.0.0.1:8443");
}

}  // namespace
}  // namespace tnk::net
