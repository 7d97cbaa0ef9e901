#include <gtest/gtest.h>

#include <chrono>

#include "inference/model_probe.h"
#include "inference/runtime_model.h"
#include "inference_test_server.h"

namespace tnk::inference {
namespace {

using testing::TestHttpServer;
using namespace std::chrono_literals;

const char* kLlamaCpp =
    R"({"object":"list","data":[{"id":"/models/qwen.gguf","object":"model","meta":{"n_ctx_train":40960}}]})";
const char* kVllm = R"({"data":[{"id":"llama3","max_model_len":8192}]})";

TEST(ModelNameFromId, LastPathComponent) {
  EXPECT_EQ(model_name_from_id("/models/qwen.gguf"), "qwen.gguf");
  EXPECT_EQ(model_name_from_id("C:\\models\\x.gguf"), "x.gguf");
  EXPECT_EQ(model_name_from_id("llama-default"), "llama-default");
  EXPECT_EQ(model_name_from_id("dir/"), "");
}

TEST(ParseModelsListing, LlamaCppUsesTrainingContextLast) {
  auto listing = parse_models_listing(kLlamaCpp);
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->model_id, "qwen.gguf");
  EXPECT_EQ(listing->context_window, 40960u);
}

TEST(ParseModelsListing, VllmMaxModelLen) {
  auto listing = parse_models_listing(kVllm);
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->model_id, "llama3");
  EXPECT_EQ(listing->context_window, 8192u);
}

// Bug 21: the original raised any context below 131072 to 131072. The server's value stands.
TEST(ParseModelsListing, Bug21NoArtificialFloor) {
  auto listing = parse_models_listing(R"({"data":[{"id":"m","context_length":4096}]})");
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->context_window, 4096u);
}

TEST(ParseModelsListing, KeyPrecedenceAndPlaces) {
  struct Case {
    const char* body;
    std::optional<uint64_t> want;
  };
  const Case cases[] = {
      {R"({"data":[{"id":"m","n_ctx":100,"context_window":200}]})", 200},
      {R"({"data":[{"id":"m","meta":{"n_ctx":300,"n_ctx_train":999}}]})", 300},
      {R"({"data":[{"id":"m","limits":{"input":50}}]})", 50},
      {R"({"data":[{"id":"m","capabilities":{"input_token_limit":"7000"}}]})", 7000},
      {R"({"data":[{"id":"m"}],"max_input_tokens":"  123 "})", 123},
      {R"({"data":[{"id":"m"},{"id":"n","context_length":64}]})", 64},
      {R"({"data":[{"id":"","context_length":1},{"id":"m","context_length":2}]})", 2},
      {R"({"data":[{"id":"m","context_length":0,"n_ctx":-5,"max_model_len":"abc","meta":{"n_ctx":1.5}}]})",
       std::nullopt},
      {R"({"data":[{"id":"m","context_length":8192.0}]})", 8192},
      {R"({"data":[{"id":"m","meta":"not an object"}]})", std::nullopt},
  };
  for (const auto& c : cases) {
    auto listing = parse_models_listing(c.body);
    ASSERT_TRUE(listing) << c.body;
    EXPECT_EQ(listing->context_window, c.want) << c.body;
  }
}

TEST(ParseModelsListing, FirstNonEmptyId) {
  auto listing = parse_models_listing(R"({"data":[{"id":""},{"object":"model"},{"id":7},{"id":"a/b"},{"id":"c"}]})");
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->model_id, "b");
  EXPECT_FALSE(parse_models_listing(R"({"data":[]})")->model_id);
}

TEST(ParseModelsListing, NotAJsonObject) {
  EXPECT_FALSE(parse_models_listing("<html>hi</html>"));
  EXPECT_FALSE(parse_models_listing("[1,2]"));
  EXPECT_FALSE(parse_models_listing(""));
}

