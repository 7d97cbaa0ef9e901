"""Checkpoints, restore and forks (issue 33; docs/checkpoints.md): after a profile has provisioned, forks
each make their own edits in a review layer of their own; each one's `diff --patch` is its own and `git
apply` takes it; the project is byte for byte unchanged until an apply, which writes exactly that fork's
changes and makes another fork's change to the same path a conflict. A checkpoint brings back what was
deleted after it, and a running sandbox is held still while it is copied."""
import json
import socket
import subprocess
import time

import pytest

from conftest import TNK_BIN
from e2e_util import FAILED, NOT_FOUND, OK, USAGE, assert_error
from sandbox_harness import Sandbox, any_tnk, ns_tnk, vm_tnk  # noqa: F401 (fixtures)
from test_review import records, tree
from test_workspace_protection import git

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

PROVISION = """#!/usr/bin/env bash
set -Eeuo pipefail
source "$(dirname "$0")/lib/provision-lib.sh"
echo provisioned > "$HOME/provisioned"
"""


def provisioned(tnk, name):
    (tnk.config_dir / "sandbox.d" / "provision.d" / "forked.sh").write_text(PROVISION)
    box = Sandbox(tnk, tnk.project(name))
    git("init", "-q", "-b", "main", cwd=box.project)
    for rel, text in {"shared.txt": "v1\n", "one.txt": "one\n", "two.txt": "two\n"}.items():
        (box.project / rel).write_text(text)
    git("add", ".", cwd=box.project)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first", cwd=box.project)
    box.start("--profile", "forked")
    return box


def on(box, fork, *args, **kwargs):
    """`tnk --sandbox FORK ...` in the project."""
    return box.run("--sandbox", fork, *args, **kwargs)


def fork_sh(box, fork, script):
    return on(box, fork, "sandbox", "exec", "--", "sh", "-c", script)


def patch(box, fork):
    result = on(box, fork, "sandbox", "diff", "--patch")
    assert result.returncode == OK, result.stderr
    return result.stdout


def git_apply_check(box, text):
    return subprocess.run(["git", "apply", "--check", "-"], input=text, text=True, cwd=box.project,
                          capture_output=True, timeout=60)


def test_forks_are_reviewed_and_applied_each_on_its_own(any_tnk):
    box = provisioned(any_tnk, "forks")
    audit = any_tnk.home / "audit.ndjson"
    before = tree(box.project)
    made = box.tnk.json("sandbox", "fork", "-n", "3", "--audit-log", str(audit), "-o", "json", cwd=box.project)
    parent = made[0]["parent"]
    forks = [f["id"] for f in made]
    assert forks == [f"{parent}.1", f"{parent}.2", f"{parent}.3"]

    listed = {r["name"]: r for r in json.loads(box.run("-o", "json", "sandbox", "ls").stdout)}
    for fork in forks:
        assert listed[fork]["parent"] == parent and listed[fork]["status"] == "running"
        assert fork_sh(box, fork, "cat ~/provisioned").stdout == "provisioned\n", "each fork starts provisioned"
    assert "PARENT" in box.run("sandbox", "ls").stdout

    fork_sh(box, forks[0], "echo from-1 > /workspace/one.txt")
    fork_sh(box, forks[1], "echo from-2 > /workspace/shared.txt && echo new > /workspace/added-by-2.txt")
    fork_sh(box, forks[2], "echo from-3 > /workspace/shared.txt && rm /workspace/two.txt")
    assert tree(box.project) == before, "the project is unchanged until an apply"

    patches = [patch(box, fork) for fork in forks]
    assert "one.txt" in patches[0] and "shared.txt" not in patches[0]
    assert "added-by-2.txt" in patches[1] and "one.txt" not in patches[1] and "two.txt" not in patches[1]
    assert "two.txt" in patches[2] and "added-by-2.txt" not in patches[2]
    for text in patches:
        assert git_apply_check(box, text).returncode == 0, "git apply takes each fork's patch"

    applied = on(box, forks[1], "sandbox", "apply", "--audit-log", str(audit))
    assert applied.returncode == OK, applied.stderr
    assert (box.project / "shared.txt").read_text() == "from-2\n"
    assert (box.project / "added-by-2.txt").read_text() == "new\n"
    want = dict(before)
    want.pop("shared.txt")
    changed = tree(box.project)
    assert {k: v for k, v in changed.items() if k not in ("shared.txt", "added-by-2.txt")} == want, \
        "the apply wrote exactly fork 2's changes"

    refused = on(box, forks[2], "sandbox", "apply")
    assert_error(refused, FAILED, "shared.txt: changed on the host since the layer was made")
    assert tree(box.project) == changed, "a refused apply writes nothing"

    # Each fork is a sandbox of its own: its own host name, and its own random state.
    names = {fork_sh(box, fork, "hostname").stdout for fork in forks}
    assert len(names) == 3
    randoms = {fork_sh(box, fork, "od -An -tx1 -N32 /dev/urandom").stdout for fork in forks}
    assert len(randoms) == 3, "no two forks read the same bytes from /dev/urandom"
    forked = records(audit, "fork")
    assert [r["fork_id"] for r in forked] == forks and all(r["container_id"] == parent for r in forked)
    assert any_tnk.run("audit", "verify", str(audit)).returncode == OK

    assert_error(box.run("--sandbox", "tnk-elsewhere", "sandbox", "diff"), USAGE, "this project's sandbox is")
    assert_error(box.run("--sandbox", parent + ".9", "sandbox", "exec", "--", "true"), NOT_FOUND,
                 "fork " + parent + ".9 does not exist")


