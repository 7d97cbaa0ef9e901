// One network decision of a sandbox's relays (the egress proxy, the inference forwarder, a port
// forward): what was asked, what was connected, by which rule, and how much passed. The supervisor
// turns each into a net_allow or net_deny audit record (docs/audit-format.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tnk::net {

// One request through the inference gateway: the NetEvent it belongs to is an inference_request record
// rather than a net_allow (docs/audit-format.md). Never the prompt or the answer.
struct InferenceExchange {
  std::string method;
  std::string path;  // without the query
  int status = 0;    // the endpoint's answer, or the gateway's own (401, 413, 429, 502); 0: none
  std::string model_requested;
  std::string model_served;
  bool stream = false;
  double latency_ms = 0;          // head received -> answer ended
  std::optional<double> ttfb_ms;  // head received -> first answer byte
  std::optional<uint64_t> prompt_tokens;
  std::optional<uint64_t> completion_tokens;
};

// Refusals are reported at once (allowed=false, bytes 0); an allowed connection is reported when it
// ends, with `reason` saying how: "closed", "idle timeout", "stopped", "error: ..." or why the
// destination could not be reached ("cannot resolve ...", "... timed out").
struct NetEvent {
  bool allowed = false;
  std::string host;     // the name asked for; empty when the request could not be parsed
  std::string address;  // the address connected to, or the refused one; empty when none
  uint16_t port = 0;
  std::string rule;         // what allowed it: an allow-list entry, "open", "inference endpoint", ...
  std::string reason;       // for refusals: "not in allow-list", "host-internal address (loopback)", ...
  uint64_t bytes_up = 0;    // delivered to the destination
  uint64_t bytes_down = 0;  // delivered to the sandbox side
  std::optional<InferenceExchange> inference;
};

// The reasons of the refusals an allow rule would lift (the proxy's, under the allowlist policy): the
// supervisor keeps these as requests pending the host user's approval (net/pending_requests.h).
inline constexpr const char* kNotInAllowList = "not in allow-list";
inline constexpr const char* kPortNotInAllowList = "port not in allow-list";

// Calls are serialized by whoever reports (connection threads take a lock).
using NetEventSink = std::function<void(const NetEvent&)>;

// One JSON object, for the line a relay process sends to its supervisor. `reason` and `host` are cut
// to a length that keeps the line under PIPE_BUF, so that each line is one atomic write.
nlohmann::json to_json(const NetEvent& event);
// The exchange's fields as an inference_request record carries them (text fields cut shorter).
nlohmann::json to_json(const InferenceExchange& exchange);
// `text` cut as to_json cuts a NetEvent's text fields (at most 600 bytes, before a UTF-8 sequence rather
// than inside it), for other relays' event lines.
std::string cut_event_text(const std::string& text);
NetEvent net_event_from_json(const nlohmann::json& json);

}  // namespace tnk::net
