"""A profile's agent settings (`agent_env` in its manifest) and tnk.toml's [inference] key, through the tnk
binary: `inspect` shows the settings with the token redacted, a session has the URL variables (and they are
audited; the token variables are not), and a key that cannot be read stops the start with one error naming
the key of tnk.toml (the control: the same start with the key readable succeeds). The key is never in
`inspect`, `config show`, an argument or the audit log."""
import os

import pytest

from e2e_util import NOT_FOUND, PERMISSION, assert_error
from inference_standin import StandIn
from net_harness import audit_records
from sandbox_harness import Sandbox, ns_tnk  # noqa: F401 (fixture)

pytestmark = pytest.mark.rootless_suite

KEY = "sk-gateway-e2e-51c2"
ALL_APIS = "agent_env: [openai, anthropic, ollama]\n"


def ask_for_agent_settings(tnk, text=ALL_APIS):
    manifest = tnk.config_dir / "sandbox.d" / "manifests" / "base-sandbox.yaml"
    manifest.write_text(manifest.read_text() + text)


def test_inspect_shows_the_agent_settings_with_the_token_redacted(initialized):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    before = tnk.json("sandbox", "inspect", "-o", "json", "--profile", "base", cwd=project)
    assert before["agent"] == {"apis": [], "env": {}}  # the control: a profile that asks for none
    assert "OPENAI_BASE_URL" not in before["runtime_env"]
    ask_for_agent_settings(tnk)
    doc = tnk.json("sandbox", "inspect", "-o", "json", "--profile", "base", cwd=project)
    guest = doc["runtime_env"]["TNK_INFERENCE_URL"]
    root = guest.removesuffix("/v1")
    assert doc["agent"] == {"apis": ["openai", "anthropic", "ollama"],
                            "env": {"OPENAI_BASE_URL": guest, "OPENAI_API_KEY": "<token>",
                                    "ANTHROPIC_BASE_URL": root, "ANTHROPIC_AUTH_TOKEN": "<token>",
                                    "OLLAMA_HOST": root}}
    # The URLs are handed in like the TNK_* values; the token variables are the supervisor's.
    assert doc["runtime_env"]["OPENAI_BASE_URL"] == guest
    assert "OPENAI_API_KEY" not in doc["runtime_env"]
    text = tnk.run("sandbox", "inspect", "--profile", "base", cwd=project).stdout.splitlines()
    assert "agent settings (openai, anthropic, ollama):" in text
    assert "  OPENAI_API_KEY=<token>" in text
    assert f"  ANTHROPIC_BASE_URL={root}" in text


def test_the_pi_profile_asks_for_the_openai_settings(initialized):
    doc = initialized.json("sandbox", "inspect", "-o", "json", "--profile", "pi", cwd=initialized.home / "code" / "demo")
    assert doc["agent"]["apis"] == ["openai"]
    assert doc["agent"]["env"]["OPENAI_API_KEY"] == "<token>"


def test_a_bad_agent_api_names_the_manifest_and_the_key(initialized):
    ask_for_agent_settings(initialized, "agent_env: [openai, gemini]\n")
    result = initialized.run("sandbox", "inspect", "--profile", "base", cwd=initialized.home / "code" / "demo")
    line = assert_error(result, 1, "agent_env: unknown agent API 'gemini'")
    assert "base-sandbox.yaml:" in line


def test_config_show_names_where_the_key_comes_from_never_the_key(initialized):
    tnk = initialized
    (tnk.config_dir / "tnk.toml").write_text('[inference]\napi_key_env = "LLM_KEY"\nconcurrency = 8\n'
                                             '[inference.aliases]\n"gpt-4o" = "qwen-test"\n')
    result = tnk.run("config", "show", env={"LLM_KEY": KEY})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(l.startswith("inference.api_key_env") and "LLM_KEY" in l and "(file, line 2)" in l for l in lines)
    assert any(l.startswith("inference.aliases") and "gpt-4o=qwen-test" in l for l in lines)
    doc = tnk.json("config", "show", "-o", "json", env={"LLM_KEY": KEY})
    assert doc["settings"]["inference.concurrency"]["value"] == 8
    inspect = tnk.run("sandbox", "inspect", "-o", "json", cwd=tnk.home / "code" / "demo", env={"LLM_KEY": KEY})
    assert KEY not in result.stdout + str(doc) + inspect.stdout + inspect.stderr


