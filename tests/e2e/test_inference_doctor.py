"""`tnk doctor`'s checks of the inference endpoint against stand-in servers: each known mistake (a server
on every interface, no model loaded, a context window smaller than the profile needs, a key the server
refuses, a key it wants that tnk.toml does not name) is reported with its fix, and a well-configured
server passes every one of them (the control). The key is never printed."""
import json

import pytest

from inference_standin import StandIn

pytestmark = pytest.mark.rootless_suite

KEY = "sk-doctor-e2e-7f3a"


def endpoint_checks(tnk, port, env=None):
    result = tnk.run("doctor", "-o", "json", env={"TNK_SERVER_PORT": str(port), **(env or {})})
    doc = json.loads(result.stdout)
    checks = {c["id"]: c for c in doc["checks"] if c["id"].startswith("inference_")}
    assert set(checks) == {"inference_bind", "inference_models", "inference_context", "inference_key"}, checks
    assert KEY not in result.stdout + result.stderr
    return result, checks


def need_context(tnk, tokens):
    manifest = tnk.config_dir / "sandbox.d" / "manifests" / "pi.yaml"
    manifest.write_text(manifest.read_text() + f"min_context_window: {tokens}\n")


def use_key(tnk):
    (tnk.config_dir / "tnk.toml").write_text('[inference]\napi_key_env = "LLM_KEY"\n')


def test_a_well_configured_server_passes_every_endpoint_check(initialized):
    tnk = initialized
    need_context(tnk, 16384)
    use_key(tnk)
    with StandIn(context_window=32768, key=KEY) as server:
        result, checks = endpoint_checks(tnk, server.port, env={"LLM_KEY": KEY})
        text = tnk.run("doctor", env={"TNK_SERVER_PORT": str(server.port), "LLM_KEY": KEY}).stdout
    assert {c["status"] for c in checks.values()} == {"ok"}, checks
    assert checks["inference_bind"]["summary"] == f"listens on 127.0.0.1:{server.port} only"
    assert checks["inference_key"]["summary"] == "the server accepts the key from env LLM_KEY"
    assert "32768 tokens; profile pi needs at least 16384" in checks["inference_context"]["summary"]
    assert ("/v1/models", f"Bearer {KEY}") in server.seen
    assert "inference endpoint: API key: the server accepts the key from env LLM_KEY" in text
    assert KEY not in text


def test_a_server_on_every_interface_is_reported_with_the_fix(initialized):
    with StandIn(host="0.0.0.0") as server:
        _, checks = endpoint_checks(initialized, server.port)
    bind = checks["inference_bind"]
    assert bind["status"] == "warn"
    assert f"0.0.0.0:{server.port} (every interface)" in bind["summary"]
    assert bind["fix_command"] == "llama-server --host 127.0.0.1"
    assert "OLLAMA_HOST=127.0.0.1:11434" in bind["fix"]


def test_a_server_without_a_model_is_reported(initialized):
    with StandIn(models=()) as server:
        _, checks = endpoint_checks(initialized, server.port)
    assert checks["inference_models"]["status"] == "warn"
    assert "lists no model" in checks["inference_models"]["summary"]
    assert checks["inference_models"]["fix_command"] == "llama-server -m MODEL.gguf"


def test_a_context_window_smaller_than_the_profile_needs_is_reported(initialized):
    need_context(initialized, 65536)
    with StandIn(context_window=8192) as server:
        _, checks = endpoint_checks(initialized, server.port)
    context = checks["inference_context"]
    assert context["status"] == "warn"
    assert context["summary"] == ("the server reports a context window of 8192 tokens; profile pi needs at least "
                                  "65536 tokens (min_context_window)")
    assert context["fix_command"] == "llama-server -c 65536"


def test_a_key_the_server_refuses_fails_doctor(initialized):
    use_key(initialized)
    with StandIn(key=KEY) as server:
        result, checks = endpoint_checks(initialized, server.port, env={"LLM_KEY": "sk-not-the-one"})
    assert result.returncode == 1
    assert checks["inference_key"]["status"] == "fail"
    assert checks["inference_key"]["required"] is True
    assert "the server refuses the key from env LLM_KEY" in checks["inference_key"]["summary"]
    assert "HTTP 401" in checks["inference_key"]["summary"]
    assert "sk-not-the-one" not in result.stdout


def test_a_server_that_wants_a_key_says_which_key_to_set(initialized):
    with StandIn(key=KEY) as server:
        result, checks = endpoint_checks(initialized, server.port)
    key = checks["inference_key"]
    assert key["status"] == "warn"
    assert "without an API key, and tnk.toml names none" in key["summary"]
    assert 'api_key_env = "NAME" under [inference]' in key["fix"]
    assert ("/v1/models", "") in server.seen  # asked without a key


def test_a_key_variable_that_is_unset_fails_doctor_with_the_starts_message(initialized):
    use_key(initialized)
    with StandIn() as server:
        result, checks = endpoint_checks(initialized, server.port)
    assert result.returncode == 1
    assert checks["inference_key"]["status"] == "fail"
    assert checks["inference_key"]["summary"] == \
        "inference.api_key_env names LLM_KEY, which is not set in tnk's environment"