def clock_is_the_hosts(box):
    """The sandbox's time, read between two readings of the host's, is within 1 s of that span."""
    before = time.time()
    inside = float(box.sh("date +%s.%N").stdout)
    after = time.time()
    print(f"inside {inside:.3f}, host {before:.3f} .. {after:.3f}")
    return before - 1.0 <= inside <= after + 1.0


def made_id(box):
    return box.tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)["id"]


def ticks(box):
    return int(box.sh("wc -l < /tmp/ticks").stdout.strip() or 0)


def test_checkpoint_restore_brings_back_what_was_deleted(any_tnk):
    box = provisioned(any_tnk, "ckpt")
    audit = any_tnk.home / "audit.ndjson"
    # A counter that runs through the checkpoint: held still for the copy, then going on.
    counter = "setsid sh -c 'while :; do echo t >> /tmp/ticks; sleep 0.05; done' </dev/null >/dev/null 2>&1 &"
    assert box.sh(counter).returncode == OK
    time.sleep(0.5)
    started = time.monotonic()
    made = box.tnk.json("sandbox", "checkpoint", "before", "--audit-log", str(audit), "-o", "json", cwd=box.project)
    took = time.monotonic() - started
    assert made["name"] == "before" and made["was_running"] is True and made["bytes"] > 0
    print(f"checkpoint of a running, provisioned sandbox: {took:.2f} s")  # for the notes; bench/fork.sh measures
    counted = ticks(box)
    time.sleep(0.5)
    assert ticks(box) > counted, "the counter goes on after the copy: nothing is left stopped"
    log = (any_tnk.state_dir / "sandboxes" / made_id(box) / "supervisor.log").read_text()
    assert "paused for a copy of its files" in log and "resumed" in log

    assert_error(box.run("sandbox", "checkpoint", "before"), FAILED, "has a checkpoint named before already")
    assert_error(box.run("sandbox", "checkpoint", "../x"), USAGE, "invalid checkpoint name")
    listed = box.tnk.json("sandbox", "checkpoints", "-o", "json", cwd=box.project)
    assert [c["name"] for c in listed] == ["before"]

    assert box.sh("rm ~/provisioned && echo after > ~/after.txt").returncode == OK
    restored = box.run("sandbox", "restore", "before", "--audit-log", str(audit))
    assert restored.returncode == OK, restored.stderr
    assert box.sh("cat ~/provisioned").stdout == "provisioned\n", "restore brought back the deleted file"
    assert box.sh("test -e ~/after.txt").returncode != 0, "and took away what came after"
    assert clock_is_the_hosts(box), "the restored sandbox's clock is the host's"
    assert status_is_running(box)

    assert box.run("sandbox", "checkpoint", "rm", "before", "--audit-log", str(audit)).returncode == OK
    assert box.tnk.json("sandbox", "checkpoints", "-o", "json", cwd=box.project) == []
    assert_error(box.run("sandbox", "restore", "before"), NOT_FOUND, "has no checkpoint named before")
    actions = [r["action"] for r in records(audit, "checkpoint")]
    assert actions == ["checkpoint", "restore", "remove"]
    assert any_tnk.run("audit", "verify", str(audit)).returncode == OK


def status_is_running(box):
    rows = json.loads(box.run("-o", "json", "sandbox", "ls").stdout)
    return [r["status"] for r in rows] == ["running"]


def test_a_fork_from_a_checkpoint_has_the_state_it_kept(any_tnk):
    box = provisioned(any_tnk, "fromck")
    assert box.run("sandbox", "checkpoint", "clean").returncode == OK
    assert box.sh("echo later > ~/later.txt").returncode == OK
    made = box.tnk.json("sandbox", "fork", "--from", "clean", "-o", "json", cwd=box.project)
    fork = made[0]["id"]
    assert made[0]["from"] == "clean"
    assert fork_sh(box, fork, "test -e ~/later.txt").returncode != 0
    assert fork_sh(box, fork, "cat ~/provisioned").stdout == "provisioned\n"
    assert_error(on(box, fork, "sandbox", "fork"), USAGE, "a fork cannot be forked again")
    assert on(box, fork, "sandbox", "delete", "--yes").returncode == OK
    assert box.sh("cat ~/later.txt").stdout == "later\n", "deleting a fork leaves its parent as it was"


def hold_still(box, seconds):
    """The control protocol's pause (docs/control-protocol.md#pause), held `seconds`, then let go."""
    ctl = box.tnk.state_dir / "sandboxes" / made_id(box) / "ctl.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.connect(str(ctl))
        conn.send(json.dumps({"op": "pause", "v": 1}).encode())
        assert json.loads(conn.recv(65536))["event"] == "paused"
        time.sleep(seconds)
    time.sleep(0.5)  # the supervisor lets it go when it sees the connection end


def test_a_vm_held_still_takes_the_hosts_time_when_it_goes_on(vm_tnk):
    box = Sandbox(vm_tnk, vm_tnk.project("clock"))
    box.start()
    hold_still(box, 3)
    assert clock_is_the_hosts(box), "QEMU's stop held the guest's clock; the agent set it again"


# On ns only: the numbers are chosen above the backends, and four guests booting at once under TCG would
# only make the test slow.
def test_two_forks_at_once_never_take_the_same_numbers(ns_tnk):
    box = provisioned(ns_tnk, "twice")
    forks = [subprocess.Popen([TNK_BIN, "-o", "json", "sandbox", "fork", "-n", "2"], cwd=box.project,
                              env=box.tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    made = []
    for fork in forks:
        out, err = fork.communicate(timeout=600)
        assert fork.returncode == OK, err
        made += [f["id"] for f in json.loads(out)]
    parent = made_id(box)
    assert sorted(made) == [f"{parent}.{n}" for n in range(1, 5)]
