"""`tnk config init` and `tnk config show`: file modes, keeping and rewriting the file, values and
their sources (default, file with line, env), errors with positions, env warnings printed once."""
import re
import stat
import subprocess

from conftest import TNK_BIN

from e2e_util import FAILED, lines_with

SETTING_KEYS = {
    "server_port", "workspace_root", "model_dir", "default_provision_profile", "default_engine_runtime",
    "default_engine_preset", "default_engine_bind_host", "default_backend", "inference_url", "model_name",
    "context_window", "default_network", "allow_unlimited", "sandbox.cpus", "sandbox.memory", "sandbox.disk", "audit", "audit_dir",
    "inference.api_key_env", "inference.api_key_file", "inference.concurrency", "inference.request_limit",
    "inference.answer_limit", "inference.aliases", "k8s.context", "k8s.kubeconfig", "k8s.namespace",
    "k8s.runtime_class", "k8s.storage_class", "k8s.image_registry", "k8s.warm_pool", "k8s.allow_runc",
}


def show(tnk, **kwargs):
    return tnk.json("config", "show", "-o", "json", **kwargs)


def text_row(stdout, key):
    rows = [line for line in stdout.splitlines() if line.split(" ", 1)[0] == key]
    assert len(rows) == 1, f"no single row for {key}:\n{stdout}"
    return rows[0]


def test_config_init_creates_private_file(tnk):
    result = tnk.run("config", "init")
    assert result.returncode == 0, result.stderr
    toml = tnk.config_dir / "tnk.toml"
    assert f"created {toml}" in result.stderr
    assert stat.S_IMODE(toml.stat().st_mode) == 0o600
    assert stat.S_IMODE(tnk.config_dir.stat().st_mode) == 0o700
    assert "server_port = 8080" in toml.read_text()


