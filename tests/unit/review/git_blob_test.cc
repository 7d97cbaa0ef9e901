#include "review/git_blob.h"

#include <gtest/gtest.h>

namespace tnk::review {
namespace {

// The ids `git hash-object` prints for these contents.
TEST(ReviewGitBlob, IdsAreGitsObjectIds) {
  EXPECT_EQ(git_blob_id(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(git_blob_id("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
  std::string long_text(1000, 'x');
  EXPECT_EQ(git_blob_id(long_text).size(), 40u);
}

// What `git diff --binary` writes for an empty file's literal (any zlib stream of nothing inflates
// the same; this one is stored, not compressed).
TEST(ReviewGitBlob, LiteralIsLengthPrefixedBase85OfAZlibStream) {
  std::string empty = git_binary_literal("");
  EXPECT_EQ(empty.substr(0, 10), "literal 0\n");
  EXPECT_EQ(empty.back(), '\n');
  // 11 bytes of zlib (2 header, 5 block, 4 Adler-32) -> one line, 'K' (11), 15 characters.
  EXPECT_EQ(empty, "literal 0\nK" + empty.substr(11, 15) + "\n\n");
  std::string big = git_binary_literal(std::string(200, '\0'));
  size_t lines = 0;
  for (char c : big) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 1u + 5u + 1u);  // literal, ceil(211 / 52) data lines, the blank line
}

TEST(ReviewGitBlob, BinaryMeansANulInTheFirst8000Bytes) {
  EXPECT_TRUE(looks_binary(std::string("a\0b", 3)));
  EXPECT_FALSE(looks_binary("plain text\n"));
  EXPECT_FALSE(looks_binary(std::string(8000, 'a') + std::string(1, '\0')));
}

}  // namespace
}  // namespace tnk::review
