"""The network policies, enforced and audited, on every backend with a supervisor (ns and vm: each test
runs once per backend). Each denial is paired with an allowed control in the same run, and every test's
audit log must hold the matching net_allow/net_deny records and pass `tnk audit verify`."""
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN
from net_harness import (H2_IFACE, H2_NETNS, HOST4, audit_records, children_named, debian_mirror_host,  # noqa: F401
                         free_port, host_netns, in_netns, open_fds, serve, start_with_hosts, supervisor_pid,
                         test_host, tunnel, wait_for_records)  # (fixtures)
from sandbox_harness import Sandbox, any_tnk  # noqa: F401 (fixture)
from test_output import check_fields, doc_tables, field_tree

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

CURL = ("curl", "-sS", "--max-time", "10")
# Where a session reaches the supervisor's relays (the proxy): its own loopback (ns), the guestfwd address (vm).
RELAY_HOST = {"ns": "127.0.0.1", "vm": "10.0.2.2"}
# vm: 10.0.2.2 is QEMU's user network's name for the host, which restrict=on must not reach.
HOST_ALIASES = {"ns": (), "vm": ("10.0.2.2",)}
BRIDGE_PORT = 1023  # the vm guest agent's connect bridge (agent/bridge.h)


def manifest(tnk, name, text):
    (tnk.config_dir / "sandbox.d" / "manifests" / f"{name}.yaml").write_text(f"profile: {name}\n{text}")


def verify(tnk, log):
    result = tnk.run("audit", "verify", str(log))
    assert result.returncode == 0, result.stdout + result.stderr


def sandbox_id(box):
    return box.tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)["id"]


def test_inference_reaches_the_endpoint_and_nothing_else(any_tnk, tmp_path):
    endpoint, other = serve(b"ENDPOINT-OK"), serve(b"OTHER-SERVICE")
    log = tmp_path / "audit.ndjson"
    try:
        port, other_port = endpoint.server_address[1], other.server_address[1]
        any_tnk.env["TNK_SERVER_PORT"] = str(port)
        box = Sandbox(any_tnk, any_tnk.project("inference"))
        box.start("--network", "inference", "--audit-log", str(log))
        ok = box.exec(*CURL, f"http://host.lima.internal:{port}/v1/models", audit=log)
        assert ok.returncode == 0 and ok.stdout == "ENDPOINT-OK", ok.stderr
        # The host reaches the other loopback service and the mirror; the sandbox reaches neither.
        assert subprocess.run(["curl", "-sS", f"http://127.0.0.1:{other_port}/"], capture_output=True).stdout == \
            b"OTHER-SERVICE"
        mirror = debian_mirror_host()
        mirror_ip = socket.gethostbyname(mirror)
        aliases = tuple(f"http://{alias}:{other_port}/" for alias in HOST_ALIASES[box.backend])
        for url in (f"http://127.0.0.1:{other_port}/", f"http://host.lima.internal:{other_port}/",
                    f"http://{mirror}/debian/", *aliases):
            denied = box.exec(*CURL, url)
            assert denied.returncode != 0 and "OTHER-SERVICE" not in denied.stdout, url
        for target in (f"127.0.0.1/{other_port}", f"{mirror_ip}/80"):
            raw = box.exec("bash", "-c", f"exec 3<>/dev/tcp/{target}")
            assert raw.returncode != 0, target
        env = box.exec("env").stdout
        assert "HTTP_PROXY" not in env and "http_proxy" not in env  # inference has no proxy
        endpoint_record = lambda r: (r["policy"] == "inference" and r["rule"] == "inference endpoint"  # noqa: E731
                                     and r["port"] == port and r["bytes_down"] > 0)
        allowed = wait_for_records(log, "inference_request", lambda rs: any(map(endpoint_record, rs)))
        assert any(map(endpoint_record, allowed)), allowed
        verify(any_tnk, log)
    finally:
        endpoint.shutdown()
        other.shutdown()


