#include "backend/vm/agent_client.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "backend/vm/agent_client_pump.h"
#include "core/unix_address.h"

namespace tnk::vm {
namespace {

using Clock = std::chrono::steady_clock;

Status set_nonblocking(int fd, const char* what) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return sys_error(errno, std::string("cannot make the session's ") + what + " non-blocking");
  }
  return ok_status();
}

// One connect attempt: 0, or the errno.
int try_connect(const sockaddr_un& addr, UniqueFd& fd) {
  fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc < 0 && errno == EINTR);
  return rc == 0 ? 0 : errno;
}

// Waits on the pump's condition until `ready()` or the deadline; an error when the connection failed or
// the time ran out.
template <class Ready>
Status wait_for(AgentClient::Pump& p, std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                const std::string& what, Ready ready) {
  if (p.on_pump_thread()) return failed(what + ": cannot wait from an exit callback (the pump thread)");
  for (;;) {
    if (ready()) return ok_status();
    if (p.failure) return p.failure->context(what);
    if (p.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !p.failure) {
      Error e = failed(what + ": the agent did not answer in time");
      e.sys_errno = ETIMEDOUT;
      return e;
    }
  }
}

}  // namespace

AgentClient::AgentClient(std::unique_ptr<Pump> pump) : pump_(std::move(pump)) {}

AgentClient::~AgentClient() { pump_->stop(); }

Result<std::unique_ptr<AgentClient>> AgentClient::connect(const std::filesystem::path& socket_path,
                                                          const std::string& token, const ClientOptions& options) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(socket_path, "agent socket"));
  auto deadline = Clock::now() + options.connect_timeout;
  UniqueFd fd;
  for (;;) {
    int err = try_connect(addr, fd);
    if (err == 0) break;
    bool retry = err == ENOENT || err == ECONNREFUSED || err == EAGAIN;
    if (!retry || Clock::now() >= deadline) {
      return sys_error(err, "cannot connect to the agent socket " + socket_path.string(),
                       "is the sandbox's QEMU running? see its serial.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return attach(std::move(fd), token, options.hello_timeout);
}

Result<std::unique_ptr<AgentClient>> AgentClient::attach(UniqueFd stream, const std::string& token,
                                                         std::chrono::milliseconds hello_timeout) {
  TNK_RETURN_IF_ERROR(set_nonblocking(stream.get(), "agent connection"));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return sys_error(errno, "cannot create an eventfd");
  auto pump = std::make_unique<Pump>(std::move(stream), std::move(wake));
  Pump& p = *pump;
  std::unique_ptr<AgentClient> client(new AgentClient(std::move(pump)));
  std::unique_lock<std::mutex> lock(p.mu);
  p.send(agent::FrameType::kHello, 0, agent::encode_hello({agent::kProtocolVersion, token}));
  p.thread = std::thread([&p] { p.run(); });
  TNK_RETURN_IF_ERROR(
      wait_for(p, lock, Clock::now() + hello_timeout, "hello to the agent", [&] { return p.hello.has_value(); }));
  if (p.hello->version != agent::kProtocolVersion) {
    return failed("the agent speaks protocol version " + std::to_string(p.hello->version) + ", tnk speaks " +
                      std::to_string(agent::kProtocolVersion),
                  "rebuild the sandbox image so that it carries this tnk's agent");
  }
  return client;
}

std::string AgentClient::agent_name() const {
  std::lock_guard<std::mutex> lock(pump_->mu);
  return pump_->hello ? pump_->hello->agent : std::string();
}

std::optional<Error> AgentClient::failure() const {
  std::lock_guard<std::mutex> lock(pump_->mu);
  return pump_->failure;
}

Result<std::chrono::microseconds> AgentClient::ping(std::chrono::milliseconds timeout) {
  Pump& p = *pump_;
  std::unique_lock<std::mutex> lock(p.mu);
  uint64_t seq = p.new_id();
  std::string payload(reinterpret_cast<const char*>(&seq), sizeof seq);
  p.pings[payload] = false;
  auto start = Clock::now();
  p.send(agent::FrameType::kPing, 0, payload);
  Status answered = wait_for(p, lock, start + timeout, "ping", [&] { return p.pings[payload]; });
  auto rtt = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  p.pings.erase(payload);
  if (!answered.ok()) return answered.error();
  return rtt;
}

Result<SessionId> AgentClient::start(const agent::ExecRequest& request, SessionIo io, ExitCallback on_exit) {
  TNK_ASSIGN_OR_RETURN(std::string payload, agent::encode_exec(request));
  if (payload.size() > agent::kMaxPayload) {
    return failed("exec request for " + request.argv.at(0) + " is " + std::to_string(payload.size()) +
                      " bytes, over the agent protocol's limit of " + std::to_string(agent::kMaxPayload),
                  "pass fewer or shorter arguments and environment variables");
  }
  Pump::Session s;
  s.tty = request.tty;
  if (request.tty) {
    if (!io.terminal.valid()) return failed("exec with a terminal needs a terminal fd");
    TNK_RETURN_IF_ERROR(set_nonblocking(io.terminal.get(), "terminal"));
    s.out = UniqueFd(::fcntl(io.terminal.get(), F_DUPFD_CLOEXEC, 3));
    if (!s.out.valid()) return sys_error(errno, "cannot duplicate the session's terminal fd");
    s.in = std::move(io.terminal);
  } else {
    s.in = std::move(io.input);
    s.out = std::move(io.output);
    s.err = std::move(io.errors);
    if (s.in.valid()) TNK_RETURN_IF_ERROR(set_nonblocking(s.in.get(), "stdin"));
    if (s.out.valid()) TNK_RETURN_IF_ERROR(set_nonblocking(s.out.get(), "stdout"));
    if (s.err.valid()) TNK_RETURN_IF_ERROR(set_nonblocking(s.err.get(), "stderr"));
  }
  s.on_exit = std::move(on_exit);
  Pump& p = *pump_;
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.failure) return p.failure->context("starting " + request.argv.at(0) + " in the guest");
  SessionId id = p.new_id();
  p.send(agent::FrameType::kExec, id, payload);
  if (!request.tty && !s.in.valid()) {
    s.input_open = false;
    p.send(agent::FrameType::kStdinEof, id);
  }
  p.sessions.emplace(id, std::move(s));
  return id;
}

Status AgentClient::resize(SessionId id, uint16_t rows, uint16_t cols) {
  std::lock_guard<std::mutex> lock(pump_->mu);
  if (pump_->sessions.count(id)) pump_->send(agent::FrameType::kResize, id, agent::encode_resize({rows, cols}));
  return ok_status();
}

Status AgentClient::set_clock() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::lock_guard<std::mutex> lock(pump_->mu);
  pump_->send(agent::FrameType::kClock, 0, agent::encode_clock(int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec));
  return ok_status();
}

