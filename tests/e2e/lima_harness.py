"""The lima backend's end-to-end harness: the real tnk binary with the stand-in limactl
(tests/e2e/fake_limactl/limactl) first on PATH. No real Lima runs in these tests: they check what tnk
asks of limactl and what it makes of the answers, not a VM."""
import json
from pathlib import Path

import pytest

from conftest import REPO

FAKE_LIMACTL_DIR = REPO / "tests" / "e2e" / "fake_limactl"


class LimaWorld:
    """An initialized tnk whose limactl is the stand-in; its instances live in `lima_dir`."""

    def __init__(self, tnk, tmp_path: Path):
        self.tnk = tnk
        self.lima_dir = tmp_path / "lima"
        self.log = tmp_path / "limactl.ndjson"
        self.path_with_fake = f"{FAKE_LIMACTL_DIR}:{tnk.env['PATH']}"
        tnk.env["PATH"] = self.path_with_fake
        tnk.env["FAKE_LIMA_DIR"] = str(self.lima_dir)
        tnk.env["FAKE_LIMACTL_LOG"] = str(self.log)

    def run(self, *args, project="demo", **kwargs):
        kwargs.setdefault("cwd", self.tnk.project(project))
        return self.tnk.run(*args, **kwargs)

    def start(self, project="demo", *extra, **kwargs):
        profile = [] if "--profile" in extra else ["--profile", "base"]
        return self.run("sandbox", "start", "--backend", "lima", *profile, *extra, project=project, **kwargs)

    def started(self, project="demo", *extra):
        result = self.start(project, *extra)
        assert result.returncode == 0, f"start failed: {result.stderr}"
        return result

    def calls(self):
        """Every limactl argv so far (without the leading "limactl")."""
        if not self.log.exists():
            return []
        return [json.loads(line)["argv"][1:] for line in self.log.read_text().splitlines()]

    def commands(self):
        """The limactl subcommands so far, global flags left out: ["list", "create", "start", ...]."""
        return [next(a for a in argv if not a.startswith("--")) for argv in self.calls()]

    def mark(self):
        return len(self.calls())

    def commands_since(self, mark):
        return self.commands()[mark:]

    def instance(self, name):
        path = self.lima_dir / name / "state.json"
        return json.loads(path.read_text()) if path.exists() else None

    def record_path(self, name):
        return self.tnk.state_dir / "sandboxes" / name / "sandbox.json"

    def ls(self):
        return {row["name"]: row for row in self.tnk.json("sandbox", "ls", "-o", "json")}


@pytest.fixture
def lima(initialized, tmp_path):
    return LimaWorld(initialized, tmp_path)
