"""Credential routes (docs/inference.md, "Credential routes"): the sandbox reaches an HTTPS upstream at
$TNK_ROUTES_URL/<name>/ with a credential the host adds, and never holds it. Against a stand-in git
server with its own test CA (route_harness.py): `git push` through a route works and the server saw the
credential, the same push through a route without it fails; the answer's echo of the credential is
masked; a refused method, path or route is a 403 with its route_request record; a search of the whole
sandbox (files, every process's environ and cmdline) finds a planted control string but not the
credential. Each denial is paired with its allowed control, and `tnk audit verify` passes."""
import secrets
import subprocess
import urllib.parse

import pytest

from net_harness import children_named, supervisor_pid, wait_for_records
from route_harness import CHUNK, FIXED_TEXT, basic, serve_git
from secret_search import compile_secret_search, find_in_sandbox
from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)
from test_network import foreign_descriptors, proc_status

pytestmark = pytest.mark.rootless_suite

CURL = ("curl", "-sS", "--max-time", "20")
GIT_PREFIX = "https://git.tnk-test.example/"


def routes_toml(port, ca):
    route = ('[[routes]]\nname = "{name}"\nupstream = "https://127.0.0.1:{port}"\nheader = "{header}"\n'
             'source = "env:TNK_TEST_TOKEN"\nca_file = "{ca}"\n{rules}\n')
    return "".join(route.format(name=name, port=port, ca=ca, header=header, rules=rules) for name, header, rules in (
        ("git", "Authorization: {basic:x-access-token}", ""),
        ("nocred", "X-Not-The-Credential: {credential}", ""),  # same upstream, the credential elsewhere
        ("ro", "Authorization: Bearer {credential}", 'methods = ["GET"]\npaths = ["/allowed/"]'),
        ("bearer", "Authorization: Bearer {credential}", ""),
    ))


def setup_routes(tnk, tmp_path, token):
    server = serve_git(tmp_path, basic("x-access-token", token))
    (tnk.config_dir / "tnk.toml").write_text(routes_toml(server.server_address[1], server.ca))
    (tnk.config_dir / "sandbox.d" / "manifests" / "routes.yaml").write_text(
        f'profile: routes\ngit_routes:\n  git: "{GIT_PREFIX}"\n  nocred: "https://nocred.tnk-test.example/"\n')
    tnk.env["TNK_TEST_TOKEN"] = token
    return server


def git_push(box, remote, branch):
    script = ("set -e; cd /tmp; rm -rf w; git init -q w; cd w; echo x > f; git add f;"
              " git -c user.name=t -c user.email=t@t commit -qm c;"
              f" GIT_TERMINAL_PROMPT=0 git push {remote} HEAD:refs/heads/{branch}")
    return box.sh(script, timeout=300)


def test_git_push_through_a_route_and_the_credential_is_nowhere_inside(any_tnk, tmp_path):
    token = "tnk-route-" + secrets.token_hex(12)
    server = setup_routes(any_tnk, tmp_path, token)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("routes"))
    compile_secret_search(box)
    try:
        box.start("--profile", "routes", "--audit-log", str(log))
        url = box.exec("printenv", "TNK_ROUTES_URL").stdout.strip()
        assert url == "http://host.tnk.internal:3130/r", url

        pushed = git_push(box, GIT_PREFIX + "repo.git", "main")
        assert pushed.returncode == 0, pushed.stderr
        heads = subprocess.run(["git", "-C", str(server.root / "repo.git"), "rev-parse", "refs/heads/main"],
                               capture_output=True, text=True)
        assert heads.returncode == 0, "the push did not reach the upstream"
        received = [s for s in server.seen if s[1].startswith("/repo.git/")]
        assert any(m == "POST" and "git-receive-pack" in p for m, p, _, _ in received), received
        assert all(auth == basic("x-access-token", token) for _, _, auth, _ in received), received
        assert all(host == f"127.0.0.1:{server.server_address[1]}" for _, _, _, host in received), received
        # The same push through a route to the same upstream that does not add the credential: refused.
        refused = git_push(box, "https://nocred.tnk-test.example/repo.git", "other")
        assert refused.returncode != 0, refused.stderr
        assert subprocess.run(["git", "-C", str(server.root / "repo.git"), "rev-parse", "refs/heads/other"],
                              capture_output=True).returncode != 0

        # The upstream echoes what it received: the sandbox's own Authorization was replaced, and the
        # credential in the answer's header and body is masked to its length.
        echo = box.exec(*CURL, "-i", "-H", "Authorization: Basic c2FuZGJveDpvd24=", f"{url}/git/echo")
        assert echo.returncode == 0 and " 200 " in echo.stdout.splitlines()[0], echo.stdout + echo.stderr
        real = basic("x-access-token", token)
        assert server.seen[-1][2] == real
        assert token not in echo.stdout and real[6:] not in echo.stdout and "c2FuZGJveDpvd24=" not in echo.stdout
        assert "X-Echo-Auth: Basic " + "*" * len(real[6:]) in echo.stdout, echo.stdout

        # The search finds the control where it was planted (a file, a process's environment and arguments)
        # and the credential (raw or as Basic) nowhere.
        hits, summary = find_in_sandbox(box, "tnk-control-" + secrets.token_hex(8), [token, real[6:]])
        assert "/tmp/planted" in hits[0], (hits, summary)
        assert any(w.endswith("/environ") for w in hits[0]) and any(w.endswith("/cmdline") for w in hits[0]), hits
        assert hits[1] == [] and hits[2] == [], (hits, summary)

        records = wait_for_records(log, "route_request", lambda rs: len(rs) >= 3)
        pushes = [r for r in records if r["route"] == "git" and r["allowed"] and r["status"] == 200]
        assert pushes and all(r["latency_ms"] >= 0 and r["bytes_down"] > 0 for r in pushes), records
        assert any(r["route"] == "nocred" and r["status"] == 401 for r in records), records
        assert token not in log.read_text() and real[6:] not in log.read_text()
        verify = any_tnk.run("audit", "verify", str(log))
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        server.shutdown()


