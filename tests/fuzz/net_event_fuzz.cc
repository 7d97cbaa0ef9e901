// libFuzzer target for the lines a sandbox's relays (egress proxy, forwarders) send their supervisor
// (src/supervisor/network.cc reads them): each input line that is a JSON object goes to
// net_event_from_json, and what it returns must encode to a line that decodes to the same event.
// Build and run: scripts/fuzz.sh SECONDS net_event (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/net_event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    auto line = nlohmann::json::parse(input.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!line.is_object()) continue;  // what the supervisor skips
    tnk::net::NetEvent event = tnk::net::net_event_from_json(line);
    tnk::net::NetEvent back = tnk::net::net_event_from_json(tnk::net::to_json(event));
    if (back.allowed != event.allowed || back.port != event.port || back.address != event.address ||
        back.bytes_up != event.bytes_up || back.bytes_down != event.bytes_down) {
      std::abort();
    }
  }
  return 0;
}
