"""Concurrency (issue 16, docs/reliability.md "Concurrency"), on each backend: many starts of one project,
many projects started at once, many sessions into one sandbox, and stop, delete and shutdown while
sessions run and while provisioning runs. After each: what `ls` says, the processes, mounts and locks
left (none), and the audit log's records (it verifies)."""
import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from sandbox_harness import SHARED_CACHE, Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

# The smallest sandbox the manifests allow: 1 CPU, and 128 MiB (the vm's floor, kMinimumMemoryMib; the
# ns backend's memory cgroup gets the same figure), so that 16 guests fit the CI machine.
TINY_MANIFEST = """profile: tiny
resources:
  cpus: 1
  memory: 128MiB
  disk: 2GiB
security:
  network: none
"""

# The status a session's client exits with when the sandbox is stopped under it (docs/reliability.md,
# "Concurrency"): every process of the sandbox gets SIGTERM, and a command that it ends exits 128 + 15.
STOPPED_SESSION_STATUS = 143


def audited(tnk):
    """Every sandbox of `tnk` writes its default audit log (audit = true), where stop and delete write."""
    tnk.env["TNK_AUDIT"] = "1"
    return tnk


def audit_log_of(tnk, sandbox_id):
    return tnk.state_dir / "audit" / f"{sandbox_id}.ndjson"


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def events(path):
    return [r["event"] for r in records(path)]


