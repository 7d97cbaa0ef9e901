"""A stand-in HTTPS upstream for the credential-route tests: a test CA and a server certificate made
here (openssl), and a threaded HTTPS server on the host's loopback that serves bare git repositories
through `git http-backend` (CGI) to requests carrying the expected Authorization, answers 401 to the
rest, and echoes what it received on /echo (so a test can see what the sandbox is shown). /chunked-echo
answers its echo in 4096-byte chunks, as Go's net/http flushes, with the Authorization also JSON-escaped
and percent-encoded; /fixed/N answers N bytes of FIXED_TEXT the same way (security review R3-L2)."""
import base64
import http.server
import os
import re
import socketserver
import ssl
import subprocess
import threading
import urllib.parse
from pathlib import Path

SAN = "IP:127.0.0.1"
CHUNK = 4096
# Bytes a masker could mistake for the start of an escaped secret: a normal answer holds them too.
FIXED_TEXT = b'{"a":"\\/x%2F\\u0041 b\\\\"}\n%'


def chunked_echo_body(method, path, auth):
    """What /chunked-echo answers: the request line and the Authorization as received, then its JSON
    escape (every '/' as '\\/', as PHP writes it) and its percent-encodings (upper and lower hex)."""
    quoted = urllib.parse.quote(auth, safe="")
    lower = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted)
    escaped = auth.replace("/", "\\/")
    return f"{method} {path}\nAuthorization: {auth}\n{{\"auth\":\"{escaped}\"}}\n{quoted}\n{lower}\n".encode()


def make_ca_and_cert(directory: Path):
    """ca.pem, and server.pem/server.key signed by it for 127.0.0.1. Returns (ca, cert, key)."""
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    openssl = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True)  # noqa: E731
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
            "-subj", "/CN=tnk test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    ext = directory / "ext.cnf"
    ext.write_text(f"subjectAltName={SAN}\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out",
            str(cert), "-days", "2", "-extfile", str(ext))
    return ca, cert, key


def basic(user, token):
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


class _Git(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802
        self._serve()

    def do_POST(self):  # noqa: N802
        self._serve()

    def do_PUT(self):  # noqa: N802
        self._serve()

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def _answer_chunked(self, body):
        """200 with `body` in CHUNK-byte chunks, each written (and flushed) on its own."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for at in range(0, len(body), CHUNK):
            piece = body[at:at + CHUNK]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _serve(self):
        server = self.server
        body = self._body()
        auth = self.headers.get("Authorization", "")
        server.seen.append((self.command, self.path, auth, self.headers.get("Host", "")))
        path, _, query = self.path.partition("?")
        if path.startswith("/chunked-echo"):
            return self._answer_chunked(chunked_echo_body(self.command, path, auth))
        if path.startswith("/fixed/"):
            size = int(path.rsplit("/", 1)[1])
            return self._answer_chunked((FIXED_TEXT * (size // len(FIXED_TEXT) + 1))[:size])
        if path.startswith("/echo") or path.startswith("/allowed/"):
            echo = f"{self.command} {path} auth={auth}\n".encode()
            return self._answer(200, echo, [("X-Echo-Auth", auth), ("Content-Type", "text/plain")])
        if auth != server.expected_auth:
            return self._answer(401, b"credential required\n", [("WWW-Authenticate", 'Basic realm="test"')])
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": str(server.root),
               "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "tester", "REQUEST_METHOD": self.command,
               "PATH_INFO": path, "QUERY_STRING": query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "GATEWAY_INTERFACE": "CGI/1.1"}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self._answer(status, payload, headers)

    def log_message(self, *args):
        pass


def serve_git(directory: Path, expected_auth: str):
    """The HTTPS git server on 127.0.0.1 (port: server.server_address[1]) with a bare repo.git below
    `directory`; server.ca is the CA file to trust, server.seen lists (method, path, auth, host)."""
    ca, cert, key = make_ca_and_cert(directory)
    root = directory / "git"
    subprocess.run(["git", "init", "-q", "--bare", str(root / "repo.git")], check=True)
    subprocess.run(["git", "-C", str(root / "repo.git"), "config", "http.receivepack", "true"], check=True)
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Git)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.root, server.ca, server.seen, server.expected_auth = root, ca, [], expected_auth
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
