#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/gateway_request.h"
#include "net/inference_forwarder.h"
#include "net/inference_paths.h"
#include "net/request_body.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using testing::connect_loopback;
using testing::EventLog;
using testing::listen_loopback;
using testing::port_of;
using testing::read_until;
using testing::read_until_eof;
using testing::RecordingEndpoint;
using testing::send_text;
using testing::Serving;

RequestHead head_of(const std::string& text) {
  auto r = parse_request_head(text, RequestForm::kOrigin);
  EXPECT_TRUE(r.ok() && r->has_value()) << (r.ok() ? "incomplete" : r.error().message) << ": " << text;
  return r.ok() && r->has_value() ? **r : RequestHead{};
}

std::optional<std::string> decide(const std::string& method, const std::string& target) {
  return inference_refusal(head_of(method + " " + target + " HTTP/1.1\r\nHost: h\r\n\r\n"));
}

TEST(InferencePaths, EveryListedInferenceApiPasses) {
  for (const char* path : {"/", "/health", "/healthz", "/v1/models", "/v1/models/llama3:8b",
                           "/v1/models/meta-llama/Llama-3-8B", "/api/tags", "/api/version"}) {
    EXPECT_EQ(decide("GET", path), std::nullopt) << path;
  }
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages",
                           "/api/chat", "/api/generate", "/api/embed", "/api/embeddings", "/api/show"}) {
    EXPECT_EQ(decide("POST", path), std::nullopt) << path;
  }
  EXPECT_EQ(decide("POST", "/v1/messages?beta=true"), std::nullopt);  // a query on a listed path
  EXPECT_EQ(decide("HEAD", "/health"), std::nullopt);
}

TEST(InferencePaths, AdminApisAreRefusedWithThePathAndWhy) {
  for (const char* path : {"/api/pull", "/api/push", "/api/copy", "/api/create", "/api/delete", "/api/blobs/sha256:00",
                           "/api/ps", "/props", "/slots", "/metrics"}) {
    auto why = decide("POST", path);
    ASSERT_TRUE(why.has_value()) << path;
    EXPECT_NE(why->find(path), std::string::npos) << *why;
    EXPECT_NE(why->find("is not an inference API"), std::string::npos) << *why;
  }
  EXPECT_TRUE(decide("POST", "/slots/0?action=save").has_value());
  EXPECT_TRUE(decide("POST", "/slots?action=save").has_value());
  EXPECT_TRUE(decide("DELETE", "/api/delete").has_value());
}

TEST(InferencePaths, TheMethodMustMatch) {
  EXPECT_TRUE(decide("POST", "/v1/models").has_value());
  EXPECT_TRUE(decide("GET", "/v1/chat/completions").has_value());
  EXPECT_TRUE(decide("DELETE", "/v1/models/x").has_value());
  EXPECT_TRUE(decide("OPTIONS", "/v1/models").has_value());
}

TEST(InferencePaths, PathsAServerCouldReadAsAnotherAreRefused) {
  EXPECT_TRUE(decide("GET", "/v1/models/../api/pull").has_value());
  EXPECT_TRUE(decide("POST", "/v1/chat/completions/../../api/pull").has_value());
  EXPECT_TRUE(decide("GET", "/v1/models/./x").has_value());
  EXPECT_TRUE(decide("GET", "/v1/models/").has_value());
  EXPECT_TRUE(decide("GET", "//v1/models").has_value());
  EXPECT_TRUE(decide("POST", "/api%2Fpull").has_value());
  EXPECT_TRUE(decide("POST", "/api/%70ull").has_value());
  EXPECT_TRUE(decide("POST", "/v1/chat/completions%3F").has_value());
  EXPECT_TRUE(decide("GET", "/v1/models/%2e%2e/api/tags").has_value());
  EXPECT_TRUE(decide("POST", "/v1/chat/completions;x").has_value());
  EXPECT_TRUE(decide("POST", "/API/PULL").has_value());
  // The query never decides: a listed path with an admin action in its query is the listed path.
  EXPECT_EQ(decide("GET", "/health?action=save"), std::nullopt);
  EXPECT_TRUE(decide("GET", "/slots?path=/v1/models").has_value());
}

