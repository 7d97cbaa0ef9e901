// doctor's checks of the inference endpoint (src/inference/endpoint_doctor.h), each against a fake
// server and fake socket tables: the mistake it reports, with its fix, and the well-configured control.
#include "inference/endpoint_doctor.h"

#include <gtest/gtest.h>

#include <map>

namespace tnk::inference {
namespace {

constexpr const char* kUrl = "http://127.0.0.1:8080/v1";
constexpr const char* kModels = "http://127.0.0.1:8080/v1/models";
constexpr const char* kOneModel = R"({"data": [{"id": "qwen", "meta": {"n_ctx": 8192}}]})";
// A listener on 127.0.0.1:8080, and one on 0.0.0.0:8080.
constexpr const char* kLoopbackLine = "   0: 0100007F:1F90 00000000:0000 0A 0\n";
constexpr const char* kWildcardLine = "   1: 00000000:1F90 00000000:0000 0A 0\n";

// A server: url -> (status, body); with `key`, any other bearer gets 401.
struct FakeServer {
  std::map<std::string, std::pair<int, std::string>> pages;
  std::string key;
  std::vector<std::string> asked;  // "url|bearer"

  Fetch fetch() {
    return [this](const std::string& url, const std::string& bearer) -> Result<HttpResponse> {
      asked.push_back(url + "|" + bearer);
      if (!key.empty() && bearer != key) return HttpResponse{401, "application/json", "{}"};
      auto it = pages.find(url);
      if (it == pages.end()) return HttpResponse{404, "text/plain", "not found"};
      return HttpResponse{it->second.first, "application/json", it->second.second};
    };
  }
};

ReadFile tables(std::string tcp, std::string tcp6 = "") {
  return [tcp, tcp6](const std::string& path) -> std::optional<std::string> {
    return path == "/proc/net/tcp" ? tcp : tcp6;
  };
}

class EndpointDoctorTest : public ::testing::Test {
 protected:
  EndpointDoctorTest() {
    setup_.url = kUrl;
    setup_.key_source = "none";
    setup_.profile = "pi";
    server_.pages[kModels] = {200, kOneModel};
  }
  doctor::Outcome run(const std::string& id) {
    doctor::Registry registry;
    add_endpoint_checks(registry, setup_, server_.fetch(), tables_);
    for (const auto& check : registry.checks()) {
      if (check.id == id) return check.run();
    }
    ADD_FAILURE() << "no check " << id;
    return {};
  }
  EndpointSetup setup_;
  FakeServer server_;
  ReadFile tables_ = tables(kLoopbackLine);
};

TEST_F(EndpointDoctorTest, BindOnLoopbackOnlyIsOk) {
  auto o = run("inference_bind");
  EXPECT_EQ(o.status, doctor::Status::kOk);
  EXPECT_EQ(o.summary, "listens on 127.0.0.1:8080 only");
}

TEST_F(EndpointDoctorTest, BindOnEveryInterfaceWarnsWithTheServersFlags) {
  tables_ = tables(kLoopbackLine, "   0: 00000000000000000000000000000000:1F90 0:0 0A 0\n");
  auto o = run("inference_bind");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary.rfind("the server listens on [::]:8080 (every interface): other machines", 0), 0u) << o.summary;
  EXPECT_EQ(doctor::fix_command(o.fix), "llama-server --host 127.0.0.1");
  EXPECT_NE(o.fix.find("OLLAMA_HOST=127.0.0.1:11434"), std::string::npos);
  EXPECT_NE(o.fix.find("vLLM --host 127.0.0.1"), std::string::npos);
  tables_ = tables(kWildcardLine);
  EXPECT_NE(run("inference_bind").summary.find("0.0.0.0:8080 (every interface)"), std::string::npos);
}

TEST_F(EndpointDoctorTest, BindIsNotCheckedForARemoteHostOrAnIdlePort) {
  setup_.url = "http://llm.example.com:8080/v1";
  tables_ = tables(kWildcardLine);
  EXPECT_EQ(run("inference_bind").status, doctor::Status::kInfo);
  setup_.url = "http://127.0.0.1:9999/v1";
  auto o = run("inference_bind");
  EXPECT_EQ(o.status, doctor::Status::kInfo);
  EXPECT_EQ(o.summary, "not checked: nothing listens on port 9999 here");
}

TEST_F(EndpointDoctorTest, ModelsListedIsOkAndAnEmptyListWarns) {
  EXPECT_EQ(run("inference_models").status, doctor::Status::kOk);
  server_.pages[kModels] = {200, R"({"object": "list", "data": []})"};
  auto o = run("inference_models");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary, std::string("GET ") + kModels + " lists no model: agents' requests will fail");
  EXPECT_EQ(doctor::fix_command(o.fix), "llama-server -m MODEL.gguf");
  EXPECT_NE(o.fix.find("ollama pull MODEL"), std::string::npos);
}

TEST_F(EndpointDoctorTest, OllamaTagsAreTheFallbackList) {
  setup_.url = "http://127.0.0.1:11434";
  server_.pages.clear();
  server_.pages["http://127.0.0.1:11434/api/tags"] = {200, R"({"models": []})"};
  auto o = run("inference_models");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary, "GET http://127.0.0.1:11434/api/tags lists no model: agents' requests will fail");
  server_.pages["http://127.0.0.1:11434/api/tags"] = {200, R"({"models": [{"name": "qwen:7b"}]})"};
  EXPECT_EQ(run("inference_models").status, doctor::Status::kOk);
}

