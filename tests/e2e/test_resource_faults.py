"""Resource faults (issue 16, item 3): the state directory or the audit log's directory on a small file
system that fills up, or that is read-only. Each gives one error naming the path, leaves no half-written
file, loses no audit record without failing, and a later command works once there is room again.
docs/reliability.md ("Resource faults") lists the same cases. Root only: they mount a small tmpfs."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from e2e_util import FAILED, GENESIS, OK, assert_error, sha256
from sandbox_harness import SHARED_CACHE, Sandbox, any_tnk, ns_tnk, vm_tnk  # noqa: F401 (fixtures)

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

    def grow(self, size):
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)

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


def test_a_read_only_state_directory_fails_the_start_and_a_later_start_works(small_state, any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("ro"))
    small_state.read_only()
    result = box.run("sandbox", "start", "--backend", box.backend, "--profile", "base")
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


def test_a_session_whose_start_record_cannot_be_written_does_not_run(small_audit, any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("aud"))
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


def test_a_session_whose_exit_record_cannot_be_written_fails(small_audit, any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("aud"))
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



# Non-zero bytes: QEMU stores a zero block as a hole (detect-zeroes=unmap), which never fills anything.
FILLING_VM_SCRIPT = "#!/bin/bash\ntr '\\0' x < /dev/zero | dd of=/home/agent/big bs=1M iflag=fullblock\n"


def qemu_processes(path):
    """QEMU processes whose command line names `path` (a state directory), or the name (`-name tnk-<id>`)
    of a sandbox whose state is below `path`: run by root, QEMU is handed its files and names no path."""
    names = {f"tnk-{d.name}".encode() for d in Path(path).rglob("sandboxes/*") if d.is_dir()}
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, PermissionError, ProcessLookupError, NotADirectoryError):
            continue
        named = any(a == b"-name" and b in names for a, b in zip(argv, argv[1:]))
        if argv and argv[0].endswith(b"qemu-system-x86_64") and (named or str(path).encode() in b" ".join(argv)):
            found.append(int(proc.name))
    return found


def test_a_vm_disk_whose_host_file_system_fills_during_provisioning_fails_and_recovers(tmp_path, vm_tnk):
    """QEMU pauses the guest when a write to its disk finds the host's file system full (werror=enospc):
    the start used to wait on the paused provisioning for ever. Here the state directory holds the base
    disk's copy (~220 MB) and the overlay on a 320 MiB tmpfs, and the script writes until it is full."""
    fs = SmallFs(tmp_path / "st", "320m")
    vm_tnk.env["XDG_STATE_HOME"] = str(fs.path)
    try:
        scripts = vm_tnk.config_dir / "sandbox.d" / "provision.d"
        (scripts / "fill.sh").write_text(FILLING_VM_SCRIPT)
        box = Sandbox(vm_tnk, vm_tnk.project("vfill"))
        result = box.run("sandbox", "start", "--backend", "vm", "--profile", "fill", timeout=600)
        disk = next(fs.path.rglob("disk.qcow2"))
        line = assert_error(result, FAILED, f"the vm's disk {disk} cannot grow: No space left on device")
        assert "free some space on the file system of " + str(disk.parent) in result.stderr
        assert qemu_processes(fs.path) == []  # nothing of the sandbox keeps running
        assert leftovers(fs.path) == []
        record = json.loads((disk.parent / "sandbox.json").read_text())
        assert record["provision_fingerprint"] == "", line
        fs.grow("640m")  # the overlay itself filled it: room again, as after freeing space
        (scripts / "fill.sh").write_text("#!/bin/bash\nrm -f /home/agent/big\necho done\n")
        again = box.run("sandbox", "start", "--backend", "vm", "--profile", "fill", timeout=600)
        assert again.returncode == OK, again.stderr
        assert box.exec("cat", "/etc/hostname").returncode == OK
        assert json.loads((disk.parent / "sandbox.json").read_text())["provision_fingerprint"] != ""
    finally:
        vm_tnk.run("shutdown", "--timeout", "5", timeout=120)
        fs.unmount()



