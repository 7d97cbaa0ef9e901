"""Rootless tnk, from the outside: the ns backend run by an ordinary user, the normal way to run tnk.

Run as root (as CI runs), these tests make their own ordinary users with `useradd`, which gives a new
user a range in /etc/subuid and /etc/subgid, and run tnk as them through `runuser`. Each refusal is
paired with the same command succeeding where it is allowed.
"""
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PROJECT_OWNER, REPO, TNK_BIN, require
from sandbox_harness import SHARED_CACHE, use_shared_cache

pytestmark = pytest.mark.needs_root  # it makes its own ordinary users and runs tnk as them

USER = "tnk-e2e-user"  # with a subordinate range
BARE = "tnk-e2e-bare"  # without one


def ensure_user(name, with_range):
    try:
        pwd.getpwnam(name)
    except KeyError:
        extra = [] if with_range else ["-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0"]
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", *extra, name], check=True)
    return pwd.getpwnam(name)


@pytest.fixture(scope="module")
def staged_bin():
    """tnk, its agent, bundled specs and kernel fragment where any user can run them (the build tree may sit under /root)."""
    require(os.geteuid() == 0, "these tests run as root and make their own ordinary users")
    require(shutil.which("newuidmap") is not None, "newuidmap is not installed (package uidmap)")
    require(shutil.which("runuser") is not None, "runuser is not installed (util-linux)")
    stage = Path(tempfile.mkdtemp(prefix="tnk-e2e-bin-", dir="/tmp"))
    os.chmod(stage, 0o755)
    shutil.copy2(TNK_BIN, stage / "tnk")
    for helper in ("tnk-agent", "tnk-disk"):  # beside tnk in the build tree, in libexec/tnk/ in an install
        beside = Path(TNK_BIN).parent / helper
        shutil.copy2(beside if beside.exists() else Path(TNK_BIN).parent.parent / "libexec" / "tnk" / helper,
                     stage / helper)
    # As the build tree has them, beside tnk: from the repository, or from the install TNK_BIN belongs to (a
    # test host has the installed tnk and only the repository's tests).
    installed = Path(TNK_BIN).parent.parent / "share" / "tnk"
    for part in ("specs", "kernel"):
        shutil.copytree(REPO / part if (REPO / part).is_dir() else installed / part, stage / "share" / "tnk" / part)
    subprocess.run(["cc", "-O1", "-o", str(stage / "refuse_userns"), str(REPO / "tests" / "e2e" / "probes" /
                                                                        "refuse_userns.c")], check=True)
    yield stage / "tnk"
    shutil.rmtree(stage, ignore_errors=True)


class UserTnk:
    """tnk run as an ordinary user, with a fresh HOME; the image cache is the user's own (built once)."""

    def __init__(self, account, binary):
        self.account = account
        self.binary = binary
        self.home = Path(tempfile.mkdtemp(prefix="tnk-e2e-", dir="/tmp"))
        os.chown(self.home, account.pw_uid, account.pw_gid)
        self.env = {"HOME": str(self.home), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                    "TNK_SERVER_PORT": "9", "XDG_CACHE_HOME": str(Path(account.pw_dir) / ".cache")}

    def project(self, name="demo"):
        path = self.home / "code" / name
        subprocess.run(["runuser", "-u", self.account.pw_name, "--", "mkdir", "-p", str(path)], check=True)
        return path

    def run(self, *args, cwd, timeout=600, wrapper=(), preexec_fn=None):
        """preexec_fn runs as root before runuser (e.g. to put the command into a cgroup)."""
        env = [f"{k}={v}" for k, v in self.env.items()]
        return subprocess.run(["runuser", "-u", self.account.pw_name, "--", "env", "-i", *env, *wrapper,
                               str(self.binary), *args], cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec_fn)

    def close(self):
        for project in (self.home / "code").glob("*"):
            self.run("sandbox", "delete", "--yes", cwd=project)
        shutil.rmtree(self.home, ignore_errors=True)


def seed_kernel(account):
    """The guest kernel root's cache holds (a compile of minutes), copied into the user's cache."""
    ours = SHARED_CACHE / "tnk" / "kernels"
    theirs = Path(account.pw_dir) / ".cache" / "tnk" / "kernels"
    if ours.is_dir() and not theirs.is_dir():
        shutil.copytree(ours, theirs, symlinks=True)
        for path in [theirs.parent.parent, theirs.parent, theirs, *theirs.rglob("*")]:
            os.lchown(path, account.pw_uid, account.pw_gid)


