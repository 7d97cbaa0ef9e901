"""Sessions (exit status, streams, terminals) and the lifecycle around them, on each backend."""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import threading
import time

import pytest

from conftest import TNK_BIN
from sandbox_harness import Sandbox, any_sandbox, any_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user


def test_exit_codes_pass_through(any_sandbox):
    assert any_sandbox.exec("true").returncode == 0
    assert any_sandbox.exec("false").returncode == 1
    assert any_sandbox.sh("exit 42").returncode == 42
    assert any_sandbox.sh("kill -INT $$").returncode == 130
    assert any_sandbox.run("sandbox", "shell", "--no-tty", "-c", "exit 42").returncode == 42
    missing = any_sandbox.exec("no-such-program-here")
    assert missing.returncode == 127 and "no-such-program-here" in missing.stderr


def test_streams_stay_separate_and_stdin_streams(any_sandbox):
    assert any_sandbox.exec("cat", input="hi\n").stdout == "hi\n"
    both = any_sandbox.sh("echo out; echo err >&2")
    assert (both.stdout, both.stderr.splitlines()[-1]) == ("out\n", "err")
    big = "x" * 3_000_000
    assert any_sandbox.exec("wc", "-c", input=big).stdout.strip() == str(len(big))


def test_cwd_maps_into_the_workspace(any_sandbox):
    sub = any_sandbox.project / "src" / "lib"
    sub.mkdir(parents=True)
    assert any_sandbox.exec("pwd", cwd=sub).stdout.strip() == "/workspace/src/lib"


def test_a_background_process_survives_its_session(any_sandbox):
    started = any_sandbox.sh("nohup sleep 600 >/dev/null 2>&1 & echo started")
    assert started.stdout == "started\n"
    assert any_sandbox.exec("pgrep", "-x", "sleep").returncode == 0


# x86_64 numbers: madvise, fadvise64, process_vm_readv; 1000 is none (the control: ENOSYS is seen).
SYSCALL_PROBE = r"""for my $n (@ARGV) { $! = 0; syscall($n, 0, 0, 0, 0, 0, 0); print "$n ", ($!{ENOSYS} ? "missing" : "present"), "\n" }"""


def test_programs_find_the_system_calls_they_expect(any_sandbox):
    # V8 (node 20 and later) aborts without madvise; debuggers read memory with process_vm_readv.
    probe = any_sandbox.exec("perl", "-e", SYSCALL_PROBE, "28", "221", "310", "1000")
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == ["28 present", "221 present", "310 present", "1000 missing"]


def test_many_sessions_at_once(any_sandbox):
    results = [None] * 8

    def one(i):
        results[i] = any_sandbox.sh(f"sleep 0.5; echo {i}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.stdout.strip() for r in results] == [str(i) for i in range(8)]
    assert time.monotonic() - began < 30


def test_a_killed_client_leaves_nothing_running(any_sandbox):
    client = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", "sleep", "777"], cwd=any_sandbox.project,
                              env=any_sandbox.tnk.env)
    deadline = time.monotonic() + 30
    while any_sandbox.exec("pgrep", "-f", "sleep 777").returncode != 0:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    client.kill()
    client.wait()
    deadline = time.monotonic() + 10
    while any_sandbox.exec("pgrep", "-f", "sleep 777").returncode == 0:
        assert time.monotonic() < deadline, "the session outlived its killed client"
        time.sleep(0.1)
    host = subprocess.run(["pgrep", "-f", "sleep 777"], capture_output=True)
    assert host.returncode == 1


def read_until(fd, needle, timeout=30):
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out:
        left = deadline - time.monotonic()
        assert left > 0, f"timed out waiting for {needle!r}; got {out[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def test_interactive_shell_on_a_terminal(any_sandbox):
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(any_sandbox.project)
        os.execve(TNK_BIN, [TNK_BIN, "sandbox", "shell"], {**any_sandbox.tnk.env, "TERM": "xterm"})
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    os.write(fd, b"tty; stty size; echo READY-$((40+2))\n")
    out = read_until(fd, b"READY-42")
    assert b"/dev/pts/" in out and b"30 100" in out
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    time.sleep(0.3)
    os.write(fd, b"stty size; echo SIZED-$((1+1))\n")
    assert b"50 132" in read_until(fd, b"SIZED-2")
    os.write(fd, b"sleep 100\n")
    time.sleep(0.5)
    os.write(fd, b"\x03")  # Ctrl-C reaches the sleep inside, not tnk
    os.write(fd, b"echo INTERRUPTED-$?\n")
    assert b"INTERRUPTED-130" in read_until(fd, b"INTERRUPTED-1")
    os.write(fd, b"exit 7\n")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7


def test_stop_start_and_ls(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("life"))
    box.start()
    listing = box.run("-o", "json", "sandbox", "ls")
    rows = json.loads(listing.stdout)
    assert [r["status"] for r in rows if r["name"].startswith("tnk-life")] == ["running"]
    assert box.sh("echo kept > /home/agent/kept").returncode == 0
    assert box.run("sandbox", "stop").returncode == 0
    rows = json.loads(box.run("-o", "json", "sandbox", "ls").stdout)
    assert [r["status"] for r in rows if r["name"].startswith("tnk-life")] == ["stopped"]
    # exec starts a stopped sandbox; files in its upper layer are still there
    assert box.exec("cat", "/home/agent/kept").stdout == "kept\n"


def test_env_flag_before_double_dash_keeps_argv_whole(any_sandbox):
    # `-e` takes one value: the `--` after it starts ARGV, whose own `-c` is not a tnk flag.
    result = any_sandbox.run("sandbox", "exec", "-e", "A=one", "-e", "B=two", "--", "sh", "-c", 'echo "$A $B"')
    assert result.returncode == 0, result.stderr
    assert result.stdout == "one two\n"


def test_argv_reaches_the_program_byte_for_byte(any_sandbox):
    """Every word after `--` arrives as typed. CLI11 read a bracketed word in a list as a list of its own:
    `[a,b]` became two words, `[ x ]` lost its brackets, `[]` vanished (seen failing before: a shell test
    `[ -e f ]` or a JSON array passed to a program broke)."""
    words = ["[ x ]", "[a,b]", '["json", 1]', "[]", "", "a[1]", "[x", "x]", "--", "-e", "--root", "tab\there",
             "line\nbreak", "ünïcode"]
    result = any_sandbox.run("sandbox", "exec", "--", "printf", "<%s>\\n", *words)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(f"<{w}>\n" for w in words)
    test = any_sandbox.run("sandbox", "exec", "--", "sh", "-c", '[ -d "$1" ] && echo yes', "-", "/workspace")
    assert test.stdout == "yes\n", test.stderr
    empty = any_sandbox.run("sandbox", "exec", "--")
    assert empty.returncode == 64 and "needs the program to run" in empty.stderr, empty.stderr
