"""vm backend only: what a real kernel boundary adds, tested from the outside and in pairs, and the
faults of its own processes (QEMU, virtiofsd) and base disk. test_isolation.py and test_sessions.py
hold the tests both backends pass."""
import json
import os
import platform
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sandbox_harness import Sandbox, status_of, vm_sandbox, vm_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user


def state_dir(box):
    (directory,) = sorted((box.tnk.state_dir / "sandboxes").iterdir())
    return directory


def test_the_guest_runs_its_own_kernel(vm_sandbox):
    uname = vm_sandbox.exec("uname", "-r")
    assert uname.returncode == 0, uname.stderr
    assert uname.stdout.strip() and uname.stdout.strip() != platform.release()


def test_the_guest_sees_neither_host_processes_nor_host_disks(vm_sandbox):
    # The pair: the host's own listing shows this test runner and its disks; the guest's shows neither.
    assert any("pytest" in line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                            text=True).stdout.splitlines())
    inside = vm_sandbox.exec("ps", "-eo", "args")
    assert inside.returncode == 0, inside.stderr
    assert not any("pytest" in line or "qemu" in line for line in inside.stdout.splitlines())
    host_disks = sorted(os.listdir("/sys/block"))
    guest_disks = vm_sandbox.exec("ls", "/sys/block").stdout.split()
    # Its own two: the sandbox's overlay and, read-only, the base disk its init comes from (vm-backend.md).
    assert guest_disks == ["vda", "vdb"] and host_disks != guest_disks
    assert vm_sandbox.exec("cat", "/sys/block/vda/ro", "/sys/block/vdb/ro").stdout == "0\n1\n"


def test_the_root_file_system_fills_the_manifests_disk(vm_sandbox):
    # The base disk's ext4 is only as big as the image (~500 MB, a few hundred free); the sandbox's
    # overlay has the manifest's resources.disk (base-sandbox.yaml: 8GiB), and the agent grows the file
    # system to it at the first boot. The pair: 2 GiB more than the base disk could take fit.
    size = vm_sandbox.exec("df", "-B1", "--output=size", "/")
    assert size.returncode == 0, size.stderr
    assert int(size.stdout.split()[-1]) > 7 * 2**30
    big = vm_sandbox.exec("fallocate", "-l", "2G", "/var/tmp/big")
    assert big.returncode == 0, big.stderr
    assert vm_sandbox.exec("rm", "/var/tmp/big").returncode == 0
    assert "grew / from" in (state_dir(vm_sandbox) / "serial.log").read_text(errors="replace")


def allocated_below(path):
    """Bytes the host's file system gives the files below path (what `du` counts)."""
    return sum(f.stat().st_blocks * 512 for f in Path(path).rglob("*") if f.is_file() and not f.is_symlink())


def test_issue32_disk_bound_writes_past_the_disk_fail_inside_and_the_vm_goes_on(vm_tnk):
    """Issue 32 item 3's acceptance, on vm: the guest's disk is the manifest's resources.disk, so what users
    expect of a disk holds: `fallocate` of twice the bound, a write through an unlinked file and many small
    files each fail inside with ENOSPC while the sandbox keeps running, the host gives at most the bound
    (plus qcow2's own tables), and the agent deletes and goes on. (ns: the watch, test_security_review.py.)"""
    (vm_tnk.config_dir / "sandbox.d" / "manifests" / "bounded.yaml").write_text(
        "profile: bounded\nresources:\n  disk: 1GiB\nsecurity:\n  network: none\n")
    box = Sandbox(vm_tnk, vm_tnk.project("bounded"))
    box.start("--profile", "bounded")
    used_before = allocated_below(state_dir(box))
    full = "No space left on device"
    tried = box.exec("fallocate", "-l", "2G", "/home/agent/twice")
    assert tried.returncode != 0 and full in tried.stderr, tried
    assert box.exec("rm", "-f", "/home/agent/twice").returncode == 0
    # Random bytes, synced: they reach the disk file on the host (QEMU keeps zeros as holes). Most of the
    # free space is first taken by an allocation that writes nothing, so that emulation has less to write.
    assert box.exec("fallocate", "-l", "600M", "/home/agent/reserve").returncode == 0
    unlinked = box.sh("exec 3>/home/agent/ghost && rm /home/agent/ghost && "
                      "dd if=/dev/urandom bs=1M count=2048 conv=fsync status=none >&3", timeout=900)
    assert unlinked.returncode != 0 and full in unlinked.stderr, unlinked
    assert box.exec("true").returncode == 0  # the sandbox runs; the unlinked file's space is back
    small = box.sh("mkdir -p /home/agent/many && cd /home/agent/many && "
                   "seq 1 100000 | xargs touch && echo all-made", timeout=900)
    assert "all-made" not in small.stdout and full in small.stderr, small
    grew = allocated_below(state_dir(box)) - used_before
    print(f"[vm] a 1 GiB disk written full three ways: the host gave {grew >> 20} MiB")
    assert grew <= (1 << 30) + (64 << 20), f"the host gave {grew >> 20} MiB for a 1 GiB disk"
    # The pair: the agent deletes what it made, and the same kinds of writes work again.
    assert box.sh("rm -rf /home/agent/many /home/agent/reserve && dd if=/dev/zero of=/home/agent/after bs=1M count=64 status=none "
                  "&& touch /home/agent/small && echo ok").stdout == "ok\n"