def write_key_file(tnk, mode):
    path = tnk.home / "llm.key"
    path.write_text(KEY + "\n")
    os.chmod(path, mode)
    (tnk.config_dir / "tnk.toml").write_text('[inference]\napi_key_file = "~/llm.key"\n')
    return path


def test_a_key_that_cannot_be_read_stops_the_start(ns_tnk):
    tnk = ns_tnk
    box = Sandbox(tnk, tnk.project("demo"))
    (tnk.config_dir / "tnk.toml").write_text('[inference]\napi_key_env = "LLM_KEY"\n')
    start = ["sandbox", "start", "--backend", "ns", "--profile", "base"]
    assert_error(box.run(*start), NOT_FOUND, "inference.api_key_env names LLM_KEY, which is not set")
    assert_error(box.run(*start, env={"LLM_KEY": ""}), NOT_FOUND, "which is empty in tnk's environment")
    path = write_key_file(tnk, 0o644)
    line = assert_error(box.run(*start), PERMISSION, "so others can read it")
    assert str(path) in line and KEY not in line
    path.unlink()
    line = assert_error(box.run(*start), NOT_FOUND, f"inference.api_key_file in {tnk.config_dir / 'tnk.toml'} names")
    assert str(path) in line
    assert not (tnk.state_dir / "sandboxes" / "tnk-demo").exists()  # nothing was made
    write_key_file(tnk, 0o600)  # the control: the same start with a key only its owner can read
    box.start()
    assert box.exec("true").returncode == 0
    (tnk.home / "llm.key").unlink()  # a running sandbox needs the key no more
    assert box.exec("true").returncode == 0


def test_a_session_has_the_agent_settings_and_the_audit_log_no_token(ns_tnk, tmp_path):
    tnk = ns_tnk
    ask_for_agent_settings(tnk)
    box = Sandbox(tnk, tnk.project("demo"))
    log = tmp_path / "audit.ndjson"
    box.start()
    ran = box.exec("env", audit=log)
    assert ran.returncode == 0, ran.stderr
    env = dict(line.split("=", 1) for line in ran.stdout.splitlines() if "=" in line)
    guest = env["TNK_INFERENCE_URL"]
    assert env["OPENAI_BASE_URL"] == guest
    assert env["ANTHROPIC_BASE_URL"] == guest.removesuffix("/v1")
    assert env["OLLAMA_HOST"] == guest.removesuffix("/v1")
    assert env["OPENAI_API_KEY"] == env["TNK_INFERENCE_TOKEN"] != ""
    assert env["ANTHROPIC_AUTH_TOKEN"] == env["TNK_INFERENCE_TOKEN"]
    mine = box.exec("sh", "-c", 'echo "$OPENAI_API_KEY $OPENAI_BASE_URL"',
                    env_flags=["OPENAI_API_KEY=mine", "OPENAI_BASE_URL=http://x/v1"])
    assert mine.stdout.strip() == "mine http://x/v1"  # -e wins, as for any variable that is not TNK_*
    started = audit_records(log, "session_start")
    assert started and started[-1]["runtime_env"]["OPENAI_BASE_URL"] == guest
    assert env["TNK_INFERENCE_TOKEN"] not in log.read_text()


def test_the_key_of_tnk_toml_reaches_the_server_and_the_session_only_its_token(ns_tnk):
    # The whole way: tnk.toml names the key's file, the start hands it to the gateway, an agent that uses
    # only the agent settings (OPENAI_BASE_URL, OPENAI_API_KEY = its token) gets an answer, and the server
    # sees the key, which the session never had. The control: the same request without the token is refused.
    tnk = ns_tnk
    ask_for_agent_settings(tnk, "agent_env: [openai]\n")
    write_key_file(tnk, 0o600)
    with StandIn(key=KEY) as server:
        box = Sandbox(tnk, tnk.project("demo"))
        tnk.env["TNK_SERVER_PORT"] = str(server.port)
        box.start()
        curl = 'curl -sS --max-time 10 -o /dev/null -w "%{http_code}" '
        with_token = box.exec("sh", "-c", curl + '-H "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/models"')
        without = box.exec("sh", "-c", curl + '"$OPENAI_BASE_URL/models"')
        inside = box.exec("env").stdout
    assert with_token.stdout == "200", with_token.stdout + with_token.stderr
    assert without.stdout == "401", without.stdout + without.stderr
    assert ("/v1/models", f"Bearer {KEY}") in server.seen
    assert KEY not in inside
