// tnk config init | show.
#include "cli/command.h"
#include "config/config_show.h"
#include "config/config_template.h"

namespace tnk::cli {

void add_config_commands(CLI::App& root, CommandTable& table) {
  auto* config_cmd = root.add_subcommand("config", "Create or show tnk.toml");
  describe(*config_cmd, "Create or show tnk's configuration file (tnk.toml).", "tnk config show -o json");

  auto* init = config_cmd->add_subcommand("init", "Write a commented tnk.toml template");
  describe(*init,
           "Write a commented tnk.toml template (file 0600, directory 0700). An existing file is kept unless "
           "--force is given.",
           "tnk config init");
  auto force = std::make_shared<bool>(false);
  init->add_flag("--force", *force, "Overwrite an existing tnk.toml");
  table.add(init, [force](Context& ctx) -> Result<int> {
    TNK_ASSIGN_OR_RETURN(bool written, write_config_template(ctx.paths, *force));
    std::string path = ctx.paths.config_file().string();
    if (written) {
      ctx.log.info("created " + path);
    } else {
      ctx.log.info(path + " already exists; kept it (use --force to overwrite)");
    }
    ctx.out.document({{"path", path}, {"written", written}}, [](std::ostream&) {});
    return kExitOk;
  });

  auto* show = config_cmd->add_subcommand("show", "Show the effective settings and where each came from");
  describe(*show, "Show every setting's effective value and its source (default, file with line, or env).",
           "tnk config show");
  table.add(show, [](Context& ctx) -> Result<int> {
    TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
    ctx.out.document(config_to_json(*config), [&](std::ostream& os) { os << config_show_text(*config); });
    return kExitOk;
  });
}

}  // namespace tnk::cli
