// The project paths that run on the host later, outside any sandbox (git's hooks and config, direnv,
// build and package scripts): `tnk sandbox diff` flags a change to one of them. The one list, shown
// in docs/workspace.md.
#pragma once

#include <string>
#include <string_view>

namespace tnk::review {

// Why `rel` (project-relative) runs on the host, e.g. "git hook"; empty when it does not.
std::string host_run_reason(std::string_view rel);

}  // namespace tnk::review