def test_route_rules_refuse_with_403_and_a_record(ns_tnk, tmp_path):
    token = "tnk-route-" + secrets.token_hex(12)
    server = setup_routes(ns_tnk, tmp_path, token)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(ns_tnk, ns_tnk.project("rules"))
    try:
        box.start("--profile", "routes", "--audit-log", str(log))
        base = "http://host.tnk.internal:3130/r"
        allowed = box.exec(*CURL, "-w", "\n%{http_code}", f"{base}/ro/allowed/x?q=1")
        assert allowed.stdout.endswith("\n200") and "GET /allowed/x auth=Bearer " in allowed.stdout, allowed.stdout
        assert token not in allowed.stdout
        for argv, why in ((("-X", "POST", f"{base}/ro/allowed/x"), "does not allow the method POST"),
                          ((f"{base}/ro/other",), "outside the paths of the route 'ro'"),
                          ((f"{base}/ro/allowed/../../echo",), "segment"),
                          ((f"{base}/nope/x",), "no route named 'nope'")):
            refused = box.exec(*CURL, "--path-as-is", "-w", "\n%{http_code}", *argv)
            assert refused.stdout.endswith("\n403") and why in refused.stdout, (argv, refused.stdout)
        assert [s[1] for s in server.seen] == ["/allowed/x?q=1"], server.seen  # nothing refused reached it
        denied = wait_for_records(log, "route_request", lambda rs: len([r for r in rs if not r["allowed"]]) >= 4)
        reasons = [r["reason"] for r in denied if not r["allowed"] and r["status"] == 403]
        for why in ("does not allow the method POST", "outside the paths", "no route named 'nope'"):
            assert any(why in reason for reason in reasons), reasons
        passed = [r for r in denied if r["allowed"]]
        assert passed and passed[0]["path"] == "/allowed/x" and passed[0]["upstream"].startswith("127.0.0.1:"), passed
        verify = ns_tnk.run("audit", "verify", str(log))
        assert verify.returncode == 0, verify.stdout + verify.stderr

        # The gateway parses what the sandbox sends, like the other relays: no privilege, its own fds only
        # (its CA file was read before the drop).
        (state,) = (ns_tnk.state_dir / "sandboxes").iterdir()
        (gateway,) = children_named(supervisor_pid(ns_tnk, state.name), "tnk-routes")
        status = proc_status(gateway)
        assert (status["NoNewPrivs"].strip(), status["Seccomp"].strip()) == ("1", "2"), status
        assert int(status["CapEff"], 16) == 0 and foreign_descriptors(gateway, state) == []

        inspect = box.run("sandbox", "inspect")
        assert f"git: {base}/git/ -> https://127.0.0.1:{server.server_address[1]}" in inspect.stdout, inspect.stdout
        shown = ns_tnk.run("config", "show").stdout + ns_tnk.run("config", "show", "-o", "json").stdout
        assert "routes.git" in shown and token not in shown
        state = ns_tnk.state_dir / "sandboxes"
        for path in state.rglob("*"):
            try:
                if path.is_file() and not path.is_symlink():
                    assert token.encode() not in path.read_bytes(), path  # supervisor.log, sandbox.json, ...
            except PermissionError:
                pass  # the sandbox's own files (ns: its overlay), searched from inside by the other test
    finally:
        server.shutdown()


