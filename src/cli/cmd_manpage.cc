// tnk manpage: the manual page, from the command tree (the build installs it as man/man1/tnk.1).
#include "cli/command.h"
#include "cli/man_page.h"

namespace tnk::cli {

void add_manpage_command(CLI::App& root, CommandTable& table) {
  auto* cmd = root.add_subcommand("manpage", "Print tnk's manual page (roff)");
  describe(*cmd,
           "Print the manual page, written from the same command definitions as --help: every command, flag, "
           "environment variable, file and exit code. An install puts it where man finds it.",
           "tnk manpage | man -l -");
  table.add(
      cmd,
      [&root](Context& ctx) -> Result<int> {
        ctx.out.raw(man_page(root));
        return kExitOk;
      },
      /*needs_paths=*/false);
}

}  // namespace tnk::cli
