#include "net/net_event.h"

namespace tnk::net {
namespace {

constexpr size_t kMaxTextField = 600;  // 3 such fields and the rest stay well under PIPE_BUF (4096)

std::string cut(const std::string& text) { return text.size() <= kMaxTextField ? text : text.substr(0, kMaxTextField); }

}  // namespace

nlohmann::json to_json(const NetEvent& event) {
  return {{"allowed", event.allowed},   {"host", cut(event.host)},       {"address", event.address},
          {"port", event.port},         {"rule", cut(event.rule)},       {"reason", cut(event.reason)},
          {"bytes_up", event.bytes_up}, {"bytes_down", event.bytes_down}};
}

NetEvent net_event_from_json(const nlohmann::json& json) {
  NetEvent event;
  event.allowed = json.value("allowed", false);
  event.host = json.value("host", "");
  event.address = json.value("address", "");
  event.port = json.value("port", uint16_t{0});
  event.rule = json.value("rule", "");
  event.reason = json.value("reason", "");
  event.bytes_up = json.value("bytes_up", uint64_t{0});
  event.bytes_down = json.value("bytes_down", uint64_t{0});
  return event;
}

}  // namespace tnk::net
