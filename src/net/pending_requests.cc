#include "net/pending_requests.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "net/domain_match.h"
#include "net/http_request.h"
#include "net/live_policy.h"

namespace tnk::net {
namespace {

// The rule that would let host:port through, when the event is a refusal such a rule lifts and its host
// makes one.
std::optional<std::string> approvable_entry(const NetEvent& event) {
  if (event.allowed || (event.reason != kNotInAllowList && event.reason != kPortNotInAllowList)) return std::nullopt;
  if (event.host.empty() || event.port == 0) return std::nullopt;
  auto entry = parse_rule_entry(host_port_text(event.host, event.port));
  if (!entry) return std::nullopt;
  return *entry;
}

}  // namespace

bool awaits_approval(const NetEvent& event) { return approvable_entry(event).has_value(); }

bool PendingRequests::note(const NetEvent& event, int64_t now_ms) {
  std::optional<std::string> approvable = approvable_entry(event);
  if (!approvable) return false;
  const std::string& entry = *approvable;
  auto same = std::ranges::find(entries_, entry, &PendingRequest::entry);
  if (same != entries_.end()) {
    ++same->count;
    same->last_ms = now_ms;
    same->reason = event.reason;
    return true;
  }
  if (entries_.size() >= capacity_) {
    entries_.erase(std::ranges::min_element(entries_, {}, &PendingRequest::last_ms));
  }
  std::string host = ascii_lower(event.host);
  entries_.push_back({new_id(), host, event.port, entry, event.reason, 1, now_ms, now_ms});
  return true;
}

void PendingRequests::drop_decided(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  std::erase_if(entries_, [&](const PendingRequest& r) {
    return domain_allowed(allow, r.host, r.port, nullptr) || domain_denied(deny, r.host, r.port, nullptr);
  });
}

const PendingRequest* PendingRequests::find(std::string_view id) const {
  auto it = std::ranges::find(entries_, id, &PendingRequest::id);
  return it == entries_.end() ? nullptr : &*it;
}

std::string PendingRequests::new_id() {
  for (;;) {
    char id[9];
    std::snprintf(id, sizeof id, "%08x", static_cast<unsigned>(random_() & 0xffffffffu));
    if (find(id) == nullptr) return id;
  }
}

nlohmann::json to_json(const PendingRequest& request) {
  return {{"id", request.id},
          {"host", request.host},
          {"port", request.port},
          {"entry", request.entry},
          {"reason", request.reason},
          {"count", request.count},
          {"first_seen", utc_text(request.first_ms)},
          {"first_seen_ms", request.first_ms},
          {"last_seen", utc_text(request.last_ms)},
          {"last_seen_ms", request.last_ms}};
}

nlohmann::json to_json(const std::vector<PendingRequest>& requests) {
  nlohmann::json out = nlohmann::json::array();
  for (const PendingRequest& request : requests) out.push_back(to_json(request));
  return out;
}

}  // namespace tnk::net
