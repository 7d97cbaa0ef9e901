// tnk version: the version, as text or JSON.
#include "cli/command.h"

namespace tnk::cli {

void add_version_command(CLI::App& root, CommandTable& table) {
  auto* cmd = root.add_subcommand("version", "Print tnk's version");
  describe(*cmd, "Print tnk's version.", "tnk version -o json");
  table.add(
      cmd,
      [](Context& ctx) -> Result<int> {
        ctx.out.document({{"name", "tnk"}, {"version", TNK_VERSION}},
                         [](std::ostream& os) { os << "tnk " TNK_VERSION "\n"; });
        return kExitOk;
      },
      /*needs_paths=*/false);
}

}  // namespace tnk::cli
