// What an audit log says about inference: its `inference_request` records counted per model, per
// session and in total (`tnk audit summary`, docs/audit-format.md). Pure: records in, summary out;
// reading the file and checking its chain is the caller's (verify_log hands the records over).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tnk::audit {

// The figures of one group of requests.
struct RequestStats {
  size_t requests = 0;
  size_t errors = 0;               // status 0 (no answer) or >= 400 (the endpoint's or the gateway's refusal)
  uint64_t prompt_tokens = 0;      // the sum of the known counts
  uint64_t completion_tokens = 0;  // the sum of the known counts
  size_t without_tokens = 0;       // requests whose record lacks either count
  std::vector<double> latency_ms;  // every request's, in log order
  std::vector<double> ttfb_ms;     // requests that got an answer (status != 0)
};

// A session_start record and what followed it in the same log.
struct SessionInfo {
  uint64_t start_seq = 0;
  int64_t start_ts = 0;
  std::string container_id;
  std::vector<std::string> argv;     // of its exec_invocation; empty when the log has none
  std::optional<uint64_t> exit_seq;  // its session_exit; none while it was still open at the end
};

struct Summary {
  size_t records = 0;  // audit records seen (JSON objects with a string "event" and an integer "seq")
  std::map<std::string, RequestStats> models;  // by model_served ("" when neither model was known)
  std::vector<SessionInfo> sessions;           // every session, in the order they started
  std::map<size_t, RequestStats> by_session;   // index into `sessions` -> its requests (only sessions with some)
  RequestStats no_session;                     // requests outside every session
  RequestStats total;
};

// Feeds records in log order. A request belongs to the latest started session of its sandbox that is
// still open; the log cannot tell which of two overlapping sessions of one sandbox a session_exit
// ends, so it ends the latest started one.
class SummaryBuilder {
 public:
  void add(const nlohmann::json& record);
  const Summary& summary() const { return summary_; }

 private:
  void add_request(const nlohmann::json& record);
  std::optional<size_t> open_session(const std::string& container_id) const;

  Summary summary_;
  std::vector<size_t> open_;  // indexes into summary_.sessions, in the order they started
};

// Median (mean of the two middle values for an even count) and p95 (nearest rank: the
// ceil(0.95 n)-th smallest) of `values`; none when empty.
std::optional<double> median(std::vector<double> values);
std::optional<double> p95(std::vector<double> values);

// {"requests", "errors", "prompt_tokens", "completion_tokens", "without_tokens",
//  "latency_ms": {"median", "p95"}, "ttfb_ms": {"median", "p95"}} (null when there is no value)
nlohmann::json to_json(const RequestStats& stats);
// {"models": [{"model", ...stats}], "sessions": [{"session": {...} or null, ...stats}], "total": {...stats},
//  "records": N} (docs/json-output.md, `tnk audit summary`)
nlohmann::json to_json(const Summary& summary);
nlohmann::json to_json(const SessionInfo& session);

}  // namespace tnk::audit