def test_a_failing_source_is_one_error_naming_the_route(ns_tnk, tmp_path):
    setup_routes(ns_tnk, tmp_path, "unused").shutdown()
    del ns_tnk.env["TNK_TEST_TOKEN"]
    box = Sandbox(ns_tnk, ns_tnk.project("nosource"))
    result = box.run("sandbox", "start", "--backend", "ns", "--profile", "routes")
    assert result.returncode == 1, result.stderr
    assert "route 'git': source env:TNK_TEST_TOKEN: the variable TNK_TEST_TOKEN is not set" in result.stderr


def test_routes_are_absent_under_network_none(ns_tnk, tmp_path):
    server = setup_routes(ns_tnk, tmp_path, "tok-" + secrets.token_hex(6))
    box = Sandbox(ns_tnk, ns_tnk.project("none"))
    try:
        box.start("--profile", "routes", "--network", "none")
        env = box.exec("env").stdout
        assert "TNK_ROUTES_URL" not in env and "GIT_CONFIG" not in env
        assert box.exec(*CURL, "http://host.tnk.internal:3130/r/git/echo").returncode != 0
        assert server.seen == []
    finally:
        server.shutdown()


def test_routes_work_beside_the_egress_proxy(ns_tnk, tmp_path):
    """Under `open` (and `allowlist`) sessions have HTTP_PROXY; the routes' host is in NO_PROXY, so curl and
    git reach the gateway directly, and the route's upstream (here the host's loopback, which the proxy
    refuses) is reached through the route only."""
    token = "tnk-route-" + secrets.token_hex(12)
    server = setup_routes(ns_tnk, tmp_path, token)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(ns_tnk, ns_tnk.project("open"))
    try:
        box.start("--profile", "routes", "--network", "open", "--audit-log", str(log))
        assert "HTTP_PROXY=" in box.exec("env").stdout
        via_route = box.exec(*CURL, "-w", "\n%{http_code}", "http://host.tnk.internal:3130/r/git/echo")
        assert via_route.stdout.endswith("\n200"), via_route.stdout + via_route.stderr
        direct = box.exec(*CURL, "-k", f"https://127.0.0.1:{server.server_address[1]}/echo")
        assert direct.returncode != 0  # the proxy refuses the host's loopback
        records = wait_for_records(log, "route_request", lambda rs: rs != [])
        assert records and records[0]["policy"] == "open" and records[0]["status"] == 200, records
    finally:
        server.shutdown()


def test_issue32_r3_l2_route_answer_chunked_across_the_credential_is_masked(ns_tnk, tmp_path):
    """Security review R3-L2: the upstream echoes the request in 4096-byte chunks and the sandbox pads its
    path so that a chunk boundary falls inside the echoed credential (the client joins the pieces). The
    echo still comes back, with the credential masked as sent, JSON-escaped and percent-encoded (upper
    and lower hex); the control: a normal chunked answer of several chunks arrives byte for byte."""
    token = "tnk/route+" + secrets.token_hex(12)  # '/' and '+': JSON and URLs escape them
    server = setup_routes(ns_tnk, tmp_path, token)
    box = Sandbox(ns_tnk, ns_tnk.project("chunks"))
    try:
        box.start("--profile", "routes")
        base = "http://host.tnk.internal:3130/r/bearer"
        # The echo's body is "GET <path>\nAuthorization: Bearer <token>...": the token starts 10 bytes
        # before the first chunk ends.
        prefix = "/chunked-echo/"
        path = prefix + "a" * (CHUNK - 10 - len("GET ") - len(prefix) - len("\nAuthorization: Bearer "))
        echo = box.exec(*CURL, base + path)
        assert echo.returncode == 0, echo.stderr
        assert server.seen[-1][2] == f"Bearer {token}"  # the upstream got it, and sent it back
        stars = "*" * len(token)
        assert echo.stdout.startswith(f"GET {path}\nAuthorization: Bearer {stars}\n"), echo.stdout[-200:]
        quoted = urllib.parse.quote(token, safe="")
        for form in (token, token.replace("/", "\\/"), quoted, quoted.lower(), token[10:]):
            assert form not in echo.stdout, (form, echo.stdout[-300:])
        assert echo.stdout.count("*" * len(quoted)) == 2, echo.stdout[-300:]  # both encodings, masked whole

        for size in (10, 3 * CHUNK + 123):
            fixed = box.exec(*CURL, f"{base}/fixed/{size}")
            want = (FIXED_TEXT * (size // len(FIXED_TEXT) + 1))[:size].decode()
            assert fixed.returncode == 0 and fixed.stdout == want, (size, fixed.stdout[-100:], fixed.stderr)
    finally:
        server.shutdown()
