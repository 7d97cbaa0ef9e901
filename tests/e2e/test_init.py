"""`tnk init`: installing the specs (bundled, from a directory, from git), refusing a second install,
--force refreshing them while keeping tnk.toml."""
import json
import shutil
import stat
import subprocess

from conftest import require
from e2e_util import NOT_FOUND, USAGE, assert_error


def make_specs(root, profile="custom", script="echo provisioning\n"):
    """A minimal specs tree: one manifest and one provision script."""
    (root / "sandbox.d" / "manifests").mkdir(parents=True)
    (root / "sandbox.d" / "provision.d").mkdir(parents=True)
    (root / "sandbox.d" / "manifests" / f"{profile}.yaml").write_text(
        f"profile: {profile}\nmounts:\n  workspace: /work\n"
    )
    (root / "sandbox.d" / "provision.d" / f"{profile}.sh").write_text("#!/bin/sh\n" + script)
    return root


def specs_rev(tnk, cwd):
    return tnk.json("sandbox", "inspect", "-o", "json", cwd=cwd)["runtime_env"]["TNK_SPECS_REV"]


def test_init_installs_bundled_specs(tnk):
    result = tnk.run("init")
    assert result.returncode == 0, result.stderr
    assert f"installed specs into {tnk.config_dir}" in result.stdout
    manifests = tnk.config_dir / "sandbox.d" / "manifests"
    for name in ("base-sandbox.yaml", "dev.yaml", "pi.yaml"):
        assert (manifests / name).is_file(), name
    assert (tnk.config_dir / "sandbox.d" / "provision.d" / "pi.sh").is_file()
    assert (tnk.config_dir / "provider.d").is_dir()
    # a commented tnk.toml is written when there is none, private like `config init`'s
    assert stat.S_IMODE((tnk.config_dir / "tnk.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE(tnk.config_dir.stat().st_mode) == 0o700


def test_init_json_document(tnk):
    doc = tnk.json("init", "-o", "json")
    assert doc["config_dir"] == str(tnk.config_dir)
    assert doc["source"].startswith("bundled specs")
    assert "sandbox.d" in doc["installed"]
    assert doc["revision"].startswith("sha256:")
    assert doc["config_created"] is True


def test_init_from_local_directory(tnk, tmp_path):
    source = make_specs(tmp_path / "myspecs")
    result = tnk.run("init", "--git-url", str(source))
    assert result.returncode == 0, result.stderr
    assert f"directory {source}" in result.stderr
    assert (tnk.config_dir / "sandbox.d" / "manifests" / "custom.yaml").is_file()
    assert (tnk.config_dir / ".specs-rev").read_text().strip() == "local"
    # the profile from that directory is the one inspect uses
    project = tnk.project("demo")
    doc = tnk.json("sandbox", "inspect", "--profile", "custom", "-o", "json", cwd=project)
    assert doc["manifest"] == str(tnk.config_dir / "sandbox.d" / "manifests" / "custom.yaml")
    assert doc["mount"] == "/work"
    assert doc["provision_script"] == str(tnk.config_dir / "sandbox.d" / "provision.d" / "custom.sh")


def test_init_from_relative_directory(tnk):
    make_specs(tnk.home / "myspecs")
    result = tnk.run("init", "--git-url", "myspecs", cwd=tnk.home)
    assert result.returncode == 0, result.stderr
    assert (tnk.config_dir / "sandbox.d" / "manifests" / "custom.yaml").is_file()


def test_init_from_missing_directory_is_not_found(tnk, tmp_path):
    result = tnk.run("init", "--git-url", str(tmp_path / "nope"))
    assert_error(result, NOT_FOUND, "is not a directory")
    assert not (tnk.config_dir / "sandbox.d").exists()


def test_init_from_directory_without_specs_changes_nothing(tnk, tmp_path):
    (tmp_path / "empty").mkdir()
    result = tnk.run("init", "--git-url", str(tmp_path / "empty"))
    assert_error(result, 1, "does not look like tnk specs")
    assert not (tnk.config_dir / "sandbox.d").exists()


def test_init_from_git_repository(tnk, tmp_path):
    require(shutil.which("git"), "git is not installed")
    repo = make_specs(tmp_path / "repo")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "specs"], check=True)
    head = subprocess.run(git[:3] + ["rev-parse", "--short=7", "HEAD"], check=True, capture_output=True, text=True)
    result = tnk.run("init", "--git-url", f"file://{repo}")
    assert result.returncode == 0, result.stderr
    assert (tnk.config_dir / ".specs-rev").read_text().strip() == "git:" + head.stdout.strip()
    assert specs_rev(tnk, tnk.project("demo")) == "git:" + head.stdout.strip()


def test_bug28_second_init_refused_without_force(initialized):
    tnk = initialized
    toml = (tnk.config_dir / "tnk.toml").read_bytes()
    result = tnk.run("init")
    assert_error(result, USAGE, f"specs already installed in {tnk.config_dir}")
    assert "--force" in result.stderr
    assert result.stdout == ""
    assert (tnk.config_dir / "tnk.toml").read_bytes() == toml


def test_init_force_refreshes_specs_and_keeps_tnk_toml(initialized):
    tnk = initialized
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text('# mine\nmodel_name = "kept"\n')
    pi = tnk.config_dir / "sandbox.d" / "manifests" / "pi.yaml"
    pi.unlink()
    result = tnk.run("init", "--force")
    assert result.returncode == 0, result.stderr
    assert pi.is_file(), "--force did not restore the bundled specs"
    assert toml.read_text() == '# mine\nmodel_name = "kept"\n'
    assert tnk.json("config", "show", "-o", "json")["settings"]["model_name"]["value"] == "kept"


def test_init_force_keeps_a_copy_of_changed_specs(initialized):
    tnk = initialized
    (tnk.config_dir / "sandbox.d" / "provision.d" / "mine.sh").write_text("#!/bin/sh\n")
    result = tnk.run("init", "--force")
    assert result.returncode == 0, result.stderr
    assert not (tnk.config_dir / "sandbox.d" / "provision.d" / "mine.sh").exists()
    assert (tnk.config_dir / ".specs-old" / "sandbox.d" / "provision.d" / "mine.sh").is_file()
    assert "warning:" in result.stderr and ".specs-old" in result.stderr


def test_bug28_init_after_config_init(tnk):
    assert tnk.run("config", "init").returncode == 0
    toml = (tnk.config_dir / "tnk.toml").read_bytes()
    result = tnk.run("init")
    assert result.returncode == 0, result.stderr
    assert (tnk.config_dir / "sandbox.d" / "manifests" / "pi.yaml").is_file()
    assert (tnk.config_dir / "tnk.toml").read_bytes() == toml
    assert json.loads(tnk.run("init", "--force", "-o", "json").stdout)["config_created"] is False


def test_bug20_init_force_changes_specs_revision(tnk, tmp_path):
    source = make_specs(tmp_path / "myspecs")
    project = tnk.project("demo")
    assert tnk.run("init", "--git-url", str(source)).returncode == 0
    before = specs_rev(tnk, project)
    (source / "sandbox.d" / "provision.d" / "custom.sh").write_text("#!/bin/sh\necho changed\n")
    result = tnk.run("init", "--force", "--git-url", str(source))
    assert result.returncode == 0, result.stderr
    after = specs_rev(tnk, project)
    assert before.startswith("sha256:") and after.startswith("sha256:")
    assert before != after, "TNK_SPECS_REV did not change although the specs did"
