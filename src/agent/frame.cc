#include "agent/frame.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tnk::agent {
namespace {

void put_u32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>((v >> 24) & 0xff));
  out.push_back(static_cast<char>((v >> 16) & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

uint32_t get_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

}  // namespace

std::string frame_type_name(uint8_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kHello: return "hello";
    case FrameType::kHelloOk: return "hello-ok";
    case FrameType::kPing: return "ping";
    case FrameType::kPong: return "pong";
    case FrameType::kError: return "error";
    case FrameType::kPoweroff: return "poweroff";
    case FrameType::kPoweroffOk: return "poweroff-ok";
    case FrameType::kClock: return "clock";
    case FrameType::kExec: return "exec";
    case FrameType::kStarted: return "started";
    case FrameType::kStdin: return "stdin";
    case FrameType::kStdinEof: return "stdin-eof";
    case FrameType::kStdout: return "stdout";
    case FrameType::kStderr: return "stderr";
    case FrameType::kResize: return "resize";
    case FrameType::kSignal: return "signal";
    case FrameType::kExit: return "exit";
    case FrameType::kOutputAck: return "output-ack";
    case FrameType::kInputAck: return "input-ack";
    case FrameType::kFilePut: return "file-put";
    case FrameType::kFileData: return "file-data";
    case FrameType::kFileDone: return "file-done";
    case FrameType::kFileResult: return "file-result";
  }
  return "type " + hex(type, 2);
}

bool is_known_type(uint8_t type) { return frame_type_name(type).rfind("type ", 0) != 0; }

Status append_frame(std::string& out, FrameType type, uint32_t session, std::string_view payload) {
  if (payload.size() > kMaxPayload) {
    return failed("agent frame " + frame_type_name(static_cast<uint8_t>(type)) + ": payload of " +
                  std::to_string(payload.size()) + " bytes is over the limit of " + std::to_string(kMaxPayload));
  }
  put_u32(out, kMagic);
  out.push_back(static_cast<char>(kProtocolVersion));
  out.push_back(static_cast<char>(type));
  out.push_back('\0');  // flags, reserved
  out.push_back('\0');
  put_u32(out, session);
  put_u32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
  return ok_status();
}

std::string encode_frame(FrameType type, uint32_t session, std::string_view payload) {
  std::string out;
  if (!append_frame(out, type, session, payload).ok()) std::abort();
  return out;
}

void FrameDecoder::reset() {
  header_have_ = 0;
  payload_need_ = 0;
  in_payload_ = false;
  current_ = Frame{};
  error_.reset();
}

Status FrameDecoder::take_header() {
  const unsigned char* h = header_.data();
  uint32_t magic = get_u32(h);
  uint32_t length = get_u32(h + 12);
  if (magic != kMagic) {
    return failed("agent protocol: bad frame magic " + hex(magic, 8) + " (expected " + hex(kMagic, 8) + ")",
                  "the peer does not speak the tnk agent protocol, or the stream lost its framing");
  }
  if (h[4] != kProtocolVersion) {
    return failed("agent protocol: unsupported version " + std::to_string(h[4]) + " (this side speaks " +
                      std::to_string(kProtocolVersion) + ")",
                  "use a tnk and a tnk-agent from the same release (rebuild the image)");
  }
  if (h[6] != 0 || h[7] != 0) return failed("agent protocol: reserved frame flags are set");
  if (length > kMaxPayload) {
    return failed("agent protocol: frame " + frame_type_name(h[5]) + " announces " + std::to_string(length) +
                  " payload bytes, over the limit of " + std::to_string(kMaxPayload));
  }
  current_.type = h[5];
  current_.session = get_u32(h + 8);
  current_.payload.clear();
  current_.payload.reserve(length);
  payload_need_ = length;
  in_payload_ = true;
  return ok_status();
}

Status FrameDecoder::feed(std::string_view bytes, std::vector<Frame>& out) {
  if (error_) return *error_;
  while (!bytes.empty() || (in_payload_ && payload_need_ == 0)) {
    if (!in_payload_) {
      std::size_t n = std::min(bytes.size(), kHeaderBytes - header_have_);
      std::memcpy(header_.data() + header_have_, bytes.data(), n);
      header_have_ += n;
      bytes.remove_prefix(n);
      if (header_have_ < kHeaderBytes) break;
      Status header = take_header();
      if (!header.ok()) {
        error_ = header.error();
        return *error_;
      }
    }
    std::size_t n = std::min(bytes.size(), payload_need_);
    current_.payload.append(bytes.data(), n);
    payload_need_ -= n;
    bytes.remove_prefix(n);
    if (payload_need_ > 0) break;
    out.push_back(std::move(current_));
    current_ = Frame{};
    header_have_ = 0;
    in_payload_ = false;
  }
  return ok_status();
}

}  // namespace tnk::agent
