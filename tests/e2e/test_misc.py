"""Shell completion, colour (NO_COLOR / CLICOLOR_FORCE), XDG directories, bare `tnk` and `tnk doctor`."""
import json
import shutil
import subprocess

import pytest

from conftest import require
from e2e_util import FAILED, OK, USAGE, write_record

ESC = "\x1b["


def completion(tnk, shell):
    result = tnk.run("completion", shell)
    assert result.returncode == OK, result.stderr
    assert result.stderr == ""
    return result.stdout


def bash_complete(script, tmp_path, words):
    """Sources the script in bash and returns _tnk's COMPREPLY for `words` (the last one is completed)."""
    path = tmp_path / "tnk.bash"
    path.write_text(script)
    quoted = " ".join("'" + w + "'" for w in words)
    program = (f'source "{path}"; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _tnk; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [w for w in result.stdout.splitlines() if w]


def test_completion_bash_is_valid_and_completes(tnk, tmp_path):
    require(shutil.which("bash"), "bash is not installed")
    script = completion(tnk, "bash")
    check = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert "complete -F _tnk tnk" in script
    assert bash_complete(script, tmp_path, ["tnk", "sandbox", "sh"]) == ["shell"]
    assert bash_complete(script, tmp_path, ["tnk", "sa"]) == ["sandbox"]
    assert bash_complete(script, tmp_path, ["tnk", "config", "s"]) == ["show"]
    assert "--quiet" in bash_complete(script, tmp_path, ["tnk", "sandbox", "ls", "--q"])


def test_completion_zsh(tnk):
    script = completion(tnk, "zsh")
    assert "bashcompinit" in script and "_tnk_bash()" in script and script.startswith("#compdef tnk\n")
    if shutil.which("zsh"):
        check = subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    else:
        check = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


def test_completion_fish(tnk):
    script = completion(tnk, "fish")
    lines = [line for line in script.splitlines() if line and not line.startswith("#")]
    assert lines and all(line.startswith("complete -c tnk") for line in lines)
    assert any("-a sandbox" in line for line in lines)
    assert any("-a shell" in line for line in lines)


@pytest.mark.parametrize("argv", [["--bogus"], ["sandbox", "inspect"], ["doctor"], ["config", "show"], []])
def test_no_color_means_no_escape_codes(tnk, argv):
    for env in ({"NO_COLOR": "1"}, {"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, {}):
        result = tnk.run(*argv, env=env)
        assert ESC not in result.stdout and ESC not in result.stderr, (env, result.stdout, result.stderr)


def test_clicolor_force_makes_the_error_red(tnk):
    result = tnk.run("--bogus", env={"CLICOLOR_FORCE": "1"})
    assert result.returncode == USAGE
    assert result.stderr.startswith("\x1b[31merror:\x1b[0m ")


def test_no_color_wins_over_clicolor_force(tnk):
    result = tnk.run("--bogus", env={"CLICOLOR_FORCE": "1", "NO_COLOR": "1"})
    assert result.stderr.startswith("error: ")
    assert ESC not in result.stderr


def test_json_never_coloured(tnk):
    result = tnk.run("doctor", "-o", "json", env={"CLICOLOR_FORCE": "1"})
    json.loads(result.stdout)
    assert ESC not in result.stdout


def test_xdg_config_home_is_honoured(tnk, tmp_path):
    xdg = tmp_path / "xdg-config"
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert tnk.run("config", "init", env=env).returncode == 0
    assert (xdg / "tnk" / "tnk.toml").is_file()
    assert not (tnk.home / ".config" / "tnk").exists()
    doc = tnk.json("config", "show", "-o", "json", env=env)
    assert doc["file"] == str(xdg / "tnk" / "tnk.toml") and doc["file_exists"] is True
    assert tnk.run("init", env=env).returncode == 0
    assert (xdg / "tnk" / "sandbox.d" / "manifests" / "pi.yaml").is_file()
    result = tnk.run("config", "show", env=env)
    assert str(xdg / "tnk" / "tnk.toml") in result.stdout.splitlines()[0]


def test_relative_xdg_config_home_is_ignored(tnk):
    doc = tnk.json("config", "show", "-o", "json", env={"XDG_CONFIG_HOME": "relative/dir"})
    assert doc["file"] == str(tnk.home / ".config" / "tnk" / "tnk.toml")


def test_xdg_state_home_is_honoured(tnk, tmp_path):
    xdg = tmp_path / "xdg-state"
    env = {"XDG_STATE_HOME": str(xdg)}
    write_record(tnk, "tnk-demo", tnk.project("demo"), state_dir=xdg / "tnk")
    assert tnk.run("sandbox", "ls", "-q", env=env).stdout == "tnk-demo\n"
    assert tnk.run("sandbox", "ls", "-q").stdout == ""
    settings = tnk.json("config", "show", "-o", "json", env=env)["settings"]
    assert settings["audit_dir"]["path"] == str(xdg / "tnk" / "audit")
    assert not tnk.state_dir.exists()


def test_bare_tnk_before_and_after_init(tnk):
    result = tnk.run()
    assert result.returncode == OK, result.stderr
    assert result.stdout.startswith("tnk: not configured (run `tnk init`)")
    assert "sandboxes  none" in result.stdout
    assert tnk.json("-o", "json")["configured"] is False
    assert tnk.run("init").returncode == 0
    assert tnk.run().stdout.startswith("tnk: configured")
    assert tnk.json("-o", "json")["configured"] is True


def test_bare_tnk_lists_sandboxes(initialized):
    tnk = initialized
    write_record(tnk, "tnk-demo", tnk.home / "code" / "demo")
    doc = tnk.json("-o", "json")
    assert [s["name"] for s in doc["sandboxes"]] == ["tnk-demo"]
    result = tnk.run()
    assert "NAME" in result.stdout and "tnk-demo" in result.stdout


def test_doctor_fails_without_specs_and_passes_after_init(tnk):
    result = tnk.run("doctor")
    assert result.returncode == FAILED
    assert "FAIL  specs" in result.stdout and "fix: tnk init\n" in result.stdout
    doc = json.loads(tnk.run("doctor", "-o", "json").stdout)
    assert doc["ok"] is False
    specs = next(c for c in doc["checks"] if c["id"] == "specs")
    assert specs["status"] == "fail" and specs["required"] is True and specs["fix"] == "run `tnk init`"
    assert tnk.run("init").returncode == 0
    result = tnk.run("doctor")
    assert result.returncode == OK, result.stdout
    assert "doctor: all required checks passed" in result.stdout


def test_doctor_reports_a_bad_workspace_root(initialized):
    tnk = initialized
    result = tnk.run("doctor", "-o", "json", env={"TNK_WORKSPACE_ROOT": str(tnk.home)})
    assert result.returncode == FAILED
    check = next(c for c in json.loads(result.stdout)["checks"] if c["id"] == "workspace_root")
    assert check["status"] == "fail" and "security violation" in check["summary"]
