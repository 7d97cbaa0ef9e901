// tnk completion bash|zsh|fish: completion scripts generated from the command tree itself,
// so they never drift from the real flags.
#include <sstream>

#include "cli/command.h"
#include "core/strings.h"

namespace tnk::cli {
namespace {

struct Level {
  std::string path;                                            // "sandbox start" ("" for the root)
  std::vector<std::string> subcommands;                        // names below it
  std::vector<std::string> options;                            // --long and -s forms
  std::vector<std::pair<std::string, std::string>> described;  // subcommand, description (fish)
};

void collect(const CLI::App& app, const std::string& path, std::vector<Level>& levels) {
  Level level;
  level.path = path;
  for (const CLI::App* sub : app.get_subcommands({})) {
    level.subcommands.push_back(sub->get_name());
    level.described.emplace_back(sub->get_name(), sub->get_description());
  }
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {  // own and inherited (fallthrough) flags
    for (const CLI::Option* opt : a->get_options({})) {
      for (const auto& l : opt->get_lnames()) level.options.push_back("--" + l);
      for (const auto& s : opt->get_snames()) level.options.push_back("-" + s);
    }
  }
  levels.push_back(level);
  for (const CLI::App* sub : app.get_subcommands({})) {
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), levels);
  }
}

// A bash completion function named `function`, registered for tnk.
std::string bash_script(const std::vector<Level>& levels, const std::string& function) {
  std::ostringstream s;
  s << function
    << "() {\n"
       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" word i\n"
       "  for ((i = 1; i < COMP_CWORD; i++)); do\n    word=\"${COMP_WORDS[i]}\"\n    case \"$path|$word\" in\n";
  for (const auto& level : levels) {
    for (const auto& sub : level.subcommands) {
      s << "      \"" << level.path << "|" << sub << "\") path=\""
        << (level.path.empty() ? sub : level.path + " " + sub) << "\" ;;\n";
    }
  }
  s << "    esac\n  done\n  local words=\"\"\n  case \"$path\" in\n";
  for (const auto& level : levels) {
    s << "    \"" << level.path << "\") words=\"" << join(level.subcommands, " ")
      << (level.subcommands.empty() ? "" : " ") << join(level.options, " ") << "\" ;;\n";
  }
  s << "  esac\n  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\ncomplete -F " << function << " tnk\n";
  return s.str();
}

std::string fish_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += (c == '\'' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "'";
}

std::string fish_script(const std::vector<Level>& levels) {
  std::ostringstream s;
  s << "# tnk fish completion: tnk completion fish > ~/.config/fish/completions/tnk.fish\n"
       "complete -c tnk -f\n";
  for (const auto& level : levels) {
    std::string condition = "__fish_use_subcommand";
    if (!level.path.empty()) {
      std::string last = level.path.substr(level.path.rfind(' ') == std::string::npos ? 0 : level.path.rfind(' ') + 1);
      condition = "__fish_seen_subcommand_from " + last;
      if (!level.subcommands.empty())
        condition += "; and not __fish_seen_subcommand_from " + join(level.subcommands, " ");
    }
    for (const auto& [name, description] : level.described) {
      s << "complete -c tnk -n " << fish_quote(condition) << " -a " << name << " -d " << fish_quote(description)
        << "\n";
    }
  }
  return s.str();
}

// zsh runs the bash function through its bashcompinit layer. Installed as _tnk in zsh's fpath, the file
// is the body of the autoloaded function _tnk: its first call registers the bash function in its place
// and completes the word at hand with it; sourced by hand, it only registers.
std::string zsh_script(const std::vector<Level>& levels) {
  return "#compdef tnk\n# tnk zsh completion: source <(tnk completion zsh), or installed as _tnk in zsh's fpath\n"
         "autoload -U +X bashcompinit && bashcompinit\n" +
         bash_script(levels, "_tnk_bash") + "if [[ ${funcstack[1]-} == _tnk ]]; then _bash_complete -F _tnk_bash; fi\n";
}

}  // namespace

void add_completion_command(CLI::App& root, CommandTable& table) {
  auto* cmd = root.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  describe(*cmd, "Print a shell completion script (bash, zsh or fish) on stdout.", "source <(tnk completion bash)");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  table.add(
      cmd,
      [shell, &root](Context& ctx) -> Result<int> {
        std::vector<Level> levels;
        collect(root, "", levels);
        if (*shell == "fish") {
          ctx.out.raw(fish_script(levels));
        } else if (*shell == "zsh") {
          ctx.out.raw(zsh_script(levels));
        } else {
          ctx.out.raw(
              "# tnk bash completion: source <(tnk completion bash), or installed in\n"
              "# share/bash-completion/completions/tnk, where bash-completion loads it by itself\n" +
              bash_script(levels, "_tnk"));
        }
        return kExitOk;
      },
      /*needs_paths=*/false);
}

}  // namespace tnk::cli
