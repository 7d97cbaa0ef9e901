"""Exit codes and error messages: usage errors are 64 and printed once with a hint; help and version go
to stdout; commands that need a backend fail plainly; stop/delete with nothing to do; corrupt records."""
import json

import pytest

from e2e_util import FAILED, NOT_FOUND, OK, PERMISSION, USAGE, assert_error, lines_with, write_record

# (argv, a piece of the error message); run inside ~/code/demo with the bundled specs installed.
USAGE_ERRORS = [
    (["--bogus"], "--bogus"),
    (["bogus"], "bogus"),
    (["sandbox", "bogus"], "bogus"),
    (["sandbox", "ls", "--bogus"], "--bogus"),
    (["sandbox", "stop", "--all", "--name", "tnk-x"], "--all cannot be combined with --name"),
    (["-o", "xml"], "xml"),
    (["sandbox", "ls", "-o", "xml"], "xml"),
    (["sandbox", "stop", "--name", "bad"], "must start with 'tnk-'"),
    (["sandbox", "stop", "--name", "tnk-../x"], "invalid sandbox name"),
    (["sandbox", "shell", "--no-tty", "-e", "1X=y"], "1X"),
    (["sandbox", "shell", "--no-tty", "-e", "TNK_X=y"], "TNK_X"),
    (["sandbox", "shell", "--no-tty", "-e", "NOVALUE"], None),
    (["sandbox", "exec", "-e", "TNK_MODEL_NAME=x", "--", "true"], "TNK_MODEL_NAME"),
    (["sandbox", "exec"], "needs the program to run"),
    (["sandbox", "exec", "--"], "needs the program to run"),
    (["sandbox", "start", "--shell"], "--shell requires an interactive terminal"),
    (["sandbox", "shell"], "interactive terminal"),
    (["completion", "powershell"], "powershell"),
    (["completion"], None),
    (["audit", "verify"], None),
]


@pytest.mark.parametrize("argv, message", USAGE_ERRORS, ids=[" ".join(a) or "-" for a, _ in USAGE_ERRORS])
def test_usage_errors_exit_64(initialized, argv, message):
    tnk = initialized
    result = tnk.run(*argv, cwd=tnk.home / "code" / "demo")
    assert_error(result, USAGE, message)
    assert result.stdout == ""


def test_env_error_never_echoes_the_value(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "shell", "--no-tty", "-e", "1X=s3cret-value", cwd=tnk.home / "code" / "demo")
    assert_error(result, USAGE, "1X")
    assert "s3cret-value" not in result.stderr + result.stdout


def test_runtime_usage_error_as_json(initialized):
    tnk = initialized
    result = tnk.run("-o", "json", "sandbox", "stop", "--all", "--name", "tnk-x")
    assert result.returncode == USAGE
    assert json.loads(result.stdout) == {
        "error": {
            "kind": "usage",
            "message": "--all cannot be combined with --name",
            "hint": "use either --all or one or more --name",
            "exit_code": USAGE,
        }
    }


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["sandbox", "--help"], ["sandbox", "ls", "--help"],
                                  ["config", "show", "-h"], ["sandbox"]])
def test_bug34_help_on_stdout(tnk, argv):
    result = tnk.run(*argv)
    assert result.returncode == OK
    assert "Usage:" in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("argv", [["-V"], ["--version"], ["version"]])
def test_bug34_version_on_stdout(tnk, argv):
    result = tnk.run(*argv)
    assert result.returncode == OK
    assert result.stdout.startswith("tnk ") and len(result.stdout.splitlines()) == 1
    assert result.stderr == ""


def test_bug34_no_doubled_error_prefix(tnk):
    result = tnk.run("--bogus")
    assert "error: error:" not in result.stderr
    assert_error(result, USAGE, "--bogus")


def test_audit_verify_missing_file_is_not_found(tnk):
    result = tnk.run("audit", "verify", str(tnk.home / "missing.ndjson"))
    assert result.returncode == NOT_FOUND
    errors = lines_with(result.stderr, "error:")
    assert len(errors) == 1 and "missing.ndjson" in errors[0], result.stderr
    assert result.stdout == ""


def test_audit_verify_missing_file_has_a_hint(tnk):
    # Every error is `error: ...` followed by `hint: ...` (what to do).
    result = tnk.run("audit", "verify", str(tnk.home / "missing.ndjson"))
    assert_error(result, NOT_FOUND, "missing.ndjson", hint=True)


