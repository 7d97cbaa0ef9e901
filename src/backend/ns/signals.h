// Signal state for the processes the ns engine forks: they start with the caller's handlers and mask
// (a supervisor blocks SIGCHLD for its signalfd, ignores SIGPIPE), which must not leak into the sandbox.
#pragma once

#include <csignal>

namespace tnk::ns {

// Every handler back to SIG_DFL and an empty mask (async-signal-safe). False with errno on failure.
bool reset_signals();

// The signals PID 1 waits for with sigtimedwait: SIGCHLD and SIGTERM.
sigset_t init_signal_set();

// PID 1's signal state: defaults, then no-op handlers for SIGCHLD and SIGTERM (PID 1 of a namespace
// drops signals left at SIG_DFL) and both blocked, to be taken with sigtimedwait.
bool become_init_signals();

}  // namespace tnk::ns
