#include "cli/man_page.h"

#include <map>
#include <sstream>

#include "cli/command.h"
#include "config/keys.h"
#include "core/error.h"
#include "host/host_probe.h"
#include "sandbox/resolve.h"

namespace tnk::cli {
namespace {

// roff: a backslash is \e, a hyphen \- (so that flags copy and search as ASCII), and a line that would
// start with a control character gets \& in front.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

bool hidden(const CLI::App& command) { return command.get_group().empty(); }

// "-n, --dry-run", "--network POLICY", "NAME" (a positional argument).
std::string option_label(const CLI::Option& option) {
  std::string label;
  for (const auto& s : option.get_snames()) label += (label.empty() ? "-" : ", -") + s;
  for (const auto& l : option.get_lnames()) label += (label.empty() ? "--" : ", --") + l;
  if (label.empty()) return option.get_name(true);
  if (option.get_items_expected_max() > 0 && !option.get_type_name().empty()) label += " " + option.get_type_name();
  return label;
}

void write_options(std::ostringstream& s, const CLI::App& command) {
  for (const CLI::Option* option : command.get_options({})) {
    if (option->get_group().empty()) continue;  // hidden
    // -h, --help is listed once, with the global options, not under every command.
    if (command.get_parent() != nullptr && option == command.get_help_ptr()) continue;
    s << ".TP\n.B " << roff(option_label(*option)) << "\n" << roff(option->get_description()) << "\n";
  }
}

// " [OPTIONS] NAME [ARGS...]" from the command's own options and positionals.
std::string synopsis_arguments(const CLI::App& command) {
  std::string out = " [OPTIONS]";
  for (const CLI::Option* option : command.get_options({})) {
    if (!option->get_positional()) continue;
    std::string name = option->get_name(true) + (option->get_items_expected_max() > 1 ? "..." : "");
    out += option->get_required() ? " " + name : " [" + name + "]";
  }
  return out;
}

void write_command(std::ostringstream& s, const CLI::App& command) {
  if (hidden(command)) return;
  s << ".SS \"" << roff(command_path(command) + synopsis_arguments(command)) << "\"\n"
    << roff(command.get_description()) << "\n";
  const CommandDoc doc = command_doc(command);
  if (!doc.explanation.empty()) s << ".PP\n" << roff(doc.explanation) << "\n";
  write_options(s, command);
  if (!doc.example.empty()) s << ".PP\nExample:\n.RS\n.EX\n" << roff(doc.example) << "\n.EE\n.RE\n";
  for (const CLI::App* sub : command.get_subcommands({})) write_command(s, *sub);
}

struct Variable {
  std::string name;
  std::string meaning;
};

// The variables tnk itself reads; the TNK_* overrides of tnk.toml come from its key table.
std::vector<Variable> host_variables() {
  std::vector<Variable> v = {
      {"HOME", "must be an absolute path; the default of the three directories below"},
      {"XDG_CONFIG_HOME", "the config directory is $XDG_CONFIG_HOME/tnk (default ~/.config/tnk)"},
      {"XDG_STATE_HOME", "the state directory is $XDG_STATE_HOME/tnk (default ~/.local/state/tnk)"},
      {"XDG_CACHE_HOME", "the cache directory is $XDG_CACHE_HOME/tnk (default ~/.cache/tnk)"},
      {"NO_COLOR", "when set and not empty, no colour in messages"},
      {"CLICOLOR", "0: no colour in messages"},
      {"CLICOLOR_FORCE", "1: colour in messages even when stderr is not a terminal"},
      {"TERM", "dumb: no colour in messages"},
      {"PATH", "where tnk finds qemu-system-x86_64, virtiofsd, limactl, mmdebstrap and the kernel build tools"},
      {host::kPvmGuestKernelEnv, "a guest kernel for hosts whose /dev/kvm is a PVM hypervisor (docs/vm-backend.md)"},
  };
  for (const auto& key : config::keys()) {
    if (key.env.empty()) continue;
    v.push_back(
        {std::string(key.env), "overrides " + std::string(key.name) + " of tnk.toml: " + std::string(key.expect)});
  }
  return v;
}

// What each runtime variable tells the sandbox (sandbox::runtime_env_names() lists them).
std::string sandbox_variable_meaning(const std::string& name) {
  static const std::map<std::string, std::string> meaning = {
      {"TNK_INFERENCE_URL", "the inference endpoint as the sandbox reaches it (http://host.lima.internal:PORT/v1)"},
      {"TNK_OPENAI_URL", "the same URL, under the name the original tnk's specs read"},
      {"TNK_MODEL_NAME", "the model the endpoint serves (model_name, or what the endpoint lists)"},
      {"TNK_ENGINE_RUNTIME", "the inference server's kind (default_engine_runtime: llama, ollama, ...)"},
      {"TNK_CTX_WINDOW", "the model's context window in tokens"},
      {"TNK_WORKSPACE_MOUNT", "where the project is inside the sandbox (default /workspace)"},
      {"TNK_SPECS_REV", "the revision of the installed specs (part of the provisioning fingerprint)"},
  };
  auto it = meaning.find(name);
  return it == meaning.end() ? std::string() : it->second;
}

void write_variables(std::ostringstream& s, const std::vector<Variable>& variables) {
  for (const auto& v : variables) s << ".TP\n.B " << roff(v.name) << "\n" << roff(v.meaning) << "\n";
}

constexpr const char* kFiles[][2] = {
    {"~/.config/tnk/tnk.toml", "the configuration (tnk config init writes one; docs/config.md)"},
    {"~/.config/tnk/sandbox.d/",
     "the specs: profiles (manifests/<profile>.yaml) and their provisioning scripts "
     "(provision.d/<profile>.sh), installed by tnk init"},
    {"~/.config/tnk/provider.d/", "inference server hints (*.ini), installed by tnk init"},
    {"~/.local/state/tnk/sandboxes/<id>/",
     "what tnk knows about one sandbox: its record, lock, sockets, logs and "
     "disk (docs/state-layout.md)"},
    {"~/.local/state/tnk/audit/<id>.ndjson", "the sandbox's audit trail when audit = true (docs/audit-format.md)"},
    {"~/.cache/tnk/", "sandbox images, guest kernels and base disks, rebuilt when missing"},
    {"share/tnk/specs/", "the bundled specs, beside the binary's prefix (/usr/share/tnk/specs for the package)"},
    {"libexec/tnk/tnk-agent", "the vm backend's guest agent, copied into every base disk"},
};

void write_exit_codes(std::ostringstream& s) {
  const std::pair<int, const char*> codes[] = {
      {kExitOk, "the command did what was asked, including nothing to do"},
      {kExitFailed, "the operation failed"},
      {kExitUsage, "bad flags or names, or a command used from the wrong place (EX_USAGE)"},
      {kExitNotFound, "a file, directory, profile or sandbox that was named does not exist (EX_NOINPUT)"},
      {kExitPermission, "the operating system or tnk's policy refused (EX_NOPERM)"},
  };
  for (const auto& [code, meaning] : codes) s << ".TP\n.B " << code << "\n" << roff(meaning) << "\n";
  s << ".PP\n"
    << roff(
           "tnk sandbox exec and tnk sandbox shell -c exit with the status of the command they ran, 128 + N "
           "when a signal N killed it.")
    << "\n";
}

}  // namespace

std::string man_page(const CLI::App& root) {
  std::ostringstream s;
  s << ".TH TNK 1 \"\" \"tnk " TNK_VERSION "\" \"User Commands\"\n"
    << ".SH NAME\ntnk \\- " << roff("every project its own isolated sandbox for AI coding agents") << "\n"
    << ".SH SYNOPSIS\n.B tnk\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n"
    << ".SH DESCRIPTION\n"
    << roff(root.get_description() +
            " Each project gets one sandbox, created on first use and kept across sessions; only the project "
            "directory is shared into it, at /workspace. The host's inference server is handed in through the "
            "variables listed under IN THE SANDBOX. Backends: ns (Linux namespaces), vm (a QEMU micro VM) and "
            "lima (Lima on macOS).")
    << "\n.SH GLOBAL OPTIONS\nThese are accepted before or after the command.\n";
  write_options(s, root);
  s << ".SH COMMANDS\n";
  for (const CLI::App* sub : root.get_subcommands({})) write_command(s, *sub);
  s << ".SH ENVIRONMENT\n";
  write_variables(s, host_variables());
  s << ".SH IN THE SANDBOX\nEvery session in a sandbox has these variables:\n";
  std::vector<Variable> inside;
  for (const auto& name : sandbox::runtime_env_names()) inside.push_back({name, sandbox_variable_meaning(name)});
  write_variables(s, inside);
  s << ".SH FILES\n";
  for (const auto& [path, meaning] : kFiles) s << ".TP\n.I " << roff(path) << "\n" << roff(meaning) << "\n";
  s << ".SH EXIT STATUS\n";
  write_exit_codes(s);
  s << ".SH EXAMPLES\n.EX\n"
    << roff(
           "tnk doctor                       # is this host ready? each failure prints its fix\n"
           "cd ~/code/homepage\n"
           "tnk sandbox shell --profile pi   # the sandbox, provisioned with the pi agent\n"
           "tnk sandbox exec -- make test    # one command inside\n"
           "tnk sandbox ls -o json           # every sandbox, as JSON\n")
    << ".EE\n.SH SEE ALSO\n"
    << roff(
           "qemu-system-x86_64(1), virtiofsd(1), limactl(1), newuidmap(1); the documentation in share/doc/tnk "
           "and the docs/ directory of the source tree.")
    << "\n";
  return s.str();
}

}  // namespace tnk::cli
