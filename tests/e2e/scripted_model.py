"""A scripted OpenAI-compatible model server on the host: it stands in for llama-server and answers each
chat completion with the next tool call of a script (as a prompt-injected model would), then with a
closing text. It keeps every request, so a test can read back what each tool call returned inside the
sandbox (the `tool` messages the agent sends with its next request).

Speaks what agents use: GET /v1/models, POST /v1/chat/completions with `stream` true (server-sent events,
tool calls as deltas, a usage chunk) or false."""
import http.server
import json
import socketserver
import threading

MODEL = "scripted-model"


class ScriptedModel:
    def __init__(self, tool_calls, closing="Done."):
        self.tool_calls = tool_calls  # [(tool name, {arguments}), ...]
        self.closing = closing
        self.requests = []  # the JSON body of every chat completion request, in order
        self.seen = []  # (method, path) of every request that reached the server
        self.lock = threading.Lock()
        self.server = None

    # --- what the test reads back ---------------------------------------------------------------------

    def tool_results(self):
        """{call id: the text the agent sent back for it}, from the last request (it carries the history)."""
        with self.lock:
            if not self.requests:
                return {}
            messages = self.requests[-1].get("messages", [])
        results = {}
        for m in messages:
            if m.get("role") == "tool":
                content = m.get("content")
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
                results[m.get("tool_call_id")] = content or ""
        return results

    # --- the answers ------------------------------------------------------------------------------------

    def next_answer(self, body):
        with self.lock:
            self.requests.append(body)
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        if done < len(self.tool_calls):
            name, arguments = self.tool_calls[done]
            return {"tool": {"id": f"call_{done}", "name": name, "arguments": json.dumps(arguments)}}
        return {"text": self.closing}

    def start(self):
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                model.seen.append(("GET", self.path))
                if self.path.rstrip("/").endswith("/v1/models"):
                    self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model",
                                                                 "context_window": 32768}]})
                else:
                    self.reply(404, {"error": "not found"})

            def do_POST(self):  # noqa: N802
                model.seen.append(("POST", self.path))
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.reply(404, {"error": "not found"})
                    return
                answer = model.next_answer(body)
                if body.get("stream"):
                    self.stream(answer)
                else:
                    self.reply(200, completion(answer))

            def stream(self, answer):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in stream_chunks(answer):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()


USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def completion(answer):
    message = {"role": "assistant", "content": answer.get("text")}
    finish = "stop"
    if "tool" in answer:
        tool = answer["tool"]
        message["tool_calls"] = [{"id": tool["id"], "type": "function",
                                  "function": {"name": tool["name"], "arguments": tool["arguments"]}}]
        finish = "tool_calls"
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL, "usage": USAGE,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def stream_chunks(answer):
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": MODEL}
    if "tool" in answer:
        tool = answer["tool"]
        delta = {"role": "assistant", "content": None,
                 "tool_calls": [{"index": 0, "id": tool["id"], "type": "function",
                                 "function": {"name": tool["name"], "arguments": tool["arguments"]}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": answer["text"]}
        finish = "stop"
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    yield {**base, "choices": [], "usage": USAGE}