# Security review L8: the inference forwarder passes the inference APIs (here /v1/models, the control)
# and refuses the admin ones with a 403 and a net_deny record, before the endpoint sees them.
def test_l8_inference_endpoint_refuses_admin_paths(any_tnk, tmp_path):
    endpoint = serve(b"ENDPOINT-OK")
    log = tmp_path / "audit.ndjson"
    try:
        port = endpoint.server_address[1]
        any_tnk.env["TNK_SERVER_PORT"] = str(port)
        box = Sandbox(any_tnk, any_tnk.project("l8"))
        box.start("--network", "inference", "--audit-log", str(log))
        base = f"http://host.lima.internal:{port}"
        ok = box.exec(*CURL, f"{base}/v1/models")
        assert ok.returncode == 0 and ok.stdout == "ENDPOINT-OK", ok.stderr
        for path, shown in (("/api/pull", "POST /api/pull"), ("/slots?action=save", "POST /slots")):
            refused = box.exec(*CURL, "-w", "\n%{http_code}", "-d", '{"model":"evil"}', base + path)
            assert refused.stdout.endswith("\n403"), (path, refused.stdout, refused.stderr)
            assert f"{shown} is not an inference API" in refused.stdout, refused.stdout
        # tnk itself asks GET /v1/models for the model's name; nothing else reached the endpoint.
        assert "GET /v1/models" in endpoint.seen and set(endpoint.seen) == {"GET /v1/models"}, endpoint.seen
        admin = lambda r: r["policy"] == "inference" and r["port"] == port  # noqa: E731
        denied = wait_for_records(log, "net_deny", lambda rs: len(list(filter(admin, rs))) >= 2)
        reasons = [r["reason"] for r in denied if admin(r)]
        for shown in ("POST /api/pull", "POST /slots"):
            assert any(shown in reason for reason in reasons), reasons
        verify(any_tnk, log)
    finally:
        endpoint.shutdown()


ALLOW = """security:
  network: allowlist
network:
  allow:
    - "@debian"
    - listed.tnk-test.example
    - rebound.tnk-test.example
"""


APT_INDEX_ONLY = ("-o", "Acquire::IndexTargets::deb::Packages::DefaultEnabled=false",  # only InRelease
                  "-o", "Acquire::Languages=none")


def test_allowlist_lets_listed_hosts_through_the_proxy_only(any_tnk, tmp_path, test_host):
    manifest(any_tnk, "allow", ALLOW)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("allow"))
    start_with_hosts(box, {"listed.tnk-test.example": test_host, "unlisted.tnk-test.example": test_host,
                           "rebound.tnk-test.example": "127.0.0.1"}, "--profile", "allow", "--audit-log", str(log))
    # apt reaches the image's mirror through the proxy (@debian): each suite's signed index (InRelease),
    # checked against the image's keys. Not the package lists: under emulation (vm here, the test hosts)
    # fetching and parsing them took most of this test (57 and 141 s in a CI run), which is about the network.
    update = box.exec("apt-get", "update", *APT_INDEX_ONLY, root=True, timeout=300, audit=log)
    assert update.returncode == 0, update.stdout + update.stderr
    assert "InRelease" in update.stdout and "Packages" not in update.stdout, update.stdout
    listed = box.exec(*CURL, "http://listed.tnk-test.example/", audit=log)
    assert listed.returncode == 0 and listed.stdout == "TEST-HOST-OK", listed.stderr
    # The same test host under a name that is not listed: a clear answer from the proxy.
    unlisted = box.exec("curl", "-sS", "--max-time", "10", "http://unlisted.tnk-test.example/", audit=log)
    assert "TEST-HOST-OK" not in unlisted.stdout
    assert "unlisted.tnk-test.example is not in this sandbox's allow-list" in unlisted.stdout
    tunnel = box.exec("curl", "-sS", "--max-time", "10", "https://unlisted.tnk-test.example/", audit=log)
    assert tunnel.returncode != 0 and "403" in tunnel.stderr
    # Listed, but resolves to the host's loopback: refused although a service answers there.
    rebound = box.exec("curl", "-sS", "--max-time", "10", "http://rebound.tnk-test.example/", audit=log)
    assert "a host-internal address" in rebound.stdout
    # No DNS of its own: without the proxy, names do not resolve.
    direct = box.exec("curl", "-sS", "--noproxy", "*", "--max-time", "5", "http://listed.tnk-test.example/")
    assert direct.returncode != 0
    allowed = wait_for_records(log, "net_allow",
                               lambda rs: any(r["destination"] == "listed.tnk-test.example" for r in rs))
    denied = audit_records(log, "net_deny")  # refusals are written at once
    assert any(r["destination"] == "listed.tnk-test.example" and r["address"] == test_host
               and r["rule"] == "listed.tnk-test.example" and r["bytes_down"] > 0 for r in allowed), allowed
    assert any(r["policy"] == "allowlist" and r["port"] == 80 and r["destination"] != "listed.tnk-test.example"
               for r in allowed), "no record of apt's connections to the mirror"
    assert any(r["destination"] == "unlisted.tnk-test.example" and r["reason"] == "not in allow-list"
               for r in denied), denied
    assert any(r["destination"] == "rebound.tnk-test.example" and r["address"] == "127.0.0.1"
               and r["reason"] == "host-internal address (loopback)" for r in denied), denied
    verify(any_tnk, log)


