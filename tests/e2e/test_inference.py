"""The inference endpoint as sandbox commands see it: the model and context window the server reports,
the guest URL, `inference_url`, and a server that is down or hangs (never a stall, one note)."""
import time

from e2e_util import lines_with


def runtime_env(tnk, cwd, env=None):
    return tnk.json("sandbox", "inspect", "-o", "json", cwd=cwd, env=env)["runtime_env"]


def test_inspect_reports_the_server_model(initialized, inference_server):
    tnk = initialized
    project = tnk.home / "code" / "demo"
    env = {"TNK_SERVER_PORT": str(inference_server)}
    doc = tnk.json("sandbox", "inspect", "-o", "json", cwd=project, env=env)
    assert doc["runtime_env"]["TNK_MODEL_NAME"] == "qwen-test"
    assert doc["runtime_env"]["TNK_CTX_WINDOW"] == "16384"
    guest_url = f"http://host.lima.internal:{inference_server}/v1"
    assert doc["runtime_env"]["TNK_INFERENCE_URL"] == guest_url
    assert doc["runtime_env"]["TNK_OPENAI_URL"] == guest_url
    assert doc["inference"] == {
        "url": f"http://127.0.0.1:{inference_server}/v1",
        "model": "qwen-test",
        "model_source": "server",
        "context_window": 16384,
        "context_source": "server",
    }
    result = tnk.run("sandbox", "inspect", cwd=project, env=env)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert "  TNK_MODEL_NAME=qwen-test" in lines
    assert "  TNK_CTX_WINDOW=16384" in lines
    assert f"  TNK_INFERENCE_URL={guest_url}" in lines
    assert lines_with(result.stderr, "note:") == [], result.stderr


def test_bug21_context_window_is_not_inflated(initialized, inference_server):
    # The original told agents max(server ctx, 131072).
    tnk = initialized
    env = runtime_env(tnk, tnk.home / "code" / "demo", env={"TNK_SERVER_PORT": str(inference_server)})
    assert int(env["TNK_CTX_WINDOW"]) == 16384


def test_bug22_server_down_is_one_note_and_fast(initialized):
    tnk = initialized  # TNK_SERVER_PORT=9: nothing listens there
    start = time.monotonic()
    result = tnk.run("sandbox", "inspect", cwd=tnk.home / "code" / "demo")
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert elapsed < 2, f"took {elapsed:.1f} s"
    notes = lines_with(result.stderr, "note:")
    assert len(notes) == 1, result.stderr
    assert "http://127.0.0.1:9/v1" in notes[0]
    assert "  TNK_MODEL_NAME=default" in result.stdout.splitlines()


def test_hanging_server_times_out_quickly(initialized, silent_server):
    tnk = initialized
    start = time.monotonic()
    result = tnk.run("sandbox", "inspect", cwd=tnk.home / "code" / "demo", env={"TNK_SERVER_PORT": str(silent_server)})
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert elapsed < 2, f"took {elapsed:.1f} s"
    notes = lines_with(result.stderr, "note:")
    assert len(notes) == 1 and f"127.0.0.1:{silent_server}" in notes[0], result.stderr


def test_configured_model_and_context_when_server_down(initialized):
    tnk = initialized
    (tnk.config_dir / "tnk.toml").write_text('model_name = "my-model"\ncontext_window = 4096\n')
    env = runtime_env(tnk, tnk.home / "code" / "demo")
    assert env["TNK_MODEL_NAME"] == "my-model"
    assert env["TNK_CTX_WINDOW"] == "4096"


def test_inference_url_in_config_is_honoured(initialized, inference_server):
    tnk = initialized
    (tnk.config_dir / "tnk.toml").write_text(f'inference_url = "http://127.0.0.1:{inference_server}/v1"\n')
    doc = tnk.json("sandbox", "inspect", "-o", "json", cwd=tnk.home / "code" / "demo")
    assert doc["inference"]["url"] == f"http://127.0.0.1:{inference_server}/v1"
    assert doc["runtime_env"]["TNK_MODEL_NAME"] == "qwen-test"
    assert doc["runtime_env"]["TNK_INFERENCE_URL"] == f"http://host.lima.internal:{inference_server}/v1"


def test_inference_url_env_is_honoured(initialized, inference_server):
    tnk = initialized
    url = f"http://127.0.0.1:{inference_server}/v1"
    env = runtime_env(tnk, tnk.home / "code" / "demo", env={"TNK_INFERENCE_URL": url})
    assert env["TNK_MODEL_NAME"] == "qwen-test"
    assert env["TNK_INFERENCE_URL"] == f"http://host.lima.internal:{inference_server}/v1"


def test_status_and_doctor_report_the_server(initialized, inference_server):
    tnk = initialized
    env = {"TNK_SERVER_PORT": str(inference_server)}
    status = tnk.json("-o", "json", env=env)
    assert status["inference"] == {
        "url": f"http://127.0.0.1:{inference_server}/v1",
        "reachable": True,
        "model": "qwen-test",
        "context_window": 16384,
        "problem": None,
    }
    doctor = tnk.json("doctor", "-o", "json", env=env)
    check = next(c for c in doctor["checks"] if c["id"] == "inference")
    assert check["status"] == "ok" and "qwen-test" in check["summary"]


def test_status_and_doctor_with_server_down(initialized):
    tnk = initialized
    status = tnk.json("-o", "json")
    assert status["inference"]["reachable"] is False
    assert status["inference"]["model"] is None
    assert "refused" in status["inference"]["problem"]
    doctor = tnk.run("doctor", "-o", "json")
    assert doctor.returncode == 0, "a down inference server is not a required check"
