// Pure helpers of config/: sizes, inference URLs, and `config show` output.
#include <algorithm>

#include "config/config_show.h"
#include "config/keys.h"
#include "config/size.h"
#include "config_test_util.h"

namespace tnk::testing_config {
namespace {

TEST(ParseSize, UnitsFractionsAndBareNumbers) {
  EXPECT_EQ(*parse_size("2GiB"), 2 * kGiB);
  EXPECT_EQ(*parse_size("512MiB"), 512u << 20);
  EXPECT_EQ(*parse_size("1.5GiB"), 3 * kGiB / 2);
  EXPECT_EQ(*parse_size("2G"), 2 * kGiB);
  EXPECT_EQ(*parse_size("2gb"), 2 * kGiB);
  EXPECT_EQ(*parse_size("2048M"), 2 * kGiB);
  EXPECT_EQ(*parse_size("2"), 2 * kGiB);
  EXPECT_EQ(*parse_size(" 2 GiB "), 2 * kGiB);
  EXPECT_EQ(*parse_size("100k"), 102400u);
  EXPECT_EQ(*parse_size("4096B"), 4096u);
  EXPECT_EQ(*parse_size("1TiB"), 1024 * kGiB);
  EXPECT_EQ(*parse_size("0.5M"), 512u << 10);
  EXPECT_EQ(*parse_size("0"), 0u);
}

TEST(ParseSize, RejectsGarbageAndOverflow) {
  for (const char* bad : {"", "GiB", "2XB", "-1G", "1.G", ".5G", "1,5G", "2 G B", "1e3", "0x10"}) {
    auto size = parse_size(bad);
    ASSERT_FALSE(size.ok()) << bad;
    EXPECT_EQ(size.error().message, std::string("invalid size '") + bad + "'");
    EXPECT_NE(size.error().hint, "");
  }
  EXPECT_FALSE(parse_size("99999999999999999999G").ok());
  EXPECT_FALSE(parse_size("16777216TiB").ok());
  EXPECT_EQ(*parse_size("18446744073709551615B"), UINT64_MAX);
}

TEST(FormatSize, LargestExactUnitAndRoundTrip) {
  EXPECT_EQ(format_size(2 * kGiB), "2GiB");
  EXPECT_EQ(format_size(512u << 20), "512MiB");
  EXPECT_EQ(format_size(3 * kGiB / 2), "1536MiB");
  EXPECT_EQ(format_size(1024 * kGiB), "1TiB");
  EXPECT_EQ(format_size(100 * 1024), "100KiB");
  EXPECT_EQ(format_size(4097), "4097B");
  EXPECT_EQ(format_size(0), "0B");
  for (uint64_t n : {uint64_t{1}, uint64_t{4097}, 3 * kGiB / 2, 7 * kGiB, UINT64_MAX}) {
    EXPECT_EQ(*parse_size(format_size(n)), n) << n;
  }
}

Config url_config() {
  Config c;
  c.server_port.value = 9000;
  return c;
}

TEST(InferenceUrl, DefaultFromBindHostAndPort) {
  Config c = url_config();
  EXPECT_EQ(host_inference_url(c), "http://127.0.0.1:9000/v1");
  EXPECT_EQ(guest_inference_url(c), "http://host.lima.internal:9000/v1");
  EXPECT_EQ(guest_inference_url(c, "10.0.2.2"), "http://10.0.2.2:9000/v1");
  c.default_engine_bind_host.value = "192.168.1.5";
  EXPECT_EQ(host_inference_url(c), "http://192.168.1.5:9000/v1");
  c.default_engine_bind_host.value = "::1";
  EXPECT_EQ(host_inference_url(c), "http://[::1]:9000/v1");
}

TEST(InferenceUrl, WildcardBindConnectsThroughLoopback) {
  Config c = url_config();
  for (const char* wildcard : {"0.0.0.0", "", "::"}) {
    c.default_engine_bind_host.value = wildcard;
    EXPECT_EQ(host_inference_url(c), "http://127.0.0.1:9000/v1") << wildcard;
    EXPECT_EQ(guest_inference_url(c), "http://host.lima.internal:9000/v1") << wildcard;
  }
}

TEST(InferenceUrl, CustomUrlKeepsSchemePortAndPath) {
  Config c = url_config();
  c.inference_url.value = "https://llm.example.com/api/v1";
  EXPECT_EQ(host_inference_url(c), "https://llm.example.com/api/v1");
  EXPECT_EQ(guest_inference_url(c), "https://host.lima.internal:443/api/v1");
  c.inference_url.value = "http://10.0.0.5/v1";
  EXPECT_EQ(guest_inference_url(c, "10.0.2.2"), "http://10.0.2.2:80/v1");
  c.inference_url.value = "http://127.0.0.1:11434";
  EXPECT_EQ(guest_inference_url(c), "http://host.lima.internal:11434");
  c.inference_url.value = "http://[::1]:8000/v1?x=1";
  EXPECT_EQ(guest_inference_url(c), "http://host.lima.internal:8000/v1?x=1");
}

TEST_F(ConfigTest, ShowTextOneLinePerKeyWithSource) {
  write_config("# x\nmodel_dir = \"/m\"\n");
  env_.set("TNK_SERVER_PORT", "9001");
  std::string text = config_show_text(load_ok());
  EXPECT_EQ(text.substr(0, text.find('\n')), "file                      " + file());
  EXPECT_NE(text.find("\nserver_port               9001            (env TNK_SERVER_PORT)\n"), std::string::npos);
  EXPECT_NE(text.find("\nworkspace_root            " + home() + "/code (default)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmodel_dir                 /m              (file, line 2)\n"), std::string::npos);
  EXPECT_NE(text.find("\ndefault_engine_preset     <none>          (default)\n"), std::string::npos);
  EXPECT_NE(text.find("\nsandbox.memory            2GiB            (default)\n"), std::string::npos);
  EXPECT_NE(text.find("\naudit                     false           (default)\n"), std::string::npos);
  EXPECT_NE(text.find("\nallow_unlimited           false           (default)\n"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 32);
}

TEST_F(ConfigTest, ShowTextMarksAMissingFile) {
  std::string text = config_show_text(load_ok());
  EXPECT_EQ(text.substr(0, text.find('\n')), "file                      " + file() + " (not found)");
  EXPECT_NE(text.find("\nserver_port               8080            (default)\n"), std::string::npos);
}

TEST_F(ConfigTest, JsonHasEveryKeyValueAndSource) {
  write_config("\n\ncontext_window = 4096\n");
  env_.set("TNK_NETWORK", "open");
  auto json = config_to_json(load_ok());
  EXPECT_EQ(json["file"], file());
  EXPECT_EQ(json["file_exists"], true);
  const auto& s = json["settings"];
  EXPECT_EQ(s["server_port"], (nlohmann::json{{"value", 8080}, {"source", "default"}}));
  EXPECT_EQ(s["context_window"], (nlohmann::json{{"value", 4096}, {"source", "file"}, {"line", 3}}));
  EXPECT_EQ(s["default_network"], (nlohmann::json{{"value", "open"}, {"source", "env"}, {"env", "TNK_NETWORK"}}));
  EXPECT_TRUE(s["default_engine_preset"]["value"].is_null());
  EXPECT_EQ(s["sandbox.memory"]["value"], 2 * kGiB);
  EXPECT_EQ(s["workspace_root"]["value"], "~/code");
  EXPECT_EQ(s["workspace_root"]["path"], home() + "/code");
  EXPECT_EQ(s.size(), config::keys().size());
  for (const auto& key : config::keys()) EXPECT_TRUE(s.contains(std::string(key.name))) << key.name;
}

}  // namespace
}  // namespace tnk::testing_config