def give_cgroups(account, binary):
    """`tnk setup --user NAME` run by root: without the cgroup subtree it gives (useradd never does), the
    user's ns sandboxes are refused (security review M5). It changes only what is missing."""
    done = subprocess.run([str(binary), "setup", "--user", account.pw_name], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def user_tnk(staged_bin):
    account = ensure_user(USER, with_range=True)
    give_cgroups(account, staged_bin)
    seed_kernel(account)
    tnk = UserTnk(account, staged_bin)
    yield tnk
    tnk.close()


@pytest.fixture
def bare_tnk(staged_bin):
    tnk = UserTnk(ensure_user(BARE, with_range=False), staged_bin)
    yield tnk
    tnk.close()


def process_tree(root_pid):
    """{pid: (name, [real, effective, saved, fs uid])} of root_pid and every descendant, from /proc."""
    parents, info = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        parents[int(entry.name)] = int(fields["PPid"])
        info[int(entry.name)] = (fields["Name"].strip(), [int(u) for u in fields["Uid"].split()])
    tree, grew = {root_pid}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    return {pid: info[pid] for pid in tree if pid in info}


def supervisor_pid(state_home: Path):
    [pid_file] = list((state_home / ".local" / "state" / "tnk" / "sandboxes").glob("*/supervisor.pid"))
    return int(pid_file.read_text().split()[0])


HOST_SIDE = {"tnk-supervisor", "tnk-forwarder", "qemu-system-x86", "virtiofsd"}
EXPECTED = {"ns": {"tnk-supervisor", "tnk-init", "tnk-joiner", "tnk-forwarder", "sleep"},
            "vm": {"tnk-supervisor", "tnk-forwarder", "qemu-system-x86", "virtiofsd"}}


@pytest.mark.parametrize("backend", ["ns", "vm"])
def test_a_rootless_sandbox_runs_no_process_as_host_root(user_tnk, tnk, backend):
    use_shared_cache(tnk)
    project = user_tnk.project()
    started = user_tnk.run("sandbox", "start", "--backend", backend, "--profile", "base", cwd=project)
    assert started.returncode == 0, started.stderr
    background = user_tnk.run("sandbox", "exec", "--", "sh", "-c", "sleep 30 >/dev/null 2>&1 &", cwd=project)
    assert background.returncode == 0, background.stderr
    # The background sh's child is still named sh until it has run sleep: wait for that moment.
    deadline = time.monotonic() + 10
    while True:
        tree = process_tree(supervisor_pid(user_tnk.home))
        names = {name for name, _ in tree.values()}
        if EXPECTED[backend] <= names or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert EXPECTED[backend] <= names, tree
    assert [p for p, (_, uids) in tree.items() if 0 in uids] == [], tree
    # No host-side process keeps the project as its working directory (security review M2).
    cwds = {p: os.readlink(f"/proc/{p}/cwd") for p, (name, _) in tree.items() if name in HOST_SIDE}
    assert cwds and not [p for p, cwd in cwds.items() if cwd.startswith(str(project))], cwds
    # Positive controls: the same walk over a sandbox that root started finds host root (its supervisor);
    # the same cwd probe sees a process started in the project.
    root_project = tnk.project("as-root")
    assert tnk.run("sandbox", "start", "--backend", "ns", "--profile", "base", cwd=root_project,
                   timeout=600).returncode == 0
    try:
        root_tree = process_tree(supervisor_pid(tnk.home))
        assert any(0 in uids for _, uids in root_tree.values()), root_tree
    finally:
        tnk.run("sandbox", "delete", "--yes", cwd=root_project, timeout=120)
    in_project = subprocess.Popen(["sleep", "5"], cwd=project)
    try:
        assert os.readlink(f"/proc/{in_project.pid}/cwd") == str(project)
    finally:
        in_project.kill()
        in_project.wait()


ROOT_PROBES = ("touch /workspace/by-root", "chown 0:0 /workspace/by-agent", "rm /workspace/by-agent",
               "echo x >> /workspace/by-agent", "chmod 4755 /workspace/by-agent")


SETID_PROBES = ("chmod u+s /workspace/by-agent", "chmod g+s /workspace/by-agent",
                "perl -MFcntl -e 'sysopen(F, \"/workspace/suid\", O_CREAT|O_WRONLY, 04755) or die \"$!\\n\"'",
                "touch /home/agent/f && chmod u+s /home/agent/f")


def check_root_inside_cannot_change_the_project(run, project, owner, backend="ns"):
    """`run(*argv)` runs tnk in `project`; `owner` is who the agent's files must belong to on the host."""
    started = run("sandbox", "start", "--backend", backend, "--profile", "base")
    assert started.returncode == 0, started.stderr
    wrote = run("sandbox", "exec", "--", "sh", "-c", "echo hi > /workspace/by-agent && id -u")
    assert wrote.returncode == 0, wrote.stderr
    assert wrote.stdout == "1000\n"
    st = (project / "by-agent").stat()
    assert (st.st_uid, st.st_gid) == owner
    # Positive control: root inside may change the sandbox's own system.
    system = run("sandbox", "exec", "--root", "--", "touch", "/etc/by-root")
    assert system.returncode == 0, system.stderr
    for probe in ROOT_PROBES:
        refused = run("sandbox", "exec", "--root", "--", "sh", "-c", probe)
        assert refused.returncode != 0, probe
    # The agent owns the project but cannot make a set-id file of the user's in it (nor anywhere: the
    # same chmod as root inside, on the sandbox's own system, is the positive control).
    assert run("sandbox", "exec", "--root", "--", "chmod", "4755", "/etc/by-root").returncode == 0
    for probe in SETID_PROBES:
        refused = run("sandbox", "exec", "--", "sh", "-c", probe)
        assert refused.returncode != 0 and "Operation not permitted" in refused.stderr, (probe, refused.stderr)
    assert sorted(p.name for p in project.iterdir()) == ["by-agent"]
    st = (project / "by-agent").stat()
    assert ((st.st_uid, st.st_gid), st.st_mode & 0o7777, (project / "by-agent").read_text()) == (owner, 0o644, "hi\n")


@pytest.mark.parametrize("backend", ["ns", "vm"])
def test_the_agents_files_are_the_users_and_root_inside_cannot_write_the_project(user_tnk, backend):
    project = user_tnk.project()
    check_root_inside_cannot_change_the_project(lambda *argv: user_tnk.run(*argv, cwd=project), project,
                                                (user_tnk.account.pw_uid, user_tnk.account.pw_gid), backend)


# A project in a directory of another group (a team's shared, setgid directory; here root's group) is
# still the user's: newgidmap maps only the user's own group, so that is the group the agent's files get.
# Seen failing before on vm: "virtiofsd's plan gives the guest's agent ids other than yours".
@pytest.mark.parametrize("backend", ["ns", "vm"])
def test_a_project_of_another_group_starts_and_the_agents_files_take_the_users_group(user_tnk, backend):
    project = user_tnk.project("grouped")
    os.chown(project, user_tnk.account.pw_uid, 0)
    started = user_tnk.run("sandbox", "start", "--backend", backend, "--profile", "base", cwd=project)
    assert started.returncode == 0, started.stderr
    wrote = user_tnk.run("sandbox", "exec", "--", "sh", "-c", "echo hi > /workspace/by-agent", cwd=project)
    assert wrote.returncode == 0, wrote.stderr
    st = (project / "by-agent").stat()
    assert (st.st_uid, st.st_gid) == (user_tnk.account.pw_uid, user_tnk.account.pw_gid)


def run_root_started(tnk, check):
    """`check(run, project, owner)` on a new project of the root-run `tnk` fixture; its sandbox is deleted after."""
    use_shared_cache(tnk)
    project = tnk.project()
    try:
        check(lambda *argv: tnk.run(*argv, cwd=project, timeout=600), project, (PROJECT_OWNER, PROJECT_OWNER))
    finally:
        tnk.run("sandbox", "delete", "--yes", cwd=project, timeout=120)


def test_root_inside_a_sandbox_root_started_cannot_write_the_project_either(tnk):
    run_root_started(tnk, check_root_inside_cannot_change_the_project)


def test_a_user_without_a_subordinate_range_is_refused_with_the_fix(bare_tnk, user_tnk):
    project = bare_tnk.project()
    refused = bare_tnk.run("sandbox", "exec", "--", "true", cwd=project)
    assert refused.returncode == 77, refused.stderr
    assert f"/etc/subuid gives user {BARE} no range" in refused.stderr
    assert f"sudo tnk setup --user {BARE}" in refused.stderr
    state = bare_tnk.home / ".local" / "state" / "tnk" / "sandboxes"
    assert not list(state.glob("*/supervisor.pid")), "nothing may run"
    # Positive control: the same command by a user with a range.
    allowed = user_tnk.run("sandbox", "exec", "--", "true", cwd=user_tnk.project())
    assert allowed.returncode == 0, allowed.stderr


def test_a_host_that_refuses_user_namespaces_is_refused_loudly(user_tnk):
    """As an outer container's seccomp profile or a hardened kernel refuses them (probes/refuse_userns.c)."""
    project = user_tnk.project()
    refuse = str(user_tnk.binary.parent / "refuse_userns")
    refused = user_tnk.run("sandbox", "exec", "--", "touch", "/workspace/ran", cwd=project, wrapper=[refuse])
    assert refused.returncode == 77, refused.stderr
    assert "creating a user namespace fails: Operation not permitted" in refused.stderr
    assert "nothing was run" in refused.stderr
    assert not (project / "ran").exists()
    assert not list((user_tnk.home / ".local" / "state" / "tnk" / "sandboxes").glob("*/supervisor.pid"))
    allowed = user_tnk.run("sandbox", "exec", "--", "touch", "/workspace/ran", cwd=project)
    assert allowed.returncode == 0, allowed.stderr
    assert (project / "ran").exists()


def test_a_project_of_root_or_of_another_user_is_refused(tnk, user_tnk):
    use_shared_cache(tnk)
    root_owned = tnk.project("root-owned")
    os.chown(root_owned, 0, 0)
    refused = subprocess.run([TNK_BIN, "sandbox", "exec", "--", "true"], cwd=root_owned, env=tnk.env,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 77, refused.stderr
    assert "is owned by root" in refused.stderr
    # An ordinary user's project, run as someone else.
    foreign = user_tnk.project("foreign")
    os.chown(foreign, PROJECT_OWNER, PROJECT_OWNER)
    refused = user_tnk.run("sandbox", "exec", "--", "true", cwd=foreign)
    assert refused.returncode == 77, refused.stderr
    assert f"belongs to uid {PROJECT_OWNER}, not to you" in refused.stderr
    # Positive controls: each project, given to the one who runs tnk, is accepted.
    os.chown(root_owned, PROJECT_OWNER, PROJECT_OWNER)
    assert tnk.run("sandbox", "exec", "--", "true", cwd=root_owned, timeout=600).returncode == 0
    os.chown(foreign, user_tnk.account.pw_uid, user_tnk.account.pw_gid)
    allowed = user_tnk.run("sandbox", "exec", "--", "true", cwd=foreign)
    assert allowed.returncode == 0, allowed.stderr
    tnk.run("sandbox", "delete", "--yes", cwd=root_owned, timeout=120)


def check_the_sandbox_sees_the_projects_submounts(run, project, owner):
    """Security review L9: a host mount point inside the project shows the mounted tree in the sandbox,
    as on the host, not the files that lie hidden under it."""
    sub, other = project / "sub", Path(tempfile.mkdtemp(prefix="tnk-e2e-submount-", dir="/tmp"))
    sub.mkdir()
    (sub / "hidden-under-the-mount.txt").write_text("hidden\n")
    (other / "mounted.txt").write_text("mounted\n")
    for path in (sub, sub / "hidden-under-the-mount.txt", other, other / "mounted.txt"):
        os.chown(path, *owner)
    subprocess.run(["mount", "--bind", str(other), str(sub)], check=True)
    try:
        assert os.listdir(sub) == ["mounted.txt"]  # what the host's user sees
        started = run("sandbox", "start", "--profile", "base")
        assert started.returncode == 0, started.stderr
        listed = run("sandbox", "exec", "--", "ls", "/workspace/sub")
        assert listed.stdout.split() == ["mounted.txt"], listed.stdout + listed.stderr
        wrote = run("sandbox", "exec", "--", "sh", "-c", "echo in > /workspace/sub/written-inside")
        assert wrote.returncode == 0, wrote.stderr
        assert (other / "written-inside").read_text() == "in\n"
        run("sandbox", "stop")
    finally:
        subprocess.run(["umount", str(sub)], check=True)
        shutil.rmtree(other, ignore_errors=True)
    assert os.listdir(sub) == ["hidden-under-the-mount.txt"]


@pytest.mark.parametrize("backend", ["ns", "vm"])
def test_l9_the_sandbox_sees_the_projects_submounts_as_the_user_does(user_tnk, backend):
    project = user_tnk.project()
    check_the_sandbox_sees_the_projects_submounts(
        lambda *argv: user_tnk.run(*argv[:2], *(["--backend", backend] if argv[1] == "start" else []), *argv[2:],
                                   cwd=project), project, (user_tnk.account.pw_uid, user_tnk.account.pw_gid))


def test_l9_a_sandbox_root_started_sees_the_projects_submounts_too(tnk):
    run_root_started(tnk, check_the_sandbox_sees_the_projects_submounts)
