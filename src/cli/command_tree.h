// The command tree: the global options, every verb's subcommands, and which of them a command line
// needs. Building the whole tree with CLI11 is most of what a short command's own start costs, so a
// command line that names its verb gets only that verb's branch (app.cc parses on the whole tree what
// the branch alone cannot).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace tnk::cli {

struct GlobalOptions {
  bool quiet = false;
  bool verbose = false;
  bool timings = false;
  std::string output = "text";
  std::string sandbox;  // --sandbox: one of the project's forks rather than its sandbox
};

// The words of argv that may name commands: those before `--` that are not options, without the value
// of -o and --sandbox (the global options that take one and may come before the verb).
std::vector<std::string> command_words(int argc, char** argv);

// Whether the command line needs every command: no verb named (`tnk --help` lists them all), or a verb
// that describes the whole tree (completion, manpage).
bool needs_whole_tree(const std::vector<std::string>& words);

// The tree, with the global options bound to `global` and each verb's runner in `table`; only the
// branch `table` selects, when it selects one.
std::unique_ptr<CLI::App> make_root(GlobalOptions& global, CommandTable& table);

}  // namespace tnk::cli
