#include "cli/app.h"

#include <unistd.h>

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/command_tree.h"
#include "core/error.h"
#include "core/phase_timer.h"

namespace tnk::cli {

// What --version prints, whether it is answered before the command tree is built or by it.
constexpr const char* kVersionLine = "tnk " TNK_VERSION "\n";

bool use_color(const Env& env, bool tty) {
  if (env.get_nonempty("NO_COLOR")) return false;
  if (env.get("CLICOLOR_FORCE") == "1") return true;
  if (env.get("CLICOLOR") == "0" || env.get("TERM") == "dumb") return false;
  return tty;
}

namespace {

std::vector<std::string> typed_words;  // argv[1..]: run_command sets them once, before any verb runs

// The option `word` names, looked up where CLI11 looks: in `app`, then in the commands above it.
const CLI::Option* option_named(const CLI::App* app, const std::string& word) {
  const std::string name = word.starts_with("--") ? word.substr(0, word.find('=')) : word.substr(0, 2);
  for (; app != nullptr; app = app->get_parent()) {
    if (const CLI::Option* found = app->get_option_no_throw(name)) return found;
  }
  return nullptr;
}

// The subcommand of `app` that the parse took, when `word` names it.
const CLI::App* parsed_subcommand(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands()) {
    if (sub->check_name(word)) return sub;
  }
  return nullptr;
}

// Whether `word` (an option) brings its value in the same word: --name=VALUE, or -oVALUE.
bool value_attached(const std::string& word) {
  return word.starts_with("--") ? word.find('=') != std::string::npos : word.size() > 2;
}

}  // namespace

std::vector<std::string> positional_words(const CLI::App& command) {
  const CLI::App* app = &command;
  while (app->get_parent() != nullptr) app = app->get_parent();
  std::vector<std::string> taken;
  bool only_positionals = false;
  for (std::size_t i = 0; i < typed_words.size(); ++i) {
    const std::string& word = typed_words[i];
    if (!only_positionals && word == "--") {
      only_positionals = true;
    } else if (!only_positionals && word.size() > 1 && word.starts_with('-')) {
      const CLI::Option* option = option_named(app, word);
      if (option != nullptr && option->get_items_expected_max() > 0 && !value_attached(word)) ++i;  // its value
    } else if (const CLI::App* sub = only_positionals ? nullptr : parsed_subcommand(*app, word)) {
      app = sub;
    } else if (app == &command) {
      taken.push_back(word);
    }
  }
  return taken;
}

namespace {

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
    "\n\nGlobal flags: -q (quiet), -v (verbose), -o text|json|ndjson|yaml (output format), --sandbox NAME (a fork).";

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

int run_command(int argc, char** argv, GlobalOptions& global) {
  Terminal terminal{::isatty(STDIN_FILENO) == 1, ::isatty(STDOUT_FILENO) == 1, ::isatty(STDERR_FILENO) == 1};
  Env env = Env::from_process();
  typed_words.assign(argv + 1, argv + argc);
  bool color = use_color(env, terminal.stderr_tty);

  // Asked by scripts and package checks, often: answered before any of the tree is built.
  if (argc == 2 && (std::string_view(argv[1]) == "--version" || std::string_view(argv[1]) == "-V")) {
    std::cout << kVersionLine;
    return kExitOk;
  }
  // Only the branch argv names is built (command_tree.h). Whatever that branch cannot parse is parsed
  // again on the whole tree, whose answer (a mistyped verb among all the verbs, say) is the one shown.
  CommandTable table;
  auto words = command_words(argc, argv);
  if (!needs_whole_tree(words)) table.select(words);
  auto root = make_root(global, table);
  mark_phase("command tree");

  Output early_out(std::cout, std::cerr, early_format(argc, argv), color);
  try {
    try {
      root->parse(argc, argv);
    } catch (const CLI::Success&) {
      throw;  // help or version: answered below
    } catch (const CLI::ParseError&) {
      if (!table.selected()) throw;
      table = CommandTable();
      global = GlobalOptions();
      root = make_root(global, table);
      root->parse(argc, argv);
    }
  } catch (const CLI::CallForHelp&) {
    std::cout << help_text(*selected_command(*root));
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << root->help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    std::cout << kVersionLine;
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const CLI::App* command = selected_command(*root);
    early_out.error(usage_error(e.what(), "run `" + command_path(*command) + " --help` for usage"));
    return kExitUsage;
  }
  mark_phase("parse");

  auto format = parse_output_format(global.output);
  Output out(std::cout, std::cerr, format ? *format : OutputFormat::kText, color);
  // `sandbox ls -q` means "names only" and shadows the global flag, so read quiet from the root only.
  Log log(std::cerr, global.quiet ? Verbosity::kQuiet : (global.verbose ? Verbosity::kVerbose : Verbosity::kNormal));

  const CLI::App* command = selected_command(*root);
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
  ctx.selected_sandbox = global.sandbox;
  auto result = runner->run(ctx);
  if (!result) {
    out.error(result.error());
    return exit_code_for(result.error().kind);
  }
  return *result;
}

}  // namespace

int run(int argc, char** argv) {
  GlobalOptions global;
  int code = run_command(argc, argv, global);
  if (global.timings) std::cerr << phase_timings() << '\n';
  return code;
}

}  // namespace tnk::cli
