#include "guest/session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agent/frame.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"

namespace tnk::guest {

GuestSession::GuestSession(uint32_t id, SpawnedProcess p)
    : id_(id),
      pid_(p.pid),
      tty_(p.pty_master.valid()),
      pty_(std::move(p.pty_master)),
      stdin_w_(std::move(p.stdin_w)),
      stdout_r_(std::move(p.stdout_r)),
      stderr_r_(std::move(p.stderr_r)),
      pty_output_open_(tty_) {}

GuestSession::~GuestSession() = default;

Status GuestSession::queue_input(std::string_view bytes) {
  if (input_.size() + bytes.size() > agent::kStreamWindow) {
    return failed("session " + std::to_string(id_) + ": the host sent more stdin than the window of " +
                  std::to_string(agent::kStreamWindow) + " bytes");
  }
  if (input_closed_ || input_eof_) return ok_status();  // the program stopped reading: dropped (and acked)
  input_.append(bytes);
  return ok_status();
}

void GuestSession::input_eof() {
  input_eof_ = true;
  if (input_.empty() && !tty_) stdin_w_.reset();
}

void GuestSession::resize(const agent::WindowSize& size) {
  if (!tty_) return;
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  ::ioctl(pty_.get(), TIOCSWINSZ, &ws);  // the kernel sends SIGWINCH to the foreground group
}

void GuestSession::signal(int sig) {
  if (!exited_) ::kill(-pid_, sig);
}

void GuestSession::kill() {
  if (exited_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
}

void GuestSession::output_acked(uint32_t bytes) { unacked_ -= std::min<std::size_t>(bytes, unacked_); }

int GuestSession::output_fd(int stream) const {
  if (tty_) return stream == 0 && pty_output_open_ ? pty_.get() : -1;
  return stream == 0 ? stdout_r_.get() : stderr_r_.get();
}

void GuestSession::close_output(int stream) {
  if (tty_)
    pty_output_open_ = false;
  else if (stream == 0)
    stdout_r_.reset();
  else
    stderr_r_.reset();
}

void GuestSession::add_poll(std::vector<pollfd>& fds, bool read_output) const {
  bool credit = read_output && unacked_ < agent::kStreamWindow;
  short in_events = input_.empty() ? 0 : POLLOUT;
  if (tty_) {
    short events = static_cast<short>((credit && pty_output_open_ ? POLLIN : 0) | in_events);
    if (events != 0) fds.push_back({pty_.get(), events, 0});
    return;
  }
  for (int s = 0; s < 2; ++s) {
    if (credit && output_fd(s) >= 0) fds.push_back({output_fd(s), POLLIN, 0});
  }
  if (in_events != 0 && stdin_w_.valid()) fds.push_back({stdin_w_.get(), in_events, 0});
}

void GuestSession::handle(const pollfd& p, agent::FrameQueue& out) {
  if (p.revents == 0) return;
  if (tty_ && !pty_output_open_ && (p.revents & (POLLHUP | POLLERR))) return drop_input(out);  // no reader left
  bool is_input = tty_ ? (p.revents & (POLLOUT | POLLERR)) != 0 && !input_.empty() : p.fd == stdin_w_.get();
  if (is_input) write_input(out);
  for (int s = 0; s < 2; ++s) {
    if (p.fd == output_fd(s) && (p.revents & (POLLIN | POLLHUP | POLLERR))) read_output(s, out);
  }
}

bool GuestSession::read_output(int stream, agent::FrameQueue& out) {
  int fd = output_fd(stream);
  std::size_t room = std::min(agent::kMaxPayload, agent::kStreamWindow - std::min(unacked_, agent::kStreamWindow));
  if (fd < 0 || room == 0) return false;
  std::string buf(room, '\0');
  ssize_t n = ::read(fd, buf.data(), room);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) {  // EOF, or EIO from a PTY whose slave side is closed
    close_output(stream);
    return false;
  }
  buf.resize(static_cast<std::size_t>(n));
  unacked_ += buf.size();
  (void)out.push(stream == 0 ? agent::FrameType::kStdout : agent::FrameType::kStderr, id_, buf);
  return true;
}

void GuestSession::write_input(agent::FrameQueue& out) {
  int fd = tty_ ? pty_.get() : stdin_w_.get();
  if (fd < 0) return drop_input(out);
  ssize_t n = ::write(fd, input_.data(), input_.size());
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n < 0) return drop_input(out);  // EPIPE: the program closed its stdin
  input_.erase(0, static_cast<std::size_t>(n));
  if (n > 0) (void)out.push(agent::FrameType::kInputAck, id_, agent::encode_ack(static_cast<uint32_t>(n)));
  if (input_.empty() && input_eof_ && !tty_) stdin_w_.reset();
}

// Bytes nobody will read are acked anyway, so the host's credit does not stall.
void GuestSession::drop_input(agent::FrameQueue& out) {
  if (!input_.empty()) {
    (void)out.push(agent::FrameType::kInputAck, id_, agent::encode_ack(static_cast<uint32_t>(input_.size())));
  }
  input_.clear();
  input_closed_ = true;
  if (!tty_) stdin_w_.reset();
}

// What a finished command wrote to the guest's disk reaches the host (QEMU's overlay) before the host
// hears that it finished: a killed QEMU then loses nothing a command completed. Cheap when nothing is
// dirty; the workspace (virtiofs) writes through to the host anyway.
namespace {
void persist_root_disk() {
  UniqueFd root(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.valid()) (void)::syncfs(root.get());
}
}  // namespace

void GuestSession::set_exited(int status) {
  exited_ = true;
  status_ = status;
}

bool GuestSession::finish(agent::FrameQueue& out) {
  if (!exited_) return false;
  for (int s = 0; s < 2; ++s) {
    while (read_output(s, out)) {
    }
    // Nothing more readable now: what a background process writes later is not this session's.
    if (output_fd(s) >= 0 && unacked_ < agent::kStreamWindow) close_output(s);
  }
  if (output_fd(0) >= 0 || output_fd(1) >= 0) return false;  // waiting for the host's ack
  persist_root_disk();
  agent::ExitInfo exit;
  exit.code = exit_code_from_wait_status(status_);
  if (WIFSIGNALED(status_)) exit.signal = WTERMSIG(status_);
  (void)out.push(agent::FrameType::kExit, id_, agent::encode_exit(exit));
  return true;
}

}  // namespace tnk::guest
