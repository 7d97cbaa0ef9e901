// Finding a program the way execvp would, without running it.
#pragma once

#include <filesystem>
#include <string>

namespace tnk {

// `abs` (an absolute host path) under `root` (a fake root in tests): "/" + "/dev/kvm" -> "/dev/kvm".
std::string path_under(const std::filesystem::path& root, const std::string& abs);

// A regular file this process may execute.
bool is_executable_file(const std::string& path);

// The first executable `name` in the absolute directories of `path_var` (a PATH value), each looked up
// under `root` (tests pass a fake root). Empty when there is none.
std::string find_on_path(const std::string& name, const std::string& path_var, const std::filesystem::path& root = "/");

}  // namespace tnk