TEST(InferencePaths, AbsoluteFormAndProtocolUpgradesAreRefused) {
  auto absolute =
      parse_request_head("GET http://127.0.0.1:11434/api/pull HTTP/1.1\r\nHost: h\r\n\r\n", RequestForm::kOrigin);
  EXPECT_FALSE(absolute.ok());
  EXPECT_FALSE(parse_request_head("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", RequestForm::kOrigin).ok());
  EXPECT_FALSE(parse_request_head("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", RequestForm::kOrigin).ok());
  auto upgrade = inference_refusal(
      head_of("GET /v1/models HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"));
  ASSERT_TRUE(upgrade.has_value());
  EXPECT_NE(upgrade->find("Upgrade"), std::string::npos) << *upgrade;
}

RequestBody body_of(const std::string& headers) {
  auto body = RequestBody::of(head_of("POST /v1/completions HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n"));
  EXPECT_TRUE(body.ok()) << body.error().message;
  return body.ok() ? *body : RequestBody{};
}

TEST(RequestBody, ContentLengthEndsTheBodyWhereTheNextRequestStarts) {
  RequestBody body = body_of("Content-Length: 5\r\n");
  EXPECT_EQ(*body.take("abc"), 3u);
  EXPECT_FALSE(body.complete());
  EXPECT_EQ(*body.take("deGET / HTTP/1.1"), 2u);
  EXPECT_TRUE(body.complete());
  EXPECT_EQ(*body.take("more"), 0u);
  EXPECT_TRUE(body_of("").complete());  // no framing: no body
}

TEST(RequestBody, ChunkedEndsAfterTheLastChunkAndTrailers) {
  RequestBody body = body_of("Transfer-Encoding: chunked\r\n");
  std::string stream = "5;ext=1\r\nhello\r\n1";
  EXPECT_EQ(*body.take(stream), stream.size());
  std::string rest = "\r\nw\r\n0\r\nTrailer: x\r\n\r\n";  // the size line split across reads
  EXPECT_EQ(*body.take(rest), rest.size());
  EXPECT_TRUE(body.complete());
  EXPECT_EQ(*body.take("POST /api/pull HTTP/1.1\r\n"), 0u);
}

TEST(RequestBody, AmbiguousOrMalformedFramingIsRefused) {
  auto head = [](const std::string& h) { return head_of("POST /v1/completions HTTP/1.1\r\nHost: h\r\n" + h + "\r\n"); };
  EXPECT_FALSE(RequestBody::of(head("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")).ok());
  EXPECT_FALSE(RequestBody::of(head("Content-Length: 5\r\nContent-Length: 5\r\n")).ok());
  EXPECT_FALSE(RequestBody::of(head("Content-Length: +5\r\n")).ok());
  EXPECT_FALSE(RequestBody::of(head("Transfer-Encoding: gzip, chunked\r\n")).ok());
  RequestBody chunked = body_of("Transfer-Encoding: chunked\r\n");
  EXPECT_FALSE(chunked.take("zz\r\n").ok());
  RequestBody overlong = body_of("Transfer-Encoding: chunked\r\n");
  EXPECT_FALSE(overlong.take("2\r\nabc\r\n").ok());
}

