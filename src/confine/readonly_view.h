// A session's private view of the sandbox's mounts in which one mount (the project, for provisioning) is
// read-only for everyone, root included: the session gets a mount namespace of its own, and the mount and
// the mounts under it are remounted read-only there. The rest of the sandbox still sees it read-write.
#pragma once

namespace tnk::confine {

// unshare(CLONE_NEWNS), every mount a slave of the original (nothing propagates back), then `path` and
// its submounts read-only. 0, or -1 with errno. Needs CAP_SYS_ADMIN over the current mount namespace.
// Async-signal-safe (for after fork).
//
// The view holds only while the session cannot remount: on ns the sandbox's seccomp filter refuses every
// mount call; in the guest the caller then enters a user namespace of its own and makes one more mount
// namespace there, in which the kernel locks the read-only flag (MNT_LOCK_READONLY).
int make_readonly_view(const char* path);

}  // namespace tnk::confine
