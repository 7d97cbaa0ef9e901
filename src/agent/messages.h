// The JSON control messages of the agent protocol (docs/agent-protocol.md) and their strict parsers.
// Parsers take a frame's payload and return the message or an error naming the message and field at
// fault; unknown fields are ignored (a newer peer may add optional ones). Shared by host and guest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::agent {

inline constexpr std::size_t kMaxTokenBytes = 256;
inline constexpr uint32_t kMaxAckBytes = 1u << 30;
inline constexpr uint32_t kMaxId = 0xfffffffeu;  // uid/gid (uint32 -1 means "unchanged" to the kernel)

struct Hello {
  int version = 0;
  std::string token;
};
std::string encode_hello(const Hello& hello);
Result<Hello> parse_hello(std::string_view payload);

struct HelloOk {
  int version = 0;
  std::string agent;  // "tnk-agent <version>"
};
std::string encode_hello_ok(const HelloOk& ok);
Result<HelloOk> parse_hello_ok(std::string_view payload);

// What to run. No shell: argv[0] is looked up in the PATH of `env` when it has no '/'.
struct ExecRequest {
  std::vector<std::string> argv;  // non-empty, argv[0] non-empty
  std::vector<std::string> env;   // "K=V": the complete environment, nothing is inherited
  std::string cwd = "/";          // absolute
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups; empty means just gid
  bool tty = false;
  uint16_t rows = 24, cols = 80;  // the terminal's size when tty
  // Every session but provisioning: no_new_privs (sudo does nothing), and uid 0 runs in a user
  // namespace that does not map the agent's uid, so root cannot override the agent's files (the
  // project). Absent in a request: false. Confined sessions of a uid other than 0 (the agent's) also
  // cannot make set-id files (confine::setid_mode_filter).
  bool confined = false;
  // Set for provisioning: this mount (the project) is read-only for the session and everything it
  // starts, root included. Absent: "".
  std::string readonly_mount;
};
// Fails when a string is not valid UTF-8 (JSON text cannot carry it exactly).
Result<std::string> encode_exec(const ExecRequest& request);
// No NUL byte in any string; env entries have a non-empty name without '='; ids <= kMaxId.
Result<ExecRequest> parse_exec(std::string_view payload);

struct Started {
  long long pid = 0;  // in the guest
};
std::string encode_started(const Started& started);
Result<Started> parse_started(std::string_view payload);

struct WindowSize {
  uint16_t rows = 0, cols = 0;
};
// The host's CLOCK_REALTIME in nanoseconds, for the guest to take after a pause (QEMU's stop holds its clock).
std::string encode_clock(int64_t unix_ns);
Result<int64_t> parse_clock(std::string_view payload);

std::string encode_resize(const WindowSize& size);
Result<WindowSize> parse_resize(std::string_view payload);

std::string encode_signal(int signal);
Result<int> parse_signal(std::string_view payload);  // 1..64

// How a session ended. `code` follows the shell convention: the exit status, 128+n for signal n,
// 127 when the program was not found, 126 when it could not be started.
struct ExitInfo {
  int code = 0;
  int signal = 0;     // the signal that killed it, 0 when it exited
  std::string error;  // why it could not start; empty otherwise
};
std::string encode_exit(const ExitInfo& exit);
Result<ExitInfo> parse_exit(std::string_view payload);

struct ErrorInfo {
  std::string message;
  bool fatal = false;  // the connection ends after a fatal error
};
std::string encode_error(const ErrorInfo& error);
Result<ErrorInfo> parse_error(std::string_view payload);

std::string encode_ack(uint32_t bytes);
Result<uint32_t> parse_ack(std::string_view payload);  // 1..kMaxAckBytes

struct FilePut {
  std::string path;  // absolute, in the guest
  uint32_t mode = 0644;
  uint32_t uid = 0, gid = 0;
  bool parents = false;  // create missing parent directories (0755, owned by uid:gid)
};
Result<std::string> encode_file_put(const FilePut& put);
Result<FilePut> parse_file_put(std::string_view payload);

}  // namespace tnk::agent
