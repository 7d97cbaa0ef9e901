"""The warm path (issue 35): `exec` and `shell` into a running sandbox use what the sandbox was started
with and probe nothing else, yet still notice what they must: a sandbox deleted or whose supervisor died,
a policy or profile that needs a restart, an endpoint that moved. The speed itself is bench/ns.sh's."""
import os
import signal
import time

import pytest

from sandbox_harness import Sandbox, status_of, ns_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

ENDPOINT_NOTE = "inference endpoint"


def started(tnk, name):
    box = Sandbox(tnk, tnk.project(name))
    box.start()
    return box


def supervisor_pid(box):
    (directory,) = sorted((box.tnk.state_dir / "sandboxes").iterdir())
    return int((directory / "supervisor.pid").read_text().split()[0])


def test_the_endpoint_note_comes_with_the_start_and_not_with_each_exec(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("notes"))
    start = box.start()
    assert ENDPOINT_NOTE in start.stderr  # the test's endpoint refuses: the start says so, once
    warm = box.exec("sh", "-c", 'echo "$TNK_MODEL_NAME $TNK_CTX_WINDOW"')
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == "default 32768\n"  # what the start was told
    assert ENDPOINT_NOTE not in warm.stderr
    assert "note:" not in warm.stderr
    verbose = box.run("-v", "sandbox", "exec", "--", "true")
    assert ENDPOINT_NOTE in verbose.stderr  # still there for whoever asks


def test_a_moved_endpoint_is_noticed_and_the_running_sandbox_keeps_its_own(ns_tnk):
    box = started(ns_tnk, "moved")
    ns_tnk.config_dir.mkdir(parents=True, exist_ok=True)
    (ns_tnk.config_dir / "tnk.toml").write_text('inference_url = "http://127.0.0.1:1/v1"\n')
    warm = box.run("-v", "sandbox", "exec", "--", "sh", "-c", 'echo "$TNK_INFERENCE_URL"')
    assert warm.returncode == 0, warm.stderr
    assert "keeps using it until it is stopped and started again" in warm.stderr
    assert "127.0.0.1:1" in warm.stderr


def test_a_supervisor_that_died_is_noticed_and_the_command_still_runs(ns_tnk):
    box = started(ns_tnk, "died")
    assert box.exec("true").returncode == 0
    os.kill(supervisor_pid(box), signal.SIGKILL)
    time.sleep(0.2)
    after = box.exec("echo", "again")
    assert after.returncode == 0, after.stderr
    assert after.stdout == "again\n"
    assert "broken" in after.stderr
    assert status_of(box) == ["running"]


def test_a_deleted_sandbox_is_noticed_and_made_again(ns_tnk):
    box = started(ns_tnk, "gone")
    assert box.exec("sh", "-c", "echo kept > /home/agent/mark").returncode == 0
    assert box.run("sandbox", "delete", "--yes").returncode == 0
    after = box.exec("sh", "-c", "cat /home/agent/mark 2>/dev/null || echo fresh")
    assert after.returncode == 0, after.stderr
    assert after.stdout == "fresh\n"
    assert "created and started" in after.stderr


def test_a_policy_the_running_sandbox_does_not_have_needs_a_restart_and_says_so(ns_tnk):
    box = started(ns_tnk, "policy")
    asked = box.run("sandbox", "shell", "--network", "open", "--no-tty", "-c", "echo ran")
    # The command runs in the sandbox as it is, and the warning names the restart the policy needs.
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == "ran\n"
    assert "the policy is fixed when a sandbox starts: `tnk sandbox stop`" in asked.stderr


def test_timings_name_the_phases_of_a_warm_exec(ns_tnk):
    box = started(ns_tnk, "timed")
    timed = box.run("--timings", "sandbox", "exec", "--", "true")
    assert timed.returncode == 0, timed.stderr
    line = next(l for l in timed.stderr.splitlines() if l.startswith("timings:"))
    for phase in ("command tree", "parse", "config", "reach the running sandbox", "session", "total"):
        assert phase in line, line
    assert "start " not in line  # warm: nothing was started
