#include "supervisor/net_audit.h"

#include <cstdio>

#include "audit/events.h"
#include "core/json_fields.h"
#include "supervisor/route_gateway.h"
#include "supervisor/ssh_agent_relay.h"

namespace tnk::supervisor {

NetAudit::Log& NetAudit::open(const std::filesystem::path& path) {
  Log& log = logs_[path];
  if (!log.writer && log.users == 0) {
    auto writer = audit::AuditWriter::open(path);
    if (writer) {
      log.writer = std::make_unique<audit::AuditWriter>(std::move(*writer));
    } else {
      std::fprintf(stderr, "tnk-supervisor: audit log: %s\n", writer.error().message.c_str());
    }
  }
  return log;
}

void NetAudit::add_log(const std::filesystem::path& path) {
  if (path.empty()) return;
  ++open(path).users;
}

void NetAudit::release_log(const std::filesystem::path& path) {
  auto it = logs_.find(path);
  if (it == logs_.end()) return;
  if (--it->second.users <= 0 && path != config_.audit_log) logs_.erase(it);
}

namespace {

// The policy name of a relay's event line; a value of another type reads as absent (json::value()
// would throw, and nothing above this catches).
std::string policy_of(const nlohmann::json& line) {
  auto policy = JsonFields(line, "a network event").optional_string("policy");
  return policy ? *policy : std::string();
}

// A relay line as its audit record: the route gateway's say "event": "route_request", the SSH agent's
// "ssh_sign", the others are
// net/net_event.h's.
nlohmann::json record_of(const std::string& id, const nlohmann::json& line) {
  auto kind = JsonFields(line, "a network event").optional_string("event");
  if (kind && *kind == "route_request") {
    RouteEvent e = route_event_from_json(line);
    audit::RouteRecord record{e.route,  e.method, e.path,     e.upstream,   policy_of(line), e.allowed,
                              e.status, e.reason, e.bytes_up, e.bytes_down, e.latency_ms};
    return audit::route_request(id, record);
  }
  if (kind && *kind == "ssh_sign") {
    SshSignEvent e = ssh_sign_event_from_json(line);
    return audit::ssh_sign(id, {e.host, e.host_key, e.identity, policy_of(line), e.allowed, e.reason});
  }
  net::NetEvent event = net::net_event_from_json(line);
  audit::NetRecord record{event.host, event.address, event.port,     policy_of(line),
                          event.rule, event.reason,  event.bytes_up, event.bytes_down};
  if (event.inference) return audit::inference_request(id, record, net::to_json(*event.inference));
  return event.allowed ? audit::net_allow(id, record) : audit::net_deny(id, record);
}

}  // namespace

void NetAudit::record(const nlohmann::json& line) { write(record_of(config_.id, line)); }

void NetAudit::write(const nlohmann::json& json) {
  if (!config_.audit_log.empty()) open(config_.audit_log);  // the sandbox's own log, kept open while it runs
  for (auto& [path, log] : logs_) {
    if (!log.writer) continue;
    Status appended = log.writer->append(json);
    if (!appended.ok()) std::fprintf(stderr, "tnk-supervisor: audit log: %s\n", appended.error().message.c_str());
  }
}

}  // namespace tnk::supervisor
