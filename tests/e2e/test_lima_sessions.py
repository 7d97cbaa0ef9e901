"""Sessions and provisioning on the lima backend, through the real tnk binary and the stand-in limactl
(issue 6): the guest's exit status passed through, the contract's environment, the audit records, no
lock held across a session, and provisioning through `limactl copy` + `limactl shell` with the same
fingerprint rule as the ns backend. No real Lima runs here; see lima_harness.py."""
import json
import subprocess
import time

from conftest import TNK_BIN
from e2e_util import FAILED, OK, assert_error
from lima_harness import lima  # noqa: F401 (fixture)


def test_exit_status_42_passes_through(lima):
    lima.started()
    shell = lima.run("sandbox", "shell", "--no-tty", "-c", "exit 42")
    assert shell.returncode == 42, shell.stderr
    exec_ = lima.run("sandbox", "exec", "--", "sh", "-c", "exit 42")
    assert exec_.returncode == 42, exec_.stderr
    assert "error:" not in shell.stderr + exec_.stderr


def test_session_gets_the_contract_environment_and_workdir(lima):
    lima.started()
    sub = lima.tnk.project("demo") / "sub"
    sub.mkdir()
    result = lima.tnk.run("sandbox", "shell", "--no-tty", "-e", "FOO=bar", "-c",
                          'echo "$TNK_WORKSPACE_MOUNT|$TNK_INFERENCE_URL|$FOO"; pwd', cwd=sub)
    assert result.returncode == OK, result.stderr
    first, cwd = result.stdout.splitlines()
    mount, url, foo = first.split("|")
    assert (mount, foo) == ("/workspace", "bar")
    assert url.startswith("http://host.lima.internal:")
    assert cwd == str(sub.resolve())  # the stand-in maps /workspace/sub back to the project
    shell_call = lima.calls()[-1]
    assert shell_call[:6] == ["--tty=false", "shell", "--workdir", "/workspace/sub", "tnk-demo", "env"]
    assert "FOO=bar" in shell_call
    assert shell_call[-3:] == ["bash", "-lc", 'echo "$TNK_WORKSPACE_MOUNT|$TNK_INFERENCE_URL|$FOO"; pwd']


def test_shell_without_no_tty_asks_for_a_terminal(lima):
    lima.started()
    result = lima.run("sandbox", "shell", "-c", "true")
    assert_error(result, 64, "an interactive terminal is required")


def test_session_audit_records_and_no_secret_values(lima, tmp_path):
    lima.started()
    log = tmp_path / "audit.ndjson"
    result = lima.run("sandbox", "shell", "--no-tty", "--audit-log", str(log), "-e", "SECRET=hunter2", "-c", "exit 3")
    assert result.returncode == 3, result.stderr
    text = log.read_text()
    assert "hunter2" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["event"] for r in records] == ["session_start", "exec_invocation", "session_exit"]
    start, invocation, end = records
    assert start["container_id"] == "tnk-demo" and start["workdir"] == "/workspace" and start["tty"] is False
    assert invocation["argv"] == ["bash", "-lc", "exit 3"]
    assert invocation["user_env_names"] == ["SECRET"]
    assert end["exit_code"] == 3
    verify = lima.tnk.run("audit", "verify", str(log))
    assert verify.returncode == OK, verify.stdout + verify.stderr


