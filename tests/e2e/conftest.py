"""End-to-end harness: the real tnk binary in a temporary HOME.

Every test gets a fresh HOME with ~/code (the default workspace_root) and no XDG variables, so
nothing of the developer's own configuration leaks in. `TNK_BIN` names the binary (scripts/test.sh
sets it to build/tnk). `require()` skips loudly, or fails when TNK_TEST_MUST_WORK=1.
"""
import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))  # the modules the tests share with tests/faults and tests/load (procs.py)
TNK_BIN = os.environ.get("TNK_BIN", str(REPO / "build" / "tnk"))
# Run as root, tnk refuses a project that root owns (its agent would write into it as host root), so
# the harness gives every project, and what a test writes into it as root, to this stand-in owner.
PROJECT_OWNER = 4242


def give_root_files_to_owner(project: Path):
    for entry in [project, *project.rglob("*")]:
        try:
            if entry.lstat().st_uid == 0:
                os.lchown(entry, PROJECT_OWNER, PROJECT_OWNER)
        except FileNotFoundError:
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test (item.rep_setup, rep_call, rep_teardown), for fixtures that act
    on the outcome."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_root: only root can run it (it makes users or network namespaces, "
                                       "chowns to other users, or writes host settings)")
    config.addinivalue_line("markers", "rootless_suite: scripts/test.sh runs it as an ordinary user (test_rootless.py "
                                       "and the needs_root tests run as root)")


def pytest_collection_modifyitems(items):
    # A test of a "host" test network (net_harness.test_host) needs root for `ip netns`.
    for item in items:
        if "test_host" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs_root)


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_root"):
        require(os.geteuid() == 0, "run by root only (it makes users or network namespaces, or writes host settings)")


def require(condition, why):
    """Skip (loudly, counted) unless condition holds; with TNK_TEST_MUST_WORK=1 a skip is a failure."""
    if condition:
        return
    if os.environ.get("TNK_TEST_MUST_WORK") == "1":
        pytest.fail(f"TNK_TEST_MUST_WORK=1 forbids skipping: {why}")
    pytest.skip(why)


class Tnk:
    """Runs tnk with a clean, allow-listed environment rooted at a temporary HOME."""

    def __init__(self, home: Path):
        self.home = home
        self.env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            # An endpoint that refuses at once, so no test waits on a real server by accident.
            "TNK_SERVER_PORT": "9",
        }
        self.projects = []

    @property
    def config_dir(self):
        return self.home / ".config" / "tnk"

    @property
    def state_dir(self):
        return self.home / ".local" / "state" / "tnk"

    def run(self, *args, cwd=None, env=None, input=None, timeout=60):
        if os.geteuid() == 0:
            for project in self.projects:
                give_root_files_to_owner(project)
        full_env = dict(self.env)
        full_env.update(env or {})
        return subprocess.run(
            [TNK_BIN, *args],
            cwd=str(cwd or self.home),
            env=full_env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def json(self, *args, **kwargs):
        result = self.run(*args, **kwargs)
        assert result.returncode == 0, f"tnk {' '.join(args)} failed: {result.stderr}"
        return json.loads(result.stdout)

    def project(self, name="demo"):
        path = self.home / "code" / name
        path.mkdir(parents=True, exist_ok=True)
        self.projects.append(path)
        if os.geteuid() == 0:
            give_root_files_to_owner(path)
        return path


@pytest.fixture
def tmp_path():
    """A short per-test directory, replacing pytest's own tmp_path for these tests.

    Sandbox ids must fit a unix socket path below $XDG_STATE_HOME/tnk/sandboxes/<id>/ (108 bytes), so a
    long HOME shortens them (tnk-myproj-9ea8785c becomes tnk-m-9ea8785c) or makes naming fail outright.
    pytest's /tmp/pytest-of-<user>/pytest-<n>/<test name>0 is long enough for that; /tmp/tnk-e2e-XXXXXXXX
    leaves 38 characters for the id.
    """
    path = Path(tempfile.mkdtemp(prefix="tnk-e2e-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tnk(tmp_path):
    assert Path(TNK_BIN).is_file(), f"tnk binary not found at {TNK_BIN}: build it first (scripts/build.sh)"
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    return Tnk(home)


class _ModelsHandler(http.server.BaseHTTPRequestHandler):
    body = b"{}"

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path != "/v1/models":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def inference_server():
    """A real OpenAI-compatible /v1/models endpoint on 127.0.0.1 (stands in for llama-server)."""
    handler = type("Handler", (_ModelsHandler,), {})
    handler.body = json.dumps(
        {"object": "list", "data": [{"id": "qwen-test", "object": "model", "context_window": 16384}]}
    ).encode()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def initialized(tnk):
    """`tnk` after `tnk init` (the bundled specs: profiles base, dev, pi) and a project ~/code/demo."""
    result = tnk.run("init")
    assert result.returncode == 0, f"tnk init failed: {result.stderr}"
    tnk.project("demo")
    return tnk


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never answers: an inference server that hangs."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield listener.getsockname()[1]
    listener.close()
