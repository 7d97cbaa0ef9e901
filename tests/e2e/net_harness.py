"""Pieces of the network-policy tests: HTTP servers on the host's loopback, a test host in a network
namespace of its own (a public-looking documentation address, 198.51.100.2, reached over a veth pair:
nothing leaves the machine), and a sandbox whose supervisor resolves names through a private
/etc/hosts (so that a listed name can point at 127.0.0.1 or at the test host)."""
import http.server
import json
import os
import re
import shutil
import socket
import socketserver
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN, require
from procs import children_named  # noqa: F401 (tests/procs.py; the tests import it from here)

TEST_HOST_IP = "198.51.100.2"  # TEST-NET-2 (RFC 5737): not an address the proxy refuses as internal
NETNS = "tnk-e2e-net"


class _Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802
        self._answer()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer()

    def _answer(self):
        self.server.seen.append(f"{self.command} {self.path}")
        if self.path == "/stream":
            return self._stream()
        body = self.server.answer
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self):
        """A slow answer, a line every 100 ms for a minute: a connection held open."""
        self.send_response(200)
        self.end_headers()
        for i in range(600):
            try:
                self.wfile.write(f"line {i}\n".encode())
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    def log_message(self, *args):
        pass


def serve(answer, host="127.0.0.1"):
    """A threaded HTTP server answering every GET and POST with `answer` (bytes), but `GET /stream` with a
    line every 100 ms for a minute; `seen` lists the requests it received ("POST /api/pull")."""
    server = socketserver.ThreadingTCPServer((host, 0), _Answer)
    server.answer = answer
    server.seen = []
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def test_host():
    """An HTTP server on 198.51.100.2:80 in its own network namespace, routed from the host by a veth."""
    require(shutil.which("ip") is not None, "iproute2 (`ip`) is not installed")
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
    subprocess.run(["ip", "link", "del", "tnk-e2e0"], capture_output=True)
    ip("netns", "add", NETNS)
    ip("link", "add", "tnk-e2e0", "type", "veth", "peer", "name", "tnk-e2e1")
    ip("link", "set", "tnk-e2e1", "netns", NETNS)
    ip("addr", "add", "198.51.100.1/24", "dev", "tnk-e2e0")
    ip("link", "set", "tnk-e2e0", "up")
    ip("-n", NETNS, "addr", "add", f"{TEST_HOST_IP}/24", "dev", "tnk-e2e1")
    ip("-n", NETNS, "link", "set", "tnk-e2e1", "up")
    ip("-n", NETNS, "link", "set", "lo", "up")
    server_code = (
        "import http.server,socketserver\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "  protocol_version='HTTP/1.1'\n"
        "  def do_GET(self):\n"
        "    body=b'TEST-HOST-OK' if self.path!='/big' else b'x'*(8<<20)\n"
        "    self.send_response(200);self.send_header('Content-Length',str(len(body)));self.end_headers()\n"
        "    self.wfile.write(body)\n"
        "  def log_message(self,*a): pass\n"
        "class S(socketserver.ThreadingTCPServer):\n"
        "  daemon_threads=True; allow_reuse_address=True; request_queue_size=256\n"
        f"S(('{TEST_HOST_IP}',80),H).serve_forever()\n"
    )
    server = subprocess.Popen(["ip", "netns", "exec", NETNS, "python3", "-c", server_code])
    try:
        for _ in range(100):  # until it answers
            probe = subprocess.run(["curl", "-s", "--max-time", "1", f"http://{TEST_HOST_IP}/"], capture_output=True)
            if probe.stdout == b"TEST-HOST-OK":
                break
        else:
            pytest.fail("the test host did not come up")
        yield TEST_HOST_IP
    finally:
        server.kill()
        server.wait()
        subprocess.run(["ip", "link", "del", "tnk-e2e0"], capture_output=True)
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)