def test_a_guest_disk_that_fills_during_provisioning_fails_it_and_a_later_start_recovers(vm_tnk):
    """The guest's own file system full (resources.disk below the base disk's size: the base disk's own
    few hundred MB free): a provisioning failure with the script's ENOSPC, and the guest lives on."""
    (vm_tnk.config_dir / "sandbox.d" / "manifests" / "gfill.yaml").write_text(
        "profile: gfill\nresources:\n  disk: 256MiB\nsecurity:\n  network: none\n")
    scripts = vm_tnk.config_dir / "sandbox.d" / "provision.d"
    (scripts / "gfill.sh").write_text(FILLING_VM_SCRIPT)
    box = Sandbox(vm_tnk, vm_tnk.project("gfill"))
    result = box.run("sandbox", "start", "--backend", "vm", "--profile", "gfill", timeout=900)
    assert_error(result, FAILED, "provisioning")
    assert "No space left on device" in result.stderr  # the script's own dd, streamed
    assert box.exec("df", "--output=avail", "/").returncode == OK  # the guest still runs
    (scripts / "gfill.sh").write_text("#!/bin/bash\nrm -f /home/agent/big\necho done\n")
    again = box.run("sandbox", "start", "--backend", "vm", "--profile", "gfill", timeout=900)
    assert again.returncode == OK, again.stderr
    assert box.exec("sh", "-c", "echo ok > /home/agent/after").returncode == OK

# An image cache deleted during a start (rm -rf of $XDG_CACHE_HOME/tnk or a part of it). The tests' cache
# is their own: hard links to the shared cache's files (`cp -al`, instant), which tnk never changes in
# place, so deleting it removes links only.

def private_cache(tmp_path, *parts):
    cache = tmp_path / "cache"
    (cache / "tnk").mkdir(parents=True, exist_ok=True)
    for part in parts:
        (cache / "tnk" / part).mkdir(mode=0o700, exist_ok=True)
        for entry in (SHARED_CACHE / "tnk" / part).iterdir():
            if not entry.name.endswith(".lock") and not entry.name.startswith("."):
                subprocess.run(["cp", "-al", str(entry), str(cache / "tnk" / part / entry.name)], check=True)
    return cache


class Opened:
    """inotify (through libc): the first time a file in `directory` is opened."""
    IN_OPEN = 0x20

    def __init__(self, directory: Path):
        import ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        assert self.fd >= 0
        assert self.libc.inotify_add_watch(self.fd, str(directory).encode(), self.IN_OPEN) >= 0, directory

    def wait(self, seconds=600):
        import select
        ready, _, _ = select.select([self.fd], [], [], seconds)
        assert ready, "timed out"
        os.close(self.fd)


