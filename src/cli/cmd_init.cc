// tnk init: install the specs (profiles, manifests, provision scripts) into the config directory.
#include "cli/command.h"
#include "config/config_template.h"
#include "specs/install.h"

namespace tnk::cli {

void add_init_command(CLI::App& root, CommandTable& table) {
  auto* init = root.add_subcommand("init", "Install the sandbox specs into the config directory");
  describe(*init,
           "Install the specs (sandbox.d/ manifests and provision scripts, provider.d/) that ship with tnk, or "
           "those of --git-url (a git URL or a local directory), into ~/.config/tnk. --force refreshes them and "
           "keeps your tnk.toml. A commented tnk.toml is written when there is none.",
           "tnk init --git-url https://github.com/tappunk/tnk-specs.git");
  struct Flags {
    std::string git_url;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  init->add_option("--git-url", flags->git_url, "Take the specs from this git URL or local directory");
  init->add_flag("--force", flags->force, "Replace specs that are already installed (tnk.toml is kept)");
  table.add(init, [flags](Context& ctx) -> Result<int> {
    specs::InstallOptions options;
    options.source = flags->git_url;
    options.force = flags->force;
    options.bundled_dir = specs::bundled_specs_dir(ctx.self_exe);
    TNK_ASSIGN_OR_RETURN(specs::InstallReport report, specs::install_specs(ctx.paths.config_dir, options, ctx.log));
    TNK_ASSIGN_OR_RETURN(bool wrote_config, write_config_template(ctx.paths, /*force=*/false));
    if (wrote_config) ctx.log.info("created " + ctx.paths.config_file().string());
    nlohmann::json doc = {{"config_dir", ctx.paths.config_dir.string()},
                          {"source", report.source},
                          {"installed", report.installed},
                          {"revision", report.revision},
                          {"config_created", wrote_config}};
    ctx.out.document(doc, [&](std::ostream& os) {
      os << "installed specs into " << ctx.paths.config_dir.string() << " (" << report.revision << ")\n";
    });
    return kExitOk;
  });
}

}  // namespace tnk::cli
