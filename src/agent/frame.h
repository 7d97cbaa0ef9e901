// The frame layer of the host <-> guest agent protocol (docs/agent-protocol.md): a fixed 16-byte header
// (magic, version, type, flags, session id, payload length) and a payload of at most kMaxPayload bytes.
// This file owns the byte layout and the incremental decoder; message contents live in messages.h.
// Shared by the host client and tnk-agent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::agent {

inline constexpr uint32_t kMagic = 0x544E4B41;  // "TNKA" on the wire
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kMaxPayload = 64 * 1024;
// Flow control: per session and direction, at most this many data bytes are unacknowledged (stdout and
// stderr share one window; stdin has its own). Both sides rely on it to bound their buffers.
inline constexpr std::size_t kStreamWindow = 256 * 1024;

// Every message type. Session 0 is the connection itself (hello, ping, poweroff, connection errors);
// other session ids are chosen by the host, one per exec or file transfer.
enum class FrameType : uint8_t {
  kHello = 0x01,       // host -> agent, JSON {version, token}: must be the first frame
  kHelloOk = 0x02,     // agent -> host, JSON {version, agent}
  kPing = 0x03,        // host -> agent, raw bytes echoed in the pong
  kPong = 0x04,        // agent -> host
  kError = 0x05,       // either way, JSON {message, fatal}
  kPoweroff = 0x06,    // host -> agent
  kPoweroffOk = 0x07,  // agent -> host: sent before the agent syncs and powers off
  kClock = 0x08,       // host -> agent, JSON {unix_ns}: the host's time, after the guest was paused
  kExec = 0x10,        // host -> agent, JSON ExecRequest: starts session <id>
  kStarted = 0x11,     // agent -> host, JSON {pid}
  kStdin = 0x12,       // host -> agent, raw
  kStdinEof = 0x13,    // host -> agent, empty
  kStdout = 0x14,      // agent -> host, raw (a tty session sends everything here)
  kStderr = 0x15,      // agent -> host, raw
  kResize = 0x16,      // host -> agent, JSON {rows, cols}
  kSignal = 0x17,      // host -> agent, JSON {signal}
  kExit = 0x18,        // agent -> host, JSON {code, signal?, error?}: the session's last frame
  kOutputAck = 0x19,   // host -> agent, JSON {bytes}: stdout+stderr bytes the host has delivered
  kInputAck = 0x1A,    // agent -> host, JSON {bytes}: stdin bytes written to the program
  kFilePut = 0x20,     // host -> agent, JSON {path, mode, uid, gid, parents}: starts transfer <id>
  kFileData = 0x21,    // host -> agent, raw chunk
  kFileDone = 0x22,    // host -> agent, empty: the file is complete
  kFileResult = 0x23,  // agent -> host, JSON {}: the file is in place (a failure is a kError instead)
};

// A short name for messages and logs ("exec", "stdout", "type 0x7e" for an unknown one).
std::string frame_type_name(uint8_t type);
bool is_known_type(uint8_t type);

struct Frame {
  uint8_t type = 0;  // a FrameType value, or an unknown type the dispatcher answers with an error
  uint32_t session = 0;
  std::string payload;

  FrameType kind() const { return static_cast<FrameType>(type); }
};

// Appends one encoded frame to `out`. A payload over kMaxPayload is an error (callers split data).
Status append_frame(std::string& out, FrameType type, uint32_t session, std::string_view payload = {});
// The same as a value, for tests and small control frames; aborts on an oversize payload.
std::string encode_frame(FrameType type, uint32_t session, std::string_view payload = {});

// Turns a byte stream into frames. Bytes arrive in any chunking; at most one partial frame is held,
// and its payload buffer is allocated only after the header passed the checks (so at most kMaxPayload).
// A bad magic, another version, non-zero flags or an oversize length is a fatal error: the decoder
// stays failed and returns the same error from then on (the stream cannot be resynchronized).
class FrameDecoder {
 public:
  // Decodes every complete frame in `bytes` into `out` and keeps the rest.
  Status feed(std::string_view bytes, std::vector<Frame>& out);
  bool has_failed() const { return error_.has_value(); }
  // Bytes of the current partial frame (header and payload) held so far.
  std::size_t buffered() const { return header_have_ + current_.payload.size(); }
  void reset();

 private:
  Status take_header();

  std::array<unsigned char, kHeaderBytes> header_{};
  std::size_t header_have_ = 0;
  std::size_t payload_need_ = 0;
  bool in_payload_ = false;
  Frame current_;
  std::optional<Error> error_;
};

}  // namespace tnk::agent
