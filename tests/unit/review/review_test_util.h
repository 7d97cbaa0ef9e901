// A project and a hand-made overlay upper directory beside it, as overlayfs would leave them: the
// review module's seams need no mounted overlay.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/unique_fd.h"
#include "review/diff.h"
#include "temp_dir.h"

namespace tnk::review::fixture {

namespace fs = std::filesystem;

inline void put(const fs::path& path, const std::string& text, fs::perms perms = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

inline std::string get(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What overlayfs writes for a deletion: a 0/0 character device (unprivileged since Linux 5.8).
inline bool whiteout(const fs::path& path) {
  fs::create_directories(path.parent_path());
  return ::mknod(path.c_str(), S_IFCHR | 0, makedev(0, 0)) == 0;
}

inline bool make_opaque(const fs::path& dir) {
  fs::create_directories(dir);
  return ::setxattr(dir.c_str(), kOpaqueXattr, "y", 1, 0) == 0;
}

struct LayerFixture {
  testing_support::TempDir tmp;
  fs::path project = tmp.path() / "project";
  fs::path upper = tmp.path() / "upper";
  LayerFixture() {
    fs::create_directories(project);
    fs::create_directories(upper);
  }
  UniqueFd open(const fs::path& dir) const {
    return UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
};

// diff_layer of the fixture's layer over its project (none, with a test failure, when it fails).
inline std::vector<Change> layer_changes(const LayerFixture& f) {
  auto changes = diff_layer(f.open(f.upper).get(), f.open(f.project).get());
  EXPECT_TRUE(changes.ok()) << (changes ? "" : changes.error().message);
  return changes ? *changes : std::vector<Change>();
}

// "added new.txt;deleted old.txt;" for a test to compare.
inline std::string summary(const std::vector<Change>& changes) {
  std::string out;
  for (const auto& c : changes) out += std::string(to_string(c.kind)) + " " + c.path + ";";
  return out;
}

}  // namespace tnk::review::fixture
