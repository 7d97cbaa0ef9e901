#include "net/net_event.h"

#include <cstdint>

namespace tnk::net {
namespace {

constexpr size_t kMaxTextField = 600;  // 3 such fields and the rest stay well under PIPE_BUF (4096)

// At most kMaxTextField bytes, cut before a UTF-8 sequence rather than inside it (a split sequence is
// invalid UTF-8, which JSON cannot carry).
std::string cut_text(const std::string& text) {
  if (text.size() <= kMaxTextField) return text;
  size_t end = kMaxTextField;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return text.substr(0, end);
}

// Typed reads: a field of another type (or out of range) is as if absent. json::value() would throw,
// and the supervisor that reads these lines catches nothing (found by tests/fuzz/net_event).
bool flag(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_boolean() && it->get<bool>();
}

std::string text(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

uint64_t count(const nlohmann::json& json, const char* key, uint64_t max) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max) return 0;
  return it->get<uint64_t>();
}

}  // namespace

std::string cut_event_text(const std::string& text) { return cut_text(text); }

nlohmann::json to_json(const NetEvent& event) {
  return {{"allowed", event.allowed},   {"host", cut_text(event.host)},  {"address", event.address},
          {"port", event.port},         {"rule", cut_text(event.rule)},  {"reason", cut_text(event.reason)},
          {"bytes_up", event.bytes_up}, {"bytes_down", event.bytes_down}};
}

NetEvent net_event_from_json(const nlohmann::json& json) {
  NetEvent event;
  event.allowed = flag(json, "allowed");
  event.host = text(json, "host");
  event.address = text(json, "address");
  event.port = static_cast<uint16_t>(count(json, "port", UINT16_MAX));
  event.rule = text(json, "rule");
  event.reason = text(json, "reason");
  event.bytes_up = count(json, "bytes_up", UINT64_MAX);
  event.bytes_down = count(json, "bytes_down", UINT64_MAX);
  return event;
}

}  // namespace tnk::net
