// libFuzzer target for the agent protocol: the frame decoder fed the input in chunks whose sizes the
// input itself chooses, and every message parser on every decoded payload (and on the raw input).
// Build and run: scripts/fuzz.sh SECONDS agent_frame (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agent/frame.h"
#include "agent/messages.h"

namespace {

using namespace tnk::agent;

void parse_all(std::string_view payload) {
  (void)parse_hello(payload);
  (void)parse_hello_ok(payload);
  (void)parse_started(payload);
  (void)parse_resize(payload);
  (void)parse_signal(payload);
  (void)parse_error(payload);
  (void)parse_ack(payload);
  (void)parse_file_put(payload);
  auto exit = parse_exit(payload);
  if (exit.ok() && (exit->code < 0 || exit->code > 255 || exit->signal < 0 || exit->signal > 64)) std::abort();
  auto exec = parse_exec(payload);
  if (exec.ok()) {
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
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  parse_all(input);
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
    parse_all(frame.payload);
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