Status AgentClient::signal(SessionId id, int sig) {
  if (sig < 1 || sig > 64) return failed("signal " + std::to_string(sig) + " is not a signal number");
  std::lock_guard<std::mutex> lock(pump_->mu);
  if (pump_->sessions.count(id)) pump_->send(agent::FrameType::kSignal, id, agent::encode_signal(sig));
  return ok_status();
}

Status AgentClient::put_file(const agent::FilePut& file, std::string_view content, std::chrono::milliseconds timeout) {
  TNK_ASSIGN_OR_RETURN(std::string header, agent::encode_file_put(file));
  std::string what = "copying " + file.path + " into the guest";
  if (header.size() > agent::kMaxPayload) return failed(what + ": the path is too long");
  Pump& p = *pump_;
  std::unique_lock<std::mutex> lock(p.mu);
  if (p.failure) return p.failure->context(what);
  SessionId id = p.new_id();
  p.files[id] = std::nullopt;
  p.send(agent::FrameType::kFilePut, id, header);
  for (std::size_t at = 0; at < content.size(); at += agent::kMaxPayload) {
    p.send(agent::FrameType::kFileData, id, content.substr(at, agent::kMaxPayload));
  }
  p.send(agent::FrameType::kFileDone, id);
  Status done = wait_for(p, lock, Clock::now() + timeout, what, [&] { return p.files[id].has_value(); });
  std::optional<Status> result = p.files[id];
  p.files.erase(id);
  if (!done.ok()) return done;
  if (!result->ok()) return result->error().context(what);
  return ok_status();
}

Status AgentClient::poweroff(std::chrono::milliseconds timeout) {
  Pump& p = *pump_;
  std::unique_lock<std::mutex> lock(p.mu);
  if (p.failure) return p.failure->context("poweroff");
  p.send(agent::FrameType::kPoweroff, 0);
  return wait_for(p, lock, Clock::now() + timeout, "poweroff", [&] { return p.poweroff_ok; });
}

}  // namespace tnk::vm
