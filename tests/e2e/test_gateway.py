"""The inference gateway end to end (docs/inference.md), on ns and vm: a sandbox reaches a stand-in
server that requires a key, through the gateway, with only its own token; chat, streaming, embeddings
and Ollama's chat work; an alias reaches the real model; the concurrency limit answers 429; the admin
API is refused; every request is an inference_request record with its token counts; and the key is
nowhere in the sandbox, while the same search finds the token."""
import json
import secrets
import urllib.request

from net_harness import wait_for_records
from model_server import COMPLETION_TOKENS, MODEL, PROMPT_TOKENS, ModelServer
from sandbox_harness import Sandbox, any_tnk  # noqa: F401
from secret_search import compile_secret_search, find_in_sandbox

KEY = "sk-e2e/only-on-the-host+7f3a9c"  # '/': JSON may write it escaped
CURL = ["curl", "-sS", "--max-time", "60"]


def configure(tnk, port):
    config = tnk.config_dir / "tnk.toml"
    config.write_text(config.read_text() + f"""
inference_url = "http://127.0.0.1:{port}/v1"

[inference]
api_key_env = "TNK_E2E_MODEL_KEY"
concurrency = 1

[inference.aliases]
coder = "{MODEL}"
""")
    tnk.env["TNK_E2E_MODEL_KEY"] = KEY


def post(box, url, body, token=True, extra=()):
    """curl inside the sandbox, with the sandbox's token (read from the session's environment there)."""
    with_token = 'exec "$@" -H "Authorization: Bearer $TNK_INFERENCE_TOKEN"' if token else 'exec "$@"'
    return box.exec("sh", "-c", with_token, "sh", *CURL, *extra, "-H", "Content-Type: application/json",
                    "-d", json.dumps(body), url)


def test_the_gateway_adds_the_key_the_sandbox_never_sees(any_tnk, tmp_path):  # noqa: F811
    server = ModelServer(key=KEY)
    log = tmp_path / "audit.ndjson"
    try:
        configure(any_tnk, server.port)
        box = Sandbox(any_tnk, any_tnk.project("gateway"))
        compile_secret_search(box)
        box.start("--network", "inference", "--audit-log", str(log))
        base = f"http://host.lima.internal:{server.port}"

        chat = post(box, f"{base}/v1/chat/completions", {"model": MODEL, "messages": []})
        assert chat.returncode == 0 and json.loads(chat.stdout)["usage"]["completion_tokens"] == COMPLETION_TOKENS, \
            chat.stdout + chat.stderr
        streamed = post(box, f"{base}/v1/chat/completions", {"model": MODEL, "stream": True, "messages": []}, extra=["-N"])
        assert streamed.stdout.count("data: ") == 4 and streamed.stdout.endswith("data: [DONE]\n\n"), streamed.stdout
        embedded = post(box, f"{base}/v1/embeddings", {"model": MODEL, "input": "x"})
        assert json.loads(embedded.stdout)["data"][0]["embedding"] == [0.25, 0.5], embedded.stdout
        ollama = post(box, f"{base}/api/chat", {"model": MODEL, "messages": []})
        assert json.loads(ollama.stdout.splitlines()[-1])["done"] is True, ollama.stdout

        # An alias: the agent asks for "coder", the server sees its own model; /v1/models lists both.
        aliased = post(box, f"{base}/v1/chat/completions", {"model": "coder", "messages": []})
        assert json.loads(aliased.stdout)["model"] == MODEL, aliased.stdout
        assert ("POST", "/v1/chat/completions", MODEL, "Bearer " + KEY) in server.seen
        assert not any(model == "coder" for _, _, model, _ in server.seen), server.seen
        models = box.exec("sh", "-c", 'exec curl -sS -H "Authorization: Bearer $TNK_INFERENCE_TOKEN" "$0"',
                          f"{base}/v1/models")
        assert {m["id"] for m in json.loads(models.stdout)["data"]} == {MODEL, "coder"}, models.stdout

        # The pair: without the token the gateway adds no key and answers 401 itself.
        untokened = post(box, f"{base}/v1/chat/completions", {"model": MODEL}, token=False, extra=["-w", "\n%{http_code}"])
        assert untokened.stdout.endswith("\n401") and "TNK_INFERENCE_TOKEN" in untokened.stdout, untokened.stdout
        admin = post(box, f"{base}/api/pull", {"model": "evil"}, extra=["-w", "\n%{http_code}"])
        assert admin.stdout.endswith("\n403"), admin.stdout

        # Concurrency 1: one request at the server, one waiting, the third turned away at once.
        crowd = box.exec("sh", "-c", (
            'u="$0/v1/chat/completions"; h="Authorization: Bearer $TNK_INFERENCE_TOKEN"; '
            'd=\'{"model":"slow","stream":true}\'; '
            'curl -sS -N -o /dev/null -H "$h" -d "$d" "$u" & sleep 1; '
            'curl -sS -N -o /dev/null -H "$h" -d "$d" "$u" & sleep 1; '
            'curl -sS -D - -o /dev/null -H "$h" -d "$d" "$u"; wait'), base, timeout=120)
        assert "429 Too Many Requests" in crowd.stdout and "Retry-After: 1" in crowd.stdout, crowd.stdout + crowd.stderr

        # The key is in no file, no environment and no argument of any process inside; the same search
        # finds the control where it was planted, and the token (in the environment of every session).
        token = box.exec("printenv", "TNK_INFERENCE_TOKEN").stdout.strip()
        assert len(token) >= 32, token
        hits, summary = find_in_sandbox(box, "tnk-control-" + secrets.token_hex(8), [KEY, token])
        assert "/tmp/planted" in hits[0] and any(w.endswith("/environ") for w in hits[0]), (hits, summary)
        assert hits[1] == [], (hits, summary)
        assert any(w.endswith("/environ") for w in hits[2]), (hits, summary)

        records = wait_for_records(log, "inference_request", lambda rs: len(rs) >= 9, timeout=30)
        chats = [r for r in records if r["path"] == "/v1/chat/completions" and r["status"] == 200]
        assert any(r["prompt_tokens"] == PROMPT_TOKENS and r["completion_tokens"] == COMPLETION_TOKENS and r["stream"]
                   for r in chats), chats
        assert any(r["model_requested"] == "coder" and r["model_served"] == MODEL for r in chats), chats
        ndjson = [r for r in records if r["path"] == "/api/chat"]
        assert ndjson and ndjson[0]["completion_tokens"] == COMPLETION_TOKENS, ndjson
        assert {r["status"] for r in records} >= {200, 401, 429}, records
        assert all(KEY not in json.dumps(r) for r in records)
        denied = wait_for_records(log, "net_deny", lambda rs: any("/api/pull" in r["reason"] for r in rs))
        assert denied
        assert KEY not in log.read_text()
        verified = any_tnk.run("audit", "verify", str(log))
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        server.shutdown()


