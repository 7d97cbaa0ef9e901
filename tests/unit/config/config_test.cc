// tnk.toml loading: defaults, every key from a file, errors with <file>:<line>:<col>, unknown keys,
// and the `config init` template.
#include <sys/stat.h>

#include "config/config_template.h"
#include "config_test_util.h"
#include "core/files.h"

namespace tnk::testing_config {
namespace {

TEST_F(ConfigTest, DefaultsWithoutFileAndOneInfoLine) {
  Config c = load_ok();
  EXPECT_FALSE(c.file_exists);
  EXPECT_EQ(c.file, root_ / "xdg" / "tnk" / "tnk.toml");  // XDG_CONFIG_HOME honoured
  EXPECT_EQ(err(), "info: using default settings (run `tnk config init` to create " + file() + ")\n");
  EXPECT_EQ(c.server_port.value, 8080);
  EXPECT_EQ(c.server_port.source, Source::kDefault);
  EXPECT_EQ(c.model_dir.value, "~/opt/models");
  EXPECT_EQ(c.model_dir_path, home() + "/opt/models");
  EXPECT_EQ(c.default_provision_profile.value, "pi");
  EXPECT_EQ(c.default_engine_runtime.value, "llama");
  EXPECT_FALSE(c.default_engine_preset.value);
  EXPECT_EQ(c.default_engine_bind_host.value, "127.0.0.1");
  EXPECT_EQ(c.default_backend.value, "auto");
  EXPECT_FALSE(c.inference_url.value);
  EXPECT_FALSE(c.model_name.value);
  EXPECT_FALSE(c.context_window.value);
  EXPECT_EQ(c.default_network.value, NetworkPolicy::kInference);
  EXPECT_EQ(c.sandbox_cpus.value, 2u);
  EXPECT_EQ(c.sandbox_memory_bytes.value, 2 * kGiB);
  EXPECT_EQ(c.sandbox_disk_bytes.value, 8 * kGiB);
  EXPECT_FALSE(c.audit.value);
  EXPECT_EQ(c.audit_dir_path, root_ / "state" / "tnk" / "audit");
  EXPECT_EQ(c.audit_dir.source, Source::kDefault);
  EXPECT_FALSE(c.allow_unlimited.value);  // security review M5: a start without limits is refused
}

// Bug 17: the original's sandbox code defaulted to $HOME/src while `config show` said ~/code.
TEST_F(ConfigTest, Bug17DefaultWorkspaceRootIsCodeEverywhere) {
  Config c = load_ok();
  EXPECT_EQ(c.workspace_root.value, "~/code");
  EXPECT_EQ(c.workspace_root_path, home() + "/code");
  EXPECT_EQ(default_config(paths_).workspace_root_path, home() + "/code");
}

TEST_F(ConfigTest, EveryKeyFromFile) {
  write_config(R"(server_port = 9090
workspace_root = "$HOME/projects"
model_dir = "/srv/models"
default_provision_profile = "claude"
default_engine_runtime = "vllm"
default_engine_preset = "qwen-7b"
default_engine_bind_host = "0.0.0.0"
default_backend = "ns"
inference_url = "https://llm.example.com/v1"
model_name = "qwen2.5-coder:7b"
context_window = 32768
default_network = "restricted"
audit = true
audit_dir = "~/audit"
allow_unlimited = true

[sandbox]
cpus = 4
memory = "512MiB"
disk = 20
)");
  Config c = load_ok();
  EXPECT_TRUE(c.file_exists);
  EXPECT_EQ(err(), "");
  EXPECT_EQ(c.server_port.value, 9090);
  EXPECT_EQ(c.server_port.source, Source::kFile);
  EXPECT_EQ(c.server_port.line, 1);
  EXPECT_EQ(c.workspace_root_path, home() + "/projects");
  EXPECT_EQ(c.workspace_root.line, 2);
  EXPECT_EQ(c.model_dir_path, "/srv/models");
  EXPECT_EQ(c.default_provision_profile.value, "claude");
  EXPECT_EQ(c.default_engine_runtime.value, "vllm");
  EXPECT_EQ(c.default_engine_preset.value, "qwen-7b");
  EXPECT_EQ(c.default_engine_preset.source, Source::kFile);
  EXPECT_EQ(c.default_engine_bind_host.value, "0.0.0.0");
  EXPECT_EQ(c.default_backend.value, "ns");
  EXPECT_EQ(c.inference_url.value, "https://llm.example.com/v1");
  EXPECT_EQ(c.model_name.value, "qwen2.5-coder:7b");
  EXPECT_EQ(c.context_window.value, 32768u);
  EXPECT_EQ(c.default_network.value, NetworkPolicy::kInference);
  EXPECT_TRUE(c.audit.value);
  EXPECT_EQ(c.audit_dir_path, home() + "/audit");
  EXPECT_EQ(c.audit_dir.line, 14);
  EXPECT_TRUE(c.allow_unlimited.value);
  EXPECT_EQ(c.allow_unlimited.source, Source::kFile);
  EXPECT_EQ(c.allow_unlimited.line, 15);
  EXPECT_EQ(c.sandbox_cpus.value, 4u);
  EXPECT_EQ(c.sandbox_cpus.line, 18);
  EXPECT_EQ(c.sandbox_memory_bytes.value, 512u << 20);
  EXPECT_EQ(c.sandbox_disk_bytes.value, 20 * kGiB);  // a bare integer is GiB
  EXPECT_EQ(c.sandbox_disk_bytes.source, Source::kFile);
}

TEST_F(ConfigTest, InlineSandboxTableAndAnyRuntimeName) {
  for (std::string runtime : {"llama", "ollama", "vllm", "mlx", "my_runtime-2"}) {
    write_config("default_engine_runtime = \"" + runtime + "\"\nsandbox = { cpus = 8, memory = \"1.5GiB\" }\n");
    Config c = load_ok();
    EXPECT_EQ(c.default_engine_runtime.value, runtime);
    EXPECT_EQ(c.sandbox_cpus.value, 8u);
    EXPECT_EQ(c.sandbox_memory_bytes.value, 3 * kGiB / 2);
  }
}

TEST_F(ConfigTest, SyntaxErrorNamesFileLineColumn) {
  write_config("# tnk\nserver_port = 8080\nmodel_name = qwen\n");
  auto c = load();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind("cannot parse " + file() + ":3:14: ", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().hint, "");
}

struct BadValue {
  std::string toml;
  std::string message;  // after "<file>:"
};

TEST_F(ConfigTest, WrongTypeOrValueNamesFileLineColumn) {
  const BadValue cases[] = {
      {"\nserver_port = \"8080\"\n", "2:15: key 'server_port' must be an integer from 1 to 65535"},
      {"server_port = 70000\n", "1:15: key 'server_port' must be an integer from 1 to 65535"},
      {"server_port = 0\n", "1:15: key 'server_port' must be an integer from 1 to 65535"},
      {"workspace_root = 3\n", "1:18: key 'workspace_root' must be a non-empty string (a directory path)"},
      {"default_backend = \"docker\"\n", "1:19: key 'default_backend' must be one of auto, vm, ns, lima, k8s"},
      {"default_network = \"wide\"\n",
       "1:19: key 'default_network' must be one of none, inference, allowlist, open (or the original's restricted)"},
      {"default_engine_runtime = \"ll ama\"\n",
       "1:26: key 'default_engine_runtime' must be a runtime name (letters, digits, '_', '-')"},
      {"default_provision_profile = \"../x\"\n",
       "1:29: key 'default_provision_profile' must be a profile name (letters, digits, '_', '-', '.')"},
      {"inference_url = \"ftp://x/v1\"\n", "1:17: key 'inference_url' must be an http:// or https:// URL with a host"},
      {"inference_url = \"http:///v1\"\n", "1:17: key 'inference_url' must be an http:// or https:// URL with a host"},
      {"model_name = \"\"\n", "1:14: key 'model_name' must be a non-empty string"},
      {"context_window = 0\n", "1:18: key 'context_window' must be a positive integer (tokens)"},
      {"audit = \"yes\"\n", "1:9: key 'audit' must be true or false"},
      {"allow_unlimited = 1\n", "1:19: key 'allow_unlimited' must be true or false"},
      {"audit_dir = \"rel/dir\"\n",
       "1:13: key 'audit_dir' must be an absolute directory path (~ and $HOME are expanded)"},
      {"sandbox = 3\n", "1:11: key 'sandbox' must be a table"},
      {"[sandbox]\ncpus = 0\n", "2:8: key 'sandbox.cpus' must be an integer from 1 to 1024"},
      {"[sandbox]\nmemory = \"lots\"\n",
       "2:10: key 'sandbox.memory' must be a size such as \"2GiB\" or \"512MiB\" (a bare number means GiB)"},
      {"[sandbox]\ndisk = 0\n",
       "2:8: key 'sandbox.disk' must be a size such as \"2GiB\" or \"512MiB\" (a bare number means GiB)"},
  };
  for (const BadValue& bad : cases) {
    write_config(bad.toml);
    auto c = load();
    ASSERT_FALSE(c.ok()) << bad.toml;
    EXPECT_EQ(c.error().message, file() + ":" + bad.message);
    EXPECT_NE(c.error().hint.find(file()), std::string::npos);
  }
}

TEST_F(ConfigTest, UnknownKeysWarnedOnceWithFileAndLine) {
  write_config("server_port = 8081\nservices_auto_start = true\n\n[sandbox]\ncpus = 3\ngpus = 1\n\n[services]\n");
  Config c = load_ok();
  Config again = load_ok();  // the same Log: a warning never repeats
  EXPECT_EQ(c.server_port.value, 8081);
  EXPECT_EQ(c.sandbox_cpus.value, 3u);
  EXPECT_EQ(err(), "warning: " + file() + ":2: unknown key 'services_auto_start' (ignored)\n" + "warning: " + file() +
                       ":6: unknown key 'sandbox.gpus' (ignored)\n" + "warning: " + file() +
                       ":8: unknown key 'services' (ignored)\n");
}

TEST_F(ConfigTest, UnreadableConfigPathIsAnError) {
  std::filesystem::create_directories(paths_.config_file());  // a directory where the file should be
  auto c = load();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find(file()), std::string::npos);
  EXPECT_NE(c.error().hint, "");
}

mode_t mode_of(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST_F(ConfigTest, TemplateRoundTripsWithoutWarningsAndPrivateModes) {
  auto written = write_config_template(paths_, false);
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(*written);
  EXPECT_EQ(mode_of(paths_.config_dir), 0700u);
  EXPECT_EQ(mode_of(paths_.config_file()), 0600u);
  Config c = load_ok();
  EXPECT_EQ(err(), "");  // no info line (the file exists), no warnings
  Config d = default_config(paths_);
  EXPECT_EQ(c.server_port.value, d.server_port.value);
  EXPECT_EQ(c.server_port.source, Source::kFile);
  EXPECT_EQ(c.workspace_root.value, d.workspace_root.value);
  EXPECT_EQ(c.default_engine_bind_host.value, d.default_engine_bind_host.value);
  EXPECT_FALSE(c.default_engine_preset.value);
  EXPECT_EQ(c.default_backend.source, Source::kDefault);
  EXPECT_EQ(c.sandbox_memory_bytes.value, d.sandbox_memory_bytes.value);
}

TEST_F(ConfigTest, TemplateKeepsTheOriginalLinesWordForWord) {
  const std::string original =
      "# tnk configuration\n\n# API port for local inference server\nserver_port = 8080\n\n"
      "# Root used for project-to-sandbox mapping (must NOT be your home directory)\nworkspace_root = \"~/code\"\n\n"
      "# Base directory for model files\nmodel_dir = \"~/opt/models\"\n\n"
      "# Default sandbox profile\ndefault_provision_profile = \"pi\"\n\n"
      "# Inference runtime: \"llama\"\ndefault_engine_runtime = \"llama\"\n\n"
      "# Bind host for inference server (127.0.0.1 for localhost only, 0.0.0.0 for all interfaces)\n"
      "default_engine_bind_host = \"127.0.0.1\"\n\n"
      "# Preset to load when --preset is omitted from engine start.\n"
      "# Must match the filename stem of a file in ~/.config/tnk/provider.d/\n"
      "# Example: \"llama-default\" loads ~/.config/tnk/provider.d/llama-default.ini\n"
      "# default_engine_preset = \"llama-default\"\n\n";
  EXPECT_EQ(config_template().substr(0, original.size()), original);
  for (const char* key : {"default_backend", "inference_url", "model_name", "context_window", "default_network",
                          "audit =", "audit_dir", "allow_unlimited = false", "[sandbox]", "cpus", "memory", "disk"}) {
    EXPECT_NE(config_template().find(std::string("# ") + key), std::string::npos) << key;
  }
}

TEST_F(ConfigTest, TemplateUncommentedStillLoadsWithoutWarnings) {
  std::string text = config_template();
  for (size_t at = 0; (at = text.find("\n# ", at)) != std::string::npos;) {
    size_t eol = text.find('\n', at + 1);
    std::string line = text.substr(at + 3, eol - at - 3);
    bool is_setting = line.find(" = ") != std::string::npos || line.starts_with("[");
    if (is_setting && line.find(' ') != 0) text.erase(at + 1, 2);
    at += 1;
  }
  write_config(text);
  Config c = load_ok();
  EXPECT_EQ(err(), "");
  EXPECT_EQ(c.sandbox_disk_bytes.source, Source::kFile);
  EXPECT_EQ(c.default_engine_preset.value, "llama-default");
  EXPECT_EQ(c.inference_api_key_env.value, "OPENAI_API_KEY");
  EXPECT_EQ(c.inference_aliases.value.at("gpt-4o"), "qwen2.5-coder-7b");
}

TEST_F(ConfigTest, TemplateIsNotWrittenOverAnExistingFileWithoutForce) {
  write_config("server_port = 1234\n");
  ::chmod(paths_.config_dir.c_str(), 0755);
  auto written = write_config_template(paths_, false);
  ASSERT_TRUE(written.ok());
  EXPECT_FALSE(*written);
  EXPECT_EQ(*read_file(paths_.config_file()), "server_port = 1234\n");
  EXPECT_EQ(mode_of(paths_.config_dir), 0755u);  // untouched when nothing is written

  written = write_config_template(paths_, true);
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(*written);
  EXPECT_EQ(*read_file(paths_.config_file()), config_template());
  EXPECT_EQ(mode_of(paths_.config_dir), 0700u);
  EXPECT_EQ(mode_of(paths_.config_file()), 0600u);
}

}  // namespace
}  // namespace tnk::testing_config
