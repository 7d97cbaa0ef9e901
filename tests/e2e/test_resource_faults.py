"""Resource faults (issue 16, item 3): the state directory or the audit log's directory on a small file
system that fills up, or that is read-only. Each gives one error naming the path, leaves no half-written
file, loses no audit record without failing, and a later command works once there is room again.
docs/reliability.md ("Resource faults") lists the same cases. Root only: they mount a small tmpfs."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from e2e_util import FAILED, GENESIS, OK, assert_error, sha256
from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.needs_root


class SmallFs:
    """A tmpfs of `size` at `path`, which fill() fills to the last byte and free() empties again."""

    def __init__(self, path: Path, size: str):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True)
        self.filler = path / "filler"

    def fill(self):
        subprocess.run(["dd", "if=/dev/zero", f"of={self.filler}", "bs=64k"], capture_output=True)
        # dd stops at the last whole block: what is left of the last page goes too.
        subprocess.run(["dd", "if=/dev/zero", f"of={self.path / 'filler2'}", "bs=1"], capture_output=True)

    def free(self):
        for name in ("filler", "filler2"):
            (self.path / name).unlink(missing_ok=True)

    def read_only(self, yes=True):
        subprocess.run(["mount", "-o", "remount," + ("ro" if yes else "rw"), str(self.path)], check=True)

    def unmount(self):
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_state(tnk, tmp_path):
    """The state directory (XDG_STATE_HOME) on a 256 MiB tmpfs: the sandboxes' records, logs, ns upper
    layers and vm disks go there. Set before the backend fixture, so it is unmounted after the sandboxes
    are stopped."""
    fs = SmallFs(tmp_path / "st", "256m")
    tnk.env["XDG_STATE_HOME"] = str(fs.path)
    yield fs
    fs.unmount()


@pytest.fixture
def small_audit(tnk, tmp_path):
    fs = SmallFs(tmp_path / "au", "1m")
    yield fs
    fs.unmount()


def leftovers(root: Path):
    """Half-written files: the temporaries of atomic writes (core/files.cc)."""
    return sorted(str(p) for p in root.rglob(".*.tmp-*"))


def test_a_full_state_directory_fails_the_start_cleanly_and_a_later_start_works(small_state, any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("full"))
    small_state.fill()
    result = box.run("sandbox", "start", "--backend", box.backend, "--profile", "base", timeout=900)
    line = assert_error(result, FAILED, "No space left on device")
    assert str(small_state.path) in line, line
    assert "file system is full" in result.stderr
    assert leftovers(small_state.path) == []
    small_state.free()
    box.start()
    assert box.exec("true").returncode == OK


def test_a_read_only_state_directory_fails_the_start_and_a_later_start_works(small_state, ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("ro"))
    small_state.read_only()
    result = box.run("sandbox", "start", "--backend", "ns", "--profile", "base")
    line = assert_error(result, FAILED, "Read-only file system")
    assert str(small_state.path) in line, line
    small_state.read_only(False)
    box.start()
    assert box.exec("true").returncode == OK


FILLING_SCRIPT = "#!/bin/bash\ndd if=/dev/zero of=/home/agent/big bs=1M\n"


def test_provisioning_that_fills_the_disk_fails_and_runs_again_once_there_is_room(small_state, ns_tnk):
    scripts = ns_tnk.config_dir / "sandbox.d" / "provision.d"
    (scripts / "fill.sh").write_text(FILLING_SCRIPT)
    box = Sandbox(ns_tnk, ns_tnk.project("prov"))
    result = box.run("sandbox", "start", "--backend", "ns", "--profile", "fill", timeout=900)
    assert_error(result, FAILED, "provision")
    assert "No space left on device" in result.stderr  # the script's own output, streamed
    record = json.loads(next(small_state.path.rglob("sandbox.json")).read_text())
    assert record["provision_fingerprint"] == ""  # a failed run is not remembered as done
    assert leftovers(small_state.path) == []
    (scripts / "fill.sh").write_text("#!/bin/bash\nrm -f /home/agent/big\necho done\n")
    again = box.run("sandbox", "start", "--backend", "ns", "--profile", "fill", timeout=900)
    assert again.returncode == OK, again.stderr
    assert json.loads(next(small_state.path.rglob("sandbox.json")).read_text())["provision_fingerprint"] != ""


def end_on_a_page_boundary(log):
    """Appends one chained record (any writer may) sized so that the log ends at a 4 KiB boundary: a
    tmpfs then has no room left in the log's last page, and once it is full the next record fails."""
    lines = log.read_text().splitlines() if log.exists() else []
    record = {"container_id": "tnk-aud", "event": "padding", "pad": "", "ts": 1,
              "seq": json.loads(lines[-1])["seq"] + 1 if lines else 1,
              "prev": sha256(lines[-1]) if lines else GENESIS}
    size = sum(len(line) + 1 for line in lines)
    unpadded = len(json.dumps(record, sort_keys=True, separators=(",", ":"))) + 1
    record["pad"] = "x" * (-(size + unpadded) % 4096)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode())
    os.close(fd)
    assert log.stat().st_size % 4096 == 0


def audit_events(path):
    return [json.loads(line)["event"] for line in path.read_text().splitlines()]


def test_a_session_whose_start_record_cannot_be_written_does_not_run(small_audit, ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("aud"))
    box.start()
    log = small_audit.path / "a.ndjson"
    assert box.exec("true", audit=log).returncode == OK  # the control: room for the records
    end_on_a_page_boundary(log)
    kept = log.read_text()
    small_audit.fill()
    marker = box.project / "ran"
    result = box.exec("sh", "-c", "touch /workspace/ran", audit=log)
    line = assert_error(result, FAILED, "not running the session: 2 audit records were not written")
    assert str(log) in line and "No space left on device" in line
    assert not marker.exists()
    assert log.read_text() == kept  # ends with its last complete record
    assert box.run("audit", "verify", str(log)).returncode == OK
    small_audit.free()
    assert box.exec("true", audit=log).returncode == OK
    assert audit_events(log).count("session_exit") == 2


def wait_for(condition, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_session_whose_exit_record_cannot_be_written_fails(small_audit, ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("aud"))
    box.start()
    log = small_audit.path / "a.ndjson"
    session = subprocess.Popen(
        [TNK_BIN, "sandbox", "exec", "--audit-log", str(log), "--", "sh", "-c", "sleep 3; exit 7"],
        cwd=box.project, env=box.tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: log.exists() and "exec_invocation" in log.read_text())
    end_on_a_page_boundary(log)
    small_audit.fill()
    _, err = session.communicate(timeout=120)
    assert session.returncode == FAILED, err
    errors = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and "the session ended with status 7: 1 audit record was not written" in errors[0], err
    assert str(log) in errors[0]
    assert audit_events(log)[-2:] == ["exec_invocation", "padding"]
    assert box.run("audit", "verify", str(log)).returncode == OK