def start_with_hosts(box, hosts, *extra):
    """`tnk sandbox start` in a private mount namespace whose /etc/hosts also has `hosts` (name -> ip):
    the supervisor, and so its proxy, resolve those names as listed. The host's own file is untouched.
    The same on every backend: the proxy runs on the host, in the supervisor's mount namespace (a vm's
    guest has its own /etc/hosts, which only names the host's relays, and no DNS)."""
    hosts_file = box.tnk.home / "hosts"
    text = Path("/etc/hosts").read_text() + "".join(f"{addr}\t{name}\n" for name, addr in hosts.items())
    hosts_file.write_text(text)
    profile = [] if "--profile" in extra else ["--profile", "base"]
    wrapper = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
               'mount --bind "$1" /etc/hosts && shift && exec "$@"', "sh", str(hosts_file)]
    env = dict(box.tnk.env)
    result = subprocess.run([*wrapper, TNK_BIN, "sandbox", "start", "--backend", box.backend, *profile, *extra],
                            cwd=str(box.project), env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"start failed: {result.stderr}"
    return result


def audit_records(path, event=None):
    records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [r for r in records if event is None or r["event"] == event]


def wait_for_records(path, event, holds, timeout=15):
    """The `event` records of the log once `holds(records)` is true. A connection is recorded when it
    ends, by the supervisor, a moment after the client's session may have returned."""
    deadline = time.monotonic() + timeout
    while True:
        records = audit_records(path, event)
        if holds(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.05)


def debian_mirror_url():
    """The first Debian archive in the host's own apt sources, e.g. http://<host>/debian (never written in a
    test)."""
    texts = [p.read_text() for p in Path("/etc/apt/sources.list.d").glob("*.sources")]
    texts += [Path("/etc/apt/sources.list").read_text()] if Path("/etc/apt/sources.list").exists() else []
    for text in texts:
        match = re.search(r"(?:URIs:\s*|^deb\s+(?:\[[^]]*\]\s+)?)(https?://[^/\s:]+[^\s]*)", text, re.M)
        if match:
            return match.group(1).rstrip("/")
    pytest.fail("no Debian mirror in the host's apt sources")


def debian_mirror_host():
    return re.match(r"https?://([^/:]+)", debian_mirror_url()).group(1)


def supervisor_pid(tnk, sandbox_id):
    text = (tnk.state_dir / "sandboxes" / sandbox_id / "supervisor.pid").read_text()
    return int(text.split()[0])


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A network namespace that plays the host for the `open` policy's address checks (security review H2,
# R3-L5): tnk runs inside it (in_netns), so its proxy connects from there.
H2_NETNS = "tnk-e2e-h2"
H2_IFACE = "tnkh2"
HOST4, HOST6 = "198.51.100.1", "2001:db8:5::1"            # documentation addresses, never a real outside one
NEIGHBOUR4, NEIGHBOUR6 = "198.51.100.7", "2001:db8:5::7"  # on-link, nobody there
OFF_LINK = "203.0.113.7"                                   # TEST-NET-3: no route here, so unreachable
LISTENER = (  # answers every request on 0.0.0.0:443 and [::]:443 with one line, then closes
    "import socket,threading\n"
    "def serve(family,addr):\n"
    "  s=socket.socket(family);s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "  if family==socket.AF_INET6: s.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_V6ONLY,1)\n"
    "  s.bind((addr,443));s.listen(16)\n"
    "  while True:\n"
    "    c,_=s.accept();c.settimeout(5);c.recv(4096);c.sendall(b'HOST-SERVICE\\n');c.close()\n"
    "threading.Thread(target=serve,args=(socket.AF_INET6,'::'),daemon=True).start()\n"
    "serve(socket.AF_INET,'0.0.0.0')\n"
)


def in_netns(*argv, **kwargs):
    """Runs argv in the test's network namespace only (nsenter --net: mounts, /sys and cgroups stay)."""
    return subprocess.run(["nsenter", f"--net=/run/netns/{H2_NETNS}", *argv], capture_output=True, text=True,
                          **kwargs)


@pytest.fixture
def host_netns():
    """A network namespace that plays the host: lo, and an interface with a public-looking address
    (HOST4/24, HOST6/64), a listener on 0.0.0.0:443 and [::]:443 in it, and no route anywhere else."""
    require(shutil.which("ip") is not None and shutil.which("nsenter") is not None, "iproute2 or nsenter missing")
    subprocess.run(["ip", "netns", "del", H2_NETNS], capture_output=True)
    ip("netns", "add", H2_NETNS)
    ip("-n", H2_NETNS, "link", "set", "lo", "up")
    # A veth pair with both ends inside (this kernel may have no dummy interfaces): the peer stays bare.
    ip("-n", H2_NETNS, "link", "add", H2_IFACE, "type", "veth", "peer", "name", f"{H2_IFACE}p")
    ip("-n", H2_NETNS, "link", "set", f"{H2_IFACE}p", "up")
    ip("-n", H2_NETNS, "addr", "add", f"{HOST4}/24", "dev", H2_IFACE)
    ip("-n", H2_NETNS, "addr", "add", f"{HOST6}/64", "dev", H2_IFACE, "nodad")
    ip("-n", H2_NETNS, "link", "set", H2_IFACE, "up")
    listener = subprocess.Popen(["nsenter", f"--net=/run/netns/{H2_NETNS}", "/usr/bin/python3", "-c", LISTENER])
    try:
        for _ in range(100):
            if in_netns("curl", "-s", "--http0.9", "--max-time", "1", f"http://{HOST4}:443/").stdout == "HOST-SERVICE\n":
                break
            time.sleep(0.05)
        yield
    finally:
        listener.kill()
        listener.wait()
        subprocess.run(["ip", "netns", "del", H2_NETNS], capture_output=True)


def tunnel(box, host, port, log):
    """curl through the sandbox's own proxy settings, as a CONNECT tunnel to host:port; stdout is what the
    far end sent (HTTP/0.9 allowed: the listener speaks no HTTP)."""
    url_host = f"[{host}]" if ":" in host else host
    return box.exec("curl", "-sS", "-g", "--http0.9", "--proxytunnel", "--max-time", "10",
                    f"http://{url_host}:{port}/", audit=log)