OPEN = """security:
  network: open
"""


def test_open_reaches_the_mirror_but_not_host_loopback(any_tnk, tmp_path):
    other = serve(b"OTHER-SERVICE")
    other_port = other.server_address[1]
    # The service's port is opened (network.open_ports): what refuses it must be the address check.
    manifest(any_tnk, "wide", OPEN + f"network:\n  open_ports: [{other_port}]\n")
    log = tmp_path / "audit.ndjson"
    try:
        box = Sandbox(any_tnk, any_tnk.project("wide"))
        box.start("--profile", "wide", "--audit-log", str(log))
        mirror = debian_mirror_host()
        reached = box.exec("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                           f"http://{mirror}/debian/dists/bookworm/Release", audit=log)
        assert reached.stdout == "200", reached.stderr
        via_proxy = ("--noproxy", "", "--proxy", f"http://{RELAY_HOST[box.backend]}:3128")  # NO_PROXY lists 127.0.0.1
        for proxy_flag in ((), via_proxy):  # direct, and asked of the proxy
            for host in ("127.0.0.1", *HOST_ALIASES[box.backend]):
                denied = box.exec("curl", "-sS", "--max-time", "10", *proxy_flag, f"http://{host}:{other_port}/",
                                  audit=log)
                assert "OTHER-SERVICE" not in denied.stdout, (proxy_flag, host)
        asked = box.exec("curl", "-sS", "--max-time", "10", *via_proxy, f"http://127.0.0.1:{other_port}/")
        assert "a host-internal address" in asked.stdout
        allowed = wait_for_records(log, "net_allow", lambda rs: any(r["destination"] == mirror for r in rs))
        assert any(r["destination"] == mirror and r["rule"] == "open" for r in allowed), allowed
        assert any(r["destination"] == "127.0.0.1" and r["reason"] == "host-internal address (loopback)"
                   for r in audit_records(log, "net_deny"))
        verify(any_tnk, log)
    finally:
        other.shutdown()


ANYIP4, ANYIP6 = "203.0.113.0/24", "2001:db8:1::/64"  # `local` routes on lo: the host answers every address
GATEWAY4 = "198.51.100.254"                             # on the interface's link; nobody there
OUTSIDE4 = "192.0.2.77"                                 # routed through the gateway: an ordinary outside address


@pytest.mark.needs_root
def test_issue32_r3_l5_open_refuses_local_routes(host_netns, any_tnk, tmp_path):
    """Security review R3-L5: the host answers every address of a `local` route (AnyIP: `ip route add local
    PREFIX dev lo`), though no interface has such an address. Under `open` the proxy asks the kernel how
    it routes each destination and refuses these as it refuses the host's own addresses; the control: an
    ordinary address, routed through a gateway, gets past the check (to a 502: nobody is there)."""
    for route in (("route", "add", "local", ANYIP4, "dev", "lo"), ("-6", "route", "add", "local", ANYIP6, "dev", "lo"),
                  ("route", "add", "default", "via", GATEWAY4)):
        subprocess.run(["ip", "-n", H2_NETNS, *route], check=True, capture_output=True)
    anyip4, anyip6 = "203.0.113.9", "2001:db8:1::9"
    # Positive control: inside the host's namespace, the listener on 0.0.0.0/[::] answers there.
    for host in (anyip4, f"[{anyip6}]"):
        direct = in_netns("curl", "-sS", "-g", "--http0.9", "--max-time", "5", f"http://{host}:443/")
        assert direct.stdout == "HOST-SERVICE\n", (host, direct.stderr)
    manifest(any_tnk, "wide", OPEN)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("wide"))
    started = in_netns(TNK_BIN, "sandbox", "start", "--backend", box.backend, "--profile", "wide", "--audit-log",
                       str(log), cwd=str(box.project), env=any_tnk.env, timeout=900)
    assert started.returncode == 0, started.stderr
    for host in (anyip4, anyip6, HOST4):
        probe = tunnel(box, host, 443, log)
        assert "HOST-SERVICE" not in probe.stdout, host
        assert "CONNECT tunnel failed, response 403" in probe.stderr, (host, probe.stderr)
    outside = tunnel(box, OUTSIDE4, 443, log)
    assert "response 502" in outside.stderr or "response 504" in outside.stderr, outside.stderr
    denied = {r["destination"]: r["reason"] for r in audit_records(log, "net_deny")}
    assert denied == {anyip4: "host-internal address (local route of this host on lo)",
                      anyip6: "host-internal address (local route of this host on lo)",
                      HOST4: f"host-internal address (address of this host's interface {H2_IFACE})"}, denied
    allowed = wait_for_records(log, "net_allow", lambda rs: any(r["destination"] == OUTSIDE4 for r in rs))
    assert any(r["destination"] == OUTSIDE4 and r["rule"] == "open" for r in allowed), allowed
    verify(any_tnk, log)


