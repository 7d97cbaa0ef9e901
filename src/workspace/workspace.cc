#include "workspace/workspace.h"

#include <system_error>
#include <vector>

namespace tnk::workspace {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSetRootHint = "set workspace_root in tnk.toml to a path such as ~/code";

// Normalized, non-empty components: "/a/./b/" -> {"/", "a", "b"}.
std::vector<std::string> components(const fs::path& p) {
  std::vector<std::string> out;
  for (const auto& part : p.lexically_normal()) {
    if (!part.empty()) out.push_back(part.native());
  }
  return out;
}

// The rest of `raw` after a recognized home prefix ("~", "$HOME", "${HOME}"), or false when `raw`
// does not start with one followed by '/' or its end.
bool strip_home_prefix(std::string_view raw, std::string_view* rest) {
  for (std::string_view prefix : {std::string_view("${HOME}"), std::string_view("$HOME"), std::string_view("~")}) {
    if (raw.substr(0, prefix.size()) != prefix) continue;
    std::string_view after = raw.substr(prefix.size());
    if (!after.empty() && after.front() != '/') return false;  // "~user", "$HOMEfoo", "${HOME}x"
    *rest = after;
    return true;
  }
  return false;
}

bool is_permission(const std::error_code& ec) {
  return ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted;
}

Error with_errno(Error e, const std::error_code& ec) {
  e.sys_errno = ec.value();
  return e;
}

Result<fs::path> canonical_root(const fs::path& root) {
  const std::string shown = root.string();
  if (root.empty() || !root.is_absolute()) {
    return usage_error("workspace root '" + shown + "' is not an absolute path", std::string(kSetRootHint));
  }
  std::error_code ec;
  fs::path canon = fs::canonical(root, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return with_errno(not_found("workspace root '" + shown + "' does not exist",
                                "create it with `mkdir -p " + shown + "` or set TNK_WORKSPACE_ROOT"),
                      ec);
  }
  if (is_permission(ec)) {
    return with_errno(permission_denied("permission denied resolving workspace root '" + shown + "': " + ec.message()),
                      ec);
  }
  if (!ec && !fs::is_directory(canon, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (ec == std::errc::not_a_directory) {
    return with_errno(usage_error("workspace root '" + shown + "' is not a directory", std::string(kSetRootHint)), ec);
  }
  if (ec) return with_errno(failed("cannot resolve workspace root '" + shown + "': " + ec.message()), ec);
  return canon;
}

Result<fs::path> canonical_home(const fs::path& home) {
  const std::string hint = "set HOME to your home directory";
  if (home.empty() || !home.is_absolute()) {
    return failed("home directory '" + home.string() + "' is not an absolute path", hint);
  }
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(home, ec);
  if (is_permission(ec)) {
    return with_errno(
        permission_denied("permission denied resolving home directory '" + home.string() + "': " + ec.message()), ec);
  }
  if (ec) return with_errno(failed("cannot resolve home directory '" + home.string() + "': " + ec.message()), ec);
  if (canon == canon.root_path()) {
    return failed("home directory is '/': tnk needs a real home directory to confine the workspace root", hint);
  }
  return canon;
}

Result<fs::path> canonical_cwd(const fs::path& cwd) {
  std::error_code ec;
  fs::path canon = fs::canonical(cwd, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return with_errno(not_found("current directory '" + cwd.string() + "' does not exist",
                                "it may have been deleted; cd into an existing project directory"),
                      ec);
  }
  if (is_permission(ec)) {
    return with_errno(
        permission_denied("permission denied resolving current directory '" + cwd.string() + "': " + ec.message()), ec);
  }
  if (ec) return with_errno(failed("cannot resolve current directory '" + cwd.string() + "': " + ec.message()), ec);
  return canon;
}

// The checks of the original tnk (minus its macOS-only '/Users' rule), plus "not a parent of $HOME".
Status validate_root(const fs::path& root, const fs::path& home) {
  const std::string hint(kSetRootHint);
  if (root == root.root_path()) return usage_error("workspace root cannot be '/'", hint);
  if (root == home) {
    return usage_error(
        "security violation: workspace root cannot be the home directory; use a dedicated subdirectory "
        "(for example, ~/code)",
        hint);
  }
  if (is_within(home, root)) {
    return usage_error("security violation: workspace root '" + root.string() + "' contains the home directory (" +
                           home.string() + "); use a dedicated subdirectory (for example, ~/code)",
                       hint);
  }
  if (!is_within(root, home)) {
    return usage_error("workspace root must be inside '$HOME' (" + home.string() + ")", hint);
  }
  return ok_status();
}

}  // namespace

fs::path expand_user_path(std::string_view raw, const fs::path& home) {
  std::string_view rest;
  if (home.empty() || !strip_home_prefix(raw, &rest)) return fs::path(raw);
  while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  if (rest.empty()) return home;
  return home / fs::path(rest);
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  const std::vector<std::string> in = components(inner);
  const std::vector<std::string> out = components(outer);
  if (out.size() > in.size()) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (in[i] != out[i]) return false;
  }
  return true;
}

Result<fs::path> check_workspace_root(const fs::path& workspace_root, const fs::path& home) {
  TNK_ASSIGN_OR_RETURN(fs::path root, canonical_root(workspace_root));
  TNK_ASSIGN_OR_RETURN(fs::path canon_home, canonical_home(home));
  TNK_RETURN_IF_ERROR(validate_root(root, canon_home));
  return root;
}

Result<Project> resolve_project(const fs::path& workspace_root, const fs::path& home, const fs::path& cwd) {
  TNK_ASSIGN_OR_RETURN(fs::path root, check_workspace_root(workspace_root, home));
  TNK_ASSIGN_OR_RETURN(fs::path canon_cwd, canonical_cwd(cwd));

  const std::vector<std::string> root_parts = components(root);
  const std::vector<std::string> cwd_parts = components(canon_cwd);
  if (cwd_parts == root_parts) {
    return usage_error("navigate into a project directory first", "cd " + root.string() + "/<project>");
  }
  if (!is_within(canon_cwd, root)) {
    return usage_error("current directory is outside the configured workspace root (" + root.string() + ")",
                       "cd into a project below " + root.string() +
                           ", or set TNK_WORKSPACE_ROOT (or workspace_root in tnk.toml) to the directory that "
                           "holds your projects");
  }
  Project p;
  p.root = root;
  p.name = cwd_parts[root_parts.size()];
  p.dir = root / p.name;
  for (size_t i = root_parts.size() + 1; i < cwd_parts.size(); ++i) p.relative_cwd /= cwd_parts[i];
  return p;
}

std::string guest_workdir(const Project& p, const std::string& mount_point) {
  std::string base = mount_point;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::string out = base;
  for (const std::string& part : components(p.relative_cwd)) {
    if (part == "/") continue;  // relative_cwd is relative; ignore a stray root just in case
    if (out.empty() || out.back() != '/') out += '/';
    out += part;
  }
  return out;
}

}  // namespace tnk::workspace
