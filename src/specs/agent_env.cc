#include "specs/agent_env.h"

#include "inference/url.h"

namespace tnk::specs {
namespace {

struct ApiVariables {
  AgentApi api;
  std::string_view name;
  std::string_view url_var;    // set to the endpoint
  bool root;                   // the endpoint's root rather than its /v1 URL
  std::string_view token_var;  // set to the token; empty: the API has no key variable
};

// Which variables each client reads. OpenAI's SDKs (Python, Node) and the agents built on them read
// OPENAI_BASE_URL and OPENAI_API_KEY. Anthropic's SDKs and Claude Code read ANTHROPIC_BASE_URL, and
// send ANTHROPIC_AUTH_TOKEN as `Authorization: Bearer`, the header OpenAI's clients send their key in
// (ANTHROPIC_API_KEY would go as x-api-key instead). Ollama's clients read OLLAMA_HOST and send no key.
constexpr ApiVariables kApis[] = {
    {AgentApi::kOpenai, "openai", "OPENAI_BASE_URL", false, "OPENAI_API_KEY"},
    {AgentApi::kAnthropic, "anthropic", "ANTHROPIC_BASE_URL", true, "ANTHROPIC_AUTH_TOKEN"},
    {AgentApi::kOllama, "ollama", "OLLAMA_HOST", true, ""},
};

const ApiVariables& variables(AgentApi api) {
  for (const auto& v : kApis) {
    if (v.api == api) return v;
  }
  return kApis[0];
}

}  // namespace

std::optional<AgentApi> parse_agent_api(std::string_view name) {
  for (const auto& v : kApis) {
    if (v.name == name) return v.api;
  }
  return std::nullopt;
}

std::string to_string(AgentApi api) { return std::string(variables(api).name); }

AgentSettings agent_settings(const std::vector<AgentApi>& apis, std::string_view guest_url) {
  AgentSettings settings;
  for (AgentApi api : apis) {
    const ApiVariables& v = variables(api);
    settings.url_env[std::string(v.url_var)] = v.root ? inference::endpoint_root(guest_url) : std::string(guest_url);
    if (!v.token_var.empty()) settings.token_env.emplace_back(v.token_var);
  }
  return settings;
}

}  // namespace tnk::specs
