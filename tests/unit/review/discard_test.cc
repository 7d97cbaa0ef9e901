#include "review/discard.h"

#include <gtest/gtest.h>

#include "review_test_util.h"

namespace tnk::review {
namespace {

using namespace fixture;

TEST(ReviewDiscard, DropsOnlyTheNamedPathsAndWhatIsBelowThem) {
  LayerFixture f;
  put(f.project / "keep.txt", "v1\n");
  put(f.project / "drop.txt", "v1\n");
  put(f.project / "gone.txt", "bye\n");
  put(f.upper / "keep.txt", "v2\n");
  put(f.upper / "drop.txt", "v2\n");
  ASSERT_TRUE(whiteout(f.upper / "gone.txt"));
  put(f.upper / "newdir/a.txt", "a\n");
  put(f.upper / "newdir/b.txt", "b\n");
  ASSERT_EQ(summary(layer_changes(f)),
            "modified drop.txt;deleted gone.txt;modified keep.txt;added newdir;added newdir/a.txt;added newdir/b.txt;");
  UniqueFd upper = f.open(f.upper);
  ASSERT_TRUE(drop_paths(upper.get(), {"drop.txt", "gone.txt", "newdir"}));
  EXPECT_EQ(summary(layer_changes(f)), "modified keep.txt;");
  EXPECT_EQ(get(f.project / "drop.txt"), "v1\n");
}

// The pair: a file in a directory the sandbox replaced whole is refused, naming the directory; the
// directory itself can be discarded.
TEST(ReviewDiscard, RefusesPartOfAnOpaqueDirectory) {
  LayerFixture f;
  put(f.project / "src/a.c", "int a;\n");
  put(f.project / "src/b.c", "int b;\n");
  ASSERT_TRUE(make_opaque(f.upper / "src"));
  put(f.upper / "src/a.c", "int a2;\n");
  put(f.upper / "other.txt", "x\n");
  UniqueFd upper = f.open(f.upper);
  Status refused = check_droppable(upper.get(), {"other.txt", "src/a.c"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("the sandbox replaced its directory src whole"), std::string::npos);
  ASSERT_TRUE(check_droppable(upper.get(), {"src"}));
  ASSERT_TRUE(drop_paths(upper.get(), {"src"}));
  EXPECT_EQ(summary(layer_changes(f)), "added other.txt;");
}

TEST(ReviewDiscard, RestampsTheDiscardedPathsFromTheProject) {
  LayerFixture f;
  put(f.project / "d/x.txt", "x\n");
  auto baseline = take_baseline(f.project);
  ASSERT_TRUE(baseline.ok());
  put(f.project / "d/y.txt", "y\n");  // made on the host since
  UniqueFd project = f.open(f.project);
  ASSERT_TRUE(restamp_paths(project.get(), {"d", "missing"}, *baseline));
  EXPECT_EQ(baseline->count("d/y.txt"), 1u);
  EXPECT_EQ(baseline->count("missing"), 0u);
}

}  // namespace
}  // namespace tnk::review
