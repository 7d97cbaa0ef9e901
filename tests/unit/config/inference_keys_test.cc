// tnk.toml's [inference] table: its keys and every error, the API key read from a variable or a file
// (and every refusal), and `config show`, which says where the key comes from but never shows it.
#include <sys/stat.h>

#include "config/api_key.h"
#include "config/config_show.h"
#include "config_test_util.h"
#include "core/trusted_file.h"

namespace tnk::testing_config {
namespace {

TEST_F(ConfigTest, InferenceDefaults) {
  Config c = load_ok();
  EXPECT_FALSE(c.inference_api_key_env.value);
  EXPECT_FALSE(c.inference_api_key_file.value);
  EXPECT_EQ(c.inference_concurrency.value, 4u);
  EXPECT_TRUE(c.inference_aliases.value.empty());
  EXPECT_EQ(*read_api_key(c, env_, home()), "");
  EXPECT_EQ(api_key_source(c, home()), "none");
}

TEST_F(ConfigTest, InferenceKeysFromFile) {
  write_config(
      "[inference]\napi_key_env = \"LLM_KEY\"\nconcurrency = 64\n[inference.aliases]\n\"gpt-4o\" = \"qwen\"\n"
      "sonnet = \"models/qwen-coder.gguf\"\n");
  Config c = load_ok();
  EXPECT_EQ(err(), "");
  EXPECT_EQ(c.inference_api_key_env.value, "LLM_KEY");
  EXPECT_EQ(c.inference_api_key_env.line, 2);
  EXPECT_EQ(c.inference_concurrency.value, 64u);
  EXPECT_EQ(c.inference_aliases.value,
            (std::map<std::string, std::string>{{"gpt-4o", "qwen"}, {"sonnet", "models/qwen-coder.gguf"}}));
  EXPECT_EQ(c.inference_aliases.source, Source::kFile);
  EXPECT_EQ(c.inference_aliases.line, 4);
}

TEST_F(ConfigTest, InferenceInlineTables) {
  write_config("inference = { api_key_file = \"~/k\", aliases = { a = \"b\" } }\n");
  Config c = load_ok();
  EXPECT_EQ(c.inference_api_key_file.value, "~/k");
  EXPECT_EQ(api_key_source(c, home()), "file " + home() + "/k");
  EXPECT_EQ(c.inference_aliases.value.at("a"), "b");
}

struct BadInference {
  std::string toml;
  std::string message;  // after "<file>:"
};

TEST_F(ConfigTest, InferenceBadValuesNameFileLineColumnAndKey) {
  const std::string aliases_expect = "a table of name = \"served model\" (both non-empty strings)";
  const BadInference cases[] = {
      {"inference = 3\n", "1:13: key 'inference' must be a table"},
      {"[inference]\napi_key_env = \"1KEY\"\n",
       "2:15: key 'inference.api_key_env' must be a variable name (letters, digits, '_'; not starting with a digit)"},
      {"[inference]\napi_key_env = \"MY-KEY\"\n",
       "2:15: key 'inference.api_key_env' must be a variable name (letters, digits, '_'; not starting with a digit)"},
      {"[inference]\napi_key_file = \"\"\n",
       "2:16: key 'inference.api_key_file' must be a non-empty string (a file path; ~ and $HOME are expanded)"},
      {"[inference]\nconcurrency = 0\n", "2:15: key 'inference.concurrency' must be an integer from 1 to 64"},
      {"[inference]\nconcurrency = 65\n", "2:15: key 'inference.concurrency' must be an integer from 1 to 64"},
      {"[inference]\nconcurrency = \"4\"\n", "2:15: key 'inference.concurrency' must be an integer from 1 to 64"},
      {"[inference]\naliases = \"x\"\n", "2:11: key 'inference.aliases' must be " + aliases_expect},
      {"[inference.aliases]\nfast = \"\"\n", "2:8: key 'inference.aliases.fast' must be " + aliases_expect},
      {"[inference.aliases]\nfast = 3\n", "2:8: key 'inference.aliases.fast' must be " + aliases_expect},
      {"[inference.aliases]\n\"\" = \"qwen\"\n", "2:6: key 'inference.aliases.' must be " + aliases_expect},
      {"[inference]\napi_key_env = \"K\"\napi_key_file = \"~/k\"\n",
       "3: keys 'inference.api_key_env' and 'inference.api_key_file' are both set"},
  };
  for (const BadInference& bad : cases) {
    write_config(bad.toml);
    auto c = load();
    ASSERT_FALSE(c.ok()) << bad.toml;
    EXPECT_EQ(c.error().message, file() + ":" + bad.message) << bad.toml;
    EXPECT_NE(c.error().hint.find(file()), std::string::npos);
    EXPECT_EQ(exit_code_for(c.error().kind), kExitFailed);
  }
}

TEST_F(ConfigTest, InferenceUnknownKeyIsAWarning) {
  write_config("[inference]\nretries = 3\n");
  load_ok();
  EXPECT_EQ(err(), "warning: " + file() + ":2: unknown key 'inference.retries' (ignored)\n");
}

TEST_F(ConfigTest, ApiKeyFromTheNamedVariable) {
  write_config("[inference]\napi_key_env = \"LLM_KEY\"\n");
  Config c = load_ok();
  env_.set("LLM_KEY", "sk-secret-1");
  EXPECT_EQ(*read_api_key(c, env_, home()), "sk-secret-1");
  EXPECT_EQ(api_key_source(c, home()), "env LLM_KEY");
}

TEST_F(ConfigTest, ApiKeyVariableUnsetOrEmptyNamesTheKeyAndVariable) {
  write_config("[inference]\napi_key_env = \"LLM_KEY\"\n");
  Config c = load_ok();
  auto unset = read_api_key(c, env_, home());
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.error().message, "inference.api_key_env names LLM_KEY, which is not set in tnk's environment");
  EXPECT_EQ(unset.error().hint,
            "export LLM_KEY=<the server's API key> before running tnk, or remove inference.api_key_env from " + file());
  EXPECT_EQ(exit_code_for(unset.error().kind), kExitNotFound);
  env_.set("LLM_KEY", "");
  auto empty = read_api_key(c, env_, home());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "inference.api_key_env names LLM_KEY, which is empty in tnk's environment");
  env_.set("LLM_KEY", "sk one");
  auto spaced = read_api_key(c, env_, home());
  ASSERT_FALSE(spaced.ok());
  EXPECT_NE(spaced.error().message.find("has spaces or control characters"), std::string::npos);
  EXPECT_EQ(spaced.error().message.find("sk one"), std::string::npos);  // the key is never quoted
}

