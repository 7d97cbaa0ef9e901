"""`tnk sandbox inspect`: project and sandbox id from the cwd, nested directories, naming, profiles,
and the workspace-root errors (outside, at the root, root = HOME, missing root)."""
import json
import re

import pytest

from e2e_util import NOT_FOUND, USAGE, assert_error, lines_with, write_record


def inspect_json(tnk, cwd, *args, env=None):
    return tnk.json("sandbox", "inspect", "-o", "json", *args, cwd=cwd, env=env)


def text_value(stdout, key):
    """The value of a `key  value` row of `sandbox inspect`'s text output."""
    for line in stdout.splitlines():
        match = re.fullmatch(re.escape(key) + r" {2,}(.*)", line)
        if match:
            return match.group(1)
    raise AssertionError(f"no row {key!r} in:\n{stdout}")


def test_inspect_text_from_project_dir(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "inspect", cwd=tnk.home / "code" / "demo")
    assert result.returncode == 0, result.stderr
    assert text_value(result.stdout, "sandbox") == "tnk-demo"
    assert text_value(result.stdout, "state") == "absent"
    assert text_value(result.stdout, "project") == str(tnk.home / "code" / "demo")
    assert text_value(result.stdout, "profile") == "pi (config)"
    assert text_value(result.stdout, "manifest") == str(tnk.config_dir / "sandbox.d" / "manifests" / "pi.yaml")
    assert text_value(result.stdout, "mount") == "/workspace"
    assert text_value(result.stdout, "workdir") == "/workspace"
    assert "runtime environment:" in result.stdout
    assert "  TNK_WORKSPACE_MOUNT=/workspace" in result.stdout.splitlines()
    # diagnostics stay on stderr: stdout is the report only
    assert "note:" not in result.stdout and "info:" not in result.stdout


def test_inspect_json_from_project_dir(initialized):
    tnk = initialized
    doc = inspect_json(tnk, tnk.home / "code" / "demo")
    assert doc["id"] == "tnk-demo"
    assert doc["project"] == {
        "name": "demo",
        "dir": str(tnk.home / "code" / "demo"),
        "workspace_root": str(tnk.home / "code"),
    }
    assert doc["profile"] == {"name": "pi", "source": "config"}
    assert doc["mount"] == "/workspace" and doc["workdir"] == "/workspace"
    assert doc["state"] == "absent"
    assert doc["runtime_env"]["TNK_WORKSPACE_MOUNT"] == "/workspace"


def test_inspect_from_nested_subdirectory(initialized):
    tnk = initialized
    nested = tnk.home / "code" / "demo" / "sub" / "dir"
    nested.mkdir(parents=True)
    top = inspect_json(tnk, tnk.home / "code" / "demo")
    deep = inspect_json(tnk, nested)
    assert deep["id"] == top["id"] == "tnk-demo"
    assert deep["project"] == top["project"]
    assert deep["workdir"] == "/workspace/sub/dir"
    result = tnk.run("sandbox", "inspect", cwd=nested)
    assert text_value(result.stdout, "sandbox") == "tnk-demo"
    assert text_value(result.stdout, "workdir") == "/workspace/sub/dir"


@pytest.mark.parametrize(
    "project, sandbox_id",
    [("homepage", "tnk-homepage"), ("my.proj", "tnk-myproj-9ea8785c"), ("a b", "tnk-ab-04833892")],
)
def test_naming_through_inspect(tnk, project, sandbox_id):
    doc = inspect_json(tnk, tnk.project(project))
    assert doc["id"] == sandbox_id
    assert doc["project"]["name"] == project


def test_outside_workspace_root(tnk):
    result = tnk.run("sandbox", "inspect", cwd=tnk.home)
    assert_error(result, USAGE, "current directory is outside the configured workspace root")
    assert result.stdout == ""


def test_outside_workspace_root_json(tnk):
    result = tnk.run("sandbox", "inspect", "-o", "json", cwd=tnk.home)
    assert result.returncode == USAGE
    doc = json.loads(result.stdout)
    assert set(doc) == {"error"}
    error = doc["error"]
    assert error["kind"] == "usage"
    assert error["exit_code"] == USAGE
    assert "current directory is outside the configured workspace root" in error["message"]
    assert error["hint"] and "cd into a project" in error["hint"]


def test_at_workspace_root(tnk):
    result = tnk.run("sandbox", "inspect", cwd=tnk.home / "code")
    assert_error(result, USAGE, "navigate into a project directory first")


def test_workspace_root_is_home_is_refused(tnk):
    project = tnk.home / "proj"
    project.mkdir()
    result = tnk.run("sandbox", "inspect", cwd=project, env={"TNK_WORKSPACE_ROOT": str(tnk.home)})
    assert_error(result, USAGE, "security violation")
    tnk.config_dir.mkdir(parents=True)
    (tnk.config_dir / "tnk.toml").write_text('workspace_root = "~"\n')
    assert_error(tnk.run("sandbox", "inspect", cwd=project), USAGE, "security violation")


def test_missing_workspace_root(tnk):
    missing = tnk.home / "nope"
    result = tnk.run("sandbox", "inspect", cwd=tnk.home, env={"TNK_WORKSPACE_ROOT": str(missing)})
    assert_error(result, NOT_FOUND, f"workspace root '{missing}' does not exist")
    result = tnk.run("sandbox", "inspect", "-o", "json", cwd=tnk.home, env={"TNK_WORKSPACE_ROOT": str(missing)})
    assert json.loads(result.stdout)["error"]["exit_code"] == NOT_FOUND


def test_bug33_exit_code_not_chosen_by_message_text(tnk):
    # The original picked 77 for any error whose text contained "permission denied".
    missing = tnk.home / "permission denied"
    result = tnk.run("sandbox", "inspect", cwd=tnk.home, env={"TNK_WORKSPACE_ROOT": str(missing)})
    assert_error(result, NOT_FOUND, "permission denied")


