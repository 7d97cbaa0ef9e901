#include "net/net_event.h"

#include <cstdint>

namespace tnk::net {
namespace {

constexpr size_t kMaxTextField = 600;      // 3 such fields and the rest stay well under PIPE_BUF (4096)
constexpr size_t kMaxExchangeField = 200;  // ... with the 4 text fields of an inference exchange

// At most kMaxTextField bytes, cut before a UTF-8 sequence rather than inside it (a split sequence is
// invalid UTF-8, which JSON cannot carry).
std::string cut(const std::string& text, size_t max = kMaxTextField) {
  if (text.size() <= max) return text;
  size_t end = max;
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

std::optional<uint64_t> optional_count(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::optional<double> optional_number(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

nlohmann::json to_json(const InferenceExchange& x) {
  nlohmann::json json = {{"method", cut(x.method, kMaxExchangeField)},
                         {"path", cut(x.path, kMaxExchangeField)},
                         {"status", x.status},
                         {"model_requested", cut(x.model_requested, kMaxExchangeField)},
                         {"model_served", cut(x.model_served, kMaxExchangeField)},
                         {"stream", x.stream},
                         {"latency_ms", x.latency_ms}};
  if (x.ttfb_ms) json["ttfb_ms"] = *x.ttfb_ms;
  if (x.prompt_tokens) json["prompt_tokens"] = *x.prompt_tokens;
  if (x.completion_tokens) json["completion_tokens"] = *x.completion_tokens;
  return json;
}

namespace {

InferenceExchange exchange_from_json(const nlohmann::json& json) {
  InferenceExchange x;
  x.method = text(json, "method");
  x.path = text(json, "path");
  x.status = static_cast<int>(count(json, "status", 999));
  x.model_requested = text(json, "model_requested");
  x.model_served = text(json, "model_served");
  x.stream = flag(json, "stream");
  x.latency_ms = optional_number(json, "latency_ms").value_or(0);
  x.ttfb_ms = optional_number(json, "ttfb_ms");
  x.prompt_tokens = optional_count(json, "prompt_tokens");
  x.completion_tokens = optional_count(json, "completion_tokens");
  return x;
}

}  // namespace

nlohmann::json to_json(const NetEvent& event) {
  nlohmann::json json = {{"allowed", event.allowed},   {"host", cut(event.host)},       {"address", event.address},
                         {"port", event.port},         {"rule", cut(event.rule)},       {"reason", cut(event.reason)},
                         {"bytes_up", event.bytes_up}, {"bytes_down", event.bytes_down}};
  if (event.inference) json["inference"] = to_json(*event.inference);
  return json;
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
  auto inference = json.find("inference");
  if (inference != json.end() && inference->is_object()) event.inference = exchange_from_json(*inference);
  return event;
}

}  // namespace tnk::net
