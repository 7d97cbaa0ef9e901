#include "cli/command_tree.h"

namespace tnk::cli {
namespace {

struct VerbGroup {
  std::vector<std::string_view> names;  // the top-level commands `add` makes
  void (*add)(CLI::App& root, CommandTable& table);
  bool reads_whole_tree = false;  // completion and the manual page describe every command
};

// Every verb, in the order `tnk --help` lists them.
const std::vector<VerbGroup>& verb_groups() {
  static const std::vector<VerbGroup> groups = {
    {{"init"}, add_init_command},
    {{"config"}, add_config_commands},
    {{"sandbox"}, add_sandbox_commands},
    {{"run", "shutdown"}, add_lifecycle_commands},
    {{"doctor"}, add_doctor_command},
#if TNK_LINUX_BACKENDS
    {{"setup"}, add_setup_command},
#endif
    {{"image"}, add_image_commands},
    {{"audit"}, add_audit_commands},
    {{"completion"}, add_completion_command, true},
    {{"manpage"}, add_manpage_command, true},
    {{"version"}, add_version_command},
  };
  return groups;
}

void add_commands(CLI::App& root, CommandTable& table) {
  add_status_command(root, table);  // `tnk` alone
  for (const VerbGroup& group : verb_groups()) {
    if (table.builds(root, std::span(group.names))) group.add(root, table);
  }
}

}  // namespace

bool CommandTable::builds(const CLI::App& parent, std::span<const std::string_view> names) const {
  size_t depth = 0;
  for (const CLI::App* up = parent.get_parent(); up != nullptr; up = up->get_parent()) ++depth;
  if (depth >= words_.size()) return true;
  for (std::string_view name : names) {
    if (name == words_[depth]) return true;
  }
  return false;
}

std::vector<std::string> command_words(int argc, char** argv) {
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "-o" || arg == "--output" || arg == "--sandbox") {
      ++i;
      continue;
    }
    if (!arg.starts_with('-')) words.emplace_back(arg);
  }
  return words;
}

bool needs_whole_tree(const std::vector<std::string>& words) {
  if (words.empty()) return true;  // `tnk`, `tnk --help`: every verb is listed
  for (const VerbGroup& group : verb_groups()) {
    for (std::string_view name : group.names) {
      if (name == words.front()) return group.reads_whole_tree;
    }
  }
  return false;
}

std::unique_ptr<CLI::App> make_root(GlobalOptions& global, CommandTable& table) {
  auto root =
      std::make_unique<CLI::App>("tnk gives every project its own isolated sandbox for AI coding agents.", "tnk");
  root->fallthrough();  // global flags are accepted after the subcommand too
  root->footer(
      "\nExamples:\n  tnk                         sandboxes and inference endpoint status\n"
      "  tnk sandbox shell           a shell in the current project's sandbox\n"
      "  tnk sandbox ls -o json      every sandbox, as JSON\n"
      "Docs: docs/ in the source tree; exit codes: 0 ok, 1 error, 64 usage, 66 not found, 77 permission.");
  root->set_version_flag("-V,--version", "tnk " TNK_VERSION);
  root->add_flag("-q,--quiet", global.quiet, "Print only results and errors");
  root->add_flag("-v,--verbose", global.verbose, "Print more detail about what tnk does");
  root->add_option("-o,--output", global.output, "Output format: text, json, ndjson or yaml")
      ->check(CLI::IsMember({"text", "json", "ndjson", "yaml"}));
  root->add_option("--sandbox", global.sandbox,
                   "Act on this sandbox of the current project: one of its forks (tnk sandbox fork), e.g. tnk-app.2")
      ->type_name("NAME");
  root->add_flag("--timings", global.timings, "Print where the command's time went, phase by phase (on stderr)");
  add_commands(*root, table);
  return root;
}

}  // namespace tnk::cli