def proc_status(pid):
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def foreign_descriptors(pid, state):
    """The fds of `pid` that are not a relay's own: anything but /dev/null, the supervisor's log, pipes,
    sockets and event fds (a namespace, a directory, a file of the project or the host)."""
    links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    own = ("/dev/null", str(state / "supervisor.log"))
    return [l for l in links if l not in own and not l.startswith(("pipe:", "socket:", "anon_inode:"))]


def test_relays_hold_no_privilege_and_only_their_own_descriptors(any_tnk):
    """The proxy and the forwarders parse what the sandbox sends: each runs with no_new_privs, no
    capability, a seccomp filter of its own and only the descriptors it serves with, in the sandbox's
    state directory (security review M6; the rootless issue, item 4)."""
    manifest(any_tnk, "wide", OPEN)
    box = Sandbox(any_tnk, any_tnk.project("wide"))
    box.start("--profile", "wide")
    assert box.run("sandbox", "forward", f"{free_port()}:8080").returncode == 0  # a port forward's relay too
    (state,) = (any_tnk.state_dir / "sandboxes").iterdir()
    supervisor = supervisor_pid(any_tnk, state.name)
    proxies, forwarders = children_named(supervisor, "tnk-proxy"), children_named(supervisor, "tnk-forwarder")
    assert len(proxies) == 1 and len(forwarders) == 2, (proxies, forwarders)  # inference + the port forward
    for pid in proxies + forwarders:
        status = proc_status(pid)
        assert (status["NoNewPrivs"].strip(), status["Seccomp"].strip()) == ("1", "2"), (pid, status)
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0, (pid, status)
        assert foreign_descriptors(pid, state) == [], pid
        assert os.readlink(f"/proc/{pid}/cwd") == str(state)
    # Positive control: the same probes on the supervisor, which keeps what it needs to fork into
    # namespaces (their fds), read no_new_privs and seccomp unset.
    status = proc_status(supervisor)
    assert (status["NoNewPrivs"].strip(), status["Seccomp"].strip()) == ("0", "0"), status
    assert foreign_descriptors(supervisor, state) != []


