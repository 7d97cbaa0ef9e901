"""`tnk setup` and what it gives an ordinary user, from the outside.

Run as root (as CI runs), like test_rootless.py: the tests make their own users with `useradd`, run
`tnk setup --user NAME` as root and tnk as NAME through `runuser`, and look at /etc/subuid, the cgroup
tree and `tnk doctor -o json`. Each effect is paired with the same thing without setup.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import TNK_BIN
from sandbox_harness import any_tnk, use_shared_cache  # noqa: F401 (a fixture)
from test_ns_limits import HOG, MANIFEST  # the profile `small`: 64 MiB, 1 cpu
from test_rootless import USER, UserTnk, ensure_user, staged_bin  # noqa: F401 (a fixture)

FRESH = "tnk-e2e-setup"  # made without a range for each test that needs one, deleted after
CONTROLLERS = ("memory", "pids", "cpu")


def run_setup(*args):
    return subprocess.run([TNK_BIN, "setup", *args], capture_output=True, text=True, timeout=120)


def user_dirs(name):
    return [Path("/sys/fs/cgroup") / c / f"tnk-user-{name}" for c in CONTROLLERS
            if (Path("/sys/fs/cgroup") / c / "cgroup.procs").exists()]


def remove_user_dirs(name):
    for d in user_dirs(name):
        for child in d.glob("tnk-*"):
            child.rmdir()
        if d.exists():
            d.rmdir()


def lines_of(path, name):
    return [line for line in Path(path).read_text().splitlines() if line.split(":")[0] == name]


@pytest.fixture
def fresh_user():
    subprocess.run(["userdel", "--remove", FRESH], capture_output=True)
    account = ensure_user(FRESH, with_range=False)
    yield account
    remove_user_dirs(FRESH)
    subprocess.run(["userdel", "--remove", FRESH], capture_output=True)


def test_setup_needs_root_and_a_user(staged_bin, fresh_user):
    as_user = UserTnk(fresh_user, staged_bin)
    try:
        refused = as_user.run("setup", "--user", FRESH, cwd=as_user.home)
        assert refused.returncode == 77, refused.stderr
        assert f"sudo tnk setup --user {FRESH}" in refused.stderr
        assert lines_of("/etc/subuid", FRESH) == []  # nothing was done
    finally:
        as_user.close()
    assert run_setup().returncode == 64
    # The pair: root may, and the dry run changes nothing.
    dry = run_setup("--user", FRESH, "-n")
    assert dry.returncode == 0, dry.stderr
    assert "would add subuid and subgid range" in dry.stdout
    assert lines_of("/etc/subuid", FRESH) == [] and lines_of("/etc/subgid", FRESH) == []
    assert not any(d.exists() for d in user_dirs(FRESH))


def test_setup_adds_a_free_range_and_a_cgroup_subtree_once(fresh_user):
    others = [line for line in Path("/etc/subuid").read_text().splitlines() + Path("/etc/subgid").read_text()
              .splitlines() if line.count(":") == 2]
    done = run_setup("--user", FRESH, "-o", "json")
    assert done.returncode == 0, done.stderr
    steps = {s["id"]: s for s in json.loads(done.stdout)["steps"]}
    assert steps["subids"]["changed"] is True
    [uid_line] = lines_of("/etc/subuid", FRESH)
    [gid_line] = lines_of("/etc/subgid", FRESH)
    assert uid_line.split(":")[1:] == gid_line.split(":")[1:]
    start, count = int(uid_line.split(":")[1]), int(uid_line.split(":")[2])
    assert count == 65536 and start >= 100000
    for other in others:
        o_start, o_count = int(other.split(":")[1]), int(other.split(":")[2])
        assert start + count <= o_start or start >= o_start + o_count, (uid_line, other)
    assert steps["subids"]["message"] == f"added subuid and subgid range {start}-{start + count - 1} for {FRESH}"
    for d in user_dirs(FRESH):
        for path in (d, d / "cgroup.procs", d / "tasks"):
            assert path.stat().st_uid == fresh_user.pw_uid, path
    # Idempotent: the second run changes nothing and says so.
    again = run_setup("--user", FRESH)
    assert again.returncode == 0, again.stderr
    assert f"{FRESH} already has subordinate uid and gid ranges" in again.stdout
    assert "would" not in again.stdout and "added" not in again.stdout and "delegated" not in again.stdout
    assert lines_of("/etc/subuid", FRESH) == [uid_line]


def doctor_checks(user_tnk):
    done = user_tnk.run("doctor", "-o", "json", cwd=user_tnk.home, timeout=120)
    return {c["id"]: c for c in json.loads(done.stdout)["checks"]}


def test_doctor_shows_the_range_and_the_fix_when_there_is_none(staged_bin, fresh_user):
    bare = UserTnk(fresh_user, staged_bin)
    try:
        failing = doctor_checks(bare)["ns_subids"]
        assert failing["status"] == "fail", failing
        assert failing["fix_command"] == f"sudo tnk setup --user {FRESH}"
        assert run_setup("--user", FRESH).returncode == 0
        passing = doctor_checks(bare)
        assert passing["ns_subids"]["status"] == "ok", passing["ns_subids"]
        assert f"{FRESH}: uids " in passing["ns_subids"]["summary"]
        assert passing["ns_cgroups"]["status"] in ("ok", "info"), passing["ns_cgroups"]
        assert "tnk-user-" + FRESH in passing["ns_cgroups"]["summary"]
        assert passing["ns_overlay"]["status"] == "ok", passing["ns_overlay"]
    finally:
        bare.close()


def sandbox_cgroup(user_tnk, controller):
    [pid_file] = list((user_tnk.home / ".local" / "state" / "tnk" / "sandboxes").glob("*/supervisor.pid"))
    for child in Path("/proc").glob("[0-9]*"):
        try:
            if int((child / "status").read_text().split("PPid:\t")[1].split()[0]) != int(
                    pid_file.read_text().split()[0]):
                continue
            for line in (child / "cgroup").read_text().splitlines():
                if line.split(":")[1] == controller and "/tnk-user-" in line:
                    return Path("/sys/fs/cgroup") / controller / line.split(":", 2)[2].lstrip("/")
        except (OSError, IndexError, ValueError):
            continue
    return None


REFUSED = ("error: refusing to start the sandbox without its pids and memory limits: no cgroup subtree is "
           f"delegated to {USER} (a fork bomb or a memory hog inside would reach the host)\n"
           f"hint: run `sudo tnk setup --user {USER}` once; or, to start without them, set allow_unlimited = "
           "true in tnk.toml (or TNK_ALLOW_UNLIMITED=1)\n")
NOTE = f"limits not applied: no cgroup subtree is delegated to {USER} (run `sudo tnk setup --user {USER}`"


def user_file(account, path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chown(path, account.pw_uid, account.pw_gid)


def test_m5_a_users_start_without_limits_is_refused_until_setup_or_the_opt_in(staged_bin):
    """Security review M5: an ordinary user's ns sandbox without a cgroup for its pids and memory limits
    (a vm sandbox: for the pids limit of its host processes) is refused (exit 77) before anything is made; the opt-in (TNK_ALLOW_UNLIMITED, tnk.toml allow_unlimited)
    starts it with a note, as every start did before; after `tnk setup` it starts with its limits, and they
    hold (a memory hog is OOM-killed, forks past pids.max fail)."""
    account = ensure_user(USER, with_range=True)
    remove_user_dirs(USER)
    user_tnk = UserTnk(account, staged_bin)
    try:
        project = user_tnk.project("small")
        assert user_tnk.run("init", cwd=project).returncode == 0
        user_file(account, user_tnk.home / ".config" / "tnk" / "sandbox.d" / "manifests" / "small.yaml", MANIFEST)
        state = user_tnk.home / ".local" / "state" / "tnk" / "sandboxes"
        refused = user_tnk.run("sandbox", "start", "--backend", "ns", "--profile", "small", cwd=project)
        assert refused.returncode == 77, refused.stderr
        assert refused.stderr.endswith(REFUSED), refused.stderr
        assert refused.stderr.count("error:") == 1, refused.stderr
        assert not state.exists() or not list(state.iterdir()), "a refused start leaves no sandbox behind"
        assert json.loads(user_tnk.run("-o", "json", "sandbox", "ls", cwd=project).stdout) == []
        # `exec` starts the sandbox it needs: refused the same way, and nothing ran.
        ran = user_tnk.run("sandbox", "exec", "--", "touch", "/workspace/ran", cwd=project)
        assert ran.returncode == 77 and REFUSED in ran.stderr, ran.stderr
        assert not (project / "ran").exists()
        # A vm sandbox's host processes (QEMU and virtiofsd) need their pids limit.
        vm = user_tnk.run("sandbox", "start", "--backend", "vm", "--profile", "small", cwd=project)
        assert vm.returncode == 77, vm.stderr
        assert vm.stderr.endswith(REFUSED.replace("pids and memory limits", "pids limit")), vm.stderr
        assert not state.exists() or not list(state.iterdir()), "a refused start leaves no sandbox behind"
        # doctor says so, with the same fix, as a warning (it was a note while starts went on without limits).
        cgroups = doctor_checks(user_tnk)["ns_cgroups"]
        assert cgroups["status"] == "warn", cgroups
        assert "an ns sandbox does not start without its pids and memory limits" in cgroups["summary"], cgroups
        assert cgroups["fix_command"] == f"sudo tnk setup --user {USER}", cgroups
        assert "allow_unlimited = true" in cgroups["fix"], cgroups

        # The opt-in, from the environment and from tnk.toml: the start goes on, with its note.
        user_tnk.env["TNK_ALLOW_UNLIMITED"] = "1"
        opted = user_tnk.run("sandbox", "start", "--backend", "ns", "--profile", "small", cwd=project)
        del user_tnk.env["TNK_ALLOW_UNLIMITED"]
        assert opted.returncode == 0, opted.stderr
        assert NOTE in opted.stderr and "error:" not in opted.stderr, opted.stderr
        assert user_tnk.run("sandbox", "delete", "--yes", cwd=project).returncode == 0
        toml = user_tnk.home / ".config" / "tnk" / "tnk.toml"
        user_file(account, toml, "allow_unlimited = true\n")
        toml.chmod(0o600)
        shown = json.loads(user_tnk.run("config", "show", "-o", "json", cwd=project).stdout)
        assert shown["settings"]["allow_unlimited"] == {"value": True, "source": "file", "line": 1}
        by_key = user_tnk.run("sandbox", "start", "--backend", "ns", "--profile", "small", cwd=project)
        assert by_key.returncode == 0 and NOTE in by_key.stderr, by_key.stderr
        assert user_tnk.run("sandbox", "delete", "--yes", cwd=project).returncode == 0
        toml.unlink()

        assert run_setup("--user", USER).returncode == 0
        assert doctor_checks(user_tnk)["ns_cgroups"]["status"] == "ok"
        after = user_tnk.run("sandbox", "start", "--backend", "ns", "--profile", "small", cwd=project)
        assert after.returncode == 0, after.stderr
        assert "limits not applied" not in after.stderr, after.stderr
        memory = sandbox_cgroup(user_tnk, "memory")
        pids = sandbox_cgroup(user_tnk, "pids")
        assert memory is not None and memory.parent.name == f"tnk-user-{USER}", memory
        assert (memory / "memory.limit_in_bytes").read_text().strip() == str(64 * 1024 * 1024)
        assert pids is not None and (pids / "pids.max").read_text().strip() != "max"
        inside = user_tnk.run("sandbox", "exec", "--", "bash", "-c", HOG, cwd=project)
        assert inside.returncode == 137, inside.stdout + inside.stderr  # OOM-killed in its cgroup
        # The pids limit refuses forks past it: lower it from outside (the user owns the file).
        (pids / "pids.max").write_text("20")
        forks = user_tnk.run("sandbox", "exec", "--", "bash", "-c",
                             "for i in $(seq 40); do sleep 5 & done 2>&1; wait", cwd=project)
        assert "Resource temporarily unavailable" in forks.stdout + forks.stderr, forks.stdout + forks.stderr
    finally:
        user_tnk.close()
        remove_user_dirs(USER)


ADMIN = "tnk-e2e-admin"  # the cgroup an administrator (or a CI runner) put the user in
LEAVE_PROBE = r"""for f in $(find /sys/fs/cgroup/memory /sys/fs/cgroup/pids -name cgroup.procs -writable 2>/dev/null); do
  case $f in */%s/*) continue;; esac
  sh -c "echo \$\$ > $f" 2>/dev/null && echo "ESCAPED to $f"
done; echo probed""" % ADMIN


def admin_dirs():
    return [Path("/sys/fs/cgroup") / c / ADMIN for c in ("memory", "pids")]


def enter_admin_cgroup():  # a preexec_fn: root puts the child into ADMIN before it drops to the user
    for d in admin_dirs():
        (d / "cgroup.procs").write_text(str(os.getpid()))


def leave_probe(account):  # as the user, from the administrator's cgroup
    return subprocess.run(["runuser", "-u", account.pw_name, "--", "sh", "-c", LEAVE_PROBE], cwd="/",
                          capture_output=True, text=True, timeout=60, preexec_fn=enter_admin_cgroup)


def remove_tree(path):
    for child in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if child.is_dir():
            child.rmdir()
    if path.exists():
        path.rmdir()


def test_issue32_r3_l3_setup_puts_a_users_v1_cgroup_below_their_own(staged_bin):
    """Security review 3, R3-L3: cgroup v1 lets a process's owner move it into any cgroup whose
    cgroup.procs the owner may write, so the directory `tnk setup` gives a user at the top of a hierarchy
    lets the user's processes leave the cgroup an administrator put them in (and its limits). Run by the
    user through sudo, setup puts it below the user's own cgroup: the user's processes can go nowhere
    outside it, and the sandboxes' cgroups nest there. The pair: run by root for another user (whose
    cgroup it cannot know), it stays at the top, says what that allows, and the same probe leaves."""
    if not Path("/sys/fs/cgroup/memory/cgroup.procs").exists():
        pytest.skip("no cgroup v1 memory hierarchy (this is about v1; v2 forbids such moves itself)")
    account = ensure_user(USER, with_range=True)
    remove_user_dirs(USER)
    for d in admin_dirs():
        remove_tree(d)
        d.mkdir()
    user_tnk = UserTnk(account, staged_bin)
    try:
        by_user = subprocess.run([TNK_BIN, "setup", "--user", USER], capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "SUDO_UID": str(account.pw_uid)}, preexec_fn=enter_admin_cgroup)
        assert by_user.returncode == 0, by_user.stderr
        assert "at the hierarchy's top" not in by_user.stdout, by_user.stdout
        for d in admin_dirs():
            assert (d / f"tnk-user-{USER}").stat().st_uid == account.pw_uid
        # (cpu: the administrator's cgroup is the top there, so the user's directory is too)
        assert not any(d.exists() for d in user_dirs(USER) if d.parent.name != "cpu"), "nothing at the top"
        probe = leave_probe(account)
        assert probe.stdout.endswith("probed\n") and "ESCAPED" not in probe.stdout, probe.stdout + probe.stderr

        # The sandbox's cgroups nest below the user's directory, inside the administrator's cgroup.
        project = user_tnk.project("below")
        assert user_tnk.run("init", cwd=project).returncode == 0
        user_file(account, user_tnk.home / ".config" / "tnk" / "sandbox.d" / "manifests" / "small.yaml", MANIFEST)
        started = user_tnk.run("sandbox", "start", "--backend", "ns", "--profile", "small", cwd=project,
                               preexec_fn=enter_admin_cgroup)
        assert started.returncode == 0, started.stderr
        memory = sandbox_cgroup(user_tnk, "memory")
        assert memory is not None and memory.parent == admin_dirs()[0] / f"tnk-user-{USER}", memory
        assert user_tnk.run("sandbox", "delete", "--yes", cwd=project).returncode == 0

        # The pair: root for another user, from root's own cgroup.
        by_root = run_setup("--user", USER)
        assert by_root.returncode == 0, by_root.stderr
        assert f"(at the hierarchy's top: {USER}'s processes may move there out of a cgroup" in by_root.stdout
        left = leave_probe(account)
        assert f"ESCAPED to /sys/fs/cgroup/memory/tnk-user-{USER}/cgroup.procs" in left.stdout, left.stdout
    finally:
        user_tnk.close()
        remove_user_dirs(USER)
        for d in admin_dirs():
            remove_tree(d)


@pytest.fixture
def subid_files_restored():
    saved = {path: Path(path).read_text() for path in ("/etc/subuid", "/etc/subgid")}
    yield
    for path, text in saved.items():
        Path(path).write_text(text)


def root_doctor_subids():
    done = subprocess.run([TNK_BIN, "doctor", "-o", "json"], capture_output=True, text=True, timeout=120)
    return {c["id"]: c for c in json.loads(done.stdout)["checks"]}["ns_subids"]


def give_root_lines(*lines):
    """/etc/subuid and /etc/subgid without root's lines, with `lines` ("name:start:count") added."""
    for path in ("/etc/subuid", "/etc/subgid"):
        kept = [line for line in Path(path).read_text().splitlines() if not line.startswith(("root:", "0:"))]
        Path(path).write_text("".join(line + "\n" for line in kept + list(lines)))


def test_l5_root_sandboxes_move_off_the_first_users_range_after_setup(tnk, subid_files_restored):
    """Security review L5: without a range of its own, root's sandboxes mapped onto 100000-165535, the
    range useradd gives the first user; doctor names who shares it, and `tnk setup --user root` reserves a
    free range that new sandboxes map onto, while a sandbox made before keeps its ids. A sandbox "made
    before" is made here as tnk before issue 32 made it (root's range at 100000, then taken away): a start
    without a range now reserves one itself (test_issue32_l5_... below)."""
    give_root_lines("tnk-e2e-l5:100000:65536")
    shared = root_doctor_subids()
    assert shared["status"] == "warn" and "tnk-e2e-l5" in shared["summary"], shared
    assert shared["fix_command"] == "sudo tnk setup --user root"
    use_shared_cache(tnk)
    before, after = tnk.project("before"), tnk.project("after")
    try:
        give_root_lines("tnk-e2e-l5:100000:65536", "root:100000:65536")  # where an older tnk put them
        made_before = tnk.run("sandbox", "start", "--backend", "ns", "--profile", "base", cwd=before)
        assert made_before.returncode == 0, made_before.stderr
        assert upper_owner(tnk, before) == 100000  # the probe: the user's ids
        give_root_lines("tnk-e2e-l5:100000:65536")
        done = run_setup("--user", "root")
        assert done.returncode == 0, done.stderr
        [line] = lines_of("/etc/subuid", "root")
        start = int(line.split(":")[1])
        assert start >= 165536, line  # off the user's range
        assert root_doctor_subids()["status"] == "ok"
        made_after = tnk.run("sandbox", "start", "--backend", "ns", "--profile", "base", cwd=after)
        assert made_after.returncode == 0, made_after.stderr
        assert "reserved" not in made_after.stderr and "no subordinate ids" not in made_after.stderr
        assert upper_owner(tnk, after) == start
        written = tnk.run("sandbox", "exec", "--root", "--", "touch", "/by-root", cwd=after)
        assert written.returncode == 0, written.stderr
        # The sandbox made before keeps its ids, and still runs.
        tnk.run("sandbox", "stop", cwd=before)
        again = tnk.run("sandbox", "exec", "--root", "--", "touch", "/by-root", cwd=before)
        assert again.returncode == 0, again.stderr
        assert upper_owner(tnk, before) == 100000
    finally:
        for project in (before, after):
            tnk.run("sandbox", "delete", "--yes", cwd=project, timeout=120)


def root_range(path):
    [line] = lines_of(path, "root")  # one range: two starts at once reserve one
    _, start, count = line.split(":")
    return int(start), int(count)


def qemu_uid(tnk, project):
    """The uid of the QEMU that the supervisor of `project`'s sandbox started."""
    sandbox_id = json.loads(tnk.run("sandbox", "inspect", "-o", "json", cwd=project).stdout)["id"]
    supervisor = (tnk.state_dir / "sandboxes" / sandbox_id / "supervisor.pid").read_text().split()[0]
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if "\nPPid:\t" + supervisor + "\n" in status and status.startswith("Name:\tqemu-system"):
            return int(status.split("Uid:\t", 1)[1].split()[0])
    return None


def test_issue32_l5_root_sandboxes_never_share_a_users_range(subid_files_restored, any_tnk):
    """Issue 32 item 5, L5: run by root with no range of its own, and a user holding 100000-165535, a
    start reserves root's range itself, as `tnk setup --user root` would (one note line; one range even
    for two starts at once), and the sandbox maps onto it: on ns its root is the range's first id, on vm
    QEMU runs as its id 65535. Before, both sat on the user's ids (the review saw 100000 and 165535). The
    control: the user's line is untouched, setup finds nothing left to do, doctor says ok."""
    give_root_lines("tnk-e2e-l5:100000:65536")
    # Two starts at once on ns; one on vm (the reservation is the command line's, the same for both).
    projects = [any_tnk.project("l5a")] + ([any_tnk.project("l5b")] if any_tnk.backend == "ns" else [])
    starts = [subprocess.Popen([TNK_BIN, "sandbox", "start", "--backend", any_tnk.backend, "--profile", "base"],
                               cwd=project, env=any_tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for project in projects]
    outputs = [p.communicate(timeout=900) for p in starts]
    assert [p.returncode for p in starts] == [0] * len(projects), outputs
    notes = [err for _, err in outputs if "root had no subordinate ids of its own" in err]
    assert len(notes) == 1, outputs  # said once, by the start that reserved them
    uids, gids = root_range("/etc/subuid"), root_range("/etc/subgid")
    assert uids == gids and uids[1] == 65536, (uids, gids)
    assert uids[0] >= 165536, uids  # off the user's 100000-165535
    assert f"range {uids[0]}-{uids[0] + 65535} for root" in notes[0], notes[0]
    assert lines_of("/etc/subuid", "tnk-e2e-l5") == ["tnk-e2e-l5:100000:65536"]
    if any_tnk.backend == "ns":
        assert {upper_owner(any_tnk, p) for p in projects} == {uids[0]}
    else:
        assert qemu_uid(any_tnk, projects[0]) == uids[0] + 65535
    assert "already has" in run_setup("--user", "root").stdout
    assert root_doctor_subids()["status"] == "ok"


def upper_owner(tnk, project):
    """The host owner of the sandbox's overlay upper directory: its root, on the host."""
    inspect = tnk.run("sandbox", "inspect", "-o", "json", cwd=project)
    sandbox_id = json.loads(inspect.stdout)["id"]
    return (tnk.state_dir / "sandboxes" / sandbox_id / "upper").stat().st_uid
