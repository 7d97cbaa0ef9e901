// File copy into the guest (tnk-agent side): a file-put frame opens a temporary file next to the
// target with the requested mode and owner, data frames append to it, and file-done renames it into
// place, so a reader never sees half a file. A transfer that fails or is abandoned leaves nothing.
#pragma once

#include <string>
#include <string_view>

#include "agent/messages.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::guest {

class FileTransfer {
 public:
  static Result<FileTransfer> open(const agent::FilePut& put);
  FileTransfer(FileTransfer&&) noexcept;
  FileTransfer& operator=(FileTransfer&&) = delete;
  FileTransfer(const FileTransfer&) = delete;
  ~FileTransfer();  // removes the temporary file unless commit() succeeded

  Status append(std::string_view bytes);
  Status commit();

 private:
  FileTransfer(agent::FilePut put, UniqueFd fd, std::string tmp);

  agent::FilePut put_;
  UniqueFd fd_;
  std::string tmp_;  // empty once renamed
};

}  // namespace tnk::guest
