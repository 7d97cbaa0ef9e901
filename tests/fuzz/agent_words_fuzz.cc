// libFuzzer target for the agent's small text parsers: the tnk.* words of the kernel command line
// (parse_boot_params, parse_ipv4_prefix), and the connect bridge's request and reply lines (the reply
// comes from the guest). What parses must print back to words that parse to the same values.
// Build and run: scripts/fuzz.sh SECONDS agent_words (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/boot_params.h"
#include "agent/bridge.h"

namespace {

using namespace tnk::agent;

void boot_words(std::string_view input) {
  auto params = parse_boot_params(input);
  if (!params.ok()) return;
  if (params->token.empty() || (!params->mount.empty() && params->mount[0] != '/')) std::abort();
  if (!params->ip.empty() && !parse_ipv4_prefix(params->ip).ok()) std::abort();
  (void)hosts_file(*params);
  auto again = parse_boot_params(boot_cmdline(*params));
  if (!again.ok() || again->token != params->token || again->port != params->port || again->mount != params->mount ||
      again->host != params->host || again->hostname != params->hostname || again->ip != params->ip) {
    std::abort();
  }
}

void bridge_words(std::string_view input) {
  auto target = parse_bridge_request(input);
  if (target.ok()) {
    // The bridge connects to what inet_pton read: the address must be all of target.ip.
    if (target->ip.find_first_not_of("0123456789.") != std::string::npos) std::abort();
    std::string line = bridge_request(*target);
    if (line.size() > kBridgeMaxLine || line.back() != '\n') std::abort();
    auto back = parse_bridge_request(std::string_view(line).substr(0, line.size() - 1));
    if (!back.ok() || back->port != target->port || back->port == 0) std::abort();
  }
  auto reply = parse_bridge_reply(input);
  if (!reply.ok() && reply.error().sys_errno != 0) {
    // A guest's error goes back through bridge_reply as one line.
    std::string line = bridge_reply(reply.error().sys_errno, reply.error().message);
    if (line.size() > kBridgeMaxLine || line.find('\n') != line.size() - 1) std::abort();
    if (parse_bridge_reply(std::string_view(line).substr(0, line.size() - 1)).error().sys_errno !=
        reply.error().sys_errno) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  boot_words(input);
  if (parse_ipv4_prefix(input).ok() && input.find('\0') != std::string_view::npos) std::abort();
  bridge_words(input);
  return 0;
}
