#include "inference/runtime_model.h"

namespace tnk::inference {
namespace {

std::string trimmed(const std::string& s) {
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// Why the server's model was not used, for the note.
std::string why_not_server(const ModelInfo& probe) {
  if (!probe.problem.empty()) return probe.problem;
  return "inference endpoint " + (probe.base_url.empty() ? std::string("(none)") : probe.base_url) +
         " reported no model";
}

}  // namespace

RuntimeModel resolve_runtime_model(const ModelInfo& probe, std::optional<std::string> configured_model,
                                   std::optional<uint64_t> configured_ctx) {
  RuntimeModel out;
  std::string note;
  std::string config_model = configured_model ? trimmed(*configured_model) : "";
  if (probe.reachable && probe.model_id && !probe.model_id->empty()) {
    out.model_name = *probe.model_id;
    out.source = "server";
  } else if (!config_model.empty()) {
    out.model_name = config_model;
    out.source = "config";
    note = why_not_server(probe) + "; using model '" + config_model + "' from config";
  } else {
    out.model_name = kFallbackModelName;
    out.source = "default";
    note = why_not_server(probe) + "; no model_name configured, using model '" + out.model_name + "'";
  }

  if (probe.reachable && probe.context_window && *probe.context_window > 0) {
    out.context_window = *probe.context_window;
    out.context_source = "server";
  } else if (configured_ctx && *configured_ctx > 0) {
    out.context_window = *configured_ctx;
    out.context_source = "config";
  } else {
    out.context_window = kFallbackContextWindow;
    out.context_source = "default";
    std::string part = "context window unknown (the server reported none and none is configured), assuming " +
                       std::to_string(kFallbackContextWindow) + " tokens";
    note = note.empty() ? part : note + "; " + part;
  }
  out.note = std::move(note);
  return out;
}

}  // namespace tnk::inference
