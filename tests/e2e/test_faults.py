"""Faults (a killed supervisor, concurrent starts, a corrupt record) and deletion, on each backend."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from sandbox_harness import Sandbox, status_of, any_tnk, ns_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user


def sandbox_dirs(tnk):
    return sorted((tnk.state_dir / "sandboxes").iterdir())


def supervisor_pid(box):
    (directory,) = sandbox_dirs(box.tnk)
    return int((directory / "supervisor.pid").read_text().split()[0])


def test_killed_supervisor_is_broken_then_recovers_with_its_files(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("crash"))
    box.start()
    assert box.exec("sh", "-c", "echo survived > /home/agent/mark", root=False).returncode == 0
    os.kill(supervisor_pid(box), signal.SIGKILL)
    time.sleep(0.2)
    assert status_of(box) == ["broken"]
    result = box.start()
    assert "broken" in result.stderr
    assert status_of(box) == ["running"]
    assert box.exec("cat", "/home/agent/mark").stdout == "survived\n"


def disk_watches(box, wait_for_one=False):
    """The tnk-disk-watch processes of box's sandbox: their command line names its state directory. The
    supervisor starts the watch as the sandbox starts: `wait_for_one` gives it a moment to be there."""
    deadline = time.monotonic() + (10 if wait_for_one else 0)
    while True:
        found = running_disk_watches(box)
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def running_disk_watches(box):
    (directory,) = sandbox_dirs(box.tnk)
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "comm").read_text().strip() == "tnk-disk-watch" and \
                    str(directory).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_an_ns_disk_watch_lives_as_long_as_its_sandbox(ns_tnk):
    """The bound on an ns sandbox's disk is a process (docs/ns-backend.md, "Disk"), which lives exactly
    as long as the sandbox: a killed supervisor takes it along, and a killed watch stops the sandbox,
    whose disk would no longer be bounded, with a message that says so (the sandbox is `broken`, as after
    any failure). The next start says why and brings both back, on the sandbox's files."""
    box = Sandbox(ns_tnk, ns_tnk.project("watch"))
    box.start()
    assert box.exec("sh", "-c", "echo kept > /home/agent/mark").returncode == 0
    (watch,) = disk_watches(box, wait_for_one=True)
    os.kill(supervisor_pid(box), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while disk_watches(box) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert disk_watches(box) == []

    box.start()
    (watch,) = disk_watches(box, wait_for_one=True)
    held = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", "sh", "-c", "echo in; exec sleep 60"],
                            cwd=box.project, env=ns_tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert held.stdout.readline() == "in\n"
    os.kill(watch, signal.SIGKILL)
    _, err = held.communicate(timeout=60)
    assert held.returncode != 0 and "disk watch failed" in err and "no longer bounded" in err, err
    assert status_of(box) == ["broken"]  # ended by a failure: the next command restarts it
    assert "disk watch failed" in box.start().stderr
    assert box.exec("cat", "/home/agent/mark").stdout == "kept\n"
    assert len(disk_watches(box, wait_for_one=True)) == 1


def test_a_supervisor_killed_during_a_start_is_reported_as_ended_not_as_absent(any_tnk):
    """The start launched the supervisor, which then dies (killed here while the CLI is held with SIGSTOP)
    before provisioning connects: one error that says the supervisor ended and names its log, exit 1.
    Before, `no supervisor is listening on .../ctl.sock` with the hint to run the very `sandbox start` that
    failed, and exit 66 (not found; found by the fault injector, ns seed 342)."""
    scripts = any_tnk.config_dir / "sandbox.d" / "provision.d"
    (scripts / "slow.sh").write_text("#!/bin/bash\necho provisioned\n")
    (scripts / "slow.sh").chmod(0o700)
    project = any_tnk.project("killed")
    start = subprocess.Popen([TNK_BIN, "sandbox", "start", "--backend", any_tnk.backend, "--profile", "slow"],
                             cwd=project, env=any_tnk.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    seen = []
    for line in start.stderr:  # "created and started" comes right after the supervisor is ready
        seen.append(line)
        if "created and started" in line:
            break
    start.send_signal(signal.SIGSTOP)
    try:
        box = Sandbox(any_tnk, project)
        os.kill(supervisor_pid(box), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while status_of(box) != ["broken"]:
            assert time.monotonic() < deadline, status_of(box)
            time.sleep(0.05)
    finally:
        start.send_signal(signal.SIGCONT)
    err = "".join(seen) + start.stderr.read()
    start.wait(timeout=120)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert start.returncode == 1 and len(errors) == 1, err
    name = sandbox_dirs(any_tnk)[0].name
    assert f"the supervisor of sandbox {name} has ended" in errors[0] and "supervisor.log" in errors[0], err
    assert "hint: `tnk sandbox start` starts it again" in err, err
    # The control: the start the hint names recovers the sandbox, provisioned.
    again = box.run("sandbox", "start", "--profile", "slow", timeout=900)
    assert again.returncode == 0, again.stderr
    assert status_of(box) == ["running"]


def session_records(log):
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["event"] in ("session_start", "session_exit")]


def test_every_session_start_has_its_exit_record_even_when_the_supervisor_dies(any_tnk, tmp_path):
    box = Sandbox(any_tnk, any_tnk.project("lost"))
    box.start()
    log = tmp_path / "audit.ndjson"
    # The controls: an ordinary session's end and a refused command's, each with its status.
    assert box.exec("true", audit=log).returncode == 0
    assert box.exec("no-such-command-tnk", audit=log).returncode == 127
    session = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--audit-log", str(log), "--", "sleep", "60"],
                               cwd=box.project, env=box.tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while log.read_text().count("exec_invocation") < 3:
        assert time.monotonic() < deadline and session.poll() is None, session.stderr.read() if session.poll() else ""
        time.sleep(0.05)
    os.kill(supervisor_pid(box), signal.SIGKILL)
    _, err = session.communicate(timeout=60)
    assert session.returncode == 1 and "lost the connection to the sandbox's supervisor" in err, err
    records = session_records(log)
    assert [r["event"] for r in records] == ["session_start", "session_exit"] * 3, records
    ended, refused, lost = records[1], records[3], records[5]
    assert (ended["exit_code"], "lost" in ended) == (0, False)
    assert (refused["exit_code"], "lost" in refused) == (127, False)
    assert lost["exit_code"] is None and "lost the connection" in lost["lost"], lost
    assert box.run("audit", "verify", str(log)).returncode == 0


def test_concurrent_starts_make_one_sandbox(any_tnk):
    project = any_tnk.project("race")
    starts = [subprocess.Popen([TNK_BIN, "sandbox", "start", "--backend", any_tnk.backend, "--profile", "base"], cwd=project, env=any_tnk.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in starts:
        _, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
    box = Sandbox(any_tnk, project)
    assert status_of(box) == ["running"]
    assert len(sandbox_dirs(any_tnk)) == 1
    pid = supervisor_pid(box)
    # PID 1 and the relays are forks of the supervisor with their own names (tnk-init, tnk-forwarder).
    matches = subprocess.run(["pgrep", "-f", "__supervise " + sandbox_dirs(any_tnk)[0].name],
                             capture_output=True, text=True).stdout.split()
    supervisors = [p for p in matches if open(f"/proc/{p}/comm").read().strip() == "tnk-supervisor"]
    assert supervisors == [str(pid)]


def test_corrupt_record_gives_a_clear_error_and_delete_still_works(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("corrupt"))
    box.start()
    assert box.run("sandbox", "stop").returncode == 0
    (directory,) = sandbox_dirs(any_tnk)
    (directory / "sandbox.json").write_text("{ not json")
    result = box.run("sandbox", "start", "--backend", box.backend)
    assert result.returncode == 1
    assert "sandbox.json" in result.stderr and "hint:" in result.stderr
    deleted = box.run("sandbox", "delete", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert sandbox_dirs(any_tnk) == []
    assert box.project.is_dir()


def test_delete_stops_a_running_sandbox_and_keeps_the_project(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("gone"))
    (box.project / "keep.txt").write_text("mine")
    box.start()
    pid = supervisor_pid(box)
    dry = box.run("sandbox", "delete", "-n")
    assert dry.returncode == 0 and len(sandbox_dirs(any_tnk)) == 1
    assert box.run("sandbox", "delete", "--yes").returncode == 0
    assert sandbox_dirs(any_tnk) == []
    assert (box.project / "keep.txt").read_text() == "mine"
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def control_exchange(box, message):
    """Sends one control message to the sandbox's supervisor and returns its answer (None: no answer)."""
    import socket
    (directory,) = sandbox_dirs(box.tnk)
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.settimeout(5)
        sock.connect(str(directory / "ctl.sock"))
        sock.send(json.dumps(message).encode())
        try:
            answer = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return None
        return json.loads(answer) if answer else None


def test_a_malformed_control_message_does_not_end_the_supervisor(any_tnk):
    # Found by the control_messages fuzz target: a field of the wrong type made json::value() throw,
    # nothing caught it, and the supervisor died with its sandbox.
    box = Sandbox(any_tnk, any_tnk.project("ctl"))
    box.start()
    assert control_exchange(box, {"v": 1, "op": "ping"})["event"] == "pong"  # the well-formed control
    for malformed in ({"v": 1, "op": 1}, {"v": 1, "op": "network", "ask_proxy": "yes"},
                      {"v": 1, "op": "forward", "host_port": 1, "remove": []},
                      {"v": 1, "op": "policy", "rules": "x"}, {"v": 1, "op": "policy", "rules": [], "change": []},
                      {"v": 1, "op": "policy", "rules": [{"action": "allow", "entry": 5}]},
                      {"v": 1, "op": "policy", "rules": [], "change": {"until_ms": "soon", "who": 7}},
                      {"v": 1, "op": "policy", "pending": "yes"}, {"v": 1, "op": "policy", "pending": [1]}):
        control_exchange(box, malformed)
        assert status_of(box) == ["running"], malformed
    assert box.exec("true").returncode == 0


MARKED = """#!/usr/bin/env bash
set -Eeuo pipefail
echo provisioned > "$HOME/provisioned"
"""


def test_a_delete_cut_short_leaves_the_whole_sandbox_or_none_of_it(ns_tnk):
    # Found by the fault injector (tests/faults/inject.py, ns seeds 106, 214, 286): a delete killed while it
    # removed the sandbox's directory left its record, which says "provisioned", beside an overlay that was
    # half gone, and the next start ran no provisioning on the emptied sandbox. 30,000 files in the overlay
    # make the removal last long enough to kill it in the middle.
    (ns_tnk.config_dir / "sandbox.d/provision.d/marked.sh").write_text(MARKED)
    box = Sandbox(ns_tnk, ns_tnk.project("cut"))
    box.start("--profile", "marked")
    assert box.sh("mkdir $HOME/many && cd $HOME/many && seq 30000 | xargs touch").returncode == 0
    assert box.run("sandbox", "stop").returncode == 0
    (directory,) = sandbox_dirs(ns_tnk)
    many = directory / "upper/home/agent/many"
    delete = subprocess.Popen([TNK_BIN, "sandbox", "delete", "--yes"], cwd=box.project, env=ns_tnk.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while delete.poll() is None:  # killed once the removal has begun
        try:
            if len(os.listdir(many)) < 29000:
                break
        except FileNotFoundError:
            break
    delete.kill()
    delete.wait()
    started = box.start("--profile", "marked")
    assert started.returncode == 0, started.stderr
    # Either the delete had not begun (the sandbox is whole) or it had (the sandbox is new, provisioned anew).
    assert box.exec("cat", "/home/agent/provisioned").stdout == "provisioned\n"
    count = box.sh("ls $HOME/many 2>/dev/null | wc -l").stdout.strip()
    assert count in ("0", "30000"), count
    # What the cut delete left under its doomed name went with the start that made the sandbox anew (which
    # took the sandbox's lock first, and so found its directory there: the vm fault injector's seed 88) ...
    assert [p.name for p in (ns_tnk.state_dir / "sandboxes").iterdir() if p.name.startswith(".")] == []
    # ... and a delete leaves nothing.
    assert box.run("sandbox", "delete", "--yes").returncode == 0
    assert list((ns_tnk.state_dir / "sandboxes").iterdir()) == []
