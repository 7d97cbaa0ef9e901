#include "image/recipe.h"

#include <algorithm>
#include <cctype>

#include "audit/sha256.h"
#include "core/files.h"
#include "core/strings.h"

namespace tnk::image {
namespace {

// What every sandbox starts with. Kept small: anything else comes from a profile's provisioning.
// bash, coreutils, tar, gzip, grep, sed, findutils, diffutils come with the apt variant (Essential);
// tar and gzip are named anyway because agents rely on them. ca-certificates + curl: HTTPS through
// the egress proxy; git, ripgrep, less, procps (ps, top, kill): what coding agents call; sudo: the
// agent user installs packages during provisioning; xz-utils: .tar.xz release archives; netbase:
// /etc/services and /etc/protocols, which getaddrinfo-based tools expect. No locales package:
// glibc's built-in C.UTF-8 covers LANG=C.UTF-8.
const std::vector<std::string> kPackages = {"bash",    "ca-certificates", "curl",   "git",     "gzip", "less",
                                            "netbase", "openssh-client",  "procps", "ripgrep", "sudo", "tar",
                                            "xz-utils"};

// Documentation, manual pages and translations are about a fifth of the tree and nothing in a
// sandbox reads them (there is no man-db). Kept in the image's dpkg config, so packages installed
// later skip them too, as in Debian's own slim container images. Copyright files stay.
const std::vector<std::string> kDpkgOptions = {
    "path-exclude=/usr/share/doc/*",    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*", "path-include=/usr/share/locale/locale.alias",
    "path-exclude=/usr/share/lintian/*"};

// Mirrors hiccup; apt retries instead of failing a one-minute build (and later provisioning runs).
const std::vector<std::string> kAptOptions = {"Acquire::Retries \"3\""};

constexpr const char* kStandardKeyrings = "/usr/share/keyrings/";

bool plain(const std::string& value, const char* extra) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [extra](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view(extra).find(c) != std::string_view::npos;
  });
}

bool plain_path(const std::string& value) { return value.starts_with('/') && plain(value, "/._+-"); }

nlohmann::json mirror_to_json(const Mirror& m) {
  return {{"uri", m.uri}, {"suites", m.suites}, {"components", m.components}, {"signed_by", m.signed_by}};
}

// The mirror for `suite`'s role: reuse `into` when the URI is the same, else add a new one.
void add_suite(std::vector<Mirror>& mirrors, const AptSource& source, const std::string& suite) {
  for (auto& m : mirrors) {
    if (m.uri == source.uri) {
      m.suites.push_back(suite);
      return;
    }
  }
  mirrors.push_back(Mirror{source.uri, {suite}, {"main"}, source.signed_by});
}

const AptSource* first_with_role(const std::vector<AptSource>& sources, DebianRole role) {
  for (const auto& source : sources) {
    for (const auto& suite : source.suites) {
      if (debian_role(suite) == role) return &source;
    }
  }
  return nullptr;
}

}  // namespace

Status add_local_cas(Recipe& recipe, const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".crt") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::string contents;
  for (const auto& file : files) {
    TNK_ASSIGN_OR_RETURN(std::string text, read_file(file));
    contents += file + "\n" + std::to_string(text.size()) + "\n" + text;
  }
  recipe.local_ca_files = files;
  recipe.local_ca_digest = files.empty() ? "" : audit::sha256_hex(contents);
  return ok_status();
}

std::string host_architecture() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64el";
#elif defined(__s390x__)
  return "s390x";
#else
  return "";
#endif
}