def assert_verifies(tnk, path):
    verify = tnk.run("audit", "verify", str(path))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def spawn(tnk, args, cwd):
    process = subprocess.Popen([TNK_BIN, *args], cwd=cwd, env=tnk.env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.seen = {}  # what read_line_with read already
    return process


def finish(processes, timeout):
    """(returncode, stdout, stderr) of each process, in order, all given `timeout` seconds together."""
    deadline = time.monotonic() + timeout
    out = []
    for p in processes:
        stdout, stderr = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        out.append((p.returncode, p.seen.get("stdout", "") + stdout, p.seen.get("stderr", "") + stderr))
    return out


def sandbox_rows(tnk):
    listed = tnk.run("-o", "json", "sandbox", "ls")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def sandbox_ids(tnk):
    root = tnk.state_dir / "sandboxes"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def proc_cmdlines():
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            comm = (entry / "comm").read_text().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and raw:
            found[int(entry.name)] = (comm, raw.replace(b"\0", b" ").decode(errors="replace"))
    return found


def alive(pid):
    """Whether `pid` runs (a zombie has ended: the detached supervisor's parent may reap it late)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def supervisors_of(tnk, sandbox_id):
    """The supervisor processes of `tnk`'s sandbox `sandbox_id` (PID 1 and the relays are forks with names of
    their own). The id comes from the project's name, the same in every other run of these tests on the
    machine (as root and as the user, another tree's): a supervisor of this one works in its state directory
    (or, still starting, in the project), both below `tnk`'s HOME."""
    ours = []
    for pid, (comm, cmd) in proc_cmdlines().items():
        if comm != "tnk-supervisor" or cmd.split()[-2:] != ["__supervise", sandbox_id]:
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue  # gone, or another user's
        if cwd.is_relative_to(tnk.home):
            ours.append(pid)
    return ours


def leftover_processes(tnk, markers=()):
    """Processes that belong to `tnk`'s sandboxes: their argv names its HOME (state dir, QEMU's and
    virtiofsd's files), a sandbox id, or one of `markers` (the sessions' own commands)."""
    needles = [str(tnk.home), *sandbox_ids(tnk), *markers]
    me = os.getpid()
    return {pid: cmd for pid, (_, cmd) in proc_cmdlines().items()
            if pid != me and any(n in cmd for n in needles) and not cmd.startswith(TNK_BIN + " ")}


def resident_kib(pid):
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def leftover_mounts(tnk):
    table = subprocess.run(["findmnt", "-rn", "-o", "TARGET,SOURCE"], capture_output=True, text=True).stdout
    return [line for line in table.splitlines() if str(tnk.home) in line]


def held_locks(tnk):
    """Files below `tnk`'s HOME on which some process holds a lock (/proc/locks: flock and POSIX)."""
    by_key = {}
    for path in tnk.home.rglob("*"):
        try:
            st = path.lstat()
        except OSError:
            continue
        # A vm's base.img is a hard link to the shared cache's base disk, which every QEMU on the machine
        # that boots it keeps read-locked: a lock there is not this sandbox's.
        if path.name == "base.img" and st.st_nlink > 1:
            continue
        by_key[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = path
    held = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        spec = next((f for f in fields if re.fullmatch(r"[0-9a-f]+:[0-9a-f]+:\d+", f)), None)
        if not spec:
            continue
        major, minor, inode = spec.split(":")
        path = by_key.get((int(major, 16), int(minor, 16), int(inode)))
        if path:
            held.append(f"{path} ({line})")
    return held


def cgroups_of(sandbox_id):
    found = subprocess.run(["find", "/sys/fs/cgroup", "-type", "d", "-name", f"*{sandbox_id}*"],
                           capture_output=True, text=True).stdout
    return found.split()


def assert_nothing_left(tnk, sandbox_id, markers=(), timeout=15):
    """No process, mount, lock or cgroup of the sandbox is left, and its state directory holds no
    socket, pid file or failure note (the record, disk and logs stay, unless it was deleted)."""
    deadline = time.monotonic() + timeout
    while True:
        left = {"processes": leftover_processes(tnk, markers), "mounts": leftover_mounts(tnk),
                "locks": held_locks(tnk), "cgroups": cgroups_of(sandbox_id)}
        state = tnk.state_dir / "sandboxes" / sandbox_id
        left["runtime files"] = [n for n in ("ctl.sock", "supervisor.pid", "failure.txt", "qmp.sock", "agent.sock",
                                              "virtiofsd.sock", "serial.sock") if (state / n).exists()]
        if not any(left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not any(left.values()), left
    # Every lock file is free: a lock that outlived its holder would show here even if /proc/locks missed it.
    for lock in list(tnk.state_dir.rglob("lock")) + list(tnk.state_dir.rglob("provision.lock")):
        with open(lock) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def assert_error_line(err, error, hint):
    lines = err.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1 and lines[errors[0]].startswith(error), err
    assert lines[errors[0] + 1] == hint, err


def assert_stop_records(kinds, verb):
    """The stop's records, once each and in order. Not their place among the sessions' session_exit or
    provisioning's provision_end: each client writes its own as soon as the supervisor reports the end,
    the stopping command once the supervisor has gone, and the log's lock orders them as they come."""
    expected = ["sandbox_stop", "sandbox_delete"] if verb == "delete" else ["sandbox_stop"]
    assert [k for k in kinds if k in ("sandbox_stop", "sandbox_delete")] == expected, kinds


def created_messages(results):
    return [line for _, _, err in results for line in err.splitlines() if "created and started" in line]


class CpuHogs:
    """Busy loops, two per core, at the tests' own priority: the busy CI machine on which 16 starts of one
    project once left two supervisors of its sandbox."""

    def __enter__(self):
        self.hogs = [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
                     for _ in range(2 * (os.cpu_count() or 1))]
        return self

    def __exit__(self, *exc):
        for hog in self.hogs:
            hog.kill()
            hog.wait()


@pytest.mark.parametrize("load", ["idle", "loaded"])
def test_sixteen_concurrent_starts_of_one_project_make_one_sandbox(any_tnk, load):
    audited(any_tnk)
    project = any_tnk.project("race16")
    began = time.monotonic()
    with CpuHogs() if load == "loaded" else contextlib.nullcontext():
        starts = [spawn(any_tnk, ["sandbox", "start", "--backend", any_tnk.backend, "--profile", "base"], project)
                  for _ in range(16)]
        results = finish(starts, timeout=900)
    seconds = time.monotonic() - began
    failures = [(code, err) for code, _, err in results if code != 0]
    assert failures == [], failures
    assert len(created_messages(results)) == 1, [err for _, _, err in results]
    (row,) = sandbox_rows(any_tnk)
    assert row["status"] == "running"
    sandbox_id = row["name"]
    assert sandbox_ids(any_tnk) == [sandbox_id]
    assert len(supervisors_of(any_tnk, sandbox_id)) == 1
    # One start started it and wrote sandbox_start; the other fifteen found it running and wrote nothing.
    log = audit_log_of(any_tnk, sandbox_id)
    assert events(log) == ["sandbox_start"]
    assert_verifies(any_tnk, log)
    box = Sandbox(any_tnk, project)
    assert box.exec("echo", "one").stdout == "one\n"
    print(f"16 concurrent starts of one project ({any_tnk.backend}, {load}): {seconds:.1f} s")


def test_a_start_waits_for_a_live_supervisor_that_its_pid_file_does_not_name(any_tnk):
    """One sandbox, one supervisor, whatever the timing. A supervisor is alive without a pid file while it
    boots for a start that gave up waiting for its "ready" (or was killed), and while it ends: it removes
    its pid file and control socket, then stops its engine. Here one is held (SIGSTOP) just past that
    removal. A start waits for it rather than launch a second supervisor beside it, and once it has ended
    starts the sandbox again. Before, the start launched a second one at once: a CI run under load found
    two supervisors of one sandbox."""
    box = Sandbox(any_tnk, any_tnk.project("ending"))
    box.start()
    (sandbox_id,) = sandbox_ids(any_tnk)
    (first,) = supervisors_of(any_tnk, sandbox_id)
    state = any_tnk.state_dir / "sandboxes" / sandbox_id
    os.kill(first, signal.SIGSTOP)
    try:
        for name in ("supervisor.pid", "ctl.sock"):
            (state / name).unlink()
        start = spawn(any_tnk, ["sandbox", "start", "--backend", any_tnk.backend, "--profile", "base"], box.project)
        watched = time.monotonic() + 10
        while time.monotonic() < watched and start.poll() is None:
            assert supervisors_of(any_tnk, sandbox_id) == [first]
            time.sleep(0.1)
        assert supervisors_of(any_tnk, sandbox_id) == [first]
        assert start.poll() is None, finish([start], timeout=10)
    finally:
        os.kill(first, signal.SIGTERM)  # it ends as a stop ends it, once it runs again
        os.kill(first, signal.SIGCONT)
    ((code, _, err),) = finish([start], timeout=600)
    assert code == 0, err
    assert f"waiting for the supervisor of {sandbox_id}, which is starting or stopping" in err, err
    assert not alive(first)
    (second,) = supervisors_of(any_tnk, sandbox_id)
    assert second != first
    (row,) = sandbox_rows(any_tnk)
    assert row["status"] == "running"
    assert box.exec("echo", "one").stdout == "one\n"


# The longest a command waits for a sandbox's lock (Store::lock, src/state/store.h).
SANDBOX_LOCK_WAIT = 30


@pytest.mark.needs_root  # the image reaches the empty cache as hard links, and root may link any file
def test_starts_behind_a_first_image_build_wait_for_it_and_do_not_time_out_on_the_sandbox_lock(ns_tnk, tmp_path):
    """Two starts of one new sandbox while its image is being built (here: its build lock is held past
    the sandbox lock's 30 s) both wait for the build on the image's own lock, and both succeed. Before,
    the first held the sandbox's lock through the build, and the second gave up on it after 30 s."""
    listed = json.loads(ns_tnk.run("-o", "json", "image", "ls").stdout)
    (image,) = [i for i in listed if i["kind"] == "image" and i["current"]]
    images = tmp_path / "cache" / "tnk" / "images"
    images.mkdir(parents=True, mode=0o700)
    ns_tnk.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    project = ns_tnk.project("first")
    with open(images / f"{image['id']}.lock", "w") as build_lock:
        fcntl.flock(build_lock, fcntl.LOCK_EX)  # an image build in progress
        starts = [spawn(ns_tnk, ["sandbox", "start", "--backend", "ns", "--profile", "base"], project)
                  for _ in range(2)]
        time.sleep(SANDBOX_LOCK_WAIT + 5)
        assert [p.poll() for p in starts] == [None, None], [p.communicate() for p in starts if p.poll() is not None]
        # The build ends: the image appears (the shared one, linked), and its lock is released.
        subprocess.run(["cp", "-al", image["path"], str(images / image["id"])], check=True)
    results = finish(starts, timeout=300)
    assert [code for code, _, _ in results] == [0, 0], results
    assert len(created_messages(results)) == 1, [err for _, _, err in results]
    for _, _, err in results:
        assert "waiting for another tnk process that is building image" in err, err
    (row,) = sandbox_rows(ns_tnk)
    assert row["status"] == "running"


def test_sixteen_projects_started_at_once_all_come_up(any_tnk):
    manifests = any_tnk.config_dir / "sandbox.d" / "manifests"
    (manifests / "tiny.yaml").write_text(TINY_MANIFEST)
    audited(any_tnk)
    projects = [any_tnk.project(f"p{i:02d}") for i in range(16)]
    began = time.monotonic()
    starts = [spawn(any_tnk, ["sandbox", "start", "--backend", any_tnk.backend, "--profile", "tiny"], p)
              for p in projects]
    results = finish(starts, timeout=1500)
    seconds = time.monotonic() - began
    failures = [(i, code, err) for i, (code, _, err) in enumerate(results) if code != 0]
    assert failures == [], failures
    rows = sandbox_rows(any_tnk)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"running"}, rows
    rss_mib = sum(resident_kib(pid) for pid in leftover_processes(any_tnk)) / 1024
    for row in rows:
        assert len(supervisors_of(any_tnk, row["name"])) == 1, row
    # Each answers, from its own project.
    for i, project in enumerate(projects):
        (project / "which").write_text(f"project {i}\n")
        answer = Sandbox(any_tnk, project).exec("cat", "/workspace/which")
        assert answer.stdout == f"project {i}\n", answer.stderr
    stopping = time.monotonic()
    down = any_tnk.run("shutdown", "--timeout", "10", timeout=600)
    stop_seconds = time.monotonic() - stopping
    assert down.returncode == 0, down.stderr
    assert {r["status"] for r in sandbox_rows(any_tnk)} == {"stopped"}
    for row in rows:
        assert_nothing_left(any_tnk, row["name"])
        log = audit_log_of(any_tnk, row["name"])
        assert events(log) == ["sandbox_start", "session_start", "exec_invocation", "session_exit", "sandbox_stop"]
        assert records(log)[-1]["reason"] == "shutdown"
        assert_verifies(any_tnk, log)
    print(f"16 projects started at once ({any_tnk.backend}): {seconds:.1f} s; their processes' RSS "
          f"{rss_mib:.0f} MiB; shutdown {stop_seconds:.1f} s")


EXEC_SCRIPT = 'echo "out-$1"; echo "err-$1" >&2; head -c 20000 /dev/zero | tr "\\0" "$2"; echo; exit "$1"'


def test_sixty_four_concurrent_execs_into_one_sandbox(any_tnk):
    audited(any_tnk)
    box = Sandbox(any_tnk, any_tnk.project("execs"))
    box.start()
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    began = time.monotonic()
    # Exit codes 0..63, each its own; 20,000 bytes more on stdout than a pipe buffer holds, so the
    # clients drain while the others run.
    execs = [spawn(any_tnk, ["-q", "sandbox", "exec", "--", "sh", "-c", EXEC_SCRIPT, "sh", str(i), letters[i]], box.project)
             for i in range(64)]
    results = finish(execs, timeout=900)
    seconds = time.monotonic() - began
    for i, (code, out, err) in enumerate(results):
        assert code == i, (i, code, err)
        assert out == f"out-{i}\n" + letters[i] * 20000 + "\n", (i, out[:80], err)
        assert err == f"err-{i}\n", (i, err)
    (sandbox_id,) = sandbox_ids(any_tnk)
    log = audit_log_of(any_tnk, sandbox_id)
    kinds = events(log)
    assert kinds.count("session_start") == kinds.count("exec_invocation") == kinds.count("session_exit") == 64
    exits = sorted(r["exit_code"] for r in records(log) if r["event"] == "session_exit")
    assert exits == list(range(64))
    assert_verifies(any_tnk, log)
    assert len(supervisors_of(any_tnk, sandbox_id)) == 1
    print(f"64 concurrent execs ({any_tnk.backend}): {seconds:.1f} s")


def read_line_with(process, name, needle, timeout):
    """Reads the process's `name` stream ("stdout", "stderr") until a line holds `needle`. Reads the pipe
    itself (a buffered readline would keep lines select() then never reports); what was read is kept in
    process.seen[name], which finish() puts back in front of the rest."""
    import selectors
    fd = getattr(process, name).fileno()
    seen = process.seen.get(name, "")
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not any(needle in line for line in seen.splitlines(keepends=True) if line.endswith("\n")):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {needle!r}: {seen}"
            if sel.select(left):
                chunk = os.read(fd, 65536)
                assert chunk, f"{name} ended before {needle!r}: {seen}"
                seen += chunk.decode(errors="replace")
    process.seen[name] = seen
    return seen


VERBS = {
    "stop": (["sandbox", "stop"], "user"),
    "delete": (["sandbox", "delete", "--yes"], "delete"),
    "shutdown": (["shutdown", "--timeout", "5"], "shutdown"),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_stop_delete_and_shutdown_end_running_sessions_cleanly(any_tnk, verb):
    audited(any_tnk)
    box = Sandbox(any_tnk, any_tnk.project("busy"))
    box.start()
    (sandbox_id,) = sandbox_ids(any_tnk)
    supervisor = supervisors_of(any_tnk, sandbox_id)
    marker = f"{1000 + os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"  # a sleep no other test runs
    # Two of the agent's sessions and one of root's (rootless, root inside is the range's root: a process
    # the supervisor may not look into, which its stop reaped late, after 35 s, before the fix).
    sessions = [spawn(any_tnk, ["sandbox", "exec", *(["--root"] if n == 2 else []), "--", "sh", "-c",
                                f'echo "ready {n}"; exec sleep {marker}'], box.project) for n in range(3)]
    for n, session in enumerate(sessions):
        read_line_with(session, "stdout", f"ready {n}", timeout=120)
    args, reason = VERBS[verb]
    began = time.monotonic()
    ended = box.run(*args, timeout=300)
    seconds = time.monotonic() - began
    assert ended.returncode == 0, ended.stderr
    outcomes = finish(sessions, timeout=60)
    assert [code for code, _, _ in outcomes] == [STOPPED_SESSION_STATUS] * 3, outcomes
    for _, _, err in outcomes:
        assert "error:" not in err, err
        assert f"warning: sandbox {sandbox_id} was stopped while the session ran; the session ended with status 143" \
            in err.splitlines(), err
    assert not [pid for pid in supervisor if alive(pid)]
    assert_nothing_left(any_tnk, sandbox_id, markers=[f"sleep {marker}"])
    if verb == "delete":
        assert sandbox_ids(any_tnk) == [] and sandbox_rows(any_tnk) == []
    else:
        assert [r["status"] for r in sandbox_rows(any_tnk)] == ["stopped"]
    log = audit_log_of(any_tnk, sandbox_id)
    kinds = events(log)
    assert kinds[0] == "sandbox_start"
    assert kinds.count("session_start") == kinds.count("exec_invocation") == kinds.count("session_exit") == 3
    exits = [(r["exit_code"], r.get("signal")) for r in records(log) if r["event"] == "session_exit"]
    assert exits == [(None, 15)] * 3
    assert_stop_records(kinds, verb)
    assert [r["reason"] for r in records(log) if r["event"] == "sandbox_stop"] == [reason]
    assert_verifies(any_tnk, log)
    # The project is still there and the sandbox starts again.
    assert box.project.is_dir()
    box.start()
    assert box.exec("echo", "again").stdout == "again\n"
    print(f"{verb} during 3 sessions ({any_tnk.backend}): {seconds:.1f} s")


SLOW_PROVISION = """#!/usr/bin/env bash
set -Eeuo pipefail
echo "provisioning-began"
sleep {marker}
echo "provisioning-finished"
"""

FAST_PROVISION = """#!/usr/bin/env bash
set -Eeuo pipefail
echo "provisioned-quickly"
"""


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_stop_delete_and_shutdown_during_provisioning_end_it_cleanly(any_tnk, verb):
    audited(any_tnk)
    marker = f"{2000 + os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"
    script = any_tnk.config_dir / "sandbox.d" / "provision.d" / "slow.sh"
    script.write_text(SLOW_PROVISION.format(marker=marker))
    box = Sandbox(any_tnk, any_tnk.project("prov"))
    start = spawn(any_tnk, ["sandbox", "start", "--backend", any_tnk.backend, "--profile", "slow"], box.project)
    read_line_with(start, "stderr", "provisioning-began", timeout=600)
    (sandbox_id,) = sandbox_ids(any_tnk)
    args, reason = VERBS[verb]
    began = time.monotonic()
    ended = box.run(*args, timeout=300)
    seconds = time.monotonic() - began
    assert ended.returncode == 0, ended.stderr
    ((code, _, err),) = finish([start], timeout=120)
    assert code == 1, err
    assert "provisioning-finished" not in err
    # Not the script's failure, and the sandbox is not "running and usable" as a failed script's hint says.
    assert_error_line(err, f"error: the sandbox {sandbox_id} was stopped while it was being provisioned: "
                           f"provisioning {sandbox_id} with profile slow failed (exit 143)",
                      "hint: `tnk sandbox start` starts it and runs the provisioning again")
    assert_nothing_left(any_tnk, sandbox_id, markers=[f"sleep {marker}"])
    log = audit_log_of(any_tnk, sandbox_id)
    kinds = events(log)
    assert kinds[:2] == ["sandbox_start", "provision_start"]
    assert "provision_end" in kinds
    (end,) = [r for r in records(log) if r["event"] == "provision_end"]
    assert end["exit_code"] == STOPPED_SESSION_STATUS
    assert_stop_records(kinds, verb)
    assert [r["reason"] for r in records(log) if r["event"] == "sandbox_stop"] == [reason]
    assert_verifies(any_tnk, log)
    if verb == "delete":
        assert sandbox_ids(any_tnk) == []
    else:
        assert [r["status"] for r in sandbox_rows(any_tnk)] == ["stopped"]
    # The run did not finish, so the next start provisions again.
    script.write_text(FAST_PROVISION)
    again = box.start("--profile", "slow")
    assert "provisioned-quickly" in again.stderr
    print(f"{verb} during provisioning ({any_tnk.backend}): {seconds:.1f} s; start exited {code}: {err[-300:]}")


class HeldLock:
    """The sandbox's lock held by the test, as another tnk command holds it (the same flock), made with
    its directory when the sandbox has none yet."""

    def __init__(self, tnk, sandbox_id):
        self.directory = tnk.state_dir / "sandboxes" / sandbox_id
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.file = open(self.directory / "lock", "a")
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def release(self):
        self.file.close()


def sandbox_id_of(box):
    inspected = box.run("-o", "json", "sandbox", "inspect", "--backend", box.backend, "--profile", "base")
    assert inspected.returncode == 0, inspected.stderr
    return json.loads(inspected.stdout)["id"]


def test_a_start_that_waited_while_the_sandbox_was_deleted_makes_a_new_one(any_tnk):
    # What a `delete` does under the lock: the directory goes, lock file and all. The start waiting for
    # the lock used to fail with "cannot open lock <dir>/lock: No such file or directory" (exit 66).
    box = Sandbox(any_tnk, any_tnk.project("waiter"))
    sandbox_id = sandbox_id_of(box)
    held = HeldLock(any_tnk, sandbox_id)
    start = spawn(any_tnk, ["sandbox", "start", "--backend", any_tnk.backend, "--profile", "base"], box.project)
    read_line_with(start, "stderr", f"waiting for another tnk command to finish with {sandbox_id}", timeout=60)
    (held.directory / "lock").unlink()
    held.directory.rmdir()
    held.release()
    ((code, _, err),) = finish([start], timeout=600)
    assert code == 0, err
    assert [(r["name"], r["status"]) for r in sandbox_rows(any_tnk)] == [(sandbox_id, "running")]
    assert box.exec("echo", "new").stdout == "new\n"


def test_a_stop_that_waited_while_the_sandbox_was_deleted_leaves_nothing(any_tnk):
    # A stop records the stop under the lock; when a delete removed the sandbox meanwhile, it used to
    # fail ("cannot open lock", exit 66), or make sandboxes/<id>/ again with only a lock file in it.
    audited(any_tnk)
    box = Sandbox(any_tnk, any_tnk.project("stopper"))
    box.start()
    (sandbox_id,) = sandbox_ids(any_tnk)
    held = HeldLock(any_tnk, sandbox_id)
    stop = spawn(any_tnk, ["sandbox", "stop"], box.project)
    read_line_with(stop, "stderr", f"waiting for another tnk command to finish with {sandbox_id}", timeout=120)
    moved = any_tnk.state_dir / f"deleted-{sandbox_id}"  # as delete's rm -rf, without needing the range's root
    held.directory.rename(moved)
    held.release()
    ((code, _, err),) = finish([stop], timeout=120)
    assert code == 0, err
    assert sandbox_ids(any_tnk) == []
    moved.rename(held.directory)  # for the delete that cleans up
    assert box.run("sandbox", "delete", "--yes").returncode == 0
    assert sandbox_ids(any_tnk) == []
