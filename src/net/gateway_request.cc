#include "net/gateway_request.h"

#include <nlohmann/json.hpp>

namespace tnk::net {
namespace {

std::string path_of(const RequestHead& head) { return head.path.substr(0, head.path.find('?')); }

// The token a credential header carries: "Bearer T" (any case of "bearer") or, for x-api-key, T.
std::string shown_token(const std::string& name, const std::string& value) {
  if (name == "x-api-key") return value;
  constexpr std::string_view kBearer = "bearer ";
  if (value.size() > kBearer.size() && ascii_lower(value.substr(0, kBearer.size())) == kBearer) {
    return value.substr(kBearer.size());
  }
  return value;
}

// Compares in time that depends only on the lengths: a wrong token says nothing about the right one.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Ollama streams unless asked not to; the OpenAI-style APIs only when asked.
bool streams(const RequestHead& head, const nlohmann::json& body) {
  bool ollama = path_of(head).starts_with("/api/");
  auto it = body.find("stream");
  if (it == body.end() || !it->is_boolean()) return ollama;
  return it->get<bool>();
}

}  // namespace

std::optional<GatewayRefusal> take_token(RequestHead& head, const GatewaySettings& settings) {
  bool shown = false;
  std::erase_if(head.headers, [&](const auto& header) {
    std::string name = ascii_lower(header.first);
    if (name != "authorization" && name != "x-api-key") return false;
    shown = shown || (!settings.token.empty() && same_secret(shown_token(name, header.second), settings.token));
    return true;
  });
  if (settings.api_key.empty() || shown) return std::nullopt;
  return GatewayRefusal{401,
                        head.method + " " + path_of(head) +
                            " without the sandbox's token: send `Authorization: Bearer $TNK_INFERENCE_TOKEN`",
                        "WWW-Authenticate: Bearer realm=\"tnk\"\r\n"};
}

OutgoingRequest outgoing_request(RequestHead head, std::string body, const GatewaySettings& settings) {
  OutgoingRequest out;
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object()) {
    out.stream = streams(head, json);
    auto model = json.find("model");
    if (model != json.end() && model->is_string()) {
      out.model_requested = out.model_sent = model->get<std::string>();
      auto alias = settings.aliases.find(out.model_requested);
      if (alias != settings.aliases.end()) {
        out.model_sent = alias->second;
        *model = alias->second;
        body = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
  }
  std::erase_if(head.headers, [](const auto& header) {
    std::string name = ascii_lower(header.first);
    return name == "content-length" || name == "transfer-encoding" || name == "expect" || name == "accept-encoding";
  });
  if (!settings.api_key.empty()) {
    bool anthropic = path_of(head) == "/v1/messages";
    head.headers.emplace_back(anthropic ? "x-api-key" : "Authorization",
                              anthropic ? settings.api_key : "Bearer " + settings.api_key);
  }
  if (!body.empty() || head.method == "POST") head.headers.emplace_back("Content-Length", std::to_string(body.size()));
  out.bytes = origin_form_head(head) + body;
  return out;
}

std::string models_with_aliases(std::string_view body, const std::map<std::string, std::string>& aliases) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (aliases.empty() || !json.is_object() || !json.contains("data") || !json["data"].is_array()) {
    return std::string(body);
  }
  for (const auto& [alias, model] : aliases) {
    json["data"].push_back({{"id", alias}, {"object", "model"}, {"owned_by", "tnk alias of " + model}});
  }
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tnk::net
