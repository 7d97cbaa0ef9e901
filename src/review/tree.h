// Walking a directory tree by file descriptors, never following a symbolic link: the layer and the
// project are both trees a sandbox wrote, so every component is opened with O_NOFOLLOW below an fd.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::review {

// Opens the directory `rel` ("" = `top` itself) below the directory fd `top`, one component at a
// time. With `create_mode`, missing directories are made (that mode). A symbolic link or a
// non-directory on the way is an error naming `rel`.
Result<UniqueFd> open_dir_below(int top, const std::string& rel, int create_mode = -1);

// lstat of `rel` below `top` (its parent opened without following links). Returns false when absent
// (or when a parent is not a directory).
Result<bool> stat_below(int top, const std::string& rel, struct stat* st);

// The bytes of the regular file `rel` below `top` (in `what`: "the layer", "the project"). Opened
// without following a link and without blocking (a FIFO put there would hang the command); anything
// but a regular file, or one larger than `max_size`, is an error naming it.
Result<std::string> read_file_below(int top, const std::string& rel, const std::string& what,
                                    uint64_t max_size = UINT64_MAX);

// The target of the symbolic link `rel` below `top`.
Result<std::string> read_link_below(int top, const std::string& rel, const std::string& what);

// The names in the directory `dir`, sorted, without "." and "..".
Result<std::vector<std::string>> list_dir(int dir, const std::string& what);

// Removes `name` in `parent` and, for a directory, everything below it (never following a link).
Status remove_tree(int parent, const std::string& name, const std::string& what);

// "a/b" + "c" -> "a/b/c"; "" + "c" -> "c".
std::string join_rel(const std::string& dir, const std::string& name);

// The parent ("" at the top) and the last component of a relative path.
std::pair<std::string, std::string> split_rel(const std::string& rel);

}  // namespace tnk::review
