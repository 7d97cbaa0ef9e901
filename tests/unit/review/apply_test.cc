#include "review/apply.h"

#include <gtest/gtest.h>

#include "audit/sha256.h"
#include "review/baseline.h"
#include "review_test_util.h"

namespace tnk::review {
namespace {

using namespace fixture;

struct Applied {
  std::vector<std::string> refused;
  std::vector<Touched> touched;
};

// diff, check, apply the changes `pick` selects ("" = all), as `tnk sandbox apply` does.
Applied apply_layer(const LayerFixture& f, Baseline& baseline, const std::string& pick = "") {
  UniqueFd upper = f.open(f.upper), project = f.open(f.project);
  auto changes = diff_layer(upper.get(), project.get());
  EXPECT_TRUE(changes.ok());
  std::vector<Change> selected;
  for (const auto& c : *changes) {
    if (selects(pick, c.path)) selected.push_back(c);
  }
  Applied out;
  auto refused = conflicts(project.get(), baseline, selected);
  EXPECT_TRUE(refused.ok());
  out.refused = *refused;
  if (!out.refused.empty()) return out;
  auto touched = apply_changes(upper.get(), project.get(), selected, baseline, LayerAfter::kTakenOut);
  EXPECT_TRUE(touched.ok()) << (touched ? "" : touched.error().message);
  if (touched) out.touched = *touched;
  return out;
}

Baseline baseline_of(const LayerFixture& f) {
  auto b = take_baseline(f.project);
  EXPECT_TRUE(b.ok());
  return *b;
}

TEST(ReviewApply, WritesEveryKindOfChangeAndEmptiesTheLayer) {
  LayerFixture f;
  put(f.project / "edited.txt", "before");
  put(f.project / "gone.txt", "bye");
  put(f.project / "run.sh", "echo");
  put(f.project / "olddir/x", "x");
  Baseline baseline = baseline_of(f);
  put(f.upper / "edited.txt", "after");
  ASSERT_TRUE(whiteout(f.upper / "gone.txt"));
  ASSERT_TRUE(whiteout(f.upper / "olddir"));
  put(f.upper / "run.sh", "echo", fs::perms(0755));
  put(f.upper / "new/deep/b.c", "int b;");
  fs::create_symlink("b.c", f.upper / "new/deep/link");
  Applied a = apply_layer(f, baseline);
  EXPECT_TRUE(a.refused.empty());
  EXPECT_EQ(get(f.project / "edited.txt"), "after");
  EXPECT_FALSE(fs::exists(f.project / "gone.txt"));
  EXPECT_FALSE(fs::exists(f.project / "olddir"));
  EXPECT_EQ(fs::status(f.project / "run.sh").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(get(f.project / "new/deep/b.c"), "int b;");
  EXPECT_EQ(fs::read_symlink(f.project / "new/deep/link"), "b.c");
  EXPECT_TRUE(fs::is_empty(f.upper)) << "applied entries leave the layer";
  auto again = diff_layer(f.open(f.upper).get(), f.open(f.project).get());
  EXPECT_TRUE(again->empty());
  // Each entry carries the content's hash: sha256("after").
  bool found = false;
  for (const auto& t : a.touched) {
    if (t.path == "edited.txt") {
      found = true;
      EXPECT_EQ(t.sha256, audit::sha256_hex("after"));
    }
  }
  EXPECT_TRUE(found);
}

TEST(ReviewApply, ASubsetWritesExactlyThatSubset) {
  LayerFixture f;
  put(f.project / "a.txt", "a");
  put(f.project / "b.txt", "b");
  Baseline baseline = baseline_of(f);
  put(f.upper / "a.txt", "A");
  put(f.upper / "b.txt", "B");
  put(f.upper / "dir/c.txt", "C");
  Applied a = apply_layer(f, baseline, "dir");
  EXPECT_EQ(get(f.project / "a.txt"), "a");
  EXPECT_EQ(get(f.project / "b.txt"), "b");
  EXPECT_EQ(get(f.project / "dir/c.txt"), "C");
  EXPECT_TRUE(fs::exists(f.upper / "a.txt"));
  EXPECT_FALSE(fs::exists(f.upper / "dir"));
}

// The forbidden thing and the allowed one side by side: the same edit applies over an untouched file
// and is refused over one the host changed since the layer was made.
TEST(ReviewApply, RefusesAPathTheHostChangedSinceAndAppliesTheOthers) {
  LayerFixture f;
  put(f.project / "host-edited.txt", "v1");
  put(f.project / "untouched.txt", "v1");
  Baseline baseline = baseline_of(f);
  put(f.upper / "host-edited.txt", "sandbox");
  put(f.upper / "untouched.txt", "sandbox");
  put(f.upper / "host-created.txt", "sandbox");
  put(f.project / "host-edited.txt", "host v2!");
  put(f.project / "host-created.txt", "host");
  Applied all = apply_layer(f, baseline);
  ASSERT_EQ(all.refused.size(), 2u);
  EXPECT_EQ(all.refused[0], "host-created.txt: created on the host since the layer was made");
  EXPECT_EQ(all.refused[1], "host-edited.txt: changed on the host since the layer was made");
  EXPECT_EQ(get(f.project / "untouched.txt"), "v1") << "a refused apply writes nothing";
  Applied one = apply_layer(f, baseline, "untouched.txt");
  EXPECT_TRUE(one.refused.empty());
  EXPECT_EQ(get(f.project / "untouched.txt"), "sandbox");
  EXPECT_EQ(get(f.project / "host-edited.txt"), "host v2!");
}

TEST(ReviewApply, ADirectoryToRemoveMustBeUnchangedAllTheWayDown) {
  LayerFixture f;
  put(f.project / "dir/a", "a");
  Baseline baseline = baseline_of(f);
  ASSERT_TRUE(whiteout(f.upper / "dir"));
  put(f.project / "dir/new-on-host", "n");
  Applied a = apply_layer(f, baseline);
  ASSERT_EQ(a.refused.size(), 1u);
  EXPECT_EQ(a.refused[0], "dir: below it, dir/new-on-host created on the host since the layer was made");
  EXPECT_TRUE(fs::exists(f.project / "dir/new-on-host"));
}

TEST(ReviewApply, NeverWritesSetuidOrSetgidBits) {
  LayerFixture f;
  Baseline baseline = baseline_of(f);
  put(f.upper / "tool", "#!/bin/sh", fs::perms(06755));
  apply_layer(f, baseline);
  struct stat st {};
  ASSERT_EQ(::stat((f.project / "tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// A symbolic link the project has where the layer has a directory is never walked through.
TEST(ReviewApply, NeverFollowsASymlinkOutOfTheProject) {
  LayerFixture f;
  fs::path outside = f.tmp.path() / "outside";
  fs::create_directories(outside);
  Baseline baseline = baseline_of(f);
  put(f.upper / "escape/file", "x");
  fs::create_symlink(outside, f.project / "escape");  // made on the host after the baseline
  UniqueFd upper = f.open(f.upper), project = f.open(f.project);
  auto changes = diff_layer(upper.get(), project.get());
  ASSERT_TRUE(changes.ok());
  auto refused = conflicts(project.get(), baseline, *changes);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->empty());
  // Even unchecked, the link is replaced by the directory, never written through.
  auto touched = apply_changes(upper.get(), project.get(), *changes, baseline, LayerAfter::kTakenOut);
  EXPECT_TRUE(touched.ok());
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(f.project / "escape")));
}

TEST(ReviewApply, BelowAnOpaqueDirectoryTheAppliedCopyStaysInTheLayer) {
  LayerFixture f;
  put(f.project / "lib/old.c", "o");
  Baseline baseline = baseline_of(f);
  if (!make_opaque(f.upper / "lib")) GTEST_SKIP() << "no user xattrs on " << f.upper;
  put(f.upper / "lib/new.c", "n");
  Applied a = apply_layer(f, baseline);
  EXPECT_TRUE(a.refused.empty());
  EXPECT_FALSE(fs::exists(f.project / "lib/old.c"));
  EXPECT_EQ(get(f.project / "lib/new.c"), "n");
  EXPECT_TRUE(fs::exists(f.upper / "lib/new.c"));
  auto again = diff_layer(f.open(f.upper).get(), f.open(f.project).get());
  EXPECT_TRUE(again->empty());
}

TEST(ReviewBaseline, RoundTripsAnyFileName) {
  Baseline b;
  b["a b"] = {1, 2, 3, 4, 0100644};
  b[std::string("new\nline")] = {5, 6, -7, 8, 040755};
  auto parsed = parse_baseline(serialize_baseline(b), "baseline");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, b);
  EXPECT_FALSE(parse_baseline("1 2 3\0", "baseline").ok());
}

TEST(ReviewBaseline, ADirectoryIsUnchangedWhileFilesComeAndGoInIt) {
  Stamp dir{7, 4096, 1, 1, 040755};
  Stamp later = dir;
  later.mtime_ns = later.ctime_ns = 99;
  EXPECT_TRUE(unchanged(dir, later));
  later.mode = 040700;
  EXPECT_FALSE(unchanged(dir, later));
  Stamp file{8, 3, 1, 1, 0100644};
  Stamp touched = file;
  touched.mtime_ns = 2;
  EXPECT_FALSE(unchanged(file, touched));
}

}  // namespace
}  // namespace tnk::review
