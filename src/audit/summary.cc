#include "audit/summary.h"

#include <algorithm>
#include <cmath>

namespace tnk::audit {
namespace {

using nlohmann::json;

// A log may have been edited: a field of the wrong type counts as unknown, never as an error.
std::string text_field(const json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<double> number_field(const json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number()) return std::nullopt;
  double value = it->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

std::optional<uint64_t> count_field(const json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  int64_t value = it->get<int64_t>();
  return value >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(value)) : std::nullopt;
}

void count(RequestStats& stats, const json& record) {
  ++stats.requests;
  std::optional<uint64_t> status = count_field(record, "status");
  if (!status || *status == 0 || *status >= 400) ++stats.errors;
  std::optional<uint64_t> prompt = count_field(record, "prompt_tokens");
  std::optional<uint64_t> completion = count_field(record, "completion_tokens");
  stats.prompt_tokens += prompt.value_or(0);
  stats.completion_tokens += completion.value_or(0);
  if (!prompt || !completion) ++stats.without_tokens;
  if (auto latency = number_field(record, "latency_ms")) stats.latency_ms.push_back(*latency);
  if (status && *status != 0) {
    if (auto ttfb = number_field(record, "ttfb_ms")) stats.ttfb_ms.push_back(*ttfb);
  }
}

json figure(std::optional<double> value) { return value ? json(*value) : json(nullptr); }

json timing(const std::vector<double>& values) {
  return {{"median", figure(median(values))}, {"p95", figure(p95(values))}};
}

}  // namespace

void SummaryBuilder::add(const json& record) {
  std::string event = text_field(record, "event");
  std::optional<uint64_t> seq = count_field(record, "seq");
  if (event.empty() || !seq) return;  // not an audit record
  ++summary_.records;
  std::string container_id = text_field(record, "container_id");
  if (event == "session_start") {
    SessionInfo session;
    session.start_seq = *seq;
    auto ts = record.find("ts");
    if (ts != record.end() && ts->is_number_integer()) session.start_ts = ts->get<int64_t>();
    session.container_id = container_id;
    open_.push_back(summary_.sessions.size());
    summary_.sessions.push_back(std::move(session));
  } else if (event == "exec_invocation") {
    std::optional<size_t> open = open_session(container_id);
    auto argv = record.find("argv");
    if (open && summary_.sessions[*open].argv.empty() && argv != record.end() && argv->is_array()) {
      for (const auto& arg : *argv)
        summary_.sessions[*open].argv.push_back(arg.is_string() ? arg.get<std::string>() : "?");
    }
  } else if (event == "session_exit") {
    if (std::optional<size_t> open = open_session(container_id)) {
      summary_.sessions[*open].exit_seq = *seq;
      open_.erase(std::find(open_.begin(), open_.end(), *open));
    }
  } else if (event == "inference_request") {
    add_request(record);
  }
}

void SummaryBuilder::add_request(const json& record) {
  std::string served = text_field(record, "model_served");
  if (served.empty()) served = text_field(record, "model_requested");
  count(summary_.models[served], record);
  std::optional<size_t> session = open_session(text_field(record, "container_id"));
  count(session ? summary_.by_session[*session] : summary_.no_session, record);
  count(summary_.total, record);
}

std::optional<size_t> SummaryBuilder::open_session(const std::string& container_id) const {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (summary_.sessions[*it].container_id == container_id) return *it;
  }
  return std::nullopt;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::optional<double> p95(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t rank = (values.size() * 95 + 99) / 100;  // ceil(0.95 n), at least 1
  return values[rank - 1];
}

json to_json(const RequestStats& stats) {
  return {{"requests", stats.requests},
          {"errors", stats.errors},
          {"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.completion_tokens},
          {"without_tokens", stats.without_tokens},
          {"latency_ms", timing(stats.latency_ms)},
          {"ttfb_ms", timing(stats.ttfb_ms)}};
}

json to_json(const SessionInfo& session) {
  return {{"start_seq", session.start_seq},
          {"start_ts", session.start_ts},
          {"container_id", session.container_id},
          {"argv", session.argv},
          {"exit_seq", session.exit_seq ? json(*session.exit_seq) : json(nullptr)}};
}

json to_json(const Summary& summary) {
  json models = json::array();
  for (const auto& [model, stats] : summary.models) {
    json row = to_json(stats);
    row["model"] = model;
    models.push_back(std::move(row));
  }
  json sessions = json::array();
  for (const auto& [index, stats] : summary.by_session) {
    json row = to_json(stats);
    row["session"] = to_json(summary.sessions[index]);
    sessions.push_back(std::move(row));
  }
  if (summary.no_session.requests > 0) {
    json row = to_json(summary.no_session);
    row["session"] = nullptr;
    sessions.push_back(std::move(row));
  }
  return {{"records", summary.records}, {"models", models}, {"sessions", sessions}, {"total", to_json(summary.total)}};
}

}  // namespace tnk::audit
