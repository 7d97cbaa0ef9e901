// What git's patch format needs of a file's bytes, computed here so that no git runs on the layer:
// the blob's object id (the `index` line, which `git apply` checks before and after a binary patch) and
// a "GIT binary patch" literal (deflate, stored blocks, in git's base85 lines).
#pragma once

#include <string>
#include <string_view>

namespace tnk::review {

// SHA-1 of "blob <size>\0<content>", in hex: what `git hash-object` prints.
std::string git_blob_id(std::string_view content);

// The forward hunk of a binary patch that makes `content`: "literal <size>\n", the base85 lines and
// the blank line that ends the hunk.
std::string git_binary_literal(std::string_view content);

// Whether git would treat `content` as binary: a NUL byte in its first 8000 bytes.
bool looks_binary(std::string_view content);

}  // namespace tnk::review
