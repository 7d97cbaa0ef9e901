// What every command gets: the environment, paths, diagnostics, output, the cwd, and the
// configuration (loaded once, on first use, so warnings print once and `tnk version` never
// fails on a broken tnk.toml).
#pragma once

#include <filesystem>
#include <optional>

#include "config/config.h"
#include "core/env.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"
#include "output/output.h"

namespace tnk {

struct Terminal {
  bool stdin_tty = false;
  bool stdout_tty = false;
  bool stderr_tty = false;
};

class Context {
 public:
  Context(Env env_in, Paths paths_in, Log& log_in, Output& out_in, std::filesystem::path cwd_in,
          std::filesystem::path self_exe_in, Terminal terminal_in)
      : env(std::move(env_in)),
        paths(std::move(paths_in)),
        log(log_in),
        out(out_in),
        cwd(std::move(cwd_in)),
        self_exe(std::move(self_exe_in)),
        terminal(terminal_in) {}

  Env env;
  Paths paths;
  Log& log;
  Output& out;
  std::filesystem::path cwd;
  std::filesystem::path self_exe;
  Terminal terminal;
  std::string selected_sandbox;  // --sandbox: a fork of the current project's sandbox (naming::select_sandbox)

  Result<const Config*> config();

 private:
  std::optional<Config> config_;
};

}  // namespace tnk
