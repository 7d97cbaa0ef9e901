#include "backend/ns/signals.h"

#include <cerrno>

namespace tnk::ns {

namespace {
void ignore_signal(int) {}
}  // namespace

bool reset_signals() {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &action, nullptr);  // fails (harmlessly) for the libc-reserved real-time signals
  }
  sigset_t none;
  sigemptyset(&none);
  return sigprocmask(SIG_SETMASK, &none, nullptr) == 0;
}

sigset_t init_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  return set;
}

bool become_init_signals() {
  if (!reset_signals()) return false;
  struct sigaction action {};
  action.sa_handler = ignore_signal;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGCHLD, &action, nullptr) != 0 || sigaction(SIGTERM, &action, nullptr) != 0) return false;
  sigset_t set = init_signal_set();
  return sigprocmask(SIG_BLOCK, &set, nullptr) == 0;
}

}  // namespace tnk::ns