TEST(ProbeModels, LlamaCppServer) {
  auto server = TestHttpServer::start(TestHttpServer::json_response(kLlamaCpp));
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1/"));
  EXPECT_TRUE(info.reachable);
  EXPECT_EQ(info.model_id, "qwen.gguf");
  EXPECT_EQ(info.context_window, 40960u);
  EXPECT_EQ(info.problem, "");
  EXPECT_EQ(server->last_request().rfind("GET /v1/models HTTP/1.1\r\n", 0), 0u);
}

TEST(ProbeModels, TheConfiguredKeyGoesAsABearerToken) {
  auto server = TestHttpServer::start(TestHttpServer::json_response(kLlamaCpp));
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1"), std::chrono::seconds(1), "sk-1");
  EXPECT_EQ(info.model_id, "qwen.gguf");
  EXPECT_NE(server->last_request().find("\r\nAuthorization: Bearer sk-1\r\n"), std::string::npos);
  auto keyless = TestHttpServer::start(TestHttpServer::json_response(kLlamaCpp));
  ASSERT_NE(keyless, nullptr);
  (void)probe_models(keyless->base("/v1"));
  EXPECT_EQ(keyless->last_request().find("Authorization"), std::string::npos);
}

TEST(ProbeModels, VllmLikeServerChunked) {
  std::string body = kVllm;
  std::string raw = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t off = 0; off < body.size(); off += 10) {
    std::string part = body.substr(off, 10);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", part.size());
    raw += std::string(size) + "\r\n" + part + "\r\n";
  }
  raw += "0\r\n\r\n";
  auto server = TestHttpServer::start(raw, TestHttpServer::Mode::kRespond, AF_INET, 7);
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1"));
  EXPECT_TRUE(info.reachable);
  EXPECT_EQ(info.model_id, "llama3");
  EXPECT_EQ(info.context_window, 8192u);
}

TEST(ProbeModels, ServerErrorIsReachableWithProblem) {
  auto server = TestHttpServer::start(TestHttpServer::json_response(R"({"error":"loading"})", 500));
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1"));
  EXPECT_TRUE(info.reachable);
  EXPECT_FALSE(info.model_id);
  EXPECT_EQ(info.problem, "inference endpoint " + server->base("/v1") + " answered GET /models with HTTP 500");
}

TEST(ProbeModels, NonJsonIsReachableWithProblem) {
  auto server = TestHttpServer::start("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hello</html>");
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1"));
  EXPECT_TRUE(info.reachable);
  EXPECT_FALSE(info.model_id);
  EXPECT_EQ(info.problem, "inference endpoint " + server->base("/v1") +
                              " answered GET /models with something that is not a JSON object (content-type: "
                              "text/html)");
}

TEST(ProbeModels, NotHttpIsReachableWithProblem) {
  auto server = TestHttpServer::start("SSH-2.0-OpenSSH_9.2\r\n\r\n");
  ASSERT_NE(server, nullptr);
  ModelInfo info = probe_models(server->base("/v1"));
  EXPECT_TRUE(info.reachable);
  EXPECT_FALSE(info.model_id);
  EXPECT_NE(info.problem.find("did not answer with HTTP/1.x"), std::string::npos) << info.problem;
}

