"""Shared pieces of the ns backend's end-to-end tests: a started sandbox in a temporary HOME, the
image cache shared between tests (built once per machine, like a user's), and the probe program."""
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


def require_ns():
    require(os.geteuid() == 0, "the ns backend needs root in this version")
    require(shutil.which("mmdebstrap") is not None, "mmdebstrap is not installed (scripts/install-deps.sh)")


class NsSandbox:
    """One project with a running ns sandbox."""

    def __init__(self, tnk, project):
        self.tnk = tnk
        self.project = project

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

    def start(self, *extra):
        # `base` unless a test names a profile: the bundled default (pi) downloads an agent.
        profile = [] if "--profile" in extra else ["--profile", "base"]
        result = self.run("sandbox", "start", "--backend", "ns", *profile, *extra, timeout=900)
        assert result.returncode == 0, f"start failed: {result.stderr}"
        return result


def use_shared_cache(tnk):
    SHARED_CACHE.mkdir(parents=True, exist_ok=True)
    tnk.env["XDG_CACHE_HOME"] = str(SHARED_CACHE)


@pytest.fixture
def ns_tnk(tnk):
    """`tnk` initialized, with the shared image cache; every sandbox is stopped at the end."""
    require_ns()
    use_shared_cache(tnk)
    assert tnk.run("init").returncode == 0
    yield tnk
    tnk.run("shutdown", "--timeout", "2", timeout=120)


@pytest.fixture
def sandbox(ns_tnk):
    box = NsSandbox(ns_tnk, ns_tnk.project("demo"))
    box.start()
    return box


def compile_probe(dest: Path) -> Path:
    out = dest / "probe"
    subprocess.run(["cc", "-O1", "-o", str(out), str(PROBE_SOURCE)], check=True)
    return out