def test_bug17_default_workspace_root_is_code(tnk):
    doc = inspect_json(tnk, tnk.project("demo"))
    assert doc["project"]["workspace_root"] == str(tnk.home / "code")


def test_bug31_symlinked_workspace_root_keeps_workdir(initialized):
    tnk = initialized
    (tnk.home / "link").symlink_to(tnk.home / "code")
    nested = tnk.home / "code" / "demo" / "sub"
    nested.mkdir()
    doc = inspect_json(tnk, tnk.home / "link" / "demo" / "sub", env={"TNK_WORKSPACE_ROOT": str(tnk.home / "link")})
    assert doc["id"] == "tnk-demo"
    assert doc["workdir"] == "/workspace/sub"


def test_bug8_profile_path_traversal_refused(initialized):
    tnk = initialized
    # what `--profile ../../x` would read if the name reached a path: <config>/x.yaml
    (tnk.config_dir / "x.yaml").write_text("profile: x\nmounts:\n  workspace: /stolen\n")
    result = tnk.run("sandbox", "inspect", "--profile", "../../x", cwd=tnk.home / "code" / "demo")
    assert_error(result, USAGE, "invalid profile name '../../x'")
    assert result.stdout == ""


def test_unknown_profile_lists_available_ones(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "inspect", "--profile", "nope", cwd=tnk.home / "code" / "demo")
    assert_error(result, NOT_FOUND, "unknown profile 'nope'")
    assert "hint: available profiles: base, dev, pi" in result.stderr


def test_inspect_with_profile_dev(initialized):
    tnk = initialized
    doc = inspect_json(tnk, tnk.home / "code" / "demo", "--profile", "dev")
    assert doc["profile"] == {"name": "dev", "source": "--profile"}
    assert doc["manifest"] == str(tnk.config_dir / "sandbox.d" / "manifests" / "dev.yaml")
    assert doc["provision_script"] == str(tnk.config_dir / "sandbox.d" / "provision.d" / "dev.sh")
    result = tnk.run("sandbox", "inspect", "--profile", "dev", cwd=tnk.home / "code" / "demo")
    assert text_value(result.stdout, "profile") == "dev (--profile)"
    assert text_value(result.stdout, "manifest").endswith("/manifests/dev.yaml")


def test_default_profile_falls_back_to_base_without_specs(tnk):
    result = tnk.run("sandbox", "inspect", "-o", "json", cwd=tnk.project("demo"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["profile"] == {"name": "base", "source": "fallback"}
    assert doc["manifest"] is None
    assert any("default profile 'pi' is not installed" in line for line in lines_with(result.stderr, "note:"))


def test_inspect_existing_sandbox_uses_its_record(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    write_record(tnk, "tnk-demo", project, profile="dev", backend="ns")
    doc = inspect_json(tnk, project)
    assert doc["profile"] == {"name": "dev", "source": "sandbox record"}
    assert doc["backend"]["name"] == "ns" and doc["backend"]["source"] == "sandbox record"
    assert doc["state"] != "absent"


def test_unknown_backend_is_usage_error(initialized):
    tnk = initialized
    result = tnk.run("sandbox", "inspect", "--backend", "docker", cwd=tnk.home / "code" / "demo")
    assert_error(result, USAGE, "unknown backend 'docker'")


def test_workspace_root_must_be_a_subdirectory_of_home(tnk, tmp_path):
    project = tnk.project("demo")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cases = [
        (str(tmp_path), "contains the home directory"),  # a parent of HOME
        (str(outside), "workspace root must be inside '$HOME'"),
        ("/", "workspace root cannot be '/'"),
    ]
    for root, message in cases:
        result = tnk.run("sandbox", "inspect", cwd=project, env={"TNK_WORKSPACE_ROOT": root})
        assert_error(result, USAGE, message)


def test_backend_flag_conflicting_with_the_record(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    write_record(tnk, "tnk-demo", project, backend="ns")
    result = tnk.run("sandbox", "inspect", "--backend", "vm", cwd=project)
    assert_error(result, USAGE, "was created with the 'ns' backend")


def test_bug5_tnks_own_directories_are_never_a_project(tnk):
    # The original made `tnk-config` of ~/.config/tnk and shared it read-write, so the sandbox could
    # rewrite its own profiles. Here a project that is, holds or lies in tnk's config, state or cache
    # directory is refused; a sibling project below the same workspace root is not.
    home = tnk.home
    cases = [  # (workspace root, project, environment, tnk's directory it overlaps)
        (home / ".config", home / ".config" / "tnk", {}, home / ".config" / "tnk"),
        (home / ".local", home / ".local" / "state", {}, home / ".local" / "state" / "tnk"),
        (home / ".cache", home / ".cache" / "tnk" / "images", {}, home / ".cache" / "tnk"),
        (home / "code", home / "code" / "xdg", {"XDG_CONFIG_HOME": str(home / "code" / "xdg")},
         home / "code" / "xdg" / "tnk"),
    ]
    for root, project, env, own in cases:
        project.mkdir(parents=True, exist_ok=True)
        sibling = root / "sibling-project"
        sibling.mkdir(parents=True, exist_ok=True)
        env = {"TNK_WORKSPACE_ROOT": str(root), **env}
        result = tnk.run("sandbox", "inspect", cwd=project, env=env)
        assert_error(result, USAGE, f"overlaps tnk's own directory {own}")
        assert "keep workspace_root apart" in result.stderr
        allowed = tnk.run("sandbox", "inspect", cwd=sibling, env=env)
        assert allowed.returncode == 0, allowed.stderr