class ApiKeyFileTest : public ConfigTest {
 protected:
  Config with_key_file(const std::string& content, mode_t mode) {
    write_config("[inference]\napi_key_file = \"~/llm.key\"\n");
    key_ = root_ / "home" / "llm.key";
    EXPECT_TRUE(write_file_atomic(key_, content, mode).ok());
    ::chmod(key_.c_str(), mode);
    return load_ok();
  }
  std::filesystem::path key_;
};

TEST_F(ApiKeyFileTest, KeyWithoutItsTrailingNewline) {
  Config c = with_key_file("sk-file-2\n", 0600);
  EXPECT_EQ(*read_api_key(c, env_, home()), "sk-file-2");
  EXPECT_EQ(api_key_source(c, home()), "file " + key_.string());
}

TEST_F(ApiKeyFileTest, MissingFileIsNotFoundAndNamesTheKey) {
  Config c = with_key_file("x", 0600);
  std::filesystem::remove(key_);
  auto key = read_api_key(c, env_, home());
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().message,
            "inference.api_key_file in " + file() + " names " + key_.string() + ": No such file or directory");
  EXPECT_NE(key.error().hint.find("write the server's API key into " + key_.string()), std::string::npos);
  EXPECT_EQ(exit_code_for(key.error().kind), kExitNotFound);
}

TEST_F(ApiKeyFileTest, FileOthersCanReadIsRefusedWithAChmodHint) {
  for (mode_t mode : {mode_t{0644}, mode_t{0640}, mode_t{0604}}) {
    Config c = with_key_file("sk-3\n", mode);
    auto key = read_api_key(c, env_, home());
    ASSERT_FALSE(key.ok()) << mode;
    EXPECT_EQ(key.error().message, "refusing to read the inference API key from " + key_.string() + ": its mode is " +
                                       octal_mode(mode) + ", so others can read it " + "(inference.api_key_file in " +
                                       file() + ")");
    EXPECT_EQ(key.error().hint.rfind("`chmod 600 " + key_.string() + "`", 0), 0u);
    EXPECT_EQ(exit_code_for(key.error().kind), kExitPermission);
  }
  Config c = with_key_file("sk-3\n", 0400);  // the control: only the owner can read it
  EXPECT_EQ(*read_api_key(c, env_, home()), "sk-3");
}

TEST_F(ApiKeyFileTest, EmptyOrMultiLineKeyIsRefused) {
  for (const char* content : {"", "\n", "sk-a\nsk-b\n"}) {
    Config c = with_key_file(content, 0600);
    auto key = read_api_key(c, env_, home());
    ASSERT_FALSE(key.ok()) << content;
    EXPECT_NE(key.error().message.find(key_.string()), std::string::npos);
    EXPECT_EQ(key.error().hint, "write the key alone into " + key_.string());
  }
}

TEST_F(ConfigTest, ShowSaysWhereTheKeyComesFromAndNeverTheKey) {
  write_config("[inference]\napi_key_env = \"LLM_KEY\"\n[inference.aliases]\nfast = \"qwen\"\n");
  env_.set("LLM_KEY", "sk-never-shown");
  Config c = load_ok();
  std::string text = config_show_text(c);
  EXPECT_NE(text.find("\ninference.api_key_env     LLM_KEY         (file, line 2)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ninference.api_key_file    <none>          (default)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ninference.concurrency     4               (default)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ninference.aliases         fast=qwen       (file, line 3)\n"), std::string::npos) << text;
  nlohmann::json json = config_to_json(c);
  EXPECT_EQ(json["settings"]["inference.aliases"]["value"], (nlohmann::json{{"fast", "qwen"}}));
  EXPECT_EQ(json["settings"]["inference.api_key_env"]["value"], "LLM_KEY");
  EXPECT_EQ(text.find("sk-never-shown"), std::string::npos);
  EXPECT_EQ(json.dump().find("sk-never-shown"), std::string::npos);
}

}  // namespace
}  // namespace tnk::testing_config
