// libFuzzer target for the agent protocol: the frame decoder fed the input in chunks whose sizes the
// input itself chooses, and each decoded payload given to the parser its frame type has on the receiving
// side (the raw input, less its first byte, to the parser that byte picks). One parse per payload, not
// every parser on every payload: each input costs a tenth, and the fuzzer reaches every parser by type.
// Build and run: scripts/fuzz.sh SECONDS agent_frame (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "agent/frame.h"
#include "agent/messages.h"

namespace {

using namespace tnk::agent;

void check_exec(std::string_view payload) {
  auto exec = parse_exec(payload);
  if (!exec.ok()) return;
  // Invariants the agent's spawn relies on.
  if (exec->argv.empty() || exec->argv[0].empty() || exec->cwd.empty() || exec->cwd[0] != '/') std::abort();
  for (const auto& e : exec->env) {
    if (e.find('=') == std::string::npos || e[0] == '=') std::abort();
  }
  // What parsed must encode again, and parse back to the same request.
  auto again = encode_exec(*exec);
  if (!again.ok()) std::abort();
  auto back = parse_exec(*again);
  if (!back.ok() || back->argv != exec->argv || back->env != exec->env || back->cwd != exec->cwd) std::abort();
}

void check_exit(std::string_view payload) {
  auto exit = parse_exit(payload);
  if (exit.ok() && (exit->code < 0 || exit->code > 255 || exit->signal < 0 || exit->signal > 64)) std::abort();
}

// The frame types whose payload is JSON, each parsed as the receiving side parses it.
constexpr FrameType kParsed[] = {FrameType::kHello, FrameType::kHelloOk,   FrameType::kError,    FrameType::kClock,
                                 FrameType::kExec,  FrameType::kStarted,   FrameType::kResize,   FrameType::kSignal,
                                 FrameType::kExit,  FrameType::kOutputAck, FrameType::kInputAck, FrameType::kFilePut};

void parse_as(FrameType type, std::string_view payload) {
  switch (type) {
    case FrameType::kHello: (void)parse_hello(payload); break;
    case FrameType::kHelloOk: (void)parse_hello_ok(payload); break;
    case FrameType::kError: (void)parse_error(payload); break;
    case FrameType::kClock: (void)parse_clock(payload); break;
    case FrameType::kExec: check_exec(payload); break;
    case FrameType::kStarted: (void)parse_started(payload); break;
    case FrameType::kResize: (void)parse_resize(payload); break;
    case FrameType::kSignal: (void)parse_signal(payload); break;
    case FrameType::kExit: check_exit(payload); break;
    case FrameType::kOutputAck:
    case FrameType::kInputAck: (void)parse_ack(payload); break;
    case FrameType::kFilePut: (void)parse_file_put(payload); break;
    default: break;  // raw bytes or empty: nothing parses them
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (!input.empty()) {
    parse_as(kParsed[static_cast<unsigned char>(input[0]) % std::size(kParsed)], input.substr(1));
  }
  FrameDecoder decoder;
  std::vector<Frame> frames;
  std::size_t at = 0;
  while (at < input.size()) {
    // The first byte of each step picks the chunk size, so the fuzzer explores every split.
    std::size_t chunk = 1 + static_cast<unsigned char>(input[at]) * 7u;
    std::string_view piece = input.substr(at, chunk);
    at += piece.size();
    auto fed = decoder.feed(piece, frames);
    if (decoder.buffered() > kHeaderBytes + kMaxPayload) std::abort();
    if (!fed.ok()) {
      if (!decoder.has_failed()) std::abort();
      break;
    }
  }
  for (const auto& frame : frames) {
    if (frame.payload.size() > kMaxPayload) std::abort();
    (void)frame_type_name(frame.type);
    parse_as(frame.kind(), frame.payload);
    // A decoded frame encodes to bytes that decode to the same frame.
    std::string bytes;
    if (!append_frame(bytes, frame.kind(), frame.session, frame.payload).ok()) std::abort();
    FrameDecoder again;
    std::vector<Frame> back;
    if (!again.feed(bytes, back).ok() || back.size() != 1 || back[0].payload != frame.payload ||
        back[0].session != frame.session || back[0].type != frame.type) {
      std::abort();
    }
  }
  return 0;
}
