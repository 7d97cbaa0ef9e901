#include "review/line_diff.h"

#include <gtest/gtest.h>

#include <random>

namespace tnk::review {
namespace {

using Lines = std::vector<std::string_view>;

std::string render(const std::vector<Hunk>& hunks) {
  std::string out;
  for (const auto& h : hunks) {
    out += hunk_header(h) + "\n";
    for (const auto& l : h.lines) out += l.op + std::string(l.text);
  }
  return out;
}

// Applies `hunks` to `before` as patch(1) would with no fuzz, checking every context and removed line.
std::string patched(const Lines& before, const std::vector<Hunk>& hunks) {
  std::string out;
  size_t at = 0;  // lines of `before` consumed
  for (const auto& h : hunks) {
    EXPECT_LE(at, h.old_start);
    while (at < h.old_start && at < before.size()) out += before[at++];
    for (const auto& l : h.lines) {
      if (l.op != '+') {
        if (at >= before.size()) return "a hunk goes past the end";
        EXPECT_EQ(before[at], l.text);
        ++at;
      }
      if (l.op != '-') out += l.text;
    }
  }
  while (at < before.size()) out += before[at++];
  return out;
}

TEST(ReviewLineDiff, SplitsLinesKeepingTheirNewlines) {
  EXPECT_EQ(split_lines("a\nb\nc"), (Lines{"a\n", "b\n", "c"}));
  EXPECT_EQ(split_lines("a\n\n"), (Lines{"a\n", "\n"}));
  EXPECT_TRUE(split_lines("").empty());
}

TEST(ReviewLineDiff, OneChangedLineWithThreeLinesOfContext) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n", b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(render(unified_hunks(split_lines(a), split_lines(b))),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(ReviewLineDiff, NewAndEmptiedFilesNameTheLineBefore) {
  EXPECT_EQ(render(unified_hunks({}, split_lines("x\ny\n"))), "@@ -0,0 +1,2 @@\n+x\n+y\n");
  EXPECT_EQ(render(unified_hunks(split_lines("x\n"), {})), "@@ -1 +0,0 @@\n-x\n");
  EXPECT_TRUE(unified_hunks(split_lines("same\n"), split_lines("same\n")).empty());
}

TEST(ReviewLineDiff, AMissingFinalNewlineIsAChange) {
  auto hunks = unified_hunks(split_lines("a\nb"), split_lines("a\nb\n"));
  EXPECT_EQ(render(hunks), "@@ -1,2 +1,2 @@\n a\n-b+b\n");
}

TEST(ReviewLineDiff, ChangesFarApartAreTwoHunksAndCloseOnesOne) {
  std::string a, far, close;
  for (int i = 1; i <= 20; ++i) a += std::to_string(i) + "\n";
  far = a, close = a;
  far.replace(far.find("2\n"), 2, "two\n");
  far.replace(far.find("19\n"), 3, "nineteen\n");
  EXPECT_EQ(unified_hunks(split_lines(a), split_lines(far)).size(), 2u);
  // Six unchanged lines between two changes: both contexts touch, one hunk (as git prints it).
  close.replace(close.find("\n3\n") + 1, 2, "three\n");
  close.replace(close.find("\n10\n") + 1, 3, "ten\n");
  EXPECT_EQ(unified_hunks(split_lines(a), split_lines(close)).size(), 1u);
}

TEST(ReviewLineDiff, FindsTheShortestEdit) {
  // abcabba -> cbabac: Myers' paper's example, 5 edits.
  std::string a = "a\nb\nc\na\nb\nb\na\n", b = "c\nb\na\nb\na\nc\n";
  size_t edits = 0;
  for (const auto& h : unified_hunks(split_lines(a), split_lines(b))) {
    for (const auto& l : h.lines) edits += l.op != ' ' ? 1 : 0;
  }
  EXPECT_EQ(edits, 5u);
}

TEST(ReviewLineDiff, RandomEditsRoundTrip) {
  std::mt19937 rng(33);
  for (int round = 0; round < 300; ++round) {
    std::string a, b;
    size_t n = rng() % 40, m = rng() % 40;
    for (size_t i = 0; i < n; ++i) a += std::string(1, static_cast<char>('a' + rng() % 4)) + "\n";
    for (size_t i = 0; i < m; ++i) b += std::string(1, static_cast<char>('a' + rng() % 4)) + "\n";
    if (rng() % 3 == 0 && !b.empty()) b.pop_back();  // sometimes no final newline
    Lines la = split_lines(a), lb = split_lines(b);
    size_t max_edits = round % 5 == 0 ? 3 : 1000;  // past the bound, the middle is replaced whole
    EXPECT_EQ(patched(la, unified_hunks(la, lb, 3, max_edits)), b) << "a=" << a << " b=" << b;
    EXPECT_EQ(patched(la, unified_hunks(la, lb, 0, max_edits)), b) << "without context";
  }
}

}  // namespace
}  // namespace tnk::review
