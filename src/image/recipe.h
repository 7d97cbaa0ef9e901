// The image recipe: everything that decides what an image contains, and the pure functions that
// turn it into a name (the hash of the recipe) and an mmdebstrap command line. Two recipes with
// the same hash build the same kind of tree, so an image is reused exactly when its recipe is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "image/apt_sources.h"

namespace tnk::image {

// Bump when the meaning of a recipe changes in a way its fields do not show (for example how
// mmdebstrap_argv uses them): every image id changes with it, so old images are not reused.
inline constexpr int kRecipeFormat = 1;

struct Mirror {
  std::string uri;
  std::vector<std::string> suites;      // one sources.list line per suite
  std::vector<std::string> components;  // e.g. main
  std::string signed_by;                // keyring path or ""
};

struct AgentUser {
  std::string name = "agent";
  uint32_t uid = 1000;
  uint32_t gid = 1000;  // a group of the same name
  std::string home = "/home/agent";
  std::string shell = "/bin/bash";
  bool passwordless_sudo = true;  // /etc/sudoers.d/<name>, mode 0440
};

struct Recipe {
  int format = kRecipeFormat;
  std::string suite = "bookworm";
  std::string architecture;               // dpkg name: amd64, arm64
  std::string variant = "apt";            // mmdebstrap variant: Essential packages + apt, then `packages`
  std::vector<Mirror> mirrors;            // the host's Debian mirror(s), main first
  std::vector<std::string> packages;      // sorted
  std::vector<std::string> dpkg_options;  // written to /etc/dpkg/dpkg.cfg.d/ in the image too
  std::vector<std::string> apt_options;   // written to /etc/apt/apt.conf.d/ in the image too
  AgentUser user;
  std::string hostname = "sandbox";          // /etc/hostname and 127.0.1.1 in /etc/hosts
  std::string workspace_dir = "/workspace";  // mount point, created empty
  // The certificate authorities the host's admin added (/usr/local/share/ca-certificates/*.crt),
  // e.g. a company's TLS-inspecting proxy: trusted in the image too, so provisioning works where the
  // host's own package clients do. Named by path and content digest (a changed file is a new image).
  std::vector<std::string> local_ca_files;
  std::string local_ca_digest;
};

// Where Debian keeps locally added CA certificates (update-ca-certificates reads it).
inline constexpr const char* kLocalCaDir = "/usr/local/share/ca-certificates";

// The Debian release tnk's images use.
inline constexpr const char* kImageSuite = "bookworm";

// The default recipe: bookworm `main` from the host's Debian mirror, plus bookworm-updates and
// bookworm-security when the host's apt has an updates / security entry. not_found when the host's
// apt sources name no Debian archive (the hint says what to add).
Result<Recipe> default_recipe(const std::vector<AptSource>& host_sources);

// Fills local_ca_files and local_ca_digest from `dir` (kLocalCaDir; tests pass their own).
Status add_local_cas(Recipe& recipe, const std::filesystem::path& dir);

// This machine's architecture as Debian names it; "" for one tnk does not know.
std::string host_architecture();

// The recipe as a JSON object with sorted keys, including the exact hook commands derived from it
// (so that a change to any of them changes the hash). Stored in image.json.
nlohmann::json recipe_to_json(const Recipe& recipe);
// sha256 (64 hex) of recipe_to_json(recipe).dump().
std::string recipe_hash(const Recipe& recipe);
// "debian-<suite>-<first 12 hex of recipe_hash>".
std::string image_id(const Recipe& recipe);

// The shell commands mmdebstrap runs with $1 = the root tree (`--setup-hook`, `--customize-hook`).
// Every value spliced into them was checked by check_recipe first.
std::vector<std::string> setup_hooks(const Recipe& recipe);
std::vector<std::string> customize_hooks(const Recipe& recipe);

// Values that end up in shell hooks, sources.list lines or paths must be plain: this refuses
// anything with quotes, spaces or shell metacharacters.
Status check_recipe(const Recipe& recipe);

// mmdebstrap's argv (root mode, directory output into `target`). Pure; golden-tested.
// `mode` is mmdebstrap's: "root" for root (target: a directory), "unshare" for an ordinary user (target:
// a tarball, which the caller unpacks as the mapped root of the user's range).
std::vector<std::string> mmdebstrap_argv(const Recipe& recipe, const std::filesystem::path& target,
                                         const std::string& mode = "root");

}  // namespace tnk::image
