#include "inference/url.h"

#include <gtest/gtest.h>

namespace tnk::inference {
namespace {

TEST(ParseUrl, HostPortPath) {
  auto url = parse_url("http://127.0.0.1:8080/v1");
  ASSERT_TRUE(url.ok()) << url.error().message;
  EXPECT_EQ(url->scheme, "http");
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->path, "/v1");
  EXPECT_EQ(url->host_header(), "127.0.0.1:8080");
}

TEST(ParseUrl, DefaultsPortAndPath) {
  auto url = parse_url("HTTP://Example.COM");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->scheme, "http");
  EXPECT_EQ(url->host, "example.com");
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->path, "/");
  EXPECT_EQ(url->host_header(), "example.com");
}

TEST(ParseUrl, Ipv6Literal) {
  auto url = parse_url("http://[::1]:11434/v1/models");
  ASSERT_TRUE(url.ok()) << url.error().message;
  EXPECT_EQ(url->host, "::1");
  EXPECT_TRUE(url->host_is_ipv6());
  EXPECT_EQ(url->port, 11434);
  EXPECT_EQ(url->path, "/v1/models");
  EXPECT_EQ(url->host_header(), "[::1]:11434");
  auto bare = parse_url("http://[fe80::1]");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->host_header(), "[fe80::1]");
}

TEST(ParseUrl, QueryKeptFragmentDropped) {
  auto url = parse_url("http://h:1/a?b=c#frag");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->path, "/a?b=c");
  auto query_only = parse_url("http://h?x=1");
  ASSERT_TRUE(query_only.ok());
  EXPECT_EQ(query_only->host, "h");
  EXPECT_EQ(query_only->path, "/?x=1");
}

TEST(ParseUrl, HttpsGetsPort443) {
  auto url = parse_url("https://api.example.com/v1");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->port, 443);
}

TEST(ParseUrl, RejectsBadInput) {
  for (const char* text :
       {"127.0.0.1:8080", "ftp://h/", "http://", "http://:80/", "http://h:0/", "http://h:65536/", "http://h:80x/",
        "http://user:pw@h/", "http://[::1/", "http://[::1]x/", "http://h o/", "http://h/a b", "http://[]/"}) {
    auto url = parse_url(text);
    EXPECT_FALSE(url.ok()) << text;
    if (!url.ok()) {
      EXPECT_NE(url.error().message.find(text), std::string::npos) << url.error().message;
      EXPECT_EQ(url.error().kind, ErrorKind::kUsage);
    }
  }
}

TEST(ParseUrl, MessageSaysWhy) {
  auto url = parse_url("ftp://h/");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.error().message, "invalid URL 'ftp://h/': scheme 'ftp' is not http");
}

}  // namespace
}  // namespace tnk::inference