Result<Recipe> default_recipe(const std::vector<AptSource>& host_sources) {
  auto debian = debian_sources(host_sources);
  const AptSource* main = first_with_role(debian, DebianRole::kMain);
  if (main == nullptr) {
    return not_found("the host's apt sources name no Debian archive to build the sandbox image from",
                     "tnk uses the Debian mirror your apt already uses: add an entry such as `deb http://<your "
                     "Debian mirror>/debian bookworm main` to /etc/apt/sources.list (or a .sources file)");
  }
  Recipe recipe;
  recipe.architecture = host_architecture();
  if (recipe.architecture.empty()) return failed("cannot build a Debian image: unknown CPU architecture");
  add_suite(recipe.mirrors, *main, kImageSuite);
  if (const AptSource* updates = first_with_role(debian, DebianRole::kUpdates)) {
    add_suite(recipe.mirrors, *updates, std::string(kImageSuite) + "-updates");
  }
  if (const AptSource* security = first_with_role(debian, DebianRole::kSecurity)) {
    add_suite(recipe.mirrors, *security, std::string(kImageSuite) + "-security");
  }
  recipe.packages = kPackages;
  std::sort(recipe.packages.begin(), recipe.packages.end());
  TNK_RETURN_IF_ERROR(add_local_cas(recipe, kLocalCaDir));
  recipe.dpkg_options = kDpkgOptions;
  recipe.apt_options = kAptOptions;
  TNK_RETURN_IF_ERROR(check_recipe(recipe));
  return recipe;
}

Status check_recipe(const Recipe& r) {
  auto bad = [](const std::string& what, const std::string& value) {
    return failed("image recipe: unusable " + what + " '" + value + "'",
                  "only letters, digits and . _ + - (and / in paths) are accepted");
  };
  if (!plain(r.suite, "-")) return bad("suite", r.suite);
  if (!plain(r.architecture, "")) return bad("architecture", r.architecture);
  if (!plain(r.variant, "")) return bad("variant", r.variant);
  if (r.mirrors.empty()) return failed("image recipe: no mirror");
  for (const auto& m : r.mirrors) {
    if (!plain(m.uri, ":/._+-~%@[]")) return bad("mirror URI", m.uri);
    for (const auto& s : m.suites)
      if (!plain(s, "-._/")) return bad("suite", s);
    for (const auto& c : m.components)
      if (!plain(c, "-._/")) return bad("component", c);
    if (!m.signed_by.empty() && !plain_path(m.signed_by)) return bad("keyring path", m.signed_by);
  }
  for (const auto& p : r.packages)
    if (!plain(p, "-.+:=")) return bad("package", p);
  const auto& u = r.user;
  if (!plain(u.name, "_-") || !std::islower(static_cast<unsigned char>(u.name[0]))) return bad("user name", u.name);
  if (!plain_path(u.home)) return bad("home directory", u.home);
  if (!plain_path(u.shell)) return bad("shell", u.shell);
  if (!plain(r.hostname, "-")) return bad("host name", r.hostname);
  if (!plain_path(r.workspace_dir)) return bad("workspace directory", r.workspace_dir);
  for (const auto& file : r.local_ca_files)
    if (!plain_path(file)) return bad("CA certificate file", file);
  return ok_status();
}

std::vector<std::string> setup_hooks(const Recipe& recipe) {
  // A keyring outside /usr/share/keyrings (which debian-archive-keyring fills inside the image)
  // must be copied in before apt runs inside the tree.
  std::vector<std::string> hooks;
  for (const auto& m : recipe.mirrors) {
    if (m.signed_by.empty() || m.signed_by.starts_with(kStandardKeyrings)) continue;
    std::string dir = std::filesystem::path(m.signed_by).parent_path().string();
    hooks.push_back("mkdir -p \"$1" + dir + "\" && cp " + m.signed_by + " \"$1" + m.signed_by + "\"");
  }
  return hooks;
}

