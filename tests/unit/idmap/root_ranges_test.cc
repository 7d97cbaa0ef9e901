#include "idmap/root_ranges.h"

#include <gtest/gtest.h>

namespace tnk::idmap {
namespace {

TEST(RootRanges, RootsOwnLinesWinAndTheLegacyRangeIsTheFallback) {
  RootRanges own = root_ranges_in("alice:100000:65536\nroot:231072:65536\n", "0:300000:65536\n");
  EXPECT_TRUE(own.reserved);
  EXPECT_EQ(own.uids.start, 231072u);
  EXPECT_EQ(own.gids.start, 300000u);  // root named by uid, as newgidmap accepts
  RootRanges half = root_ranges_in("root:231072:65536\n", "alice:100000:65536\n");
  EXPECT_FALSE(half.reserved);  // both or neither: a sandbox needs both maps
  EXPECT_EQ(half.uids.start, kLegacyRootStart);
  RootRanges short_range = root_ranges_in("root:231072:1000\n", "root:231072:1000\n");
  EXPECT_FALSE(short_range.reserved);
}

TEST(RootRanges, OverlappingOwnersAreEveryoneButRootWhoseRangeTouchesIt) {
  const IdRange legacy{kLegacyRootStart, kInsideIdCount};
  EXPECT_EQ(overlapping_owners("alice:100000:65536\nbob:165536:65536\nroot:100000:65536\n", legacy),
            std::vector<std::string>{"alice"});
  EXPECT_EQ(overlapping_owners("carol:165535:10\ndave:90000:10001\neve:90000:10000\n", legacy),
            (std::vector<std::string>{"carol", "dave"}));
  EXPECT_TRUE(overlapping_owners("junk\n", legacy).empty());
  EXPECT_EQ(range_text(legacy), "100000-165535");
}

}  // namespace
}  // namespace tnk::idmap
