#include "agent/bridge.h"

#include <arpa/inet.h>

#include <charconv>

#include "core/terminal_text.h"

namespace tnk::agent {
namespace {

constexpr std::string_view kRequestWord = "tnk-connect ";
constexpr std::string_view kErrorWord = "error ";

// A decimal number in [min, max] that is the whole of `text`.
bool parse_number(std::string_view text, long min, long max, long* out) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) return false;
  *out = value;
  return true;
}

}  // namespace

std::string bridge_request(const BridgeTarget& target) {
  return std::string(kRequestWord) + target.ip + " " + std::to_string(target.port) + "\n";
}

Result<BridgeTarget> parse_bridge_request(std::string_view line) {
  Error bad = failed("bad bridge request '" + std::string(line.substr(0, kBridgeMaxLine)) + "'",
                     "expected: tnk-connect <IPv4 address> <port>");
  if (!line.starts_with(kRequestWord)) return bad;
  line.remove_prefix(kRequestWord.size());
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return bad;
  BridgeTarget target{std::string(line.substr(0, space)), 0};
  in_addr addr{};
  long port = 0;
  // inet_pton reads up to a NUL: an address followed by "\0junk" would pass and carry the junk along.
  if (target.ip.find('\0') != std::string::npos || ::inet_pton(AF_INET, target.ip.c_str(), &addr) != 1 ||
      !parse_number(line.substr(space + 1), 1, 65535, &port)) {
    return bad;
  }
  target.port = static_cast<uint16_t>(port);
  return target;
}

std::string bridge_reply(int sys_errno, std::string_view message) {
  if (sys_errno == 0) return "ok\n";
  std::string text(message.substr(0, kBridgeMaxLine - 24));
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return std::string(kErrorWord) + std::to_string(sys_errno) + " " + text + "\n";
}

Status parse_bridge_reply(std::string_view line) {
  if (line == "ok") return ok_status();
  if (line.starts_with(kErrorWord)) {
    line.remove_prefix(kErrorWord.size());
    size_t space = line.find(' ');
    long err = 0;
    if (space != std::string_view::npos && parse_number(line.substr(0, space), 1, 4095, &err)) {
      return sys_error(static_cast<int>(err), terminal_safe(line.substr(space + 1)));
    }
  }
  return failed("the guest's connect bridge answered '" + terminal_safe(line.substr(0, kBridgeMaxLine)) + "'");
}

}  // namespace tnk::agent
