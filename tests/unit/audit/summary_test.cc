// SummaryBuilder: inference_request records counted per model, per session and in total; sessions
// opened and closed by their records; percentiles (docs/audit-format.md, `tnk audit summary`).
#include "audit/summary.h"

#include <gtest/gtest.h>

namespace tnk::audit {
namespace {

using nlohmann::json;

class SummaryTest : public ::testing::Test {
 protected:
  // Adds a record with the chain fields every record has (their values do not matter here).
  void add(json record, const std::string& container_id = "tnk-p") {
    record["container_id"] = container_id;
    record["seq"] = ++seq_;
    record["ts"] = 1736935800 + static_cast<int64_t>(seq_);
    record["prev"] = std::string(64, '0');
    builder_.add(record);
  }
  void request(const std::string& model, int status, double latency, double ttfb, json extra = json::object(),
               const std::string& container_id = "tnk-p") {
    json record = {{"event", "inference_request"},
                   {"policy", "inference"},
                   {"method", "POST"},
                   {"path", "/v1/chat/completions"},
                   {"status", status},
                   {"model_requested", "coder"},
                   {"model_served", model},
                   {"stream", false},
                   {"latency_ms", latency},
                   {"ttfb_ms", ttfb},
                   {"bytes_up", 100},
                   {"bytes_down", 200},
                   {"end", "closed"}};
    if (extra.is_object()) record.update(extra);
    add(record, container_id);
  }
  void start(const std::vector<std::string>& argv, const std::string& container_id = "tnk-p") {
    add({{"event", "session_start"}, {"workdir", "/workspace"}}, container_id);
    if (!argv.empty()) add({{"event", "exec_invocation"}, {"argv", argv}}, container_id);
  }
  void exit(const std::string& container_id = "tnk-p") {
    add({{"event", "session_exit"}, {"exit_code", 0}}, container_id);
  }
  const Summary& summary() const { return builder_.summary(); }

