// The joiner: one process per running sandbox that joined its cgroups and namespaces once, and
// clones every session from there. Joining per session cost a cgroup migration per controller
// (each can wait for an RCU grace period: 0.2 ms usually, up to 20 ms on a busy host) and seven
// setns calls; sessions cloned from the joiner inherit all of that for free.
#pragma once

#include <sys/types.h>

#include "backend/ns/sandbox.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::ns {

class Joiner {
 public:
  // Forks the joiner (a child of the caller; it dies with the caller) for `sandbox`.
  static Result<Joiner> start(const Sandbox& sandbox);

  // As ns::spawn: the session is the caller's child (CLONE_PARENT), in the sandbox.
  Result<Session> spawn(const SessionSpec& spec);
  pid_t pid() const { return pid_; }
  // For a caller that reaped the joiner itself (it died): nothing is left to end.
  void forget() { pid_ = 0; }

  Joiner(Joiner&& other) noexcept;
  Joiner& operator=(Joiner&& other) noexcept;
  ~Joiner();  // kills and reaps the joiner

 private:
  Joiner(pid_t init_pid, pid_t pid, UniqueFd channel) : init_pid_(init_pid), pid_(pid), channel_(std::move(channel)) {}
  void end();

  pid_t init_pid_ = 0;
  pid_t pid_ = 0;
  UniqueFd channel_;  // SOCK_SEQPACKET to the joiner: one request (and its fds) per session
  UniqueFd root_;     // O_PATH: the sandbox's `/`, sent by the joiner once it joined
};

}  // namespace tnk::ns
