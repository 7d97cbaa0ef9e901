"""A stand-in inference server for the doctor and gateway-configuration tests: which address it listens
on, which models it lists (with what context window), and which API key it wants are the test's to say."""
import http.server
import json
import socketserver
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's naming)
        server = self.server
        server.seen.append((self.path, self.headers.get("Authorization", "")))
        if server.key and self.headers.get("Authorization", "") != f"Bearer {server.key}":
            return self._send(401, {"error": "invalid api key"})
        if self.path != "/v1/models":
            return self._send(404, {"error": "not found"})
        data = [{"id": model, "object": "model", "context_window": server.context_window} for model in server.models]
        self._send(200, {"object": "list", "data": data})

    def _send(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class StandIn:
    """Started by `with StandIn(...) as server:`; `server.port` is its port, `server.seen` its requests."""

    def __init__(self, host="127.0.0.1", models=("qwen-test",), context_window=32768, key=""):
        self.server = socketserver.ThreadingTCPServer((host, 0), _Handler)
        self.server.daemon_threads = True
        self.server.models = list(models)
        self.server.context_window = context_window
        self.server.key = key
        self.server.seen = []
        self.port = self.server.server_address[1]

    @property
    def seen(self):
        return self.server.seen

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