TEST_F(EndpointDoctorTest, ContextWindowSmallerThanTheProfileNeedsWarns) {
  setup_.min_context_window = 32768;
  auto o = run("inference_context");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary,
            "the server reports a context window of 8192 tokens; profile pi needs at least 32768 tokens "
            "(min_context_window)");
  EXPECT_EQ(doctor::fix_command(o.fix), "llama-server -c 32768");
  EXPECT_NE(o.fix.find("OLLAMA_CONTEXT_LENGTH=32768"), std::string::npos);
  EXPECT_NE(o.fix.find("--max-model-len 32768"), std::string::npos);
  setup_.min_context_window = 8192;  // the control: exactly enough
  EXPECT_EQ(run("inference_context").status, doctor::Status::kOk);
}

TEST_F(EndpointDoctorTest, ContextWindowFromTnkTomlWhenTheServerSaysNothing) {
  server_.pages[kModels] = {200, R"({"data": [{"id": "qwen"}]})"};
  setup_.min_context_window = 16384;
  EXPECT_EQ(run("inference_context").status, doctor::Status::kInfo);
  setup_.configured_context = 4096;
  auto o = run("inference_context");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary.rfind("tnk.toml's context_window says a context window of 4096 tokens", 0), 0u) << o.summary;
  EXPECT_NE(o.fix.find("raise context_window in tnk.toml"), std::string::npos);
  setup_.configured_context = 16384;
  EXPECT_EQ(run("inference_context").status, doctor::Status::kOk);
  setup_.min_context_window.reset();
  EXPECT_EQ(run("inference_context").status, doctor::Status::kOk);
}

TEST_F(EndpointDoctorTest, AKeyTheServerRefusesFailsAndNeverShowsIt) {
  server_.key = "sk-right";
  setup_.key = "sk-wrong";
  setup_.key_source = "env LLM_KEY";
  doctor::Registry registry;
  add_endpoint_checks(registry, setup_, server_.fetch(), tables_);
  auto results = doctor::run_checks(registry);
  const auto& key = results.back();
  EXPECT_EQ(key.check.id, "inference_key");
  EXPECT_TRUE(key.check.required);
  EXPECT_EQ(key.outcome.status, doctor::Status::kFail);
  EXPECT_EQ(key.outcome.summary,
            std::string("the server refuses the key from env LLM_KEY: GET ") + kModels + " answered HTTP 401");
  EXPECT_EQ(doctor::to_json(results).dump().find("sk-wrong"), std::string::npos);
  EXPECT_EQ(doctor::render_text(results, false).find("sk-wrong"), std::string::npos);
  EXPECT_EQ(server_.asked, std::vector<std::string>{std::string(kModels) + "|sk-wrong"});  // one GET for all
  setup_.key = "sk-right";                                                                 // the control
  EXPECT_EQ(run("inference_key").status, doctor::Status::kOk);
  EXPECT_EQ(run("inference_key").summary, "the server accepts the key from env LLM_KEY");
}

TEST_F(EndpointDoctorTest, AServerThatWantsAKeyNoneConfiguredSaysWhichKeyToSet) {
  server_.key = "sk-right";
  auto o = run("inference_key");
  EXPECT_EQ(o.status, doctor::Status::kWarn);
  EXPECT_EQ(o.summary, std::string("the server answers GET ") + kModels +
                           " with HTTP 401 without an API key, and tnk.toml names none");
  EXPECT_NE(o.fix.find("api_key_env = \"NAME\" under [inference]"), std::string::npos) << o.fix;
  server_.key.clear();  // the control: a server that wants none
  EXPECT_EQ(run("inference_key").status, doctor::Status::kOk);
}

TEST_F(EndpointDoctorTest, AKeyThatCannotBeReadFailsWithItsOwnMessage) {
  setup_.key_source = "env LLM_KEY";
  setup_.key_error =
      not_found("inference.api_key_env names LLM_KEY, which is not set in tnk's environment", "export LLM_KEY=...");
  auto o = run("inference_key");
  EXPECT_EQ(o.status, doctor::Status::kFail);
  EXPECT_EQ(o.summary, setup_.key_error->message);
  EXPECT_EQ(o.fix, "export LLM_KEY=...");
}

TEST_F(EndpointDoctorTest, AnUnreachableServerIsNotChecked) {
  Fetch down = [](const std::string&, const std::string&) -> Result<HttpResponse> {
    return failed("GET x: cannot connect");
  };
  doctor::Registry registry;
  add_endpoint_checks(registry, setup_, down, tables(""));
  for (const auto& r : doctor::run_checks(registry)) {
    if (r.check.id == "inference_context") continue;  // no minimum: ok without asking
    EXPECT_EQ(r.outcome.status, doctor::Status::kInfo) << r.check.id;
    EXPECT_EQ(r.outcome.summary.rfind("not checked: ", 0), 0u) << r.outcome.summary;
  }
}

}  // namespace
}  // namespace tnk::inference
