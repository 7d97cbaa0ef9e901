// One running session inside the guest (tnk-agent side): its program's pipes or PTY master, the stdin
// bytes the host sent and the program has not read yet, and the output credit. Output is read only
// while fewer than kStreamWindow bytes wait for the host's ack, so a chatty program blocks on its own
// pipe instead of filling the agent's memory; stdin is bounded the same way on the host side.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/frame_queue.h"
#include "agent/messages.h"
#include "core/result.h"
#include "guest/spawn.h"

namespace tnk::guest {

class GuestSession {
 public:
  GuestSession(uint32_t id, SpawnedProcess process);
  ~GuestSession();  // closes its fds; never signals (kill() does)
  GuestSession(const GuestSession&) = delete;
  GuestSession& operator=(const GuestSession&) = delete;

  uint32_t id() const { return id_; }
  pid_t pid() const { return pid_; }
  bool exited() const { return exited_; }

  // Host -> program. More stdin than the window allows is an error (the host broke the protocol).
  Status queue_input(std::string_view bytes);
  void input_eof();
  void resize(const agent::WindowSize& size);
  void signal(int sig);
  void output_acked(uint32_t bytes);

  // Appends the fds to watch; `read_output` is false while the agent's queue to the host is full.
  void add_poll(std::vector<pollfd>& fds, bool read_output) const;
  // Handles one pollfd that add_poll added; frames for the host are appended to `out`.
  void handle(const pollfd& p, agent::FrameQueue& out);
  // The program was reaped with wait `status`.
  void set_exited(int status);
  // Once exited: reads what is left in its pipes (within the credit). True when the session is over and
  // its exit frame is in `out`.
  bool finish(agent::FrameQueue& out);
  // SIGKILL to its process group, unless it has been reaped (its id may belong to someone else then).
  void kill();

 private:
  int output_fd(int stream) const;  // stream 0 = stdout (or the PTY), 1 = stderr; -1 when closed
  void close_output(int stream);
  // Reads once; false when nothing more comes now (EAGAIN, EOF or error).
  bool read_output(int stream, agent::FrameQueue& out);
  void write_input(agent::FrameQueue& out);
  void drop_input(agent::FrameQueue& out);

  uint32_t id_;
  pid_t pid_;
  bool tty_;
  UniqueFd pty_, stdin_w_, stdout_r_, stderr_r_;
  bool pty_output_open_ = false;
  std::string input_;  // stdin not yet written to the program
  bool input_eof_ = false, input_closed_ = false;
  std::size_t unacked_ = 0;
  bool exited_ = false;
  int status_ = 0;
};

}  // namespace tnk::guest
