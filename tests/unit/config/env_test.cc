// TNK_* overrides: applied after tnk.toml; an invalid value is one warning in the original's words
// and the previous value stays.
#include <functional>

#include "config_test_util.h"

namespace tnk::testing_config {
namespace {

struct EnvCase {
  std::string var;
  std::string valid;
  std::function<bool(const Config&)> took_effect;  // the valid value is in place, with source env
  std::string invalid;                             // "" when every non-empty value is valid
};

std::vector<EnvCase> env_cases(const std::string& home) {
  return {
      {"TNK_SERVER_PORT", "9000",
       [](const Config& c) { return c.server_port.value == 9000 && c.server_port.source == Source::kEnv; }, "80x"},
      {"TNK_WORKSPACE_ROOT", "~/src",
       [home](const Config& c) {
         return c.workspace_root_path == home + "/src" && c.workspace_root.source == Source::kEnv;
       },
       "a\tb"},
      {"TNK_MODEL_DIR", "${HOME}/models",
       [home](const Config& c) { return c.model_dir_path == home + "/models" && c.model_dir.source == Source::kEnv; },
       ""},
      {"TNK_PROVISION_PROFILE", "claude", [](const Config& c) { return c.default_provision_profile.value == "claude"; },
       "../etc"},
      {"TNK_ENGINE_RUNTIME", "mlx", [](const Config& c) { return c.default_engine_runtime.value == "mlx"; },
       "llama server"},
      {"TNK_ENGINE_PRESET", "big",
       [](const Config& c) { return c.default_engine_preset.value == std::optional<std::string>("big"); }, "a/b"},
      {"TNK_ENGINE_BIND_HOST", "::1", [](const Config& c) { return c.default_engine_bind_host.value == "::1"; }, "a b"},
      {"TNK_BACKEND", "vm", [](const Config& c) { return c.default_backend.value == "vm"; }, "docker"},
      {"TNK_INFERENCE_URL", "http://10.0.0.2:8000/v1",
       [](const Config& c) { return c.inference_url.value == std::optional<std::string>("http://10.0.0.2:8000/v1"); },
       "10.0.0.2:8000"},
      {"TNK_MODEL_NAME", "qwen",
       [](const Config& c) { return c.model_name.value == std::optional<std::string>("qwen"); }, ""},
      {"TNK_CTX_WINDOW", "65536",
       [](const Config& c) { return c.context_window.value == std::optional<uint64_t>(65536); }, "-1"},
      {"TNK_NETWORK", "none", [](const Config& c) { return c.default_network.value == NetworkPolicy::kNone; }, "some"},
      {"TNK_AUDIT", "TRUE", [](const Config& c) { return c.audit.value && c.audit.source == Source::kEnv; }, "yes"},
      {"TNK_AUDIT_DIR", "$HOME/a", [home](const Config& c) { return c.audit_dir_path == home + "/a"; }, "rel"},
      {"TNK_ALLOW_UNLIMITED", "1",
       [](const Config& c) { return c.allow_unlimited.value && c.allow_unlimited.source == Source::kEnv; }, "yes"},
  };
}

TEST_F(ConfigTest, EachVariableOverridesWithSourceEnv) {
  write_config("server_port = 8081\n");
  for (const EnvCase& ec : env_cases(home())) {
    env_.set(ec.var, ec.valid);
    Config c = load_ok();
    EXPECT_TRUE(ec.took_effect(c)) << ec.var;
    env_.unset(ec.var);
  }
  EXPECT_EQ(err(), "");
}

TEST_F(ConfigTest, EachInvalidVariableIsOneWarningAndKeepsThePreviousValue) {
  for (const EnvCase& ec : env_cases(home())) {
    std::vector<std::string> bads = {""};  // empty is invalid everywhere
    if (!ec.invalid.empty()) bads.push_back(ec.invalid);
    for (const std::string& bad : bads) {
      if (ec.var == "TNK_ENGINE_PRESET" && bad.empty()) continue;  // its own message, below
      std::ostringstream err;
      Log log(err);
      Env env = env_;
      env.set(ec.var, bad);
      write_config("");
      auto c = load_config(paths_, env, log);
      ASSERT_TRUE(c.ok());
      EXPECT_FALSE(ec.took_effect(*c)) << ec.var;
      std::string shown = bad == "a\tb" ? "a?b" : bad;
      EXPECT_EQ(err.str(), "warning: invalid " + ec.var + "='" + shown + "'; ignoring env override\n");
    }
  }
}

TEST_F(ConfigTest, InvalidPortKeepsTheFileValue) {
  write_config("# port\nserver_port = 8081\n");
  env_.set("TNK_SERVER_PORT", "70000");
  Config c = load_ok();
  EXPECT_EQ(c.server_port.value, 8081);
  EXPECT_EQ(c.server_port.source, Source::kFile);
  EXPECT_EQ(c.server_port.line, 2);
  load_ok();  // loaded twice with the same Log: still one warning
  EXPECT_EQ(err(), "warning: invalid TNK_SERVER_PORT='70000'; ignoring env override\n");
}

TEST_F(ConfigTest, EmptyPresetHasItsOwnWarning) {
  write_config("default_engine_preset = \"small\"\n");
  env_.set("TNK_ENGINE_PRESET", "");
  Config c = load_ok();
  EXPECT_EQ(c.default_engine_preset.value, std::optional<std::string>("small"));
  EXPECT_EQ(c.default_engine_preset.source, Source::kFile);
  EXPECT_EQ(err(), "warning: TNK_ENGINE_PRESET is empty; ignoring env override\n");
}

TEST_F(ConfigTest, EnvWinsOverFile) {
  write_config("default_backend = \"vm\"\naudit = true\n");
  env_.set("TNK_BACKEND", "lima");
  env_.set("TNK_AUDIT", "0");
  Config c = load_ok();
  EXPECT_EQ(c.default_backend.value, "lima");
  EXPECT_EQ(c.default_backend.source, Source::kEnv);
  EXPECT_EQ(c.default_backend.line, 0);
  EXPECT_FALSE(c.audit.value);
}

TEST_F(ConfigTest, AuditAcceptsOneZeroTrueFalse) {
  for (auto [text, value] : {std::pair{"1", true}, {"0", false}, {"true", true}, {"False", false}}) {
    env_.set("TNK_AUDIT", text);
    EXPECT_EQ(load_ok().audit.value, value) << text;
  }
}

// Security review M5's opt-in, like TNK_AUDIT; the variable wins over the file either way.
TEST_F(ConfigTest, AllowUnlimitedAcceptsOneZeroTrueFalseAndWinsOverTheFile) {
  write_config("allow_unlimited = true\n");
  for (auto [text, value] : {std::pair{"1", true}, {"0", false}, {"true", true}, {"False", false}}) {
    env_.set("TNK_ALLOW_UNLIMITED", text);
    Config c = load_ok();
    EXPECT_EQ(c.allow_unlimited.value, value) << text;
    EXPECT_EQ(c.allow_unlimited.source, Source::kEnv) << text;
  }
  env_.unset("TNK_ALLOW_UNLIMITED");
  EXPECT_EQ(load_ok().allow_unlimited.source, Source::kFile);
}

}  // namespace
}  // namespace tnk::testing_config
