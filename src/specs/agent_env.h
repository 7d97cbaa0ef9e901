// A profile's agent settings (`agent_env:` in a manifest, docs/specs.md): the variables common agents
// read to find the inference endpoint and its key, so that an agent inside needs no setup of its own.
// The URL-valued ones are values tnk derives (set by the command line, audited like the TNK_* ones); the
// token-valued ones are set by the supervisor to the sandbox's per-start token, which is never audited.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::specs {

enum class AgentApi { kOpenai, kAnthropic, kOllama };
inline constexpr const char* kAgentApiNames = "openai, anthropic, ollama";
std::optional<AgentApi> parse_agent_api(std::string_view name);
std::string to_string(AgentApi api);

struct AgentSettings {
  std::map<std::string, std::string> url_env;  // OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST
  std::vector<std::string> token_env;          // OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN
};

// What `apis` set, for an endpoint the sandbox reaches at `guest_url` (the OpenAI-style URL, ".../v1"):
// openai gets that URL; anthropic and ollama the endpoint's root (the URL without its "/v1"), to which
// their clients add "/v1/messages" and "/api/chat" themselves.
AgentSettings agent_settings(const std::vector<AgentApi>& apis, std::string_view guest_url);

}  // namespace tnk::specs
