"""The vm backend end to end (issue 4): a real micro-VM under QEMU (TCG on this machine), tnk-agent as its
PID 1. The guest kernel takes minutes to compile, so these tests use the user's own cache (where
`tnk image build --vm` put it) and skip loudly when it is absent."""
import os
import platform
import shutil
from pathlib import Path

import pytest

from conftest import require
from ns_harness import NsSandbox

# Where the guest kernel and disks were built (a user's cache), shared with these tests.
VM_CACHE = Path(os.environ.get("TNK_TEST_VM_CACHE", str(Path.home() / ".cache")))


def require_vm():
    require(os.geteuid() == 0, "the vm backend needs root in this version")
    require(shutil.which("qemu-system-x86_64") is not None, "qemu-system-x86_64 is not installed")
    require(Path("/usr/lib/qemu/virtiofsd").exists(), "virtiofsd is not installed (qemu-system-common)")
    require(shutil.which("socat") is not None, "socat is not installed (scripts/install-deps.sh)")
    kernels = list((VM_CACHE / "tnk" / "kernels").glob("*/vmlinux"))
    require(kernels, f"no guest kernel under {VM_CACHE}/tnk/kernels: run `tnk image build --vm` first (minutes)")


class VmSandbox(NsSandbox):
    def start(self, *extra):
        result = self.run("sandbox", "start", "--backend", "vm", "--profile", "base", *extra, timeout=900)
        assert result.returncode == 0, f"start failed: {result.stderr}"
        return result


@pytest.fixture
def vm_tnk(tnk):
    require_vm()
    tnk.env["XDG_CACHE_HOME"] = str(VM_CACHE)
    assert tnk.run("init").returncode == 0
    yield tnk
    tnk.run("shutdown", "--timeout", "5", timeout=120)


@pytest.fixture
def vm(vm_tnk):
    box = VmSandbox(vm_tnk, vm_tnk.project("demo"))
    box.start()
    return box


def test_guest_kernel_workspace_owner_exit_status(vm):
    uname = vm.exec("uname", "-r")
    assert uname.returncode == 0, uname.stderr
    assert uname.stdout.strip() and uname.stdout.strip() != platform.release()

    written = vm.sh("echo hello > /workspace/from-guest.txt")
    assert written.returncode == 0, written.stderr
    made = vm.project / "from-guest.txt"
    assert made.read_text() == "hello\n"
    owner = vm.project.stat()
    assert (made.stat().st_uid, made.stat().st_gid) == (owner.st_uid, owner.st_gid)

    assert vm.sh("exit 42").returncode == 42
    assert vm.sh("exit 1").returncode == 1
    assert vm.sh("kill -INT $$").returncode == 130
    assert vm.exec("cat", input="streamed\n").stdout == "streamed\n"


def test_overlay_persists_across_restart(vm):
    assert vm.sh("echo kept > /home/agent/outside.txt").returncode == 0
    stopped = vm.run("sandbox", "stop")
    assert stopped.returncode == 0, stopped.stderr
    vm.start()
    again = vm.exec("cat", "/home/agent/outside.txt")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "kept\n"