std::vector<std::string> customize_hooks(const Recipe& r) {
  const auto& u = r.user;
  std::string uid = std::to_string(u.uid), gid = std::to_string(u.gid);
  std::vector<std::string> hooks = {
      "chroot \"$1\" groupadd --gid " + gid + " " + u.name,
      "chroot \"$1\" useradd --uid " + uid + " --gid " + gid + " --create-home --home-dir " + u.home + " --shell " +
          u.shell + " " + u.name,
  };
  if (u.passwordless_sudo) {
    std::string file = "/etc/sudoers.d/" + u.name;
    hooks.push_back("echo '" + u.name + " ALL=(ALL:ALL) NOPASSWD: ALL' > \"$1" + file + "\" && chmod 0440 \"$1" + file +
                    "\" && chroot \"$1\" visudo -cqf " + file);
  }
  hooks.push_back("echo " + r.hostname + " > \"$1/etc/hostname\"");
  hooks.push_back("printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' " +
                  r.hostname + " > \"$1/etc/hosts\"");
  // Sandboxes bind their own resolver config; the host's must not leak into the shared image.
  hooks.push_back("rm -f \"$1/etc/resolv.conf\" && : > \"$1/etc/resolv.conf\"");
  hooks.push_back("mkdir -p \"$1" + r.workspace_dir + "\" && chmod 0755 \"$1" + r.workspace_dir + "\"");
  if (!r.local_ca_files.empty()) {
    std::string copy = "cp";
    for (const auto& file : r.local_ca_files) copy += " " + file;
    hooks.push_back(copy + " \"$1" + kLocalCaDir + "/\" && chroot \"$1\" update-ca-certificates --fresh >/dev/null");
  }
  return hooks;
}

nlohmann::json recipe_to_json(const Recipe& r) {
  nlohmann::json mirrors = nlohmann::json::array();
  for (const auto& m : r.mirrors) mirrors.push_back(mirror_to_json(m));
  const auto& u = r.user;
  return {{"format", r.format},
          {"suite", r.suite},
          {"architecture", r.architecture},
          {"variant", r.variant},
          {"mirrors", mirrors},
          {"packages", r.packages},
          {"dpkg_options", r.dpkg_options},
          {"apt_options", r.apt_options},
          {"user",
           {{"name", u.name},
            {"uid", u.uid},
            {"gid", u.gid},
            {"home", u.home},
            {"shell", u.shell},
            {"passwordless_sudo", u.passwordless_sudo}}},
          {"hostname", r.hostname},
          {"workspace_dir", r.workspace_dir},
          {"local_ca_files", r.local_ca_files},
          {"local_ca_digest", r.local_ca_digest},
          {"hooks", {{"setup", setup_hooks(r)}, {"customize", customize_hooks(r)}}}};
}

std::string recipe_hash(const Recipe& recipe) { return audit::sha256_hex(recipe_to_json(recipe).dump()); }

std::string image_id(const Recipe& recipe) {
  return "debian-" + recipe.suite + "-" + recipe_hash(recipe).substr(0, 12);
}

std::vector<std::string> mmdebstrap_argv(const Recipe& r, const std::filesystem::path& target,
                                         const std::string& mode) {
  // Unshare mode writes a tarball: its inner root (the user's range) cannot enter the user's own
  // 0700 directories, where the image is kept, to write a directory there.
  std::vector<std::string> argv = {"mmdebstrap", "--mode=" + mode,
                                   mode == "unshare" ? "--format=tar" : "--format=directory", "--variant=" + r.variant,
                                   "--architectures=" + r.architecture};
  if (!r.packages.empty()) argv.push_back("--include=" + join(r.packages, ","));
  for (const auto& o : r.dpkg_options) argv.push_back("--dpkgopt=" + o);
  for (const auto& o : r.apt_options) argv.push_back("--aptopt=" + o);
  for (const auto& h : setup_hooks(r)) argv.push_back("--setup-hook=" + h);
  for (const auto& h : customize_hooks(r)) argv.push_back("--customize-hook=" + h);
  argv.push_back(r.suite);
  argv.push_back(target.string());
  for (const auto& m : r.mirrors) {
    std::string options = m.signed_by.empty() ? "" : " [signed-by=" + m.signed_by + "]";
    for (const auto& suite : m.suites)
      argv.push_back("deb" + options + " " + m.uri + " " + suite + " " + join(m.components, " "));
  }
  return argv;
}

}  // namespace tnk::image
