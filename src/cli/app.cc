#include "cli/app.h"

#include <unistd.h>

#include <iostream>

#include "cli/command.h"
#include "core/error.h"

namespace tnk::cli {
namespace {

struct GlobalOptions {
  bool quiet = false;
  bool verbose = false;
  std::string output = "text";
};

// NO_COLOR wins; CLICOLOR_FORCE=1 forces; otherwise colour only on a terminal that is not dumb.
bool use_color(const Env& env, bool stderr_tty) {
  if (env.get_nonempty("NO_COLOR")) return false;
  if (env.get("CLICOLOR_FORCE") == "1") return true;
  if (env.get("CLICOLOR") == "0" || env.get("TERM") == "dumb") return false;
  return stderr_tty;
}

// The deepest subcommand the user named (`tnk sandbox ls` -> the `ls` App).
const CLI::App* selected_command(const CLI::App& root) {
  const CLI::App* current = &root;
  for (;;) {
    auto parsed = current->get_subcommands();
    if (parsed.empty()) return current;
    current = parsed.front();
  }
}

std::filesystem::path self_executable(const char* argv0) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return exe;
  return std::filesystem::absolute(argv0, ec);
}

// The -o value as typed, read before CLI11 parses, so that a parse error already prints as JSON.
OutputFormat early_format(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    if (arg == "--") break;
    if ((arg == "-o" || arg == "--output") && i + 1 < argc) value = argv[i + 1];
    if (arg.starts_with("--output=")) value = arg.substr(9);
    if (arg.starts_with("-o") && arg.size() > 2 && arg[2] != '-') value = arg.substr(2);
    if (auto format = parse_output_format(value)) return *format;
  }
  return OutputFormat::kText;
}

// "Usage: tnk sandbox shell ..." rather than CLI11's bare "Usage: shell ...".
std::string help_text(const CLI::App& command) {
  const CLI::App* parent = command.get_parent();
  return parent == nullptr ? command.help() : command.help(command_path(*parent));
}

}  // namespace

std::string command_path(const CLI::App& command) {
  std::string path;
  for (const CLI::App* c = &command; c != nullptr; c = c->get_parent()) {
    path = path.empty() ? c->get_name() : c->get_name() + " " + path;
  }
  return path;
}

constexpr std::string_view kExampleMark = "\n\nExample:\n  ";
constexpr std::string_view kGlobalFlagsNote =
    "\n\nGlobal flags: -q (quiet), -v (verbose), -o text|json|ndjson (output format).";

void describe(CLI::App& command, const std::string& explanation, const std::string& example) {
  // The one-line description given to add_subcommand stays for the parent's listing.
  command.footer("\n" + explanation + std::string(kExampleMark) + example + std::string(kGlobalFlagsNote));
}

// The footer is describe()'s own format, read back here so that the texts are written once.
CommandDoc command_doc(const CLI::App& command) {
  const std::string footer = command.get_footer();
  const auto example_at = footer.find(kExampleMark);
  if (!footer.starts_with('\n') || example_at == std::string::npos || !footer.ends_with(kGlobalFlagsNote)) return {};
  const auto example_start = example_at + kExampleMark.size();
  return {footer.substr(1, example_at - 1),
          footer.substr(example_start, footer.size() - kGlobalFlagsNote.size() - example_start)};
}

namespace {

// Every verb, in the order `tnk --help` lists them.
void add_commands(CLI::App& root, CommandTable& table) {
  add_status_command(root, table);
  add_init_command(root, table);
  add_config_commands(root, table);
  add_sandbox_commands(root, table);
  add_lifecycle_commands(root, table);
  add_doctor_command(root, table);
#if TNK_LINUX_BACKENDS
  add_setup_command(root, table);
#endif
  add_image_commands(root, table);
  add_audit_commands(root, table);
  add_completion_command(root, table);
  add_manpage_command(root, table);
  add_version_command(root, table);
}

}  // namespace

int run(int argc, char** argv) {
  Terminal terminal{::isatty(STDIN_FILENO) == 1, ::isatty(STDOUT_FILENO) == 1, ::isatty(STDERR_FILENO) == 1};
  Env env = Env::from_process();
  bool color = use_color(env, terminal.stderr_tty);

  CLI::App root("tnk gives every project its own isolated sandbox for AI coding agents.", "tnk");
  root.fallthrough();  // global flags are accepted after the subcommand too
  root.footer(
      "\nExamples:\n  tnk                         sandboxes and inference endpoint status\n"
      "  tnk sandbox shell           a shell in the current project's sandbox\n"
      "  tnk sandbox ls -o json      every sandbox, as JSON\n"
      "Docs: docs/ in the source tree; exit codes: 0 ok, 1 error, 64 usage, 66 not found, 77 permission.");
  root.set_version_flag("-V,--version", "tnk " TNK_VERSION);
  GlobalOptions global;
  root.add_flag("-q,--quiet", global.quiet, "Print only results and errors");
  root.add_flag("-v,--verbose", global.verbose, "Print more detail about what tnk does");
  root.add_option("-o,--output", global.output, "Output format: text, json or ndjson")
      ->check(CLI::IsMember({"text", "json", "ndjson"}));

  CommandTable table;
  add_commands(root, table);

  Output early_out(std::cout, std::cerr, early_format(argc, argv), color);
  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << help_text(*selected_command(root));
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << root.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    std::cout << "tnk " TNK_VERSION "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const CLI::App* command = selected_command(root);
    early_out.error(usage_error(e.what(), "run `" + command_path(*command) + " --help` for usage"));
    return kExitUsage;
  }

  auto format = parse_output_format(global.output);
  Output out(std::cout, std::cerr, format ? *format : OutputFormat::kText, color);
  // `sandbox ls -q` means "names only" and shadows the global flag, so read quiet from the root only.
  Log log(std::cerr, global.quiet ? Verbosity::kQuiet : (global.verbose ? Verbosity::kVerbose : Verbosity::kNormal));

  const CLI::App* command = selected_command(root);
  const Command* runner = table.find(command);
  if (runner == nullptr) {  // a noun without a verb (`tnk sandbox`): show what it offers
    std::cout << help_text(*command);
    return kExitOk;
  }
  auto paths = Paths::resolve(env);
  if (!paths && runner->needs_paths) {
    out.error(paths.error());
    return exit_code_for(paths.error().kind);
  }
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  if (ec) {
    auto error = sys_error(ec.value(), "cannot read the current directory", "cd into an existing directory");
    out.error(error);
    return exit_code_for(error.kind);
  }
  Context ctx(std::move(env), paths ? std::move(*paths) : Paths{}, log, out, cwd, self_executable(argv[0]), terminal);
  auto result = runner->run(ctx);
  if (!result) {
    out.error(result.error());
    return exit_code_for(result.error().kind);
  }
  return *result;
}

}  // namespace tnk::cli
