#include "review/patch.h"

#include <gtest/gtest.h>

#include "review/git_blob.h"
#include "review_test_util.h"

namespace tnk::review {
namespace {

using namespace fixture;

std::string patch(const LayerFixture& f) {
  UniqueFd upper = f.open(f.upper), project = f.open(f.project);
  auto lines = patch_of(upper.get(), project.get(), layer_changes(f));
  EXPECT_TRUE(lines.ok()) << (lines ? "" : lines.error().message);
  std::string out;
  if (lines) {
    for (const auto& l : *lines) out += l.text + "\n";
  }
  return out;
}

TEST(ReviewPatch, AnEditIsATextHunkWithTheBlobIds) {
  LayerFixture f;
  put(f.project / "a.txt", "one\ntwo\n");
  put(f.upper / "a.txt", "one\n2\n");
  EXPECT_EQ(patch(f), "diff --git a/a.txt b/a.txt\nindex " + git_blob_id("one\ntwo\n") + ".." +
                          git_blob_id("one\n2\n") +
                          " 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n");
}

TEST(ReviewPatch, NewDeletedAndEmptyFiles) {
  LayerFixture f;
  put(f.project / "gone.txt", "bye\n");
  ASSERT_TRUE(whiteout(f.upper / "gone.txt"));
  put(f.upper / "new/empty.txt", "");
  const std::string none(40, '0');
  EXPECT_EQ(patch(f), "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex " + git_blob_id("bye\n") +
                          ".." + none + "\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" +
                          "diff --git a/new/empty.txt b/new/empty.txt\nnew file mode 100644\nindex " + none + ".." +
                          git_blob_id("") + "\n");
}

TEST(ReviewPatch, AChmodIsOldModeNewModeAndAPermissionGitDoesNotKeepIsNothing) {
  LayerFixture f;
  put(f.project / "run.sh", "echo\n");
  put(f.upper / "run.sh", "echo\n", fs::perms(0755));
  put(f.project / "private.txt", "x\n");
  put(f.upper / "private.txt", "x\n", fs::perms(0600));
  fs::create_directories(f.project / "dir");
  fs::create_directories(f.upper / "dir");
  fs::permissions(f.upper / "dir", fs::perms(0700));  // git has no directories: not in the patch
  EXPECT_EQ(patch(f), "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
}

TEST(ReviewPatch, ALinkIsItsTargetWithoutANewlineAndATypeChangeIsTwoSections) {
  LayerFixture f;
  put(f.project / "was-file", "text\n");
  fs::create_symlink("/etc/passwd", f.upper / "was-file");  // never followed: its target is its content
  std::string out = patch(f);
  EXPECT_NE(out.find("deleted file mode 100644"), std::string::npos) << out;
  EXPECT_NE(out.find("new file mode 120000"), std::string::npos) << out;
  EXPECT_NE(out.find("+/etc/passwd\n\\ No newline at end of file\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("root:"), std::string::npos) << "the link was followed";
}

TEST(ReviewPatch, ABinaryFileIsAGitBinaryPatchAndADeletedDirectoryEveryFileBelow) {
  LayerFixture f;
  put(f.upper / "blob.bin", std::string("\0\1\2", 3));
  put(f.project / "old/a.txt", "a\n");
  put(f.project / "old/sub/b.txt", "b\n");
  ASSERT_TRUE(whiteout(f.upper / "old"));
  std::string out = patch(f);
  EXPECT_NE(out.find("new file mode 100644\nindex " + std::string(40, '0') + ".." +
                     git_blob_id(std::string("\0\1\2", 3)) + "\nGIT binary patch\nliteral 3\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("diff --git a/old/a.txt b/old/a.txt\ndeleted file mode"), std::string::npos) << out;
  EXPECT_NE(out.find("diff --git a/old/sub/b.txt b/old/sub/b.txt\ndeleted file mode"), std::string::npos) << out;
}

}  // namespace
}  // namespace tnk::review
