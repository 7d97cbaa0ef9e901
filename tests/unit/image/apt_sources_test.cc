// The host's apt sources: one-line and deb822 formats, disabled entries, deb-src, comments, the
// order apt reads files in, and the host names the `@debian` allow-list is made of.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "image/apt_sources.h"

namespace tnk::image {
namespace {
namespace fs = std::filesystem;

using Strings = std::vector<std::string>;

TEST(AptOneLine, ParsesEntriesAndSkipsCommentsAndSources) {
  auto parsed = parse_one_line_sources(
      "# a comment\n"
      "\n"
      "deb http://mirror.example/debian bookworm main contrib   # trailing comment\n"
      "deb-src http://mirror.example/debian bookworm main\n"
      "#deb http://disabled.example/debian bookworm main\n"
      "  deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] https://sec.example/debian-security/ "
      "bookworm-security main\n"
      "deb [ trusted=yes ] http://flat.example/repo ./\n",
      "sources.list");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 3u);
  const auto& a = (*parsed)[0];
  EXPECT_EQ(a.uri, "http://mirror.example/debian");
  EXPECT_EQ(a.suites, Strings({"bookworm"}));
  EXPECT_EQ(a.components, Strings({"main", "contrib"}));
  EXPECT_EQ(a.signed_by, "");
  const auto& b = (*parsed)[1];
  EXPECT_EQ(b.uri, "https://sec.example/debian-security");  // trailing '/' dropped
  EXPECT_EQ(b.suites, Strings({"bookworm-security"}));
  EXPECT_EQ(b.signed_by, "/usr/share/keyrings/k.gpg");
  const auto& c = (*parsed)[2];
  EXPECT_EQ(c.suites, Strings({"./"}));
  EXPECT_TRUE(c.components.empty());
}

TEST(AptOneLine, MalformedLinesNameFileAndLine) {
  auto unknown = parse_one_line_sources("deb http://m/debian bookworm main\ndeeb http://m bookworm main\n", "/x.list");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("/x.list:2"), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(parse_one_line_sources("deb http://m/debian\n", "x").ok());                     // no suite
  EXPECT_FALSE(parse_one_line_sources("deb http://m/debian bookworm\n", "x").ok());            // no component
  EXPECT_FALSE(parse_one_line_sources("deb [arch=amd64 http://m bookworm main\n", "x").ok());  // no ']'
}

TEST(AptDeb822, MultipleUrisSuitesAndDisabledStanzas) {
  auto parsed = parse_deb822_sources(
      "# leading comment\n"
      "Types: deb deb-src\n"
      "URIs: http://one.example/debian http://two.example/debian\n"
      "Suites: bookworm bookworm-updates\n"
      "Components: main\n"
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
      "\n"
      "Types: deb\n"
      "URIs: http://off.example/debian\n"
      "Suites: bookworm\n"
      "Components: main\n"
      "Enabled: no\n"
      "\n"
      "Types: deb-src\n"
      "URIs: http://src.example/debian\n"
      "Suites: bookworm\n"
      "Components: main\n"
      "\n"
      "types: deb\n"
      "uris: http://sec.example/debian-security\n"
      "# a comment inside a stanza\n"
      "suites: bookworm-security\n"
      "components: main\n"
      "  non-free-firmware\n"
      "Signed-By:\n"
      " -----BEGIN PGP PUBLIC KEY BLOCK-----\n"
      " .\n"
      " abc\n"
      " -----END PGP PUBLIC KEY BLOCK-----\n",
      "debian.sources");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].uri, "http://one.example/debian");
  EXPECT_EQ((*parsed)[1].uri, "http://two.example/debian");
  for (int i : {0, 1}) {
    EXPECT_EQ((*parsed)[static_cast<size_t>(i)].suites, Strings({"bookworm", "bookworm-updates"}));
    EXPECT_EQ((*parsed)[static_cast<size_t>(i)].signed_by, "/usr/share/keyrings/debian-archive-keyring.gpg");
  }
  const auto& sec = (*parsed)[2];
  EXPECT_EQ(sec.uri, "http://sec.example/debian-security");
  EXPECT_EQ(sec.components, Strings({"main", "non-free-firmware"}));  // continuation line
  EXPECT_EQ(sec.signed_by, "");                                       // an embedded key is not a path
}

TEST(AptDeb822, EnabledSpellingsAndMissingFields) {
  for (const char* value : {"no", "No", "false", "0", "off"}) {
    auto parsed = parse_deb822_sources(
        std::string("Types: deb\nURIs: http://m/debian\nSuites: bookworm\nComponents: main\nEnabled: ") + value + "\n",
        "x.sources");
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->empty()) << value;
  }
  auto yes = parse_deb822_sources(
      "Types: deb\nURIs: http://m/debian\nSuites: bookworm\nComponents: main\nEnabled: yes\n", "x.sources");
  ASSERT_TRUE(yes.ok());
  EXPECT_EQ(yes->size(), 1u);
  auto no_uri = parse_deb822_sources("# c\n\nTypes: deb\nSuites: bookworm\nComponents: main\n", "/y.sources");
  ASSERT_FALSE(no_uri.ok());
  EXPECT_NE(no_uri.error().message.find("/y.sources:3"), std::string::npos) << no_uri.error().message;
  EXPECT_FALSE(parse_deb822_sources("Types deb\n", "x").ok());
  EXPECT_FALSE(parse_deb822_sources(" orphan continuation\n", "x").ok());
}

class AptDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tnk-apt-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) {
    ASSERT_TRUE(make_dirs((dir_ / rel).parent_path()).ok());
    ASSERT_TRUE(write_file_atomic(dir_ / rel, text).ok());
  }
  fs::path dir_;
};

TEST_F(AptDirTest, ReadsListThenPartsInNameOrderAndIgnoresOtherFiles) {
  write("sources.list", "deb http://a.example/debian bookworm main\n");
  write("sources.list.d/b.sources", "Types: deb\nURIs: http://b.example/debian\nSuites: bookworm\nComponents: main\n");
  write("sources.list.d/a.list", "deb http://c.example/debian bookworm main\n");
  write("sources.list.d/x.list.disabled", "deb http://no.example/debian bookworm main\n");
  write("sources.list.d/x.sources.save", "Types: deb\nURIs: http://no.example/x\nSuites: s\nComponents: c\n");
  auto sources = read_apt_sources(dir_);
  ASSERT_TRUE(sources.ok()) << sources.error().message;
  EXPECT_EQ(apt_source_hosts(*sources), Strings({"a.example", "c.example", "b.example"}));
  EXPECT_EQ((*sources)[2].file, dir_ / "sources.list.d/b.sources");
}

TEST_F(AptDirTest, MissingFilesAreEmptyAndMalformedOnesAreErrors) {
  auto none = read_apt_sources(dir_ / "nothing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  write("sources.list.d/bad.list", "deb http://x\n");
  auto bad = read_apt_sources(dir_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.list:1"), std::string::npos);
}

TEST(AptHosts, HostsOfUris) {
  EXPECT_EQ(uri_host("http://Mirror.Example/debian"), "mirror.example");
  EXPECT_EQ(uri_host("https://user:pw@m.example:8443/debian"), "m.example");
  EXPECT_EQ(uri_host("tor+http://onion.example/debian"), "onion.example");
  EXPECT_EQ(uri_host("http://[2001:db8::1]:80/debian"), "2001:db8::1");
  EXPECT_EQ(uri_host("file:/srv/mirror"), "");
  EXPECT_EQ(uri_host("mirror+file:///etc/apt/mirrors.txt"), "");
  EXPECT_EQ(uri_host("cdrom:[Debian]/"), "");
  std::vector<AptSource> sources = {{"http://a.example/debian", {"bookworm"}, {"main"}, "", ""},
                                    {"http://A.example/debian-security", {"bookworm-security"}, {"main"}, "", ""},
                                    {"file:/srv", {"bookworm"}, {"main"}, "", ""},
                                    {"https://b.example:444/x", {"bookworm"}, {"main"}, "", ""}};
  EXPECT_EQ(apt_source_hosts(sources), Strings({"a.example", "b.example"}));
}

TEST(AptDebian, RolesFromSuiteNamesOnly) {
  EXPECT_EQ(debian_role("bookworm"), DebianRole::kMain);
  EXPECT_EQ(debian_role("stable"), DebianRole::kMain);
  EXPECT_EQ(debian_role("trixie-updates"), DebianRole::kUpdates);
  EXPECT_EQ(debian_role("bookworm-security"), DebianRole::kSecurity);
  EXPECT_EQ(debian_role("buster/updates"), DebianRole::kSecurity);
  EXPECT_EQ(debian_role("bookworm-backports"), DebianRole::kOther);
  EXPECT_EQ(debian_role("nodistro"), DebianRole::kOther);
  EXPECT_EQ(debian_role("cloud-sdk-bookworm"), DebianRole::kOther);
  EXPECT_EQ(debian_role("jammy"), DebianRole::kOther);
  std::vector<AptSource> sources = {{"http://d.example/debian", {"bookworm", "bookworm-updates"}, {"main"}, "", ""},
                                    {"https://nodesrc.example/node_20.x", {"nodistro"}, {"main"}, "", ""},
                                    {"file:/srv/debian", {"bookworm"}, {"main"}, "", ""},
                                    {"http://s.example/debian-security", {"bookworm-security"}, {"main"}, "", ""}};
  auto debian = debian_sources(sources);
  ASSERT_EQ(debian.size(), 2u);
  EXPECT_EQ(apt_source_hosts(debian), Strings({"d.example", "s.example"}));
}

}  // namespace
}  // namespace tnk::image
