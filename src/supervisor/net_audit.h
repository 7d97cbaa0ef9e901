// Where a sandbox's network decisions are written: the sandbox's own audit log (the one named when it
// started, if any) and the logs of the sessions that run at the time, each record once per log.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "audit/writer.h"
#include "net/net_event.h"
#include "supervisor/config.h"

namespace tnk::supervisor {

class NetAudit {
 public:
  explicit NetAudit(const SupervisorConfig& config) : config_(config) {}

  // A session's log gets the records while the session runs (counted: several sessions may share one).
  void add_log(const std::filesystem::path& path);
  void release_log(const std::filesystem::path& path);

  // One relay line (net/net_event.h JSON plus "policy") -> a net_allow or net_deny record in every log.
  void record(const nlohmann::json& line);
  // A record of the supervisor's own (policy_change) in every log.
  void write(const nlohmann::json& record);

 private:
  struct Log {
    std::unique_ptr<audit::AuditWriter> writer;  // null when the log could not be opened
    int users = 0;
  };
  Log& open(const std::filesystem::path& path);

  const SupervisorConfig& config_;
  std::map<std::filesystem::path, Log> logs_;
};

}  // namespace tnk::supervisor
