#include "config/config_template.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "core/files.h"

namespace tnk {
namespace {

// Lines up to default_engine_preset are the original's template (anchor §2.5) unchanged.
constexpr const char* kTemplate = R"(# tnk configuration

# API port for local inference server
server_port = 8080

# Root used for project-to-sandbox mapping (must NOT be your home directory)
workspace_root = "~/code"

# Base directory for model files
model_dir = "~/opt/models"

# Default sandbox profile
default_provision_profile = "pi"

# Inference runtime: "llama"
default_engine_runtime = "llama"

# Bind host for inference server (127.0.0.1 for localhost only, 0.0.0.0 for all interfaces)
default_engine_bind_host = "127.0.0.1"

# Preset to load when --preset is omitted from engine start.
# Must match the filename stem of a file in ~/.config/tnk/provider.d/
# Example: "llama-default" loads ~/.config/tnk/provider.d/llama-default.ini
# default_engine_preset = "llama-default"

# ---- tnk's own settings: remove the leading "# " to change one (the values shown are the defaults)

# Sandbox backend: "auto" (the best one available here; `tnk doctor` says which), "vm", "ns" or "lima"
# default_backend = "auto"

# Full URL of the inference API, for a server that is not http://<default_engine_bind_host>:<server_port>/v1
# inference_url = "http://127.0.0.1:8080/v1"

# Model name and context window (tokens) given to agents when the server does not report them
# model_name = "my-model"
# context_window = 32768

# Network of new sandboxes: "none", "inference" (only the inference endpoint), "allowlist" or "open"
# default_network = "inference"

# Start sandboxes even where their pids and memory limits (vm: the pids limit of QEMU and its helpers)
# cannot be applied (no cgroup for them; `sudo tnk setup --user NAME` gives one): a fork bomb or a
# memory hog inside then reaches the host
# allow_unlimited = false

# Write an NDJSON audit log of every session into audit_dir ($XDG_STATE_HOME/tnk/audit by default)
# audit = false
# audit_dir = "~/.local/state/tnk/audit"

# Resources of each sandbox (sizes such as "512MiB" or "2GiB"; a bare number means GiB)
# [sandbox]
# cpus = 2
# memory = "2GiB"
# disk = "8GiB"

# The inference gateway: the endpoint's API key from a variable of tnk's environment (api_key_env), or
# instead from a file only you can read (api_key_file: "~/.config/tnk/inference.key"); requests to the
# server at a time per sandbox; model names agents ask for, and the served model each one means
# [inference]
# api_key_env = "OPENAI_API_KEY"
# concurrency = 4
# [inference.aliases]
# "gpt-4o" = "qwen2.5-coder-7b"
)";

}  // namespace

std::string config_template() { return kTemplate; }

Result<bool> write_config_template(const Paths& paths, bool force) {
  std::filesystem::path file = paths.config_file();
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0) {
    if (!force) return false;
  } else if (errno != ENOENT) {
    return sys_error(errno, "cannot check " + file.string());
  }
  TNK_RETURN_IF_ERROR(make_dirs(paths.config_dir, 0700));
  if (::chmod(paths.config_dir.c_str(), 0700) != 0) {
    return sys_error(errno, "cannot chmod " + paths.config_dir.string());
  }
  TNK_RETURN_IF_ERROR(write_file_atomic(file, config_template(), 0600));
  return true;
}

}  // namespace tnk
