"""A stand-in for an OpenAI-compatible inference server, for bench/gateway.sh: fast enough that it is
not what the benchmark measures.

usage: openai_standin.py PORTFILE   (listens on 127.0.0.1, an ephemeral port written to PORTFILE)

POST /v1/chat/completions with a JSON body:
  - without "stream": a small chat.completion JSON at once (with usage);
  - "stream": true: server-sent events, chunked: "max_tokens" (default 16) delta chunks, each written
    as it is made, then a usage chunk and `data: [DONE]`;
  - "stream": true and "stream_bytes": N: N bytes of delta events, sent in writes of 1 MiB, for
    throughput, then the usage chunk and `data: [DONE]`.
GET /v1/models names the one model (tnk asks it when a sandbox starts).
"""
import http.server
import json
import socket
import sys

MODEL = "standin-7b"
WRITE = 1 << 20


def event(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def delta(text):
    return event({"object": "chat.completion.chunk", "model": MODEL,
                  "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


USAGE = event({"object": "chat.completion.chunk", "model": MODEL, "choices": [],
               "usage": {"prompt_tokens": 12, "completion_tokens": 16, "total_tokens": 28}})
DONE = b"data: [DONE]\n\n"
# One MiB of delta events, made once: the large answer is this block again and again.
_ONE = delta("x" * 1000)
BLOCK = _ONE * (WRITE // len(_ONE))
ANSWER = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}}).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.reply(200, "application/json", MODELS if self.path.startswith("/v1/models") else b"{}")

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if not body.get("stream"):
            self.reply(200, "application/json", ANSWER)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if "stream_bytes" in body:
            left = int(body["stream_bytes"])
            while left > 0:
                self.chunk(BLOCK[:left])
                left -= len(BLOCK)
        else:
            for i in range(int(body.get("max_tokens", 16))):
                self.chunk(delta(f"t{i}"))
        self.chunk(USAGE + DONE)
        self.wfile.write(b"0\r\n\r\n")

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

    def reply(self, status, content_type, data):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(sys.argv[1], "w") as f:
        f.write(f"{server.server_address[1]}\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
