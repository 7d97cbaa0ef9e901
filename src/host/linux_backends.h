// Whether this build has the Linux-only backends (ns, vm): CMake's TNK_LINUX_BACKENDS, ON on Linux.
// OFF builds (macOS, or its stand-in on Linux) leave out src/ns, src/supervisor and src/vm; the code
// that would call them says "not part of this build" instead. A compile without CMake gets them.
#pragma once

#ifndef TNK_LINUX_BACKENDS
#define TNK_LINUX_BACKENDS 1
#endif

namespace tnk::host {

inline constexpr bool kLinuxBackends = TNK_LINUX_BACKENDS != 0;

}  // namespace tnk::host
