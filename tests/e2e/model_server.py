"""A stand-in inference server on the host that behaves like llama-server and Ollama for the gateway's
tests: GET /v1/models, POST /v1/chat/completions (a JSON answer with `usage`, or with "stream": true
server-sent events in a chunked body, ending with a usage chunk and [DONE]), POST /v1/embeddings, and
Ollama's POST /api/chat (an NDJSON stream whose last line carries prompt_eval_count/eval_count). With
`key` set it answers 401 to any request without `Authorization: Bearer <key>`, as vLLM --api-key does.
The model "slow" streams its first event at once and its last after `slow_seconds`. The model "echo"
answers with the request's headers, as some servers' debug and error answers do (security review
R3-L1): as JSON with every '/' written '\\/' (as PHP does), or, streamed, as one event cut into two chunks
in the middle of the Authorization value.

It records (method, path, model, authorization) of every request that reached it."""
import http.server
import json
import socketserver
import threading
import time

MODEL = "standin-7b"
PROMPT_TOKENS, COMPLETION_TOKENS = 11, 3


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        if not self._admitted({}):
            return
        if self.path == "/v1/models":
            return self._json({"object": "list", "data": [{"id": MODEL, "object": "model", "meta": {"n_ctx_train": 8192}}]})
        self._json({"error": "not found"}, 404)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if not self._admitted(body):
            return
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                 "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}
        model = body.get("model") or MODEL
        if self.path == "/v1/embeddings":
            return self._json({"object": "list", "model": model, "data": [{"index": 0, "embedding": [0.25, 0.5]}],
                               "usage": {"prompt_tokens": PROMPT_TOKENS, "total_tokens": PROMPT_TOKENS}})
        if self.path == "/api/chat":
            return self._stream("application/x-ndjson", [
                {"model": model, "message": {"role": "assistant", "content": "he"}, "done": False},
                {"model": model, "message": {"role": "assistant", "content": "llo"}, "done": True,
                 "prompt_eval_count": PROMPT_TOKENS, "eval_count": COMPLETION_TOKENS}], lambda e: json.dumps(e) + "\n")
        if self.path != "/v1/chat/completions":
            return self._json({"error": "not found"}, 404)
        if model == "echo":
            return self._echo(bool(body.get("stream")))
        if not body.get("stream"):
            return self._json({"object": "chat.completion", "model": model, "usage": usage,
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}]})
        chunks = [{"object": "chat.completion.chunk", "model": model,
                   "choices": [{"index": 0, "delta": {"content": word}}]} for word in ("he", "llo")]
        chunks.append({"object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage})
        self._stream("text/event-stream", chunks, lambda e: "data: " + json.dumps(e) + "\n\n",
                     last="data: [DONE]\n\n", pause=self.server.slow_seconds if model == "slow" else 0)

    def _admitted(self, body):
        auth = self.headers.get("Authorization", "")
        with self.server.lock:
            self.server.seen.append((self.command, self.path, body.get("model", ""), auth))
        if self.server.key is None or auth == "Bearer " + self.server.key:
            return True
        self._json({"error": {"message": "invalid api key", "type": "authentication_error"}}, 401)
        return False

    def _json(self, value, status=200):
        self._json_text(json.dumps(value), status)

    def _echo(self, stream):
        text = json.dumps({"object": "echo", "headers": dict(self.headers.items())}).replace("/", "\\/")
        if not stream:
            return self._json_text(text)
        event = "data: " + text + "\n\n"
        auth = json.dumps(self.headers.get("Authorization", ""))[1:-1].replace("/", "\\/")
        cut = event.index(auth) + len(auth) // 2
        self._stream("text/event-stream", [event[:cut], event[cut:]], lambda piece: piece, last="data: [DONE]\n\n")

    def _json_text(self, text, status=200):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, content_type, events, encode, last="", pause=0):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, event in enumerate(events):
            if i == len(events) - 1 and pause:
                time.sleep(pause)
            self._chunk(encode(event))
        if last:
            self._chunk(last)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class ModelServer:
    def __init__(self, key=None, slow_seconds=4):
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.key = key
        self.server.slow_seconds = slow_seconds
        self.server.seen = []
        self.server.lock = threading.Lock()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server.server_address[1]

    @property
    def seen(self):
        with self.server.lock:
            return list(self.server.seen)

    def shutdown(self):
        self.server.shutdown()
        self.server.server_close()
