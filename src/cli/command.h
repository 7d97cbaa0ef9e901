// How verbs plug into the command line: each verb file adds its subcommand to the CLI11 tree
// and registers the function that runs it.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "context/context.h"
#include "core/result.h"

namespace tnk::cli {

// Returns the process exit code (0, or the sandboxed command's own status) or an Error.
using Runner = std::function<Result<int>(Context&)>;

struct Command {
  Runner run;
  bool needs_paths = true;  // false for commands that must work even without $HOME (version, completion)
};

class CommandTable {
 public:
  void add(const CLI::App* command, Runner runner, bool needs_paths = true) {
    commands_[command] = Command{std::move(runner), needs_paths};
  }
  const Command* find(const CLI::App* command) const {
    auto it = commands_.find(command);
    return it == commands_.end() ? nullptr : &it->second;
  }

  // The words of the command line that may name commands (`sandbox`, `exec`, ...): then only the branch
  // of the tree they name is built (app.cc parses on the whole tree what that branch cannot).
  void select(std::vector<std::string> words) { words_ = std::move(words); }
  bool selected() const { return !words_.empty(); }
  // Whether the commands `names`, children of `parent`, are to be built: they are on the selected
  // branch, or nothing is selected at that depth.
  bool builds(const CLI::App& parent, std::span<const std::string_view> names) const;
  bool builds(const CLI::App& parent, std::initializer_list<std::string_view> names) const {
    return builds(parent, std::span(names.begin(), names.size()));
  }

 private:
  std::map<const CLI::App*, Command> commands_;
  std::vector<std::string> words_;
};

// One function per verb file; each adds its subcommand(s) under `root`.
void add_status_command(CLI::App& root, CommandTable& table);
void add_init_command(CLI::App& root, CommandTable& table);
void add_config_commands(CLI::App& root, CommandTable& table);
void add_sandbox_commands(CLI::App& root, CommandTable& table);
void add_lifecycle_commands(CLI::App& root, CommandTable& table);  // run, shutdown
void add_doctor_command(CLI::App& root, CommandTable& table);
void add_setup_command(CLI::App& root, CommandTable& table);  // Linux: a user's rootless sandboxes
void add_audit_commands(CLI::App& root, CommandTable& table);
void add_image_commands(CLI::App& root, CommandTable& table);  // image build, ls, rm
void add_completion_command(CLI::App& root, CommandTable& table);
void add_manpage_command(CLI::App& root, CommandTable& table);
void add_version_command(CLI::App& root, CommandTable& table);

// Adds the explanation and the example that `<command> --help` shows below the usage.
// Whether to colour what goes to a stream that is (`tty`) or is not a terminal: NO_COLOR wins;
// CLICOLOR_FORCE=1 forces; otherwise colour only on a terminal that is not dumb. Messages go to stderr;
// `diff --patch` colours stdout.
bool use_color(const Env& env, bool tty);

void describe(CLI::App& command, const std::string& explanation, const std::string& example);

// The words of this process's command line that `command` (the one that runs) took as its positional
// arguments, those after `--` included, exactly as typed: CLI11 reads a list's "[a,b]" as two values,
// "[id]" as "id" and "[]" as nothing, which neither a path such as Next.js's `app/[id]` nor the
// arguments of the program `exec` runs may ever be.
std::vector<std::string> positional_words(const CLI::App& command);

// "tnk sandbox start": the command's words from the root down.
std::string command_path(const CLI::App& command);

struct CommandDoc {
  std::string explanation;
  std::string example;
};
// What describe() gave the command (the manual page reads it); empty when it was not described.
CommandDoc command_doc(const CLI::App& command);

}  // namespace tnk::cli
