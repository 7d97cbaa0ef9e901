// The session process: what runs between clone (inside the sandbox's namespaces, still mapped root) and
// exec. After fork: system calls only, on data spawn() prepared.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "backend/ns/credentials.h"
#include "backend/ns/sandbox.h"

namespace tnk::ns {

struct SessionPlan {
  int report_fd = -1;
  int tty_slave = -1;           // >= 0: becomes the controlling tty and stdio
  int stdio[3] = {-1, -1, -1};  // when no tty; -1 = /dev/null
  std::string cwd;
  std::string readonly_mount;  // non-empty: confine::make_readonly_view before the identity change
  CredentialPlan credentials;
  std::vector<std::string> candidates;  // paths to try for argv[0], in order
  std::vector<char*> argv;              // null-terminated, pointing into the SessionSpec
  std::vector<char*> envp;
  std::vector<char*> sh_argv;  // {"/bin/sh", <candidate>, argv[1..], null} for ENOEXEC scripts
};

// execvpe's search with the PATH of `env` (not the caller's): argv0 itself when it contains '/', else
// each PATH entry (an empty entry is the working directory). PATH defaults to /usr/local/bin:/usr/bin:/bin.
std::vector<std::string> exec_candidates(const std::string& argv0, const std::vector<std::string>& env);

// Builds the plan's argv/envp/sh_argv views of `spec` (which must outlive the plan).
void fill_exec_vectors(const SessionSpec& spec, SessionPlan* plan);

[[noreturn]] void run_session(const SessionPlan& plan);

}  // namespace tnk::ns