  SummaryBuilder builder_;
  uint64_t seq_ = 0;
};

TEST_F(SummaryTest, CountsPerModelWithTokensAndErrors) {
  request("qwen", 200, 10, 2, {{"prompt_tokens", 40}, {"completion_tokens", 300}});
  request("qwen", 200, 30, 4, {{"prompt_tokens", 2}, {"completion_tokens", 11}});
  request("qwen", 502, 50, 6);  // no usage: not counted in the sums
  request("llama", 0, 70, 0);   // no answer: an error, and no time to first byte
  request("llama", 429, 1, 1);  // the gateway's refusal
  const Summary& s = summary();
  EXPECT_EQ(s.records, 5u);
  ASSERT_EQ(s.models.size(), 2u);
  const RequestStats& qwen = s.models.at("qwen");
  EXPECT_EQ(qwen.requests, 3u);
  EXPECT_EQ(qwen.errors, 1u);
  EXPECT_EQ(qwen.prompt_tokens, 42u);
  EXPECT_EQ(qwen.completion_tokens, 311u);
  EXPECT_EQ(qwen.without_tokens, 1u);
  const RequestStats& llama = s.models.at("llama");
  EXPECT_EQ(llama.errors, 2u);
  EXPECT_EQ(llama.ttfb_ms, std::vector<double>{1});
  EXPECT_EQ(s.total.requests, 5u);
  EXPECT_EQ(s.total.errors, 3u);
  EXPECT_EQ(s.total.without_tokens, 3u);
  EXPECT_EQ(s.total.latency_ms, (std::vector<double>{10, 30, 50, 70, 1}));
}

TEST_F(SummaryTest, ModelServedFallsBackToTheModelRequested) {
  request("", 200, 1, 1);
  request("", 200, 1, 1, {{"model_requested", ""}});
  EXPECT_EQ(summary().models.at("coder").requests, 1u);
  EXPECT_EQ(summary().models.at("").requests, 1u);
}

TEST_F(SummaryTest, RequestsGoToTheLatestOpenSessionOfTheirSandbox) {
  request("m", 200, 1, 1);  // before any session
  start({"bash", "-l"});
  request("m", 200, 2, 1);
  start({"pi"});  // overlaps the first
  request("m", 200, 3, 1);
  request("m", 200, 4, 1, {}, "tnk-other");  // another sandbox's request: in no session of tnk-p
  exit();                                    // ends the latest started: pi
  request("m", 200, 5, 1);
  exit();
  request("m", 200, 6, 1);
  const Summary& s = summary();
  ASSERT_EQ(s.sessions.size(), 2u);
  EXPECT_EQ(s.sessions[0].start_seq, 2u);
  EXPECT_EQ(s.sessions[0].start_ts, 1736935802);
  EXPECT_EQ(s.sessions[0].argv, (std::vector<std::string>{"bash", "-l"}));
  EXPECT_EQ(s.sessions[0].exit_seq, std::optional<uint64_t>(11));
  EXPECT_EQ(s.sessions[1].argv, std::vector<std::string>{"pi"});
  EXPECT_EQ(s.sessions[1].exit_seq, std::optional<uint64_t>(9));
  EXPECT_EQ(s.by_session.at(0).latency_ms, (std::vector<double>{2, 5}));
  EXPECT_EQ(s.by_session.at(1).latency_ms, (std::vector<double>{3}));
  EXPECT_EQ(s.no_session.latency_ms, (std::vector<double>{1, 4, 6}));
}

TEST_F(SummaryTest, SessionWithoutExecOrExitStaysOpen) {
  start({});
  request("m", 200, 1, 1);
  ASSERT_EQ(summary().sessions.size(), 1u);
  EXPECT_TRUE(summary().sessions[0].argv.empty());
  EXPECT_FALSE(summary().sessions[0].exit_seq);
  EXPECT_EQ(summary().by_session.at(0).requests, 1u);
}

TEST_F(SummaryTest, NonRecordsAndWrongTypesAreNotCounted) {
  builder_.add(json{{"event", "inference_request"}});  // no seq: not an audit record
  builder_.add(json{{"seq", 1}});                      // no event
  request("m", 200, 1, 1, {{"latency_ms", "slow"}, {"prompt_tokens", -3}, {"status", "ok"}});
  const Summary& s = summary();
  EXPECT_EQ(s.records, 1u);
  EXPECT_EQ(s.total.requests, 1u);
  EXPECT_EQ(s.total.errors, 1u);  // no readable status counts as no answer
  EXPECT_TRUE(s.total.latency_ms.empty());
  EXPECT_TRUE(s.total.ttfb_ms.empty());
  EXPECT_EQ(s.total.without_tokens, 1u);
}

TEST(SummaryPercentiles, MedianAndNearestRankP95) {
  EXPECT_FALSE(median({}));
  EXPECT_FALSE(p95({}));
  EXPECT_EQ(median({3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(p95({7}), 7);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(p95(hundred), 95);
  hundred.push_back(101);
  EXPECT_EQ(p95(hundred), 96);  // ceil(0.95 * 101) = 96
  EXPECT_EQ(p95({1, 2, 3}), 3);
}

TEST_F(SummaryTest, Json) {
  start({"bash"});
  request("qwen", 200, 10, 2, {{"prompt_tokens", 4}, {"completion_tokens", 5}});
  exit();
  request("qwen", 0, 20, 0);
  json doc = to_json(summary());
  json stats_in_session = {{"requests", 1},
                           {"errors", 0},
                           {"prompt_tokens", 4},
                           {"completion_tokens", 5},
                           {"without_tokens", 0},
                           {"latency_ms", {{"median", 10.0}, {"p95", 10.0}}},
                           {"ttfb_ms", {{"median", 2.0}, {"p95", 2.0}}}};
  json outside = {{"requests", 1},
                  {"errors", 1},
                  {"prompt_tokens", 0},
                  {"completion_tokens", 0},
                  {"without_tokens", 1},
                  {"latency_ms", {{"median", 20.0}, {"p95", 20.0}}},
                  {"ttfb_ms", {{"median", nullptr}, {"p95", nullptr}}}};
  EXPECT_EQ(doc["records"], 5);
  ASSERT_EQ(doc["sessions"].size(), 2u);
  json first = stats_in_session;
  first["session"] = {
      {"start_seq", 1}, {"start_ts", 1736935801}, {"container_id", "tnk-p"}, {"argv", {"bash"}}, {"exit_seq", 4}};
  EXPECT_EQ(doc["sessions"][0], first);
  json second = outside;
  second["session"] = nullptr;
  EXPECT_EQ(doc["sessions"][1], second);
  ASSERT_EQ(doc["models"].size(), 1u);
  EXPECT_EQ(doc["models"][0]["model"], "qwen");
  EXPECT_EQ(doc["models"][0]["requests"], 2);
  EXPECT_EQ(doc["total"]["latency_ms"], (json{{"median", 15.0}, {"p95", 20.0}}));
  EXPECT_EQ(doc["total"]["ttfb_ms"], (json{{"median", 2.0}, {"p95", 2.0}}));
}

TEST_F(SummaryTest, EmptyLogIsAllZeros) {
  json doc = to_json(summary());
  EXPECT_EQ(doc["records"], 0);
  EXPECT_EQ(doc["models"], json::array());
  EXPECT_EQ(doc["sessions"], json::array());
  EXPECT_EQ(doc["total"]["requests"], 0);
  EXPECT_EQ(doc["total"]["latency_ms"]["median"], nullptr);
}

}  // namespace
}  // namespace tnk::audit