TEST(ProbeModels, SilentServerIsUnreachableWithinTimeout) {
  auto server = TestHttpServer::start("", TestHttpServer::Mode::kSilent);
  ASSERT_NE(server, nullptr);
  auto start = std::chrono::steady_clock::now();
  ModelInfo info = probe_models(server->base("/v1"), 1s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(info.reachable);
  EXPECT_EQ(info.problem, "inference endpoint " + server->base("/v1") + " did not answer within 1 s");
  EXPECT_LT(elapsed, 1500ms);  // correctness bound: one attempt, one deadline
}

TEST(ProbeModels, ClosedPortIsUnreachable) {
  std::string base = "http://127.0.0.1:" + std::to_string(testing::closed_port()) + "/v1";
  ModelInfo info = probe_models(base);
  EXPECT_FALSE(info.reachable);
  EXPECT_FALSE(info.model_id);
  EXPECT_EQ(info.base_url, base);
  EXPECT_EQ(info.problem, "inference endpoint " + base + " refused the connection (no server listening)");
}

ModelInfo reachable_with(std::optional<std::string> id, std::optional<uint64_t> ctx) {
  ModelInfo info;
  info.reachable = true;
  info.model_id = std::move(id);
  info.context_window = ctx;
  info.base_url = "http://127.0.0.1:8080/v1";
  return info;
}

ModelInfo down() {
  ModelInfo info;
  info.base_url = "http://127.0.0.1:8080/v1";
  info.problem = "inference endpoint http://127.0.0.1:8080/v1 did not answer within 1 s";
  return info;
}

TEST(ResolveRuntimeModel, ServerWins) {
  RuntimeModel m = resolve_runtime_model(reachable_with("qwen.gguf", 40960), "configured", 4096);
  EXPECT_EQ(m.model_name, "qwen.gguf");
  EXPECT_EQ(m.source, "server");
  EXPECT_EQ(m.context_window, 40960u);
  EXPECT_EQ(m.context_source, "server");
  EXPECT_EQ(m.note, "");
}

TEST(ResolveRuntimeModel, ServerModelConfiguredContext) {
  RuntimeModel m = resolve_runtime_model(reachable_with("llama3", std::nullopt), std::nullopt, 8192);
  EXPECT_EQ(m.model_name, "llama3");
  EXPECT_EQ(m.context_window, 8192u);
  EXPECT_EQ(m.context_source, "config");
  EXPECT_EQ(m.note, "");
}

TEST(ResolveRuntimeModel, DownUsesConfig) {
  RuntimeModel m = resolve_runtime_model(down(), " x ", 16384);
  EXPECT_EQ(m.model_name, "x");
  EXPECT_EQ(m.source, "config");
  EXPECT_EQ(m.context_window, 16384u);
  EXPECT_EQ(m.context_source, "config");
  EXPECT_EQ(m.note,
            "inference endpoint http://127.0.0.1:8080/v1 did not answer within 1 s; using model 'x' from config");
}

TEST(ResolveRuntimeModel, DownNothingConfigured) {
  RuntimeModel m = resolve_runtime_model(down(), "  ", std::nullopt);
  EXPECT_EQ(m.model_name, "default");
  EXPECT_EQ(m.source, "default");
  EXPECT_EQ(m.context_window, 32768u);
  EXPECT_EQ(m.context_source, "default");
  EXPECT_EQ(m.note,
            "inference endpoint http://127.0.0.1:8080/v1 did not answer within 1 s; no model_name configured, using "
            "model 'default'; context window unknown (the server reported none and none is configured), assuming "
            "32768 tokens");
}

TEST(ResolveRuntimeModel, ReachableWithoutModelFallsBack) {
  ModelInfo info = reachable_with(std::nullopt, 2048);
  info.problem = "inference endpoint http://127.0.0.1:8080/v1 answered GET /models with HTTP 500";
  RuntimeModel m = resolve_runtime_model(info, "cfg", std::nullopt);
  EXPECT_EQ(m.model_name, "cfg");
  EXPECT_EQ(m.source, "config");
  EXPECT_EQ(m.context_window, 2048u);  // the server's own value is still the best one known
  EXPECT_EQ(m.note,
            "inference endpoint http://127.0.0.1:8080/v1 answered GET /models with HTTP 500; using model 'cfg' "
            "from config");
}

// A small server context is never raised (bug 21), and a fallback is never a floor.
TEST(ResolveRuntimeModel, Bug21SmallServerContextStands) {
  RuntimeModel m = resolve_runtime_model(reachable_with("m", 2048), std::nullopt, 131072);
  EXPECT_EQ(m.context_window, 2048u);
}

}  // namespace
}  // namespace tnk::inference
