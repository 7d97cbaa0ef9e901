// Staging for `tnk init`: a private temporary directory removed on destruction, and a tree copy that
// takes only regular files and directories. Internal to src/specs/.
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "core/result.h"

namespace tnk::specs {

// A directory made with mkdtemp (mode 0700) inside `parent`; removed with everything in it when the
// object dies, so a failed install leaves nothing behind.
class StageDir {
 public:
  static Result<StageDir> create(const std::filesystem::path& parent, const std::string& prefix);
  StageDir(StageDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  StageDir& operator=(StageDir&&) = delete;
  StageDir(const StageDir&) = delete;
  StageDir& operator=(const StageDir&) = delete;
  ~StageDir();

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit StageDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// Copies the regular files and directories below `from` into `to` (created), keeping permission
// bits. Skips every entry named `.git`, symlinks (they could point anywhere on the host) and other
// special files.
Status copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace tnk::specs