def test_inspect_shows_the_running_policy_and_doctor_asks_the_proxy(any_tnk):
    manifest(any_tnk, "wide", OPEN)
    box = Sandbox(any_tnk, any_tnk.project("wide"))
    box.start("--profile", "wide")
    doc = any_tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)
    assert doc["network"]["policy"] == "open" and doc["network"]["source"] == "manifest"
    assert doc["network"]["running"]["policy"] == "open"
    assert doc["network"]["running"]["proxy"]["address"] == f"{RELAY_HOST[box.backend]}:3128"
    # --network asks for another policy than the running one: refused, with the way out.
    other = box.run("sandbox", "start", "--network", "none")
    assert other.returncode == 64 and "runs with network policy 'open'" in other.stderr
    doctor = any_tnk.json("doctor", "-o", "json")
    checks = {c["id"]: c for c in doctor["checks"]}
    proxy = checks[f"net_proxy_{doc['id']}"]
    assert proxy["status"] == "ok" and "tnk proxy: ok" in proxy["summary"], proxy
    # The pair: a sandbox without a proxy has no such check.
    box.run("sandbox", "stop")
    box.start("--profile", "wide", "--network", "inference")
    doctor = any_tnk.json("doctor", "-o", "json")
    assert not any(c["id"].startswith("net_proxy_") for c in doctor["checks"])


PERL_SERVER = (
    "use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $ARGV[0], "
    "Listen => 16, ReuseAddr => 1) or die; while (my $c = $s->accept) { "
    "print $c \"HTTP/1.0 200 OK\\r\\nContent-Length: 9\\r\\n\\r\\nINSIDE-OK\"; close $c }"
)


def assert_forwarded(host_port):
    """A forward on 127.0.0.1:host_port reaches PERL_SERVER inside (within 5 s: the relay may still be starting)."""
    for _ in range(50):
        got = subprocess.run(["curl", "-sS", "--max-time", "5", f"http://127.0.0.1:{host_port}/"],
                             capture_output=True, text=True)
        if got.stdout == "INSIDE-OK":
            return
        time.sleep(0.1)
    assert got.stdout == "INSIDE-OK", got.stderr


def check_the_vm_bridge_is_no_way_out(box):
    """vm: the forward went through the guest agent's connect bridge (docs/vm-backend.md). Its other side:
    the host cannot reach the bridge (its hostfwd is in QEMU's own network namespace), and the guest
    cannot use it to reach the host (it connects only to the guest's loopback and the relays' address,
    10.0.2.2: not to another address of QEMU's user network, nor outside)."""
    with socket.socket() as probe:
        probe.settimeout(5)
        assert probe.connect_ex(("127.0.0.1", BRIDGE_PORT)) != 0
    ask = f'exec 3<>/dev/tcp/10.0.2.15/{BRIDGE_PORT} && echo "tnk-connect $1 $2" >&3 && head -n1 <&3'
    for target, port in (("10.0.2.100", 80), ("198.51.100.2", 80), ("127.0.0.1", 8000)):
        answer = box.exec("bash", "-c", ask, "bash", target, str(port))
        expected = "ok" if target == "127.0.0.1" else "error 13 "
        assert answer.stdout.startswith(expected), (target, answer.stdout, answer.stderr)


def test_port_forward_reaches_a_server_inside_on_host_loopback_only(any_tnk, tmp_path):
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("fwd"))
    box.start("--audit-log", str(log))
    started = box.exec("sh", "-c", 'setsid perl -e "$1" 8000 >/dev/null 2>&1 &', "sh", PERL_SERVER)
    assert started.returncode == 0, started.stderr
    host_port = free_port()
    url = f"http://127.0.0.1:{host_port}/"
    before = subprocess.run(["curl", "-sS", "--max-time", "5", url], capture_output=True, text=True)
    assert before.returncode != 0  # nothing forwards yet
    added = box.run("sandbox", "forward", f"{host_port}:8000", "-o", "json")
    assert added.returncode == 0, added.stderr
    assert {"host": "127.0.0.1", "host_port": host_port, "guest_port": 8000} in json.loads(added.stdout)
    assert_forwarded(host_port)
    listening = subprocess.run(["ss", "-Hltn", f"sport = :{host_port}"], capture_output=True, text=True).stdout
    assert [line.split()[3] for line in listening.splitlines()] == [f"127.0.0.1:{host_port}"]  # loopback only
    if box.backend == "vm":
        check_the_vm_bridge_is_no_way_out(box)
    removed = box.run("sandbox", "forward", "--remove", str(host_port))
    assert removed.returncode == 0, removed.stderr
    after = subprocess.run(["curl", "-sS", "--max-time", "5", url], capture_output=True, text=True)
    assert after.returncode != 0
    # Errors: a port in use on the host, and a bad spec.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = box.run("sandbox", "forward", f"{busy.getsockname()[1]}:8000")
        assert taken.returncode == 1 and "Address already in use" in taken.stderr and "hint:" in taken.stderr
    assert box.run("sandbox", "forward", "80:http").returncode == 64
    box.run("sandbox", "stop")  # the forward's connection is written when the sandbox's relays end
    records = audit_records(log, "net_allow")
    assert any(r["policy"] == "port forward" and r["rule"] == f"port forward {host_port}:8000" for r in records), records
    verify(any_tnk, log)