def test_config_init_modes_whatever_the_umask(tnk):
    tnk.config_dir.mkdir(parents=True, mode=0o755)
    tnk.config_dir.chmod(0o755)
    result = subprocess.run(["sh", "-c", 'umask 000; exec "$0" config init', TNK_BIN], env=tnk.env,
                            cwd=tnk.home, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((tnk.config_dir / "tnk.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE(tnk.config_dir.stat().st_mode) == 0o700


def test_config_init_keeps_existing_file(tnk):
    assert tnk.run("config", "init").returncode == 0
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text(toml.read_text() + "# my own line\n")
    result = tnk.run("config", "init")
    assert result.returncode == 0, result.stderr
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert toml.read_text().endswith("# my own line\n")
    assert tnk.json("config", "init", "-o", "json") == {"path": str(toml), "written": False}


def test_config_init_force_rewrites(tnk):
    assert tnk.run("config", "init").returncode == 0
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text("server_port = 1\n")
    toml.chmod(0o644)
    result = tnk.run("config", "init", "--force")
    assert result.returncode == 0, result.stderr
    assert "server_port = 8080" in toml.read_text()
    assert stat.S_IMODE(toml.stat().st_mode) == 0o600


def test_config_init_template_gives_the_defaults(tnk):
    no_file = show(tnk)
    assert tnk.run("config", "init").returncode == 0
    result = tnk.run("config", "show", "-o", "json")
    assert result.returncode == 0
    assert "warning" not in result.stderr, result.stderr
    with_file = show(tnk)
    assert with_file["file_exists"] is True
    for key in SETTING_KEYS:
        assert with_file["settings"][key]["value"] == no_file["settings"][key]["value"], key


def test_config_show_defaults(tnk):
    doc = show(tnk)
    assert doc["file"] == str(tnk.config_dir / "tnk.toml")
    assert doc["file_exists"] is False
    assert set(doc["settings"]) == SETTING_KEYS
    root = doc["settings"]["workspace_root"]
    assert root == {"value": "~/code", "path": str(tnk.home / "code"), "source": "default"}
    assert doc["settings"]["default_provision_profile"] == {"value": "pi", "source": "default"}
    assert doc["settings"]["inference_url"] == {"value": None, "source": "default"}
    result = tnk.run("config", "show")
    assert result.returncode == 0
    assert f"{tnk.config_dir / 'tnk.toml'} (not found)" in result.stdout
    assert text_row(result.stdout, "workspace_root").endswith("(default)")
    assert str(tnk.home / "code") in text_row(result.stdout, "workspace_root")


def test_config_show_env_source(tnk):
    doc = show(tnk, env={"TNK_SERVER_PORT": "1234"})
    assert doc["settings"]["server_port"] == {"value": 1234, "source": "env", "env": "TNK_SERVER_PORT"}
    result = tnk.run("config", "show", env={"TNK_SERVER_PORT": "1234"})
    assert re.fullmatch(r"server_port +1234 +\(env TNK_SERVER_PORT\)", text_row(result.stdout, "server_port"))


def test_config_show_file_source_with_line(tnk):
    tnk.config_dir.mkdir(parents=True)
    (tnk.config_dir / "tnk.toml").write_text('# comment\n\nmodel_name = "qwen"\n[sandbox]\ncpus = 3\n')
    doc = show(tnk)
    assert doc["file_exists"] is True
    assert doc["settings"]["model_name"] == {"value": "qwen", "source": "file", "line": 3}
    assert doc["settings"]["sandbox.cpus"] == {"value": 3, "source": "file", "line": 5}
    result = tnk.run("config", "show")
    assert re.fullmatch(r"model_name +qwen +\(file, line 3\)", text_row(result.stdout, "model_name"))


def test_env_overrides_file(tnk):
    tnk.config_dir.mkdir(parents=True)
    (tnk.config_dir / "tnk.toml").write_text("server_port = 8081\n")
    assert show(tnk, env={"TNK_SERVER_PORT": "1234"})["settings"]["server_port"]["source"] == "env"
    env = dict(tnk.env)
    del env["TNK_SERVER_PORT"]
    tnk.env = env
    assert show(tnk)["settings"]["server_port"] == {"value": 8081, "source": "file", "line": 1}


def test_bug36_tilde_user_path_left_as_written(tnk):
    tnk.config_dir.mkdir(parents=True)
    (tnk.config_dir / "tnk.toml").write_text('model_dir = "~foo/models"\nworkspace_root = "${HOME}/src"\n')
    settings = show(tnk)["settings"]
    assert settings["model_dir"]["path"] == "~foo/models"
    assert settings["workspace_root"]["path"] == str(tnk.home / "src")


def test_config_syntax_error_names_file_line_column(tnk):
    tnk.config_dir.mkdir(parents=True)
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text("server_port = 8080\nworkspace_root = \n")
    result = tnk.run("config", "show")
    assert result.returncode == FAILED
    assert result.stdout == ""
    errors = lines_with(result.stderr, "error:")
    assert len(errors) == 1, result.stderr
    assert re.search(re.escape(str(toml)) + r":2:\d+", errors[0]), errors[0]
    assert lines_with(result.stderr, "hint:"), result.stderr


def test_config_type_error_names_file_line_column(tnk):
    tnk.config_dir.mkdir(parents=True)
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text('\nserver_port = "x"\n')
    result = tnk.run("sandbox", "inspect", cwd=tnk.project("demo"))
    assert result.returncode == FAILED
    assert f"error: {toml}:2:15: key 'server_port' must be" in result.stderr


def test_version_works_with_a_broken_config(tnk):
    tnk.config_dir.mkdir(parents=True)
    (tnk.config_dir / "tnk.toml").write_text("server_port = \n")
    result = tnk.run("version")
    assert result.returncode == 0 and result.stdout.startswith("tnk ")


def test_unknown_key_is_one_warning_with_line(tnk):
    tnk.config_dir.mkdir(parents=True)
    toml = tnk.config_dir / "tnk.toml"
    toml.write_text("server_port = 9\nservices_auto_start = true\n")
    result = tnk.run("sandbox", "inspect", cwd=tnk.project("demo"))
    assert result.returncode == 0, result.stderr
    assert lines_with(result.stderr, "warning:") == [f"warning: {toml}:2: unknown key 'services_auto_start' (ignored)"]


def test_invalid_server_port_env_warns_once_and_command_works(initialized):
    tnk = initialized
    (tnk.config_dir / "tnk.toml").write_text("server_port = 9\n")  # the fallback: nothing listens there
    project = tnk.project("demo")
    for args in (("sandbox", "inspect"), ("doctor",), ("config", "show"), ()):
        result = tnk.run(*args, cwd=project, env={"TNK_SERVER_PORT": "80x"})
        assert result.returncode == 0, f"tnk {' '.join(args)}: {result.stderr}"
        warnings = lines_with(result.stderr, "warning:")
        assert warnings == ["warning: invalid TNK_SERVER_PORT='80x'; ignoring env override"], (args, result.stderr)
    doc = show(tnk, env={"TNK_SERVER_PORT": "80x"})
    assert doc["settings"]["server_port"] == {"value": 9, "source": "file", "line": 1}


def test_bug35_default_settings_info_printed_once(tnk):
    project = tnk.project("demo")
    for args in (("sandbox", "inspect"), ("doctor",), ()):
        result = tnk.run(*args, cwd=project)
        infos = [line for line in result.stderr.splitlines() if "using default settings" in line]
        assert len(infos) == 1, (args, result.stderr)
