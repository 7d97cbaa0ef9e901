#include "sandbox/started_with.h"

#include <nlohmann/json.hpp>

#include "core/files.h"

namespace tnk::sandbox {

Status save_started_with(const state::Store& store, const std::string& id, const StartedWith& started) {
  const inference::RuntimeModel& m = started.model;
  nlohmann::json doc = {{"started_at", started.started_at},
                        {"inference_url", started.inference_url},
                        {"model",
                         {{"name", m.model_name},
                          {"source", m.source},
                          {"context_window", m.context_window},
                          {"context_source", m.context_source},
                          {"note", m.note}}}};
  return write_file_atomic(store.file(id, kStartedWithFile), doc.dump(2) + "\n");
}

std::optional<StartedWith> load_started_with(const state::Store& store, const std::string& id, int64_t started_at) {
  auto text = read_file(store.file(id, kStartedWithFile));
  if (!text) return std::nullopt;
  // Written by tnk itself: anything unexpected means "ask the endpoint", as before this file existed.
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  try {
    StartedWith s;
    s.started_at = doc.at("started_at").get<int64_t>();
    if (s.started_at != started_at) return std::nullopt;
    s.inference_url = doc.at("inference_url").get<std::string>();
    const auto& m = doc.at("model");
    s.model.model_name = m.at("name").get<std::string>();
    s.model.source = m.at("source").get<std::string>();
    s.model.context_window = m.at("context_window").get<uint64_t>();
    s.model.context_source = m.at("context_source").get<std::string>();
    s.model.note = m.at("note").get<std::string>();
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace tnk::sandbox
