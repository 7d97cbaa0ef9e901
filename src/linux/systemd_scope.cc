#include "linux/systemd_scope.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/files.h"
#include "core/user_name.h"
#include "linux/cgroup_paths.h"

namespace tnk::linux {

namespace fs = std::filesystem;

namespace {

bool present(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

SystemdFacts read_systemd_facts(const fs::path& v2_mount) {
  SystemdFacts facts;
  facts.booted = present("/run/systemd/system");
  facts.root = ::geteuid() == 0;
  facts.uid = ::geteuid();
  facts.user = effective_user_name();
  if (facts.root) {
    facts.manager_reachable = present("/run/systemd/private");
    facts.controllers = cgroup_words(v2_mount / "cgroup.controllers");
  } else {
    const std::string uid = std::to_string(facts.uid);
    facts.runtime_dir = "/run/user/" + uid;
    facts.manager_reachable = present(facts.runtime_dir / "systemd" / "private");
    facts.controllers = cgroup_words(v2_mount / "user.slice" / ("user-" + uid + ".slice") /
                                     ("user@" + uid + ".service") / "cgroup.subtree_control");
  }
  return facts;
}

std::vector<std::string> scope_command(const SystemdFacts& facts, const std::string& systemd_run,
                                       const std::string& unit, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {systemd_run};
  if (!facts.root) argv.push_back("--user");
  // --quiet: systemd-run says nothing on success (it would write into supervisor.log). A root's scopes
  // are grouped in a slice of tnk's own; a user's go where the user's manager puts its applications.
  for (const char* word : {"--scope", "--quiet", "--property=Delegate=yes", "--description=tnk sandbox supervisor"}) {
    argv.push_back(word);
  }
  if (facts.root) argv.push_back("--slice=tnk");
  argv.push_back("--unit=" + unit);
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> scope_environment(const SystemdFacts& facts) {
  if (facts.root) return {};
  return {"XDG_RUNTIME_DIR=" + facts.runtime_dir.string()};
}

ScopeGap scope_gap(const SystemdFacts& facts) {
  if (facts.root) {
    return {"systemd's manager does not answer (no /run/systemd/private)", "run tnk on the host, where systemd runs"};
  }
  return {"no systemd user manager runs for " + facts.user +
              " (no login session and no lingering), and only it can delegate a cgroup to " + facts.user,
          "run tnk from a login session (ssh, a desktop, a console login), or let the manager run without one: "
          "`sudo loginctl enable-linger " +
              facts.user + "`"};
}

Status settle_in_scope() {
  TNK_ASSIGN_OR_RETURN(std::optional<fs::path> own, own_cgroup_v2_dir());
  if (!own) return failed("the supervisor is in no cgroup v2, which its systemd scope should be");
  if (is_supervisor_leaf(*own)) return ok_status();
  const fs::path& scope = *own;
  const fs::path leaf = scope / kSupervisorLeaf;
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return sys_error(errno, "creating the supervisor's cgroup " + leaf.string());
  }
  TNK_RETURN_IF_ERROR(write_kernel_file(leaf / "cgroup.procs", "0"));
  // Only the controllers a sandbox's limits use; each on its own, so that one the scope lacks is not
  // the others' failure (plan_cgroups sees which were enabled).
  std::set<std::string> available = cgroup_words(scope / "cgroup.controllers");
  for (const char* controller : {"cpu", "memory", "pids"}) {
    if (available.count(controller) == 0) continue;
    TNK_RETURN_IF_ERROR(write_kernel_file(scope / "cgroup.subtree_control", std::string("+") + controller));
  }
  return ok_status();
}

bool is_supervisor_leaf(const fs::path& own_v2_dir) { return own_v2_dir.filename() == kSupervisorLeaf; }

}  // namespace tnk::linux