def spawn_start(box, backend):
    return subprocess.Popen([TNK_BIN, "sandbox", "start", "--backend", backend, "--profile", "base"],
                            cwd=box.project, env=box.tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def one_clear_error_or_success(result, path, box):
    """The start either worked (and so does a command), or failed once, naming a path under `path`."""
    if result.returncode == OK:
        assert box.exec("true").returncode == OK
        return "succeeded"
    line = assert_error(result, result.returncode)
    assert str(path) in line, result.stderr
    return line


def current_image(tnk):
    out = tnk.run("image", "build", "-n").stdout.split()
    return next(word for word in out if word.startswith("debian-"))


def test_an_image_cache_deleted_during_the_image_build_leaves_no_image(ns_tnk, tmp_path):
    cache = tmp_path / "cache"
    ns_tnk.env["XDG_CACHE_HOME"] = str(cache)
    images = cache / "tnk" / "images"
    box = Sandbox(ns_tnk, ns_tnk.project("cache"))
    start = spawn_start(box, "ns")
    wait_for(lambda: start.poll() is not None or any(images.glob(".build-*/rootfs/var/lib/dpkg/status")), 600)
    subprocess.run(["rm", "-rf", str(images)], capture_output=True)  # may race mmdebstrap's writes
    out, err = start.communicate(timeout=600)
    result = subprocess.CompletedProcess(start.args, start.returncode, out, err)
    print(one_clear_error_or_success(result, images, box))
    if result.returncode != OK:
        # Nothing a later start could take for an image: no image directory, no work directory.
        assert not images.exists() or sorted(p.name for p in images.iterdir() if not p.name.endswith(
            (".lock", ".build.log"))) == [], list(images.iterdir())
        assert box.run("image", "ls", "-q").stdout.strip() == ""
    # The next start works: the shared image stands in for the rebuild (next test rebuilds for real).
    private_cache(tmp_path, "images")
    box.start()
    assert box.exec("true").returncode == OK


def test_an_image_cache_deleted_after_the_image_was_found_fails_once_and_the_next_start_rebuilds(
        ns_tnk, tmp_path):
    cache = private_cache(tmp_path, "images")
    ns_tnk.env["XDG_CACHE_HOME"] = str(cache)
    image = cache / "tnk" / "images" / current_image(ns_tnk)
    box = Sandbox(ns_tnk, ns_tnk.project("cache"))
    opened = Opened(image)
    start = spawn_start(box, "ns")
    opened.wait()  # the start read image.json: it has found the image
    os.kill(start.pid, signal.SIGSTOP)
    subprocess.run(["rm", "-rf", str(cache / "tnk")], check=True)
    os.kill(start.pid, signal.SIGCONT)
    out, err = start.communicate(timeout=600)
    outcome = one_clear_error_or_success(subprocess.CompletedProcess(start.args, start.returncode, out, err), image, box)
    print(outcome)
    if outcome == "succeeded":  # the start had mounted the image before it went: stopped, it needs one again
        assert box.run("sandbox", "stop").returncode == OK
    again = box.run("sandbox", "start", "--backend", "ns", "--profile", "base", timeout=1800)
    assert again.returncode == OK, again.stderr
    # Rebuilt under the same name, not "delete the sandbox": by the second start, or by the first when it
    # looked for the image again after the cache went (then it succeeded on the new one).
    assert "building image" in (err if outcome == "succeeded" else "") + again.stderr, (err, again.stderr)
    assert box.exec("true").returncode == OK


def test_a_vm_image_cache_deleted_before_the_vm_boots_fails_once_and_the_next_start_works(vm_tnk, tmp_path):
    cache = private_cache(tmp_path, "images", "kernels", "disks")
    vm_tnk.env["XDG_CACHE_HOME"] = str(cache)
    disks = cache / "tnk" / "disks"
    box = Sandbox(vm_tnk, vm_tnk.project("vcache"))
    watches = [Opened(d) for d in disks.iterdir() if d.is_dir()]
    start = spawn_start(box, "vm")
    import select
    ready, _, _ = select.select([w.fd for w in watches], [], [], 600)  # it has found its base disk
    assert ready, "timed out"
    os.kill(start.pid, signal.SIGSTOP)
    subprocess.run(["rm", "-rf", str(cache / "tnk")], check=True)
    os.kill(start.pid, signal.SIGCONT)
    out, err = start.communicate(timeout=600)
    print(one_clear_error_or_success(subprocess.CompletedProcess(start.args, start.returncode, out, err),
                                     cache / "tnk", box))
    assert qemu_processes(vm_tnk.state_dir) == [] or start.returncode == OK
    # The guest kernel takes half an hour to build: it comes back from the shared cache, with the image;
    # the base disk is built again (a second).
    private_cache(tmp_path, "images", "kernels")
    again = box.run("sandbox", "start", "--backend", "vm", "--profile", "base", timeout=900)
    assert again.returncode == OK, again.stderr
    assert box.exec("true").returncode == OK
