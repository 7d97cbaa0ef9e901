"""The first use on a new machine: the image build and provisioning show what they do, how far along
they are and for how long, and Ctrl-C at any point stops cleanly, after which the next run completes."""
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from procs import process_table
from sandbox_harness import Sandbox, ns_tnk  # noqa: F401 (fixtures)
from test_provision import add_profile

pytestmark = pytest.mark.rootless_suite  # a new machine's first use is an ordinary user's


def start_in_own_group(tnk, *args, cwd=None, env=None):
    """tnk as a terminal runs it: its own process group, so that a Ctrl-C reaches tnk and its children."""
    full_env = {**tnk.env, **(env or {})}
    return subprocess.Popen([TNK_BIN, *args], cwd=str(cwd or tnk.home), env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def read_until(process, pattern, timeout):
    """The output so far, once a line matches `pattern` (or the process ended, or the time ran out)."""
    seen = []
    deadline = time.monotonic() + timeout
    os.set_blocking(process.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            seen.append(line)
            if re.search(pattern, line):
                return "".join(seen)
        elif process.poll() is not None:
            break
        else:
            time.sleep(0.05)
    return "".join(seen)


def ctrl_c(process, timeout=60):
    """What a terminal does on Ctrl-C: SIGINT to the foreground process group. Returns tnk's exit code."""
    os.killpg(process.pid, signal.SIGINT)
    code = process.wait(timeout=timeout)
    rest = process.stdout.read() or ""
    return code, rest


def processes_mentioning(text):
    return [f"{pid}: {p.cmdline}" for pid, p in process_table(cmdlines=True).items() if text in p.cmdline]


def test_ctrl_c_during_the_first_image_build_stops_cleanly_and_the_next_build_completes(tnk, tmp_path):
    cache = tmp_path / "cache"  # a new machine: nothing built yet
    env = {"XDG_CACHE_HOME": str(cache)}
    build = start_in_own_group(tnk, "image", "build", env=env)
    shown = read_until(build, r"\[2/7\] downloading packages, \d+:\d\d", timeout=300)
    assert re.search(r"\[1/7\] updating package lists, 0:\d\d", shown), shown
    code, rest = ctrl_c(build)
    assert code != 0, shown + rest
    # Nothing of the build keeps running, and nothing half-built counts as an image.
    time.sleep(1)
    assert processes_mentioning(str(cache)) == []
    assert tnk.json("image", "ls", "-o", "json", env=env) == []
    # The next run builds it, from the start, with its progress and time.
    again = tnk.run("image", "build", env=env, timeout=900)
    assert again.returncode == 0, again.stderr
    assert re.search(r"\[7/7\] cleaning up, \d+:\d\d", again.stderr), again.stderr
    assert not [p for p in (cache / "tnk/images").iterdir() if p.name.startswith(".build-")]


SILENT_STEP = """#!/usr/bin/env bash
set -Eeuo pipefail
echo "step one"
if [ ! -e /workspace/.go-on ]; then sleep 120; fi
echo "step two"
"""


def test_ctrl_c_during_provisioning_stops_it_and_the_next_start_provisions_again(ns_tnk):
    add_profile(ns_tnk, "silent", SILENT_STEP)
    project = ns_tnk.project("ctrlc")
    box = Sandbox(ns_tnk, project)
    start = start_in_own_group(ns_tnk, "sandbox", "start", "--profile", "silent", cwd=project)
    # A silent step still shows that it is alive, and for how long.
    shown = read_until(start, r"still running, \d+:\d\d", timeout=240)
    assert "step one" in shown and re.search(r"provisioning tnk-\S+: still running, 0:1\d", shown), shown
    code, rest = ctrl_c(start)
    assert code != 0, shown + rest
    assert "step two" not in shown + rest
    # The supervisor ends the session's processes once it sees the client's connection close, a moment
    # after the client exited (a CI run on a loaded machine saw it still there right after).
    deadline = time.monotonic() + 10
    while processes_mentioning("sleep 120") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning("sleep 120") == []
    # The interrupted run did not count: the next start runs the profile again, to the end.
    (project / ".go-on").write_text("")
    again = box.start("--profile", "silent")
    assert "step two" in again.stdout + again.stderr
    assert box.exec("true").returncode == 0
