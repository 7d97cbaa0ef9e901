// Where tnk keeps its files on the host (XDG base directories).
#pragma once

#include <filesystem>

#include "core/env.h"
#include "core/result.h"

namespace tnk {

struct Paths {
  std::filesystem::path home;        // $HOME
  std::filesystem::path config_dir;  // $XDG_CONFIG_HOME/tnk, default ~/.config/tnk
  std::filesystem::path state_dir;   // $XDG_STATE_HOME/tnk, default ~/.local/state/tnk
  std::filesystem::path cache_dir;   // $XDG_CACHE_HOME/tnk, default ~/.cache/tnk

  // Relative XDG values are ignored, as the XDG spec requires. HOME must be set and absolute.
  static Result<Paths> resolve(const Env& env);

  std::filesystem::path config_file() const { return config_dir / "tnk.toml"; }
  std::filesystem::path sandboxes_dir() const { return state_dir / "sandboxes"; }
  std::filesystem::path default_audit_dir() const { return state_dir / "audit"; }
  std::filesystem::path images_dir() const { return cache_dir / "images"; }
  std::filesystem::path memo_dir() const { return cache_dir / "memo"; }  // core/file_memo.h
};

}  // namespace tnk
