"""Shared pieces of the sandbox end-to-end tests: a started sandbox (ns or vm) in a temporary HOME, the
image cache shared between tests (built once per machine, like a user's), and the probe program.

Tests that hold for both backends take `any_tnk` / `any_sandbox` and run once per backend (ids [ns] and
[vm]); tests of one backend take `ns_tnk` / `sandbox` or `vm_tnk` / `vm_sandbox`."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, require

# The image is cached where a user's would be, so a second test run does not rebuild it; tests still
# pass from an empty cache (the first start builds it).
SHARED_CACHE = Path(os.environ.get("TNK_TEST_CACHE", str(Path.home() / ".cache" / "tnk-tests")))
PROBE_SOURCE = REPO / "tests" / "e2e" / "probes" / "probe.c"


def has_subordinate_range():
    """Whether /etc/subuid gives this user 65536 ids (what a rootless sandbox maps onto)."""
    import pwd
    name = pwd.getpwuid(os.geteuid()).pw_name
    try:
        lines = Path("/etc/subuid").read_text().splitlines()
    except FileNotFoundError:
        return False
    return any(l.split(":")[0] in (name, str(os.geteuid())) and int(l.split(":")[2]) >= 65536
               for l in lines if l.count(":") == 2)


def require_ns():
    if os.geteuid() != 0:
        require(has_subordinate_range(), "no range of 65536 ids in /etc/subuid for this user (`sudo tnk setup`)")
        require(shutil.which("newuidmap") is not None, "newuidmap is not installed (package uidmap)")
    require(shutil.which("mmdebstrap") is not None, "mmdebstrap is not installed (scripts/install-deps.sh)")


def require_vm():
    require_ns()  # the vm's disk is made from the same image tree, in the same user namespaces
    require(shutil.which("qemu-system-x86_64") is not None, "qemu-system-x86_64 is not installed")
    require(Path("/usr/lib/qemu/virtiofsd").exists(), "virtiofsd is not installed (qemu-system-common)")
    kernels = list((SHARED_CACHE / "tnk" / "kernels").glob("*/vmlinux"))
    require(kernels, f"no guest kernel under {SHARED_CACHE}/tnk/kernels: scripts/test.sh builds it "
                     "(`tnk image build --vm`, minutes)")


REQUIRE = {"ns": require_ns, "vm": require_vm}


class Sandbox:
    """One project with a running sandbox of the tnk fixture's backend (`tnk.backend`, ns unless set)."""

    def __init__(self, tnk, project):
        self.tnk = tnk
        self.project = project
        self.backend = getattr(tnk, "backend", "ns")

    def run(self, *args, **kwargs):
        kwargs.setdefault("cwd", self.project)
        kwargs.setdefault("timeout", 120)
        return self.tnk.run(*args, **kwargs)

    def exec(self, *argv, env_flags=(), root=False, audit=None, **kwargs):
        flags = []
        for kv in env_flags:
            flags += ["-e", kv]
        if root:
            flags.append("--root")
        if audit:
            flags += ["--audit-log", str(audit)]
        return self.run("sandbox", "exec", *flags, "--", *argv, **kwargs)

    def sh(self, script, **kwargs):
        return self.exec("sh", "-c", script, **kwargs)

    def start(self, *extra, timeout=900):
        # `base` unless a test names a profile: the bundled default (pi) downloads an agent.
        profile = [] if "--profile" in extra else ["--profile", "base"]
        result = self.run("sandbox", "start", "--backend", self.backend, *profile, *extra, timeout=timeout)
        assert result.returncode == 0, f"start failed: {result.stderr}"
        return result


def status_of(box):
    """The status column of `tnk sandbox ls` (one entry per sandbox of box's tnk)."""
    return [r["status"] for r in json.loads(box.run("-o", "json", "sandbox", "ls").stdout)]


def use_shared_cache(tnk):
    SHARED_CACHE.mkdir(parents=True, exist_ok=True)
    tnk.env["XDG_CACHE_HOME"] = str(SHARED_CACHE)


def initialized_for(tnk, backend, *init_flags):
    """`tnk` initialized for `backend`, with the shared image cache; every sandbox is stopped at the end.
    `init_flags`: `--force` for a HOME that was initialized before (its specs refreshed)."""
    REQUIRE[backend]()
    use_shared_cache(tnk)
    tnk.backend = backend
    assert tnk.run("init", *init_flags).returncode == 0
    yield tnk
    tnk.run("shutdown", "--timeout", "5", timeout=120)


def started(tnk):
    box = Sandbox(tnk, tnk.project("demo"))
    box.start()
    return box


@pytest.fixture
def ns_tnk(tnk):
    yield from initialized_for(tnk, "ns")


@pytest.fixture
def vm_tnk(tnk):
    yield from initialized_for(tnk, "vm")


@pytest.fixture(params=["ns", "vm"])
def any_tnk(tnk, request):
    yield from initialized_for(tnk, request.param)


@pytest.fixture
def sandbox(ns_tnk):
    return started(ns_tnk)


@pytest.fixture
def vm_sandbox(vm_tnk):
    return started(vm_tnk)


@pytest.fixture
def any_sandbox(any_tnk):
    return started(any_tnk)


def compile_probe(dest: Path) -> Path:
    out = dest / "probe"
    subprocess.run(["cc", "-O1", "-o", str(out), str(PROBE_SOURCE)], check=True)
    return out
