"""`tnk doctor` on a new account, as the README's first step has a user run it: every required check that
fails prints a fix line that is a command, and that command, pasted into a shell, makes the check pass."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import TNK_BIN

pytestmark = pytest.mark.rootless_suite  # the first thing an ordinary user runs


def doctor(tnk):
    result = tnk.run("doctor", "-o", "json")
    return {c["id"]: c for c in json.loads(result.stdout)["checks"]}, result.returncode


def test_every_failure_of_doctor_on_a_new_account_has_a_fix_line_that_works_when_pasted(tnk):
    (tnk.home / "code").rmdir()  # a new account: no ~/code, no specs, no tnk.toml
    checks, code = doctor(tnk)
    failing = {i: c for i, c in checks.items() if c["status"] == "fail" and c["required"]}
    assert code == 1 and {"workspace_root", "specs"} <= set(failing), failing
    text = tnk.run("doctor").stdout
    for check in failing.values():
        assert check["fix_command"], f"{check['id']}: no command in its fix line: {check['fix']!r}"
        assert f"      fix: {check['fix_command']}\n" in text, text  # alone on its line: it pastes
    # Paste each one into a shell, as the user would (tnk on PATH), in the order doctor lists them.
    env = {**tnk.env, "PATH": f"{Path(TNK_BIN).parent}:{tnk.env['PATH']}"}
    for check in failing.values():
        pasted = subprocess.run(["sh", "-c", check["fix_command"]], cwd=tnk.home, env=env, capture_output=True,
                                text=True, timeout=120)
        assert pasted.returncode == 0, f"{check['fix_command']}: {pasted.stderr}"
    after, _ = doctor(tnk)
    for check_id in failing:
        assert after[check_id]["status"] == "ok", after[check_id]
    assert os.path.isdir(tnk.home / "code") and (tnk.config_dir / "sandbox.d").is_dir()