def test_a_shell_does_not_block_a_stop_of_another_sandbox(lima):
    lima.started("demo")
    lima.started("other")
    release = lima.tnk.project("demo") / "release"
    # the session runs until the test releases it (the stand-in runs it in the project directory)
    script = "for i in $(seq 1200); do [ -e release ] && exit 7; sleep 0.1; done; exit 1"
    session = subprocess.Popen([TNK_BIN, "sandbox", "shell", "--no-tty", "-c", script],
                               cwd=lima.tnk.project("demo"), env=dict(lima.tnk.env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any("shell" in c for c in lima.calls()) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the session's `limactl shell` runs
        stop = lima.run("sandbox", "stop", project="other", timeout=60)
        assert stop.returncode == OK, stop.stderr
        assert session.poll() is None, "the session ended before the stop: the test proves nothing"
        # the sandbox of the session itself is not locked either: a second session runs alongside
        other_session = lima.run("sandbox", "exec", "--", "true", timeout=60)
        assert other_session.returncode == OK, other_session.stderr
        assert session.poll() is None
    finally:
        release.touch()
        _, err = session.communicate(timeout=60)
    assert session.returncode == 7, err
    assert lima.ls()["tnk-other"]["status"] == "stopped"


def write_profile(tnk, name, script):
    provision = tnk.config_dir / "sandbox.d" / "provision.d"
    (provision / f"{name}.sh").write_text(script)
    return provision


def test_provisioning_copies_the_files_runs_the_script_and_keeps_the_fingerprint(lima):
    provision = write_profile(lima.tnk, "hello", 'source "$(dirname "$0")/lib/provision-lib.sh" 2>/dev/null || true\n'
                                                 'echo "hello from $TNK_WORKSPACE_MOUNT" > provisioned.txt\n'
                                                 'echo provisioning-output\n')
    result = lima.start("demo", "--profile", "hello")
    assert result.returncode == OK, result.stderr
    assert "provisioning-output" in result.stderr  # the script's output is shown live, on stderr
    marker = lima.tnk.project("demo") / "provisioned.txt"
    assert marker.read_text() == "hello from /workspace\n"
    copies = [c for c in lima.calls() if "copy" in c]
    targets = [c[-1] for c in copies]
    assert "tnk-demo:/tmp/tnk-provision/hello.sh" in targets
    lib_files = sorted(p.name for p in (provision / "lib").iterdir() if p.is_file())
    assert sorted(t.rsplit("/", 1)[1] for t in targets if "/lib/" in t) == lib_files
    record = json.loads(lima.record_path("tnk-demo").read_text())
    assert len(record["provision_fingerprint"]) == 64
    # unchanged inputs: the next start provisions nothing
    marker.unlink()
    mark = lima.mark()
    again = lima.start("demo", "--profile", "hello")
    assert again.returncode == OK, again.stderr
    assert "copy" not in lima.commands_since(mark)
    assert not marker.exists()
    # a changed script runs again
    write_profile(lima.tnk, "hello", "echo changed > provisioned.txt\n")
    assert lima.start("demo", "--profile", "hello").returncode == OK
    assert marker.read_text() == "changed\n"


def test_provisioning_runs_the_root_phase_first_through_sudo_then_the_script(lima):
    provision = write_profile(lima.tnk, "two", "echo agent-phase\n")
    (provision / "two.root.sh").write_text("echo root-phase\n")
    plan = json.loads(lima.start("demo", "--profile", "two", "-n", "-o", "json").stdout)["commands"]
    result = lima.start("demo", "--profile", "two")
    assert result.returncode == OK, result.stderr
    assert result.stderr.index("root-phase") < result.stderr.index("agent-phase"), result.stderr
    runs = [c for c in lima.calls() if "shell" in c and c[-1].endswith((".root.sh", "two.sh"))]
    assert [(c[-1].rsplit("/", 1)[1], "sudo" in c) for c in runs] == [("two.root.sh", True), ("two.sh", False)]
    # `start -n` showed the same copies, every lib file among them, and the same two runs in order
    copies = [c for c in lima.calls() if "copy" in c]
    assert len(copies) > 2 and [["limactl", *c] for c in copies] == [c for c in plan if "copy" in c]
    assert [c[-1] for c in plan if "<the provisioning runner>" in c] == [c[-1] for c in runs]


def test_a_failed_provisioning_names_the_line_and_keeps_the_sandbox(lima):
    write_profile(lima.tnk, "broken", "set -e\ntrue\nfalse\necho never\n")
    result = lima.start("demo", "--profile", "broken")
    line = assert_error(result, FAILED, "provisioning tnk-demo with profile broken failed (exit 1)")
    assert "broken.sh line 3: false" in line
    assert lima.ls()["tnk-demo"]["status"] == "running"
    assert json.loads(lima.record_path("tnk-demo").read_text())["provision_fingerprint"] == ""
    # a session still runs in the usable sandbox
    assert lima.run("sandbox", "exec", "--", "true").returncode == OK