def test_manifest_ports_are_forwarded_from_start(any_tnk):
    host_port = free_port()
    manifest(any_tnk, "web", f'ports:\n  - "{host_port}:8001"\n')
    box = Sandbox(any_tnk, any_tnk.project("web"))
    box.start("--profile", "web")
    box.exec("sh", "-c", 'setsid perl -e "$1" 8001 >/dev/null 2>&1 &', "sh", PERL_SERVER)
    assert_forwarded(host_port)
    listed = any_tnk.json("sandbox", "forward", "-o", "json", cwd=box.project)
    assert listed == [{"host": "127.0.0.1", "host_port": host_port, "guest_port": 8001}]
    check_fields(listed, field_tree(doc_tables()["fields:forward"]))  # exactly what docs/json-output.md says


def settled_fds(*pids):
    """The open descriptor counts of `pids` once they stop changing (connection threads close theirs
    a moment after each tunnel ends)."""
    last = None
    for _ in range(100):
        now = tuple(open_fds(pid) for pid in pids)
        if now == last:
            return now
        last = now
        time.sleep(0.2)
    return last


LOAD = """security:
  network: allowlist
network:
  allow:
    - load.tnk-test.example
"""


def test_hundred_concurrent_connects_leave_no_leaked_descriptors(any_tnk, tmp_path, test_host):
    manifest(any_tnk, "load", LOAD)
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("load"))
    start_with_hosts(box, {"load.tnk-test.example": test_host}, "--profile", "load", "--audit-log", str(log))
    supervisor = supervisor_pid(any_tnk, sandbox_id(box))
    (proxy,) = children_named(supervisor, "tnk-proxy")
    # Plain proxied requests: a CONNECT tunnel to a name carries TLS only (security review L3), and the
    # test host speaks plain http.
    warm = box.exec(*CURL, "http://load.tnk-test.example/")
    assert warm.stdout == "TEST-HOST-OK", warm.stderr
    before = settled_fds(supervisor, proxy)  # once the warm-up connection's thread has closed its sockets
    script = ('for i in $(seq 100); do curl -sS --max-time 60 -o /dev/null -w "%{http_code}\\n" '
              'http://load.tnk-test.example/ & done; wait')
    began = time.monotonic()
    load = box.exec("bash", "-c", script, audit=log, timeout=180)
    elapsed = time.monotonic() - began
    codes = load.stdout.split()
    # On vm under TCG, on a loaded machine, one of the hundred curls in the emulated guest can be kept
    # off the CPU between its connect and its request for longer than the proxy's 10 s head timeout
    # (seen in a CI run beside the test host's QEMU; tests/load/soak.py meets the same): the proxy then
    # answers 408 and records it, as it must. A few such answers are counted, each with its record; on
    # ns every request is answered 200.
    late = codes.count("408") if any_tnk.backend == "vm" else 0
    assert len(codes) == 100 and codes.count("200") == 100 - late and late <= 5, (load.stdout, load.stderr)
    assert elapsed < 120, f"100 connections took {elapsed:.1f} s"
    assert settled_fds(supervisor, proxy) == before
    load_records = lambda rs: [r for r in rs if r["destination"] == "load.tnk-test.example"]  # noqa: E731
    tunnels = load_records(wait_for_records(log, "net_allow", lambda rs: len(load_records(rs)) >= 101 - late))
    assert len(tunnels) >= 100 - late and all(r["end"] == "closed" for r in tunnels)
    timed_out = [r for r in audit_records(log, "net_deny") if "request head within" in r.get("reason", "")]
    assert len(timed_out) == late, timed_out
    verify(any_tnk, log)
