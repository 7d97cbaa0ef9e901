#include "naming/naming.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tnk::naming {
namespace {

// Expected hashes were computed independently (python3, FNV-1a 64, low 32 bits as %08x):
//   my.proj -> 9ea8785c   a b -> 04833892   a.b -> 0466522c   Ünïcode -> d503dfcb
//   ...     -> ec4b1219   日本 -> a6d3ce91

std::string id_or_die(std::string_view name, size_t max = kMaxSandboxIdLength) {
  auto r = sandbox_id(name, max);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : std::string();
}

bool ends_with_hash(const std::string& id) {
  if (id.size() < 9 || id[id.size() - 9] != '-') return false;
  for (size_t i = id.size() - 8; i < id.size(); ++i) {
    char c = id[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(Fnv1a64, KnownVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(fnv1a64("my.proj"), 0x9263f7949ea8785cULL);
}

TEST(SandboxId, CleanNamesAreKept) {
  EXPECT_EQ(id_or_die("homepage"), "tnk-homepage");
  EXPECT_EQ(id_or_die("tnk"), "tnk-tnk");
  EXPECT_EQ(id_or_die("My_Proj-2"), "tnk-My_Proj-2");  // case preserved, like the original
}

TEST(SandboxId, DirtyNamesGetTheOriginalHash) {
  EXPECT_EQ(id_or_die("my.proj"), "tnk-myproj-9ea8785c");
  EXPECT_EQ(id_or_die("a b"), "tnk-ab-04833892");
}

// Bug 29: Unicode letters were kept by the original; we drop every non-ASCII byte.
TEST(SandboxId, Bug29NonAsciiDropped) { EXPECT_EQ(id_or_die("Ünïcode"), "tnk-ncode-d503dfcb"); }

TEST(SandboxId, EmptyAfterSanitizingUsesProject) {
  EXPECT_EQ(id_or_die("..."), "tnk-project-ec4b1219");
  EXPECT_EQ(id_or_die("日本"), "tnk-project-a6d3ce91");
}

TEST(SandboxId, NamesEqualAfterStrippingStayDistinct) {
  const std::string a = id_or_die("a.b");
  const std::string b = id_or_die("a b");
  const std::string c = id_or_die("ab");
  EXPECT_EQ(a, "tnk-ab-0466522c");
  EXPECT_EQ(b, "tnk-ab-04833892");
  EXPECT_EQ(c, "tnk-ab");
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
}

TEST(SandboxId, Bug29LongNamesAreCutAndHashed) {
  const std::string prefix(290, 'x');
  const std::string one = prefix + "aaaaaaaaaa";
  const std::string two = prefix + "bbbbbbbbbb";
  ASSERT_EQ(one.size(), 300u);
  const std::string id1 = id_or_die(one);
  const std::string id2 = id_or_die(two);
  EXPECT_EQ(id1.size(), kMaxSandboxIdLength);
  EXPECT_LE(id2.size(), kMaxSandboxIdLength);
  EXPECT_TRUE(ends_with_hash(id1)) << id1;
  EXPECT_TRUE(ends_with_hash(id2)) << id2;
  EXPECT_NE(id1, id2);
  EXPECT_EQ(id1.substr(0, 4), "tnk-");
}

TEST(SandboxId, CutFitsASmallBudgetExactly) {
  EXPECT_EQ(id_or_die("homepage", 20), "tnk-homepage");                  // fits: untouched
  EXPECT_EQ(id_or_die("homepage-project", 20), "tnk-homepage-project");  // exactly 20: untouched
  const std::string cut = id_or_die("homepage-project", 19);
  EXPECT_EQ(cut.size(), 19u);
  EXPECT_EQ(cut.substr(0, 11), "tnk-homepa-");
  EXPECT_TRUE(ends_with_hash(cut)) << cut;
  EXPECT_EQ(id_or_die("my.proj", 14), "tnk-m-9ea8785c");
}

TEST(SandboxId, CutTrimsTrailingSeparators) {
  // Budget 20 leaves 7 characters: "abcdef-" -> "abcdef".
  const std::string id = id_or_die("abcdef-ghijklmnopq", 20);
  EXPECT_EQ(id.substr(0, 11), "tnk-abcdef-");
  EXPECT_EQ(id.size(), 19u);
  EXPECT_TRUE(ends_with_hash(id)) << id;
  const std::string id2 = id_or_die("abcde__ghijklmnopq", 20);
  EXPECT_EQ(id2.substr(0, 10), "tnk-abcde-");
  EXPECT_TRUE(ends_with_hash(id2)) << id2;
}

TEST(SandboxId, EmptyNameIsUsageError) {
  auto r = sandbox_id("", kMaxSandboxIdLength);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
}

TEST(SandboxId, TooSmallBudgetFailsWithXdgHint) {
  auto r = sandbox_id("homepage", 13);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kFailed);
  EXPECT_NE(r.error().message.find("state directory path is too long"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().hint.find("XDG_STATE_HOME"), std::string::npos) << r.error().hint;
  EXPECT_TRUE(sandbox_id("homepage", 14).ok());
}

TEST(MaxSandboxIdLength, ShortDirIsCappedAt63) {
  EXPECT_EQ(max_sandbox_id_length("/s"), 63u);
  // A typical state dir (34 characters): 107 - (34 + 1 + 1 + 14) = 57.
  EXPECT_EQ(max_sandbox_id_length("/home/u/.local/state/tnk/sandboxes"), 57u);
}

TEST(MaxSandboxIdLength, LongDirLeavesRoomForTheSocketName) {
  const std::string dir = "/" + std::string(59, 'd');  // 60 characters
  // 107 - (60 + 1 + 1 + 14) = 31
  EXPECT_EQ(max_sandbox_id_length(dir), 31u);
  EXPECT_EQ(max_sandbox_id_length(dir + "/"), 31u);
  const size_t n = max_sandbox_id_length(dir);
  const std::string sock = dir + "/" + std::string(n, 'i') + "/" + std::string(kLongestSocketName);
  EXPECT_EQ(sock.size(), kSunPathUsable);
}

TEST(MaxSandboxIdLength, VeryLongDirLeavesNothing) {
  const std::string dir = "/" + std::string(200, 'd');
  EXPECT_EQ(max_sandbox_id_length(dir), 0u);
  auto r = sandbox_id("homepage", max_sandbox_id_length(dir));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().hint.find("XDG_STATE_HOME"), std::string::npos);
}

TEST(ValidateSandboxName, Accepts) {
  EXPECT_TRUE(validate_sandbox_name("tnk-homepage").ok());
  EXPECT_TRUE(validate_sandbox_name("tnk-myproj-9ea8785c").ok());
  EXPECT_TRUE(validate_sandbox_name("tnk-" + std::string(59, 'a')).ok());
  EXPECT_TRUE(validate_sandbox_name("tnk-homepage.1").ok());  // a fork
  EXPECT_TRUE(validate_sandbox_name("tnk-homepage.9999").ok());
}

TEST(ValidateSandboxName, Refuses) {
  auto r = validate_sandbox_name("x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(r.error().message, "invalid sandbox name 'x': must start with 'tnk-'");
  EXPECT_EQ(r.error().hint, "`tnk sandbox ls` lists the names");

  for (const std::string& bad :
       std::vector<std::string>{"", "tnk-", "tnk-../x", "tnk-a/b", "tnk-..", "tnk-a.b", "tnk-a b", "../tnk-a", "tnk-.1",
                                "tnk-a.0", "tnk-a.01", "tnk-a.10000", "tnk-a.1.2", "tnk-a.", "tnk-a.-1",
                                "tnk-" + std::string(60, 'a'), "tnk-\xc3\x9c", std::string("tnk-a\0b", 7)}) {
    auto s = validate_sandbox_name(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_EQ(s.error().kind, ErrorKind::kUsage) << bad;
    }
  }
  auto slash = validate_sandbox_name("tnk-a/b");
  ASSERT_FALSE(slash.ok());
  EXPECT_EQ(slash.error().message,
            "invalid sandbox name 'tnk-a/b': only letters, digits, '-' and '_' are allowed, and a fork's '.<n>' at "
            "the end");
  auto esc = validate_sandbox_name("tnk-\x1b[2J");
  ASSERT_FALSE(esc.ok());
  EXPECT_EQ(esc.error().message.find('\x1b'), std::string::npos);  // control bytes are escaped
}

TEST(Forks, IdsAreTheParentsAndANumberThatNoProjectIdCanTake) {
  EXPECT_EQ(fork_id("tnk-app", 2), "tnk-app.2");
  EXPECT_EQ(fork_number("tnk-app", "tnk-app.2"), 2);
  EXPECT_EQ(fork_number("tnk-app", "tnk-app.12"), 12);
  for (const char* other : {"tnk-app", "tnk-app2", "tnk-app-2", "tnk-ap.2", "tnk-app.", "tnk-app.x", "tnk-app.02",
                            "tnk-app.2.1", "tnk-app.12345"}) {
    EXPECT_EQ(fork_number("tnk-app", other), 0) << other;
  }
  EXPECT_EQ(*select_sandbox("tnk-app", "tnk-app"), "tnk-app");
  EXPECT_EQ(*select_sandbox("tnk-app", "tnk-app.3"), "tnk-app.3");
  auto other = select_sandbox("tnk-app", "tnk-other.1");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::kUsage);
  EXPECT_NE(other.error().message.find("this project's sandbox is tnk-app"), std::string::npos);
  EXPECT_FALSE(select_sandbox("tnk-app", "../tnk-app.1").ok());
}

TEST(Checkpoints, NamesAreOneDirectoryName) {
  for (const char* good : {"provisioned", "20261206-2200", "a", "a_b-c"}) {
    EXPECT_TRUE(validate_checkpoint_name(good).ok()) << good;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "-rm", "..", "a/b", ".hidden", "a b", std::string(65, 'a'), "Ã"}) {
    auto s = validate_checkpoint_name(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().kind, ErrorKind::kUsage);
  }
}

TEST(ValidateEnvAssignment, Good) {
  std::string k, v;
  ASSERT_TRUE(validate_env_assignment("FOO=bar=baz", &k, &v).ok());
  EXPECT_EQ(k, "FOO");
  EXPECT_EQ(v, "bar=baz");
  ASSERT_TRUE(validate_env_assignment("_x1=", &k, &v).ok());
  EXPECT_EQ(k, "_x1");
  EXPECT_EQ(v, "");
  EXPECT_TRUE(validate_env_assignment("TNK=1", nullptr, nullptr).ok());
  EXPECT_TRUE(validate_env_assignment("A=" + std::string(kMaxEnvValueBytes, 'v'), &k, &v).ok());
}

void expect_usage(std::string_view kv, std::string_view must_contain, std::string_view must_not_contain) {
  std::string k = "unchanged", v = "unchanged";
  auto r = validate_env_assignment(kv, &k, &v);
  ASSERT_FALSE(r.ok()) << kv;
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_NE(r.error().message.find(must_contain), std::string::npos) << r.error().message;
  if (!must_not_contain.empty()) {
    EXPECT_EQ(r.error().message.find(must_not_contain), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().hint.find(must_not_contain), std::string::npos) << r.error().hint;
  }
  EXPECT_EQ(k, "unchanged");
  EXPECT_EQ(v, "unchanged");
}

TEST(ValidateEnvAssignment, MissingEquals) {
  expect_usage("FOO", "invalid environment assignment 'FOO': expected KEY=VALUE", "");
  // Something that is not a name may be a secret pasted without KEY=: not echoed.
  expect_usage("ghp_s3cr3t.t0ken", "expected KEY=VALUE", "s3cr3t");
}

TEST(ValidateEnvAssignment, Bug30LeadingDigitRefused) {
  expect_usage("1X=s3cr3t", "invalid environment variable name '1X': must not start with a digit", "s3cr3t");
}

TEST(ValidateEnvAssignment, BadKeyCharacters) {
  expect_usage("A-B=s3cr3t", "invalid environment variable name 'A-B'", "s3cr3t");
  expect_usage("=s3cr3t", "the variable name before '=' is empty", "s3cr3t");
}

TEST(ValidateEnvAssignment, ReservedPrefixRefused) {
  expect_usage("TNK_MODEL_NAME=s3cr3t", "environment variable 'TNK_MODEL_NAME' is reserved", "s3cr3t");
  expect_usage("TNK_MODEL_NAME=s3cr3t", "cannot be overridden", "s3cr3t");
}

TEST(ValidateEnvAssignment, ControlCharactersInValueRefusedWithoutEcho) {
  expect_usage("TOKEN=s3cr3t\nexport X=1", "invalid value for environment variable 'TOKEN'", "s3cr3t");
  expect_usage("TOKEN=s3cr3t\r", "newline", "s3cr3t");
  expect_usage(std::string_view("TOKEN=s3cr3t\0x", 14), "NUL", "s3cr3t");
}

TEST(ValidateEnvAssignment, TooLongValueRefusedWithoutEcho) {
  const std::string value = "s3cr3t" + std::string(kMaxEnvValueBytes + 1 - 6, 'v');
  ASSERT_EQ(value.size(), 4097u);
  expect_usage("TOKEN=" + value, "too long (4097 bytes, at most 4096)", "s3cr3t");
}

TEST(UserCgroupName, NamesTheUsersDirectory) {
  EXPECT_EQ(*user_cgroup_name("alice"), "tnk-user-alice");
  EXPECT_EQ(*user_cgroup_name("tnk-e2e-user"), "tnk-user-tnk-e2e-user");
  EXPECT_EQ(*user_cgroup_name("build$"), "tnk-user-build$");
}

TEST(UserCgroupName, RefusesWhatCouldWalkOutOfTheHierarchy) {
  for (const char* bad : {"", "..", ".hidden", "-x", "a/b", "a b", "a$b", "a\nb"}) {
    auto r = user_cgroup_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kUsage) << bad;
  }
}

}  // namespace
}  // namespace tnk::naming
