// The inside of AgentClient (client.h): the state shared between the caller's threads and the pump
// thread, all of it guarded by `mu`, and the pump loop itself. Private to src/agent/.
#pragma once

#include <poll.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/frame.h"
#include "agent/frame_queue.h"
#include "backend/vm/agent_client.h"

namespace tnk::vm {

class AgentClient::Pump {
 public:
  struct Session {
    bool tty = false;
    UniqueFd in, out, err;  // tty: `in` is the terminal and `out` a dup of it
    std::string out_pending, err_pending;
    std::size_t stdin_unacked = 0;
    bool input_open = true;
    std::optional<SessionExit> exit;
    ExitCallback on_exit;
  };
  using Finished = std::vector<std::pair<SessionId, Session>>;

  Pump(UniqueFd sock, UniqueFd wake);
  ~Pump();      // stop() must have been called
  void run();   // the pump thread's body
  void stop();  // ends the pump thread and reports the sessions left as lost

  // Everything below is guarded by `mu`.
  void send(agent::FrameType type, uint32_t session, std::string_view payload = {});
  void wake();
  SessionId new_id();
  bool on_pump_thread() const { return std::this_thread::get_id() == thread.get_id(); }

  std::mutex mu;
  std::condition_variable cv;  // notified on every answer and on failure
  std::thread thread;
  std::optional<agent::HelloOk> hello;
  std::optional<Error> failure;
  std::map<std::string, bool> pings;  // payload -> answered
  std::map<SessionId, std::optional<Status>> files;
  bool poweroff_ok = false;
  std::map<SessionId, Session> sessions;

 private:
  void fail(const Error& error);
  static void tell_why(const Session& s);
  void build_poll(std::vector<pollfd>& fds, std::vector<std::pair<SessionId, int>>& owners);
  void read_socket();
  void handle(const agent::Frame& frame);
  void handle_error(const agent::Frame& frame);
  void session_output(Session& s, uint32_t id, std::string_view bytes, bool is_stderr);
  void session_io(SessionId id, int which, short revents);
  void read_input(SessionId id, Session& s);
  void write_output(SessionId id, Session& s, int which);
  Finished collect_finished();

  UniqueFd sock_, wake_;
  agent::FrameDecoder decoder_;
  agent::FrameQueue out_;  // frames to the agent
  bool stopping_ = false;
  SessionId next_id_ = 1;
};

}  // namespace tnk::vm
