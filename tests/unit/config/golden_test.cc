// What the table of tnk.toml keys feeds, against golden files (tests/unit/config/golden/): the template,
// `config show` as text and JSON, and the messages for bad values in the file and in TNK_* variables.
// TNK_UPDATE_GOLDEN=1 rewrites them; review the diff, since each line is something a user reads.
#include <utility>
#include <vector>

#include "config/config_show.h"
#include "config/config_template.h"
#include "config_test_util.h"
#include "golden.h"

namespace tnk::testing_config {
namespace {

class ConfigGoldenTest : public ConfigTest {
 protected:
  // The temporary root replaced, so that the files do not depend on it.
  void expect(const std::string& name, std::string actual) const {
    const std::string root = root_.string();
    for (size_t at = 0; (at = actual.find(root, at)) != std::string::npos;) actual.replace(at, root.size(), "<root>");
    testing_support::expect_golden("config/golden/" + name, actual);
  }
  std::string shown() {
    Config config = load_ok();
    return config_show_text(config) + config_to_json(config).dump(2) + "\n";
  }
};

TEST_F(ConfigGoldenTest, Template) { expect("template.toml", config_template()); }

TEST_F(ConfigGoldenTest, ShowDefaults) { expect("show_defaults.txt", shown()); }

TEST_F(ConfigGoldenTest, ShowEveryKeyFromTheFileAndSomeFromTheEnvironment) {
  write_config(R"(server_port = 9000
workspace_root = "$HOME/work"
model_dir = "/srv/models"
default_provision_profile = "claude"
default_engine_runtime = "ollama"
default_engine_preset = "big.v2"
default_engine_bind_host = "::1"
default_backend = "ns"
inference_url = "https://infer.example:8443/api/v1"
model_name = "qwen"
context_window = 65536
default_network = "allowlist"
allow_unlimited = true
audit = true
audit_dir = "~/audit"

[sandbox]
cpus = 6
memory = "1536MiB"
disk = 20

[inference]
api_key_file = "~/.config/tnk/inference.key"
concurrency = 9
request_limit = "1MiB"
answer_limit = "3GiB"

[inference.aliases]
"gpt-4o" = "qwen2.5-coder-7b"
fast = "qwen2.5-coder-1.5b"
)");
  env_.set("TNK_SERVER_PORT", "9100");
  env_.set("TNK_MODEL_NAME", "from-env");
  env_.set("TNK_NETWORK", "open");
  env_.set("TNK_AUDIT_DIR", "$HOME/audit-env");
  env_.set("TNK_ALLOW_UNLIMITED", "0");
  expect("show_every_key.txt", shown());
}

// Each file after a comment line, so that the line numbers in the messages are not all 1.
const std::vector<std::string> kBadFiles = {
    "server_port = 0",
    "server_port = \"8080\"",
    "server_port = { a = 1 }",
    "workspace_root = \"\"",
    "model_dir = 3",
    "default_provision_profile = \".x\"",
    "default_engine_runtime = \"a b\"",
    "default_engine_preset = \"-x\"",
    "default_engine_bind_host = \"a b\"",
    "default_backend = \"docker\"",
    "inference_url = \"ftp://x\"",
    "model_name = \"\"",
    "context_window = 0",
    "default_network = \"wide\"",
    "allow_unlimited = \"yes\"",
    "audit = 1",
    "audit_dir = \"relative/dir\"",
    "sandbox = 3",
    "[sandbox]\ncpus = 0",
    "[sandbox]\nmemory = \"lots\"",
    "[sandbox]\ndisk = 0",
    "[inference]\napi_key_env = \"1X\"",
    "[inference]\napi_key_file = \"\"",
    "[inference]\nconcurrency = 65",
    "[inference]\nrequest_limit = \"0\"",
    "[inference]\nanswer_limit = true",
    "[inference]\naliases = 3",
    "[inference.aliases]\na = \"b\"\n\"\" = \"x\"",
    "[inference.aliases]\nok = 3",
    "[inference]\napi_key_env = \"A\"\napi_key_file = \"f\"",
    "foo = 1\n[sandbox]\nbar = 2\n[sandbox.baz]\nx = 1\n[inference.aliases.deeper]\ny = 1",
    "server_port = ",
};

TEST_F(ConfigGoldenTest, BadValuesInTheFile) {
  std::string out;
  for (const std::string& text : kBadFiles) {
    err_.str("");
    write_config("# tnk.toml\n" + text + "\n");
    auto config = load();
    out += "--- " + text + "\n" + err();
    if (!config.ok()) out += "error: " + config.error().message + "\nhint: " + config.error().hint + "\n";
  }
  expect("bad_file_values.txt", out);
}

TEST_F(ConfigGoldenTest, BadValuesInTheEnvironment) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"TNK_SERVER_PORT", "65536"},     {"TNK_WORKSPACE_ROOT", ""},
      {"TNK_MODEL_DIR", "a\x01z"},      {"TNK_PROVISION_PROFILE", ".x"},
      {"TNK_ENGINE_RUNTIME", "a.b"},    {"TNK_ENGINE_PRESET", ""},
      {"TNK_ENGINE_BIND_HOST", "a b"},  {"TNK_BACKEND", "docker"},
      {"TNK_INFERENCE_URL", "ftp://x"}, {"TNK_MODEL_NAME", ""},
      {"TNK_CTX_WINDOW", "0"},          {"TNK_NETWORK", "wide"},
      {"TNK_ALLOW_UNLIMITED", "yes"},   {"TNK_AUDIT", "2"},
      {"TNK_AUDIT_DIR", "relative"},
  };
  for (const auto& [var, value] : bad) env_.set(var, value);
  load_ok();
  std::string out = err();
  env_.set("TNK_ENGINE_PRESET", "-x");
  err_.str("");
  load_ok();
  out += err();
  expect("bad_env_values.txt", out);
}

}  // namespace
}  // namespace tnk::testing_config