def test_root_in_the_guest_changes_only_the_guest(vm_sandbox):
    host_value = open("/proc/sys/vm/swappiness").read().strip()
    new_value = "17" if host_value != "17" else "23"
    # Root inside (--root; a plain session's sudo is refused by no_new_privs) writes the guest's own kernel
    # setting (the pair's positive side)...
    assert vm_sandbox.exec("sudo", "-n", "true").returncode != 0
    wrote = vm_sandbox.sh(f"echo {new_value} > /proc/sys/vm/swappiness", root=True)
    assert wrote.returncode == 0, wrote.stderr
    assert vm_sandbox.exec("cat", "/proc/sys/vm/swappiness").stdout.strip() == new_value
    # ...and the host's kernel never sees it; nor can root inside find the host's files.
    assert open("/proc/sys/vm/swappiness").read().strip() == host_value
    (vm_sandbox.tnk.home / "host-only-secret").write_text("SECRET-HOST-41c7\n")
    found = vm_sandbox.exec("grep", "-rl", "--exclude-dir=proc", "--exclude-dir=sys", "SECRET-HOST-41c7", "/",
                            root=True, timeout=600)
    assert found.stdout == "" and found.returncode == 1, found.stderr


def sandbox_processes(box):
    """The pids of the QEMU and virtiofsd that run this sandbox: its supervisor's descendants."""
    supervisor = int((state_dir(box) / "supervisor.pid").read_text().split()[0])
    parents, names = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        parents[int(pid)], names[int(pid)] = int(status["PPid"]), status["Name"]

    def under_supervisor(pid):
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == supervisor:
                return True
        return False

    found = {}
    for pid, name in names.items():
        if under_supervisor(pid) and name.startswith("qemu-system"):
            found["qemu"] = pid
        elif under_supervisor(pid) and name == "virtiofsd":
            found["virtiofsd"] = pid
    return found


@pytest.mark.parametrize("victim", ["qemu", "virtiofsd"])
def test_a_killed_vm_process_leaves_broken_and_start_recovers(vm_sandbox, victim):
    assert vm_sandbox.sh("echo survived > /home/agent/mark").returncode == 0
    pids = sandbox_processes(vm_sandbox)
    assert victim in pids, pids
    os.kill(pids[victim], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while status_of(vm_sandbox) != ["broken"]:
        assert time.monotonic() < deadline, f"status stayed {status_of(vm_sandbox)} after killing {victim}"
        time.sleep(0.2)
    # The next command restarts it, says what had died, and finds the overlay as it was.
    again = vm_sandbox.exec("cat", "/home/agent/mark")
    assert again.stdout == "survived\n", again.stderr
    name = {"qemu": "QEMU", "virtiofsd": "virtiofsd"}[victim]
    assert f"was broken (the sandbox's {name}" in again.stderr, again.stderr
    assert status_of(vm_sandbox) == ["running"]
    assert vm_sandbox.sh("echo ok > /workspace/after && cat /workspace/after").stdout == "ok\n"


def test_removing_and_rebuilding_the_base_disk_leaves_sandboxes_intact(vm_tnk, tmp_path):
    # A cache of its own that shares the image tree and kernel but builds its own disks, so removing
    # them leaves the shared cache to the other tests.
    cache = tmp_path / "cache"
    (cache / "tnk").mkdir(parents=True)
    shared = Path(vm_tnk.env["XDG_CACHE_HOME"]) / "tnk"
    for kind in ("images", "kernels"):
        (cache / "tnk" / kind).symlink_to(shared / kind)
    vm_tnk.env["XDG_CACHE_HOME"] = str(cache)
    box = Sandbox(vm_tnk, vm_tnk.project("kept"))
    box.start()
    assert box.sh("echo kept > /home/agent/mark").returncode == 0
    assert box.run("sandbox", "stop").returncode == 0
    disks = [row for row in json.loads(box.run("-o", "json", "image", "ls").stdout) if row.get("kind") == "disk"]
    assert disks, "no base disk listed"
    removed = box.run("image", "rm", "--yes", "--force", *[row["id"] for row in disks])
    assert removed.returncode == 0, removed.stderr
    rebuilt = box.run("image", "build", "--vm", timeout=900)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert box.exec("cat", "/home/agent/mark").stdout == "kept\n"
    fsck = box.exec("dmesg", root=True)
    assert "EXT4-fs error" not in fsck.stdout
