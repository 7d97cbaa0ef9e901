// A profile's agent settings: the manifest's `agent_env` and `min_context_window` keys, and which
// variables each agent API sets (specs/agent_env.h).
#include <gtest/gtest.h>

#include "inference/url.h"
#include "specs/agent_env.h"
#include "specs/manifest.h"
#include "specs_test_util.h"

namespace tnk::specs {
namespace {
using testing_specs::parse;

constexpr const char* kGuestUrl = "http://host.lima.internal:8080/v1";

TEST(SpecsAgentEnv, OpenAiGetsTheV1UrlAndItsKeyVariable) {
  AgentSettings s = agent_settings({AgentApi::kOpenai}, kGuestUrl);
  EXPECT_EQ(s.url_env, (std::map<std::string, std::string>{{"OPENAI_BASE_URL", kGuestUrl}}));
  EXPECT_EQ(s.token_env, std::vector<std::string>{"OPENAI_API_KEY"});
}

TEST(SpecsAgentEnv, AnthropicAndOllamaGetTheEndpointRoot) {
  AgentSettings s = agent_settings({AgentApi::kAnthropic, AgentApi::kOllama}, kGuestUrl);
  EXPECT_EQ(s.url_env, (std::map<std::string, std::string>{{"ANTHROPIC_BASE_URL", "http://host.lima.internal:8080"},
                                                           {"OLLAMA_HOST", "http://host.lima.internal:8080"}}));
  EXPECT_EQ(s.token_env, std::vector<std::string>{"ANTHROPIC_AUTH_TOKEN"});  // Ollama's clients send no key
}

TEST(SpecsAgentEnv, NoApisSetNothing) {
  AgentSettings s = agent_settings({}, kGuestUrl);
  EXPECT_TRUE(s.url_env.empty());
  EXPECT_TRUE(s.token_env.empty());
}

TEST(SpecsAgentEnv, EndpointRootDropsOnlyATrailingV1) {
  using inference::endpoint_root;
  EXPECT_EQ(endpoint_root("http://h:1/v1"), "http://h:1");
  EXPECT_EQ(endpoint_root("http://h:1/v1/"), "http://h:1");
  EXPECT_EQ(endpoint_root("https://h:443/api/v1"), "https://h:443/api");
  EXPECT_EQ(endpoint_root("http://h:11434"), "http://h:11434");
  EXPECT_EQ(endpoint_root("http://h:1/v10"), "http://h:1/v10");
}

TEST(SpecsAgentEnv, NamesRoundTrip) {
  for (AgentApi api : {AgentApi::kOpenai, AgentApi::kAnthropic, AgentApi::kOllama}) {
    EXPECT_EQ(parse_agent_api(to_string(api)), api);
  }
  EXPECT_FALSE(parse_agent_api("OpenAI"));
  EXPECT_FALSE(parse_agent_api(""));
}

TEST(SpecsManifestFields, AgentEnvListsKnownApisOnce) {
  Manifest m = *parse("agent_env: [openai, anthropic, openai]\n");
  EXPECT_EQ(m.agent_env, (std::vector<AgentApi>{AgentApi::kOpenai, AgentApi::kAnthropic}));
  EXPECT_TRUE(parse("profile: x\n")->agent_env.empty());
  Result<Manifest> r = parse("agent_env: [openai, gemini]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:1:21: agent_env: unknown agent API 'gemini'");
  EXPECT_EQ(r.error().hint, "use any of: openai, anthropic, ollama");
  r = parse("agent_env: openai\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/x/m.yaml:1:12: agent_env: must be a list");
  EXPECT_EQ(r.error().hint, "write a list, for example `agent_env: [openai, anthropic]`");
}

TEST(SpecsManifestFields, MinContextWindowIsAPositiveWholeNumber) {
  EXPECT_EQ(parse("min_context_window: 32768\n")->min_context_window, 32768u);
  EXPECT_FALSE(parse("profile: x\n")->min_context_window);
  for (const char* bad : {"min_context_window: 0\n", "min_context_window: lots\n", "min_context_window: -5\n",
                          "min_context_window: [1]\n", "min_context_window: 1234567890\n"}) {
    Result<Manifest> r = parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("/x/m.yaml:1:21: min_context_window: must be a whole number of tokens"),
              std::string::npos)
        << r.error().message;
    EXPECT_EQ(r.error().hint, "for example `min_context_window: 32768` (tokens)");
  }
}

}  // namespace
}  // namespace tnk::specs