def test_bug30_env_keys_checked(initialized):
    # The original accepted `-e 1X=y` (breaking the session script) and let -e override TNK_* values.
    tnk = initialized
    project = tnk.home / "code" / "demo"
    assert_error(tnk.run("sandbox", "exec", "-e", "1X=y", "--", "true", cwd=project), USAGE, "1X")
    assert_error(tnk.run("sandbox", "exec", "-e", "TNK_INFERENCE_URL=x", "--", "true", cwd=project), USAGE,
                 "reserved")
    too_long = "V=" + "x" * 4097
    assert_error(tnk.run("sandbox", "shell", "--no-tty", "-e", too_long, "-c", "true", cwd=project), USAGE, "'V'")


BACKEND_COMMANDS = [
    ["sandbox", "start"],
    ["sandbox", "shell", "--no-tty", "-c", "true"],
    ["sandbox", "exec", "--", "true"],
    ["run"],
]


@pytest.mark.parametrize("argv", BACKEND_COMMANDS, ids=[" ".join(a) for a in BACKEND_COMMANDS])
def test_commands_needing_a_missing_backend_fail_plainly(initialized, argv):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    # lima needs limactl, which this Linux host lacks: every command that would start it says so.
    result = tnk.run(*argv, cwd=project, env={"TNK_BACKEND": "lima", "PATH": "/usr/bin:/bin"})
    line = assert_error(result, NOT_FOUND, "the lima backend needs limactl")
    assert "not installed" in line
    assert result.stdout == ""
    listing = tnk.run("sandbox", "ls")
    assert "no sandboxes yet" in listing.stdout + listing.stderr, "a failed start left a sandbox behind"


def test_backend_flag_names_the_missing_backend(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "start", "--backend", "lima", cwd=tnk.home / "code" / "demo",
                     env={"PATH": "/usr/bin:/bin"})
    assert_error(result, NOT_FOUND, "lima backend")


@pytest.mark.parametrize("argv", [["sandbox", "stop"], ["sandbox", "stop", "--all"], ["shutdown"]])
def test_stop_with_no_sandboxes_succeeds(initialized, argv):
    tnk = initialized
    result = tnk.run(*argv, cwd=tnk.home / "code" / "demo")
    assert result.returncode == OK, result.stderr
    assert "error" not in result.stderr


def test_stop_named_missing_sandbox_warns(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "stop", "--name", "tnk-gone")
    assert result.returncode == OK, result.stderr
    assert lines_with(result.stderr, "warning:") == ["warning: sandbox tnk-gone does not exist"]


def test_delete_yes_without_sandbox_is_info(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "delete", "--yes", cwd=tnk.home / "code" / "demo")
    assert result.returncode == OK, result.stderr
    assert lines_with(result.stderr, "info:") == ["info: sandbox tnk-demo does not exist; nothing to delete"]


def test_bug27_delete_without_yes_and_terminal_is_refused(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    record = write_record(tnk, "tnk-demo", project)
    result = tnk.run("sandbox", "delete", cwd=project, input="y\n")
    assert_error(result, PERMISSION, "refusing to delete tnk-demo")
    assert "--yes" in result.stderr
    assert record.is_file()


def test_delete_dry_run_changes_nothing(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    record = write_record(tnk, "tnk-demo", project)
    result = tnk.run("sandbox", "delete", "--dry-run", cwd=project)
    assert result.returncode == OK, result.stderr
    assert "dry run" in result.stderr and "tnk-demo" in result.stderr
    assert record.is_file()


def test_corrupt_record_is_listed_as_broken(initialized):
    tnk = initialized
    record = tnk.state_dir / "sandboxes" / "tnk-demo" / "sandbox.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"schema": 1, "id":')
    result = tnk.run("sandbox", "ls", "-o", "json")
    assert result.returncode == OK, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["name"], r["status"]) for r in rows] == [("tnk-demo", "broken")]
    warnings = lines_with(result.stderr, "warning:")
    assert len(warnings) == 1 and str(record) in warnings[0]
    text = tnk.run("sandbox", "ls")
    assert "tnk-demo" in text.stdout and "broken" in text.stdout


def test_corrupt_record_fails_inspect_naming_the_file(initialized):
    tnk = initialized
    record = tnk.state_dir / "sandboxes" / "tnk-demo" / "sandbox.json"
    record.parent.mkdir(parents=True)
    record.write_text("not json\n")
    result = tnk.run("sandbox", "inspect", cwd=tnk.home / "code" / "demo")
    line = assert_error(result, FAILED, str(record))
    assert "corrupt" in line
    assert result.stdout == ""


def test_record_from_a_newer_tnk_is_refused(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    write_record(tnk, "tnk-demo", project, schema=99)
    result = tnk.run("sandbox", "inspect", cwd=project)
    assert_error(result, FAILED, "newer tnk")
