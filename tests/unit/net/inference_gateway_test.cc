// The inference gateway's own work on top of the path check: token and key, aliases, the answer's
// token counts, the concurrency limit; first as pure functions, then through a real gateway.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "net/answer_meter.h"
#include "net/gateway_request.h"
#include "net/inference_forwarder.h"
#include "net/request_slots.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using testing::connect_loopback;
using testing::EventLog;
using testing::listen_loopback;
using testing::port_of;
using testing::read_until_eof;
using testing::RecordingEndpoint;
using testing::send_text;
using testing::Serving;

RequestHead gateway_head(const std::string& text) {
  auto r = parse_request_head(text, RequestForm::kOrigin);
  EXPECT_TRUE(r.ok() && r->has_value()) << text;
  RequestHead head = r.ok() && r->has_value() ? **r : RequestHead{};
  head.host = "127.0.0.1";
  head.port = 8080;
  return head;
}

// A whole 200 answer with a JSON body.
std::string json_answer(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

GatewaySettings keyed() {
  GatewaySettings settings;
  settings.token = "tok-123";
  settings.api_key = "sk-host-only";
  settings.aliases = {{"coder", "qwen2.5-coder-7b"}};
  return settings;
}

TEST(GatewayToken, WithAKeyOnlyARequestShowingTheTokenPasses) {
  for (const std::string& credential : {std::string("Authorization: Bearer tok-123"), std::string("x-api-key: tok-123"),
                                        std::string("authorization: bearer tok-123")}) {
    RequestHead head = gateway_head("POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n" + credential + "\r\n\r\n");
    EXPECT_FALSE(take_token(head, keyed())) << credential;
    for (const auto& [name, value] : head.headers) EXPECT_EQ(value.find("tok-123"), std::string::npos) << name;
  }
  for (const std::string& credential : {std::string(""), std::string("Authorization: Bearer tok-124\r\n"),
                                        std::string("Authorization: Bearer sk-host-only\r\n")}) {
    RequestHead head = gateway_head("POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n" + credential + "\r\n");
    auto refusal = take_token(head, keyed());
    ASSERT_TRUE(refusal) << credential;
    EXPECT_EQ(refusal->status, 401);
    EXPECT_NE(refusal->reason.find("TNK_INFERENCE_TOKEN"), std::string::npos);
  }
}

// Without a key there is nothing to guard, so no token is needed; a credential is still never passed.
TEST(GatewayToken, WithoutAKeyNoneIsNeededAndAnyIsTakenOut) {
  GatewaySettings settings;
  settings.token = "tok-123";
  RequestHead head = gateway_head("GET /v1/models HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer sk-agent\r\n\r\n");
  EXPECT_FALSE(take_token(head, settings));
  EXPECT_EQ(head.headers.size(), 1u);  // Host
}

TEST(GatewayRequest, TheKeyIsAddedAsEachApiWantsIt) {
  OutgoingRequest openai =
      outgoing_request(gateway_head("POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n\r\n"), "{}", keyed());
  EXPECT_NE(openai.bytes.find("\r\nAuthorization: Bearer sk-host-only\r\n"), std::string::npos) << openai.bytes;
  OutgoingRequest anthropic =
      outgoing_request(gateway_head("POST /v1/messages HTTP/1.1\r\nHost: h\r\n\r\n"), "{}", keyed());
  EXPECT_NE(anthropic.bytes.find("\r\nx-api-key: sk-host-only\r\n"), std::string::npos) << anthropic.bytes;
  EXPECT_EQ(anthropic.bytes.find("Authorization"), std::string::npos) << anthropic.bytes;
}

TEST(GatewayRequest, AnAliasBecomesTheServedModelAndTheBodyKeepsItsLength) {
  OutgoingRequest out = outgoing_request(
      gateway_head("POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"),
      R"({"model":"coder","stream":true,"messages":[]})", keyed());
  EXPECT_EQ(out.model_requested, "coder");
  EXPECT_EQ(out.model_sent, "qwen2.5-coder-7b");
  EXPECT_TRUE(out.stream);
  std::string body = out.bytes.substr(out.bytes.find("\r\n\r\n") + 4);
  EXPECT_NE(body.find(R"("model":"qwen2.5-coder-7b")"), std::string::npos) << body;
  EXPECT_NE(out.bytes.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  EXPECT_EQ(out.bytes.find("chunked"), std::string::npos) << out.bytes;
}

TEST(GatewayRequest, AModelThatIsNoAliasPassesByteForByte) {
  std::string body = "{ \"model\" : \"llama3\",\n \"prompt\": \"x\" }";
  OutgoingRequest out = outgoing_request(
      gateway_head("POST /api/generate HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\nExpect: 100-continue\r\n\r\n"),
      body, keyed());
  EXPECT_TRUE(out.bytes.ends_with("\r\n\r\n" + body));
  EXPECT_EQ(out.model_sent, "llama3");
  EXPECT_TRUE(out.stream);  // Ollama streams unless asked not to
  EXPECT_EQ(out.bytes.find("gzip"), std::string::npos);
  EXPECT_EQ(out.bytes.find("100-continue"), std::string::npos);
}

TEST(GatewayRequest, TheModelListNamesTheAliases) {
  std::string listed = models_with_aliases(R"({"object":"list","data":[{"id":"qwen2.5-coder-7b"}]})", keyed().aliases);
  auto json = nlohmann::json::parse(listed);
  ASSERT_EQ(json["data"].size(), 2u);
  EXPECT_EQ(json["data"][1]["id"], "coder");
  EXPECT_EQ(models_with_aliases("not json", keyed().aliases), "not json");
}

// Feeds `answer` in pieces of `step` bytes, as a relay would deliver it.
AnswerMeter metered(const std::string& answer, std::size_t step) {
  AnswerMeter meter;
  for (std::size_t at = 0; at < answer.size(); at += step) meter.feed(std::string_view(answer).substr(at, step));
  meter.finish();
  return meter;
}

std::string chunked(const std::string& body) {
  std::string out;
  for (std::size_t at = 0; at < body.size(); at += 7) {
    std::string part = body.substr(at, 7);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

TEST(AnswerMeter, ReadsTheUsageOfAJsonAnswer) {
  std::string body =
      R"({"model":"qwen2.5-coder-7b","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":311}})";
  for (std::size_t step : {std::size_t{1}, std::size_t{5}, std::size_t{4096}}) {
    AnswerMeter meter = metered(json_answer(body), step);
    EXPECT_EQ(meter.status(), 200);
    EXPECT_EQ(meter.model(), "qwen2.5-coder-7b");
    EXPECT_EQ(meter.usage().prompt_tokens, 42u);
    EXPECT_EQ(meter.usage().completion_tokens, 311u);
  }
}

TEST(AnswerMeter, ReadsTheFinalUsageEventOfAChunkedStream) {
  std::string events =
      "data: {\"model\":\"m1\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
      "data: {\"model\":\"m1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  for (std::size_t step : {std::size_t{1}, std::size_t{3}, std::size_t{4096}}) {
    AnswerMeter meter = metered(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: chunked\r\n\r\n" +
            chunked(events),
        step);
    EXPECT_EQ(meter.status(), 200);
    EXPECT_EQ(meter.model(), "m1");
    EXPECT_EQ(meter.usage().prompt_tokens, 5u);
    EXPECT_EQ(meter.usage().completion_tokens, 2u);
  }
}

TEST(AnswerMeter, ReadsAnthropicAndOllamaAndResponsesStreams) {
  AnswerMeter anthropic = metered(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\","
      "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
      9);
  EXPECT_EQ(anthropic.model(), "claude-x");
  EXPECT_EQ(anthropic.usage().prompt_tokens, 25u);
  EXPECT_EQ(anthropic.usage().completion_tokens, 15u);
  AnswerMeter ollama = metered(
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n"
      "{\"model\":\"llama3\",\"message\":{\"content\":\"a\"},\"done\":false}\n"
      "{\"model\":\"llama3\",\"done\":true,\"prompt_eval_count\":26,\"eval_count\":290}",  // no final newline
      4);
  EXPECT_EQ(ollama.model(), "llama3");
  EXPECT_EQ(ollama.usage().prompt_tokens, 26u);
  EXPECT_EQ(ollama.usage().completion_tokens, 290u);
  AnswerMeter responses = metered(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
      "data: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-x\","
      "\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}}\n\n",
      4096);
  EXPECT_EQ(responses.model(), "gpt-x");
  EXPECT_EQ(responses.usage().prompt_tokens, 3u);
  EXPECT_EQ(responses.usage().completion_tokens, 4u);
}

// A stream is read in its first and last 64 KiB only: the counts of a long one are still found at
// its end, and a usage key in the middle (which no API sends) is not what the record reports.
TEST(AnswerMeter, ReadsTheCountsAtTheStartAndTheEndOfALongStream) {
  std::string delta =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"tok\"}}\n\n";
  std::string events =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\","
      "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n";
  while (events.size() < 1024 * 1024) events += delta;
  events += "data: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":999,\"output_tokens\":999}}\n\n";
  while (events.size() < 2 * 1024 * 1024) events += delta;
  events += "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7000}}\n\n";
  for (std::size_t step : {std::size_t{4093}, std::size_t{32768}}) {
    AnswerMeter meter = metered(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(events),
        step);
    EXPECT_EQ(meter.model(), "claude-x");
    EXPECT_EQ(meter.usage().prompt_tokens, 25u);
    EXPECT_EQ(meter.usage().completion_tokens, 7000u);
  }
}

TEST(AnswerMeter, AnAnswerWithoutCountsHasNone) {
  AnswerMeter meter = metered("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading", 4096);
  EXPECT_EQ(meter.status(), 503);
  EXPECT_FALSE(meter.usage().prompt_tokens);
  EXPECT_FALSE(meter.usage().completion_tokens);
  EXPECT_EQ(metered("garbage", 2).status(), 0);
}

TEST(RequestSlots, AsManyWaitAsRunThenTheRestAreTurnedAway) {
  RequestSlots slots(1);
  EXPECT_EQ(slots.acquire(std::chrono::milliseconds(0), -1), RequestSlots::Outcome::kGranted);
  auto waiting = std::async(std::launch::async, [&] { return slots.acquire(std::chrono::seconds(5), -1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(slots.acquire(std::chrono::seconds(5), -1), RequestSlots::Outcome::kQueueFull);
  slots.release();
  EXPECT_EQ(waiting.get(), RequestSlots::Outcome::kGranted);
  EXPECT_EQ(slots.acquire(std::chrono::milliseconds(50), -1), RequestSlots::Outcome::kTimedOut);
}

// A gateway in front of `endpoint` with the keyed settings, reporting to `events` (complete once the
// fixture is gone: a request is reported after its client has the answer); `limits` may shorten waits.
class GatewayFixture {
 public:
  GatewayFixture(RecordingEndpoint& endpoint, EventLog& events, InferenceLimits limits = {})
      : listener_(listen_loopback()),
        target_{"127.0.0.1", endpoint.port()},
        settings_(keyed()),
        sink_(events.sink()),
        limits_(limits),
        serving_([this](int stop) {
          return serve_inference_forward(listener_.get(), target_, stop, sink_, limits_, settings_);
        }) {}
  ~GatewayFixture() { EXPECT_TRUE(serving_.stop().ok()); }

  UniqueFd open() { return connect_loopback(port_of(listener_.get())); }
  std::string ask(const std::string& request) {
    UniqueFd client = open();
    EXPECT_TRUE(send_text(client.get(), request));
    return read_until_eof(client.get());
  }

 private:
  UniqueFd listener_;
  ForwardTarget target_;
  GatewaySettings settings_;
  NetEventSink sink_;
  InferenceLimits limits_;
  Serving serving_;
};

TEST(InferenceGateway, TheEndpointGetsTheKeyAndTheServedModelNeverTheToken) {
  std::string body = R"({"model":"m","usage":{"prompt_tokens":7,"completion_tokens":9}})";
  RecordingEndpoint endpoint(json_answer(body));
  {
    EventLog events;
    GatewayFixture gateway(endpoint, events);
    std::string request = R"({"model":"coder"})";
    std::string answer = gateway.ask(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok-123\r\n"
        "Content-Length: " +
        std::to_string(request.size()) + "\r\n\r\n" + request);
    EXPECT_TRUE(answer.ends_with(body)) << answer;
    ASSERT_EQ(endpoint.seen().size(), 1u);
    std::string seen = endpoint.seen()[0];
    EXPECT_NE(seen.find("Authorization: Bearer sk-host-only\r\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find(R"({"model":"qwen2.5-coder-7b"})"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("tok-123"), std::string::npos) << seen;
  }
}

TEST(InferenceGateway, EachRequestIsOneEventWithItsExchange) {
  std::string body = R"({"model":"m","usage":{"prompt_tokens":7,"completion_tokens":9}})";
  RecordingEndpoint endpoint(json_answer(body));
  EventLog events;
  {
    GatewayFixture gateway(endpoint, events);
    gateway.ask(
        "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: h\r\nx-api-key: tok-123\r\nContent-Length: 2\r\n\r\n{}");
    std::string refused = gateway.ask("POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_TRUE(refused.starts_with("HTTP/1.1 401 Unauthorized\r\n")) << refused;
    EXPECT_NE(refused.find("WWW-Authenticate: Bearer"), std::string::npos) << refused;
  }
  ASSERT_EQ(events.events.size(), 2u);
  const NetEvent& first = events.events[0].inference->status == 200 ? events.events[0] : events.events[1];
  const NetEvent& second = &first == &events.events[0] ? events.events[1] : events.events[0];
  const InferenceExchange& served = *first.inference;
  EXPECT_EQ(served.method, "POST");
  EXPECT_EQ(served.path, "/v1/chat/completions");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.model_served, "m");
  EXPECT_EQ(served.prompt_tokens, 7u);
  EXPECT_EQ(served.completion_tokens, 9u);
  EXPECT_TRUE(served.ttfb_ms);
  EXPECT_GE(served.latency_ms, *served.ttfb_ms);
  EXPECT_EQ(second.inference->status, 401);
  EXPECT_EQ(endpoint.seen().size(), 1u);  // the refused one never reached it
}

TEST(InferenceGateway, TheModelListGetsTheAliases) {
  std::string body = R"({"object":"list","data":[{"id":"qwen2.5-coder-7b"}]})";
  RecordingEndpoint endpoint(json_answer(body));
  EventLog events;
  GatewayFixture gateway(endpoint, events);
  std::string answer = gateway.ask("GET /v1/models HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok-123\r\n\r\n");
  std::string listed = answer.substr(answer.find("\r\n\r\n") + 4);
  EXPECT_NE(listed.find(R"("id":"coder")"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Content-Length: " + std::to_string(listed.size()) + "\r\n"), std::string::npos) << answer;
}

// The limits: a body over the request limit is a 413 that never reaches the endpoint; an answer over
// the answer limit is cut there, with the record saying so; the same answer under the limit passes whole.
TEST(InferenceGateway, BodiesAndAnswersOverTheirLimitsStopThere) {
  std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'a');
  RecordingEndpoint endpoint(answer);
  for (uint64_t limit : {uint64_t{100}, uint64_t{1} << 20}) {
    EventLog events;
    {
      InferenceLimits limits;
      limits.max_answer_bytes = limit;
      GatewayFixture gateway(endpoint, events, limits);
      std::string got =
          gateway.ask("POST /v1/completions HTTP/1.1\r\nHost: h\r\nx-api-key: tok-123\r\nContent-Length: 0\r\n\r\n");
      EXPECT_EQ(got.size(), limit == 100 ? 100u : answer.size()) << limit;
    }
    ASSERT_EQ(events.events.size(), 1u);
    EXPECT_EQ(events.events[0].reason.find("inference.answer_limit") != std::string::npos, limit == 100);
  }
  EventLog events;
  GatewayFixture gateway(endpoint, events);
  std::size_t seen = endpoint.seen().size();
  std::string body(kMaxInferenceRequestBytes + 1, 'x');
  std::string refused =
      gateway.ask("POST /v1/completions HTTP/1.1\r\nHost: h\r\nx-api-key: tok-123\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 413 ")) << refused.substr(0, 200);
  EXPECT_EQ(endpoint.seen().size(), seen);
}

// With room for one request at the endpoint and one waiting, a third is answered 429 at once, with
// Retry-After, and never reaches the endpoint.
TEST(InferenceGateway, BeyondTheConcurrencyLimitA429) {
  RecordingEndpoint endpoint("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: first\n\n");
  endpoint.hold();
  InferenceLimits limits;
  limits.concurrency = 1;
  EventLog events;
  GatewayFixture gateway(endpoint, events, limits);
  std::string request = "POST /v1/completions HTTP/1.1\r\nHost: h\r\nx-api-key: tok-123\r\nContent-Length: 0\r\n\r\n";
  UniqueFd running = gateway.open();
  ASSERT_TRUE(send_text(running.get(), request));
  testing::read_until(running.get(), "data: first");
  UniqueFd waiting = gateway.open();
  ASSERT_TRUE(send_text(waiting.get(), request));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string turned_away = gateway.ask(request);
  EXPECT_TRUE(turned_away.starts_with("HTTP/1.1 429 Too Many Requests\r\n")) << turned_away;
  EXPECT_NE(turned_away.find("Retry-After: 1\r\n"), std::string::npos) << turned_away;
  EXPECT_EQ(endpoint.seen().size(), 1u);
  endpoint.release();
  running.reset();
  EXPECT_NE(read_until_eof(waiting.get()).find("data: first"), std::string::npos);  // served once a slot freed
}

}  // namespace
}  // namespace tnk::net