def direct(server, body):
    """What the stand-in answers the host itself, with the key: the bytes a gateway should pass on."""
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read().decode()


def test_issue32_r3_l1_inference_answer_that_echoes_the_key_is_masked(any_tnk):  # noqa: F811
    """Security review R3-L1: an endpoint that echoes the request's headers sends back the key the gateway
    added. The sandbox gets the echo (the control: it does come back) with the key masked: JSON-escaped
    in a whole answer, and cut across two chunks of a stream. Answers without the key pass byte for byte."""
    server = ModelServer(key=KEY)
    try:
        configure(any_tnk, server.port)
        box = Sandbox(any_tnk, any_tnk.project("echo"))
        box.start("--network", "inference")
        url = f"http://host.lima.internal:{server.port}/v1/chat/completions"
        escaped = KEY.replace("/", "\\/")
        for stream in (False, True):
            echo = post(box, url, {"model": "echo", "stream": stream, "messages": []})
            assert echo.returncode == 0, echo.stderr
            assert server.seen[-1][3] == "Bearer " + KEY  # the endpoint got the key, and echoed it
            for form in (KEY, escaped, KEY[:12], KEY[-12:]):
                assert form not in echo.stdout, (stream, form, echo.stdout)
            text = echo.stdout.split("\n")[0].removeprefix("data: ")
            headers = json.loads(text)["headers"]
            assert headers["Authorization"] == "Bearer " + "*" * len(escaped), (stream, echo.stdout)
            assert headers["Content-Type"] == "application/json", headers
            if stream:
                assert echo.stdout.endswith("data: [DONE]\n\n"), echo.stdout
        for body in ({"model": MODEL, "messages": []}, {"model": MODEL, "stream": True, "messages": []}):
            through = post(box, url, body, extra=["-N"] if body.get("stream") else [])
            assert through.stdout == direct(server, body), (body, through.stdout)
    finally:
        server.shutdown()


def test_issue32_a_streamed_answer_arrives_in_pieces(any_tnk):  # noqa: F811
    """The masking of R3-L1 holds back only what could begin the key: a stream still reaches the sandbox
    event by event. The stand-in's "slow" model sends its first event at once and the rest 4 s later;
    inside, the first event is read well before the last."""
    server = ModelServer(key=KEY)
    try:
        configure(any_tnk, server.port)
        box = Sandbox(any_tnk, any_tnk.project("stream"))
        box.start("--network", "inference")
        timed = box.exec("sh", "-c", (
            'curl -sS -N -H "Authorization: Bearer $TNK_INFERENCE_TOKEN" -d \'{"model":"slow","stream":true}\' "$0" |'
            ' while IFS= read -r line; do [ -n "$line" ] && echo "$(date +%s.%N) $line"; done'),
            f"http://host.lima.internal:{server.port}/v1/chat/completions", timeout=120)
        lines = [line.split(" ", 1) for line in timed.stdout.splitlines()]
        assert len(lines) == 4 and lines[-1][1] == "data: [DONE]", timed.stdout + timed.stderr
        assert float(lines[-1][0]) - float(lines[0][0]) >= 3, timed.stdout
    finally:
        server.shutdown()