// Sends `request` through a forwarder to `endpoint` and returns the whole answer.
std::string ask(RecordingEndpoint& endpoint, EventLog& events, const std::string& request) {
  UniqueFd listener = listen_loopback();
  ForwardTarget target{"127.0.0.1", endpoint.port()};
  NetEventSink sink = events.sink();
  Serving serving([&](int stop) { return serve_inference_forward(listener.get(), target, stop, sink); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  EXPECT_TRUE(send_text(client.get(), request));
  std::string answer = read_until_eof(client.get());
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
  return answer;
}

TEST(InferenceForwarder, PassesAnInferenceRequestWithItsBodyAndConnectionClose) {
  RecordingEndpoint endpoint;
  EventLog events;
  std::string answer = ask(endpoint, events,
                           "POST /v1/chat/completions HTTP/1.1\r\nHost: host.lima.internal:11434\r\n"
                           "Connection: keep-alive\r\nContent-Length: 4\r\n\r\n{\"a\"");
  EXPECT_EQ(answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_EQ(endpoint.seen().size(), 1u);
  std::string seen = endpoint.seen()[0];
  EXPECT_TRUE(seen.starts_with("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")) << seen;
  EXPECT_NE(seen.find("Connection: close\r\n\r\n{\"a\""), std::string::npos) << seen;
  EXPECT_EQ(seen.find("keep-alive"), std::string::npos) << seen;
  ASSERT_EQ(events.events.size(), 1u);
  EXPECT_TRUE(events.events[0].allowed);
  EXPECT_EQ(events.events[0].rule, "inference endpoint");
}

TEST(InferenceForwarder, RefusesAnAdminPathWith403AndARefusalEvent) {
  RecordingEndpoint endpoint;
  EventLog events;
  std::string answer =
      ask(endpoint, events, "POST /api/pull HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n{\"model\":\"evil\"}\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403 Forbidden\r\n")) << answer;
  EXPECT_NE(answer.find("POST /api/pull is not an inference API"), std::string::npos) << answer;
  EXPECT_TRUE(endpoint.seen().empty());
  ASSERT_EQ(events.events.size(), 1u);
  EXPECT_FALSE(events.events[0].allowed);
  EXPECT_EQ(events.events[0].reason, "POST /api/pull is not an inference API");
  EXPECT_EQ(events.events[0].rule, "");
}

TEST(InferenceForwarder, AnAbsoluteFormTargetIsA400) {
  RecordingEndpoint endpoint;
  EventLog events;
  std::string answer = ask(endpoint, events, "GET http://127.0.0.1:11434/v1/models HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 ")) << answer;
  EXPECT_TRUE(endpoint.seen().empty());
  ASSERT_EQ(events.events.size(), 1u);
  EXPECT_FALSE(events.events[0].allowed);
}

// Pipelined behind an allowed request (with a body), a refused one never reaches the endpoint: the
// connection carries one request and ends with its answer.
TEST(InferenceForwarder, APipelinedRequestAfterAnAllowedOneIsNeverPassed) {
  for (const std::string& framing : {std::string("Content-Length: 2\r\n\r\n{}"),
                                     std::string("Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")}) {
    RecordingEndpoint endpoint;
    EventLog events;
    std::string answer = ask(endpoint, events,
                             "POST /api/chat HTTP/1.1\r\nHost: h\r\n" + framing +
                                 "POST /slots?action=save HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    ASSERT_EQ(endpoint.seen().size(), 1u);
    EXPECT_EQ(endpoint.seen()[0].find("/slots"), std::string::npos) << endpoint.seen()[0];
    EXPECT_TRUE(endpoint.seen()[0].ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}")) << endpoint.seen()[0];
  }
}

// Server-sent events reach the client as the endpoint sends them, not when the answer ends.
TEST(InferenceForwarder, StreamsTheAnswerAsItArrives) {
  RecordingEndpoint endpoint("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: first\n\n");
  endpoint.hold();
  UniqueFd listener = listen_loopback();
  ForwardTarget target{"127.0.0.1", endpoint.port()};
  Serving serving([&](int stop) { return serve_inference_forward(listener.get(), target, stop); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  ASSERT_TRUE(send_text(client.get(), "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_NE(read_until(client.get(), "data: first\n\n").find("data: first"), std::string::npos);
  endpoint.release();
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
}

// Security review R3-L1: an endpoint that echoes the request's headers shows the key it was sent; the
// client gets the answer with the key masked, also when a chunk boundary falls inside it, and still as
// it streams. The pair: the same gateway passes the rest of the answer unchanged.
TEST(InferenceForwarder, AnEchoedKeyIsMaskedAcrossChunks) {
  const std::string key = "sk-r3-INFERENCE-KEY-0123456789abcdef";
  std::string echo = "{\"authorization\":\"Bearer " + key + "\"}";
  std::size_t split = echo.find(key) + 10;
  auto chunk = [](const std::string& data) {
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
  };
  RecordingEndpoint endpoint("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(echo.substr(0, split)) +
                             chunk(echo.substr(split)) + "0\r\n\r\n");
  GatewaySettings settings;
  settings.token = "tok";
  settings.api_key = key;
  UniqueFd listener = listen_loopback();
  ForwardTarget target{"127.0.0.1", endpoint.port()};
  Serving serving([&](int stop) { return serve_inference_forward(listener.get(), target, stop, {}, {}, settings); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  ASSERT_TRUE(send_text(client.get(), "GET /v1/models HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok\r\n\r\n"));
  std::string answer = read_until_eof(client.get());
  EXPECT_EQ(answer.find(key.substr(10)), std::string::npos) << answer;
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) << answer;
  EXPECT_NE(answer.find("{\"authorization\":\"Bearer "), std::string::npos) << answer;
  EXPECT_NE(answer.find(std::string(key.size(), '*') + "\"}\r\n0\r\n\r\n"), std::string::npos) << answer;
  ASSERT_EQ(endpoint.seen().size(), 1u);
  EXPECT_NE(endpoint.seen()[0].find("Authorization: Bearer " + key), std::string::npos);  // it was sent
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
}

// One sandbox cannot hold every slot of a shared endpoint: beyond the cap a connection is closed at once,
// while those within it stay open (waiting for their request heads).
// Security review L8: a connection with no byte either way for the idle timeout is closed, so a
// forgotten one frees its slot; the pair is StreamsTheAnswerAsItArrives, where the same held answer
// keeps its connection under the default (ten minutes).
TEST(InferenceForwarder, AConnectionIdleForTheTimeoutIsClosed) {
  RecordingEndpoint endpoint("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: first\n\n");
  endpoint.hold();
  UniqueFd listener = listen_loopback();
  ForwardTarget target{"127.0.0.1", endpoint.port()};
  EventLog events;
  NetEventSink sink = events.sink();
  InferenceLimits limits;
  limits.idle_timeout = std::chrono::milliseconds(1000);  // the endpoint answers after 0.3 s of quiet
  Serving serving([&](int stop) { return serve_inference_forward(listener.get(), target, stop, sink, limits); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  ASSERT_TRUE(send_text(client.get(), "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"));
  auto began = std::chrono::steady_clock::now();
  std::string answer = read_until_eof(client.get());  // the endpoint still holds its end open
  auto waited = std::chrono::steady_clock::now() - began;
  EXPECT_NE(answer.find("data: first"), std::string::npos);
  EXPECT_LT(waited, std::chrono::seconds(3));  // read_until_eof would give up at 5 s
  endpoint.release();
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
  ASSERT_EQ(events.events.size(), 1u);
  EXPECT_EQ(events.events[0].reason, "idle timeout");
}

TEST(InferenceForwarder, AtMostTheCapOfConnectionsAtATime) {
  UniqueFd listener = listen_loopback();
  ForwardTarget target{"127.0.0.1", 9};
  Serving serving([&](int stop) { return serve_inference_forward(listener.get(), target, stop); });
  std::vector<UniqueFd> held;
  for (std::size_t i = 0; i < kInferenceMaxConnections; ++i) {
    held.push_back(connect_loopback(port_of(listener.get())));
    ASSERT_TRUE(held.back().valid());
  }
  UniqueFd over = connect_loopback(port_of(listener.get()));
  char byte;
  EXPECT_EQ(::recv(over.get(), &byte, 1, 0), 0);  // closed by the forwarder, not the 5 s receive timeout
  EXPECT_EQ(::recv(held.back().get(), &byte, 1, MSG_DONTWAIT), -1);  // the last one within the cap is open
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_TRUE(serving.stop().ok());
}

}  // namespace
}  // namespace tnk::net
