"""Regression tests of findings of the outside security review (named by finding: test_h2_... is H2),
through the built binary. Each refusal is paired with an allowed control in the same run."""
import os
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import PROJECT_OWNER, TNK_BIN, require
from procs import children_named, descendants, process_table
from net_harness import (H2_IFACE, HOST4, HOST6, NEIGHBOUR4, NEIGHBOUR6, NETNS, OFF_LINK, audit_records,  # noqa: F401
                         host_netns, in_netns, start_with_hosts, test_host, tunnel, wait_for_records)  # (fixtures)
from sandbox_harness import Sandbox, any_tnk, ns_tnk, sandbox, vm_sandbox, vm_tnk  # noqa: F401 (fixtures)

OPEN = "security:\n  network: open\n"


@pytest.mark.needs_root
def test_h2_open_refuses_the_hosts_own_addresses_on_link_neighbours_and_other_ports(host_netns, any_tnk, tmp_path):
    """Security review H2: under `open`, a CONNECT to an address of the host's own interface (a service
    on 0.0.0.0/[::]) or to an on-link neighbour is refused, and `open` means ports 80 and 443 only."""
    (any_tnk.config_dir / "sandbox.d" / "manifests" / "wide.yaml").write_text(f"profile: wide\n{OPEN}")
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("wide"))
    started = in_netns(TNK_BIN, "sandbox", "start", "--backend", box.backend, "--profile", "wide", "--audit-log", str(log),
                       cwd=str(box.project), env=any_tnk.env, timeout=900)
    assert started.returncode == 0, started.stderr
    # Positive control: the host side reaches its own listener on both addresses.
    for host in (HOST4, f"[{HOST6}]"):
        direct = in_netns("curl", "-sS", "-g", "--http0.9", "--max-time", "5", f"http://{host}:443/")
        assert direct.stdout == "HOST-SERVICE\n", (host, direct.stderr)
    # The sandbox, through its proxy: the same listener, and the on-link neighbours, are refused.
    for host in (HOST4, HOST6, NEIGHBOUR4, NEIGHBOUR6):
        probe = tunnel(box, host, 443, log)
        assert "HOST-SERVICE" not in probe.stdout, host
        assert "CONNECT tunnel failed, response 403" in probe.stderr, (host, probe.stderr)
    # An off-link public address on 443 gets past the policy (then finds no route: 502, not 403)...
    off_link = tunnel(box, OFF_LINK, 443, log)
    assert "response 502" in off_link.stderr, off_link.stderr
    # ...and on 22 it is refused by the port rule.
    port_22 = tunnel(box, OFF_LINK, 22, log)
    assert "CONNECT tunnel failed, response 403" in port_22.stderr, port_22.stderr
    denied = {(r["destination"], r["port"]): r["reason"] for r in audit_records(log, "net_deny")}
    own = f"host-internal address (address of this host's interface {H2_IFACE})"
    on_link = f"host-internal address (on-link network of {H2_IFACE})"
    assert denied == {(HOST4, 443): own, (HOST6, 443): own, (NEIGHBOUR4, 443): on_link, (NEIGHBOUR6, 443): on_link,
                      (OFF_LINK, 22): "port not open"}, denied
    allowed = wait_for_records(log, "net_allow", lambda rs: any(r["destination"] == OFF_LINK for r in rs))
    assert any(r["destination"] == OFF_LINK and r["port"] == 443 and r["rule"] == "open"
               and "unreachable" in r["end"] for r in allowed), allowed
    assert all(r["policy"] == "open" for r in audit_records(log, "net_deny"))
    verify = any_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


class Credentials(NamedTuple):
    name: str
    uids: list  # real, effective, saved, fs
    gids: list
    caps: dict  # CapEff, CapPrm, CapAmb
    no_new_privs: str
    seccomp: str


def credentials(pid):
    """What /proc/PID/status shows of `pid`'s credentials, from the host's user namespace."""
    fields = {k: v.strip() for k, v in (line.split(":\t", 1) for line in
                                        Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)}
    return Credentials(fields["Name"], [int(u) for u in fields["Uid"].split()],
                       [int(g) for g in fields["Gid"].split()],
                       {key: int(fields[key], 16) for key in ("CapEff", "CapPrm", "CapAmb")},
                       fields["NoNewPrivs"], fields["Seccomp"])


def root_range_start(file):
    """Where root's sandboxes sit in `file` (/etc/subuid or /etc/subgid): root's own range, else 100000."""
    for line in Path(file).read_text().splitlines() if Path(file).exists() else []:
        parts = line.split(":")
        if len(parts) == 3 and parts[0] in ("root", "0") and int(parts[2]) >= 65536:
            return int(parts[1])
    return 100000


def qemu_side(state):
    """{pid: credentials} of the sandbox's QEMU and what it started: every process below QEMU, and any
    socat below the supervisor (QEMU's guestfwd forwarders were, until M5: glib's spawn handed them to
    the nearest subreaper, the supervisor)."""
    supervisor = int((state / "supervisor.pid").read_text().split()[0])
    table = process_table()
    (qemu,) = children_named(supervisor, "qemu-system-x86", table)
    pids = {qemu, *descendants(qemu, table)} | {p for p in descendants(supervisor, table) if table[p].comm == "socat"}
    found = {}
    for pid in pids:
        try:
            found[pid] = credentials(pid)
        except OSError:
            pass  # a forwarder that ended meanwhile
    return found


@pytest.mark.needs_root
def test_h1_root_started_vm_runs_qemu_unprivileged(vm_tnk):
    """Security review H1: in a vm sandbox root starts, QEMU runs as id 65535 of root's range: no uid or
    gid 0 among its real, effective, saved and fs ids, no capability (CapEff, CapPrm, CapAmb 0 as the host
    reads them), no_new_privs and its seccomp filter; and it starts nothing, not even for a guest
    connection to the proxy held open (M5: before, a socat per connection, with QEMU's ids). The control:
    the same reading of the supervisor, which stays root, finds uid 0 and capabilities. The sandbox still
    works: exec, the project both ways, the proxy's policy, a stop and a start again (read again)."""
    (vm_tnk.config_dir / "sandbox.d" / "manifests" / "wide.yaml").write_text(f"profile: wide\n{OPEN}")
    box = Sandbox(vm_tnk, vm_tnk.project("h1"))
    box.start("--profile", "wide")
    (state,) = sorted((vm_tnk.state_dir / "sandboxes").iterdir())
    account = (root_range_start("/etc/subuid") + 65535, root_range_start("/etc/subgid") + 65535)
    for attempt in ("first start", "after a restart"):
        # A guest connection to the proxy, held open while the walk looks.
        held = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", "bash", "-c",
                                 "exec 3<>/dev/tcp/10.0.2.2/3128 && echo connected && exec sleep 60"],
                                cwd=box.project, env=vm_tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            assert held.stdout.readline() == "connected\n", held.stderr.read()
            time.sleep(1)  # what QEMU would start for it has started by now
            below = qemu_side(state)
        finally:
            held.kill()
            held.wait()
        assert [c.name for c in below.values()] == ["qemu-system-x86"], (attempt, below)
        privileged = {pid: c for pid, c in below.items() if 0 in c.uids or 0 in c.gids or any(c.caps.values())}
        assert privileged == {}, (attempt, privileged)
        assert {(c.uids[0], c.gids[0]) for c in below.values()} == {account}, (attempt, below)
        assert {(c.no_new_privs, c.seccomp) for c in below.values()} == {("1", "2")}, (attempt, below)
        # The control: the supervisor, read the same way, is root with capabilities.
        supervisor = credentials(int((state / "supervisor.pid").read_text().split()[0]))
        assert 0 in supervisor.uids and supervisor.caps["CapEff"] != 0, supervisor
        # The sandbox works: the project both ways, and the proxy's policy reached through the forwarder.
        (box.project / "from-host").write_text("host\n")
        both = box.sh("cat /workspace/from-host && echo guest > /workspace/from-guest")
        assert both.returncode == 0 and both.stdout == "host\n", both.stderr
        st = (box.project / "from-guest").stat()
        assert ((st.st_uid, st.st_gid), (box.project / "from-guest").read_text()) == \
            ((PROJECT_OWNER, PROJECT_OWNER), "guest\n")
        refused = box.exec("curl", "-sS", "--max-time", "20", "--noproxy", "", "--proxy", "http://10.0.2.2:3128",
                           "http://127.0.0.1/")
        assert "a host-internal address" in refused.stdout, (refused.stdout, refused.stderr)  # the policy's answer
        for name in ("from-host", "from-guest"):
            (box.project / name).unlink()
        if attempt == "first start":
            assert box.run("sandbox", "stop", timeout=120).returncode == 0
            box.start("--profile", "wide")


M5_CAP = 4 << 20  # core/capped_log.h: kLogCapBytes


def wait_for_text(path, text, timeout=30):
    """True once `path` holds `text` (the supervisor copies the console as it comes, a moment later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_bytes():
            return True
        time.sleep(0.2)
    return False


def test_m5_serial_log_is_capped(vm_sandbox):
    """Security review M5: guest root writing the console without end (/dev/ttyS0, QEMU's serial port)
    must not fill the host's disk: serial.log is rotated at 4 MiB into serial.log.1, and the two hold at
    most 8 MiB. The control: what the guest writes on its console does reach serial.log, before the flood
    and after it."""
    (state,) = sorted((vm_sandbox.tnk.state_dir / "sandboxes").iterdir())
    serial, rotated = state / "serial.log", state / "serial.log.1"
    wrote = vm_sandbox.sh("echo M5-CONSOLE-BEFORE > /dev/ttyS0", root=True)
    assert wrote.returncode == 0, wrote.stderr
    assert wait_for_text(serial, b"M5-CONSOLE-BEFORE"), "the console's text never reached serial.log"
    # Past two caps (the second rotation drops the file the early text is in), with 1 MiB to spare: each
    # byte through the emulated UART costs the guest an exit to QEMU, about 100 KiB/s under TCG.
    flood = vm_sandbox.sh("head -c 9M /dev/zero | tr '\\0' x > /dev/ttyS0 && echo M5-CONSOLE-AFTER > /dev/ttyS0",
                          root=True, timeout=900)
    assert flood.returncode == 0, flood.stderr
    assert wait_for_text(serial, b"M5-CONSOLE-AFTER"), "the console's last text never reached serial.log"
    sizes = {p.name: p.stat().st_size for p in (serial, rotated) if p.exists()}
    assert serial.stat().st_size <= M5_CAP, sizes
    assert rotated.exists() and rotated.stat().st_size <= M5_CAP, sizes
    assert b"M5-CONSOLE-BEFORE" not in rotated.read_bytes() + serial.read_bytes()  # the oldest part was dropped
    assert vm_sandbox.exec("true").returncode == 0  # the guest still answers


VM_HOST_PIDS = 1024  # src/backend/vm/plan.h: kHostPidsLimit


def pids_cgroup(pid):
    """The directory of `pid`'s cgroup that has the pids controller: its cgroup v1 hierarchy's, else v2's."""
    lines = [line.split(":", 2) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    for _, controllers, path in lines:
        if "pids" in controllers.split(","):
            return Path("/sys/fs/cgroup/pids") / path.lstrip("/")
    (v2,) = [path for hierarchy, _, path in lines if hierarchy == "0"]
    return Path("/sys/fs/cgroup") / v2.lstrip("/")


def vm_host_processes(state):
    """The pids of a vm sandbox's host processes below its supervisor: QEMU and what it started
    (qemu_side), and each virtiofsd with the process it forks."""
    supervisor = int((state / "supervisor.pid").read_text().split()[0])
    table = process_table()
    virtiofsd = children_named(supervisor, "virtiofsd", table)
    return set(qemu_side(state)) | set(virtiofsd) | {p for v in virtiofsd for p in descendants(v, table)}


# Root's sandboxes and a user's get their cgroups in different places (src/linux/cgroups.h): scripts/test.sh runs
# the first in its root pass, the second in its user pass (the markers choose).
@pytest.mark.parametrize("run_by", [pytest.param("root", marks=pytest.mark.needs_root),
                                    pytest.param("user", marks=pytest.mark.rootless_suite)])
def test_m5_a_vm_sandboxs_host_processes_are_few_and_in_its_cgroup_under_a_pids_limit(vm_tnk, run_by):
    """Security review M5: a vm sandbox's host processes are QEMU and virtiofsd, in the sandbox's own
    cgroup tnk-<id>, whose pids.max is 1024: a QEMU or virtiofsd made to spawn without end stops there,
    not at the host's limit. Guest connections start no process: while three connections to the proxy
    are held open, the cgroup holds the same processes as before them (before: a socat each, seen
    failing). The controls: the three connections do reach the proxy (they are held, and a request
    through it gets the proxy's answer); the supervisor, tnk's own process, stays in the cgroup it was
    started in, outside the limit; the cgroup is gone once the sandbox stops."""
    (vm_tnk.config_dir / "sandbox.d" / "manifests" / "wide.yaml").write_text(f"profile: wide\n{OPEN}")
    box = Sandbox(vm_tnk, vm_tnk.project("m5-vm"))
    box.start("--profile", "wide")  # the proxy listens (10.0.2.2:3128) under `open`
    (state,) = sorted((vm_tnk.state_dir / "sandboxes").iterdir())
    before = vm_host_processes(state)
    assert {credentials(p).name for p in before} == {"qemu-system-x86", "virtiofsd"}, before
    held = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", "bash", "-c",
                             "exec 3<>/dev/tcp/10.0.2.2/3128 4<>/dev/tcp/10.0.2.2/3128 "
                             "5<>/dev/tcp/10.0.2.2/3128 && echo connected && exec sleep 120"],
                            cwd=box.project, env=vm_tnk.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert held.stdout.readline() == "connected\n", held.stderr.read()
        time.sleep(1)  # what QEMU would start for them has started by now
        during = vm_host_processes(state)
        cgroups = {pid: pids_cgroup(pid) for pid in during}
        assert len(set(cgroups.values())) == 1, cgroups
        (cgroup,) = set(cgroups.values())
        assert cgroup.name == state.name, cgroups  # the id, "tnk-..." (src/linux/cgroups.h)
        assert (cgroup / "pids.max").read_text().strip() == str(VM_HOST_PIDS)
        assert {int(p) for p in (cgroup / "cgroup.procs").read_text().split()} == during == before, \
            {p: credentials(p).name for p in during}
    finally:
        held.kill()
        held.wait()
    supervisor = int((state / "supervisor.pid").read_text().split()[0])
    assert pids_cgroup(supervisor) != cgroup
    answer = box.exec("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                      "--noproxy", "", "--proxy", "http://10.0.2.2:3128", "http://127.0.0.1/")
    assert answer.returncode == 0 and answer.stdout == "403", answer  # the proxy's own refusal
    assert box.run("sandbox", "stop", timeout=120).returncode == 0
    assert not cgroup.exists()


def allocated(path):
    return path.lstat().st_blocks * 512 if path.exists() else 0


# As the cgroup test above: root's sandbox in the root pass, a user's in the user pass.
@pytest.mark.parametrize("run_by", [pytest.param("root", marks=pytest.mark.needs_root),
                                    pytest.param("user", marks=pytest.mark.rootless_suite)])
def test_m5_an_ns_sandboxs_disk_is_bounded_by_resources_disk(ns_tnk, run_by):
    """Security review M5, disk: an ns sandbox whose writes on the host pass its manifest's
    resources.disk (96 MiB here) is stopped by its disk watch, and the command that was writing says
    why: a 2 GiB write ends far short of 2 GiB (before the watch, seen failing: all of it landed). The
    controls: a 32 MiB write under the limit succeeds and the sandbox keeps running; nothing is lost
    at the stop; with the limit raised, the sandbox starts again on the same files, and the same kind
    of write that was stopped succeeds."""
    manifest = ns_tnk.config_dir / "sandbox.d" / "manifests" / "small.yaml"
    manifest.write_text("profile: small\nresources:\n  disk: 96MiB\n")
    box = Sandbox(ns_tnk, ns_tnk.project("m5-disk"))
    box.start("--profile", "small")
    (state,) = sorted((ns_tnk.state_dir / "sandboxes").iterdir())
    home = state / "upper" / "home" / "agent"
    write = 'dd if=/dev/zero of="$HOME/$1" bs=1M count="$2" status=none && echo written'
    kept = box.exec("bash", "-c", write, "-", "kept", "32")
    assert kept.returncode == 0 and kept.stdout == "written\n", kept
    assert allocated(home / "kept") >= 32 << 20
    time.sleep(0.5)  # a measurement or two: still under the limit, still running
    assert box.exec("true").returncode == 0

    filled = box.exec("bash", "-c", write, "-", "fill", "2048", timeout=300)
    assert filled.returncode == 1 and "written" not in filled.stdout, filled
    assert "disk is full" in filled.stderr and "resources.disk of 96.0 MiB" in filled.stderr, filled.stderr
    assert allocated(home / "fill") < 1 << 30, allocated(home / "fill")
    assert not (state / "supervisor.pid").exists()  # stopped
    assert allocated(home / "kept") >= 32 << 20  # kept

    manifest.write_text("profile: small\nresources:\n  disk: 4GiB\n")
    box.start("--profile", "small")
    again = box.exec("bash", "-c", 'rm "$HOME/fill" && ' + write, "-", "fill", "256", timeout=300)
    assert again.returncode == 0 and again.stdout == "written\n", again
    assert allocated(home / "fill") >= 256 << 20
    assert allocated(home / "kept") >= 32 << 20


def test_m5_the_supervisors_output_goes_through_its_capped_log(sandbox):
    """Security review M5, supervisor.log: the supervisor's stderr (shared by the relays it forks, whose
    lines a sandbox can trigger) is a pipe its own thread copies into supervisor.log with the cap that
    capped_log_test.cc checks; never the file itself, which anyone holding it could grow without bound.
    The control: the supervisor's lines still arrive in supervisor.log."""
    (state,) = sorted((sandbox.tnk.state_dir / "sandboxes").iterdir())
    supervisor = (state / "supervisor.pid").read_text().split()[0]
    for fd in (1, 2):
        assert os.readlink(f"/proc/{supervisor}/fd/{fd}").startswith("pipe:"), fd
    assert wait_for_text(state / "supervisor.log", f"tnk-supervisor: sandbox {state.name} is running".encode())


# L1 and L3: a listener on the test host (net_harness.test_host, 198.51.100.2) that records every byte it
# receives per port (443: TLS, 8080: plain http) and answers "REACHED" to whatever arrives first.
RECORDER = (
    "import socket,sys,threading\n"
    "def handle(c,port):\n"
    "  c.settimeout(1.5);got=b''\n"
    "  try:\n"
    "    got=c.recv(65536)\n"
    "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 8\\r\\nConnection: close\\r\\n\\r\\nREACHED\\n')\n"
    "    while True:\n"
    "      more=c.recv(65536)\n"
    "      if not more: break\n"
    "      got+=more\n"
    "  except OSError: pass\n"
    "  if got:\n"
    "    with open(f'{sys.argv[1]}/{port}.log','ab') as f: f.write(got+b'\\n--\\n')\n"
    "  c.close()\n"
    "def serve(port):\n"
    "  s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "  s.bind((sys.argv[2],port));s.listen(16)\n"
    "  while True:\n"
    "    c,_=s.accept();threading.Thread(target=handle,args=(c,port),daemon=True).start()\n"
    "for p in (443,8080): threading.Thread(target=serve,args=(p,),daemon=True).start()\n"
    "threading.Event().wait()\n"
)
# Runs in the sandbox (bash only: the image has no python): sends $1 (printf %b escapes) to the sandbox's
# proxy; when $2 is not empty, reads the proxy's answer head and then sends $2. Prints what came back.
# With $3 = N, asks N times, then once more a second later, and prints the last answer.
CLIENT = r"""
hp=${http_proxy#*://}; hp=${hp%%/*}
ask() {
  exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}" || exit 1
  printf '%b' "$1" >&3
  if [ -n "$2" ]; then
    while IFS= read -r line <&3; do printf '%s\n' "$line"; [ "$line" = $'\r' ] && break; done
    printf '%b' "$2" >&3
  fi
  timeout 10 cat <&3
  exec 3<&-
}
if [ "$3" -gt 1 ]; then
  for i in $(seq "$3"); do ask "$1" "$2" >/dev/null; done
  sleep 1.2
fi
ask "$1" "$2"
"""


def escaped(data):
    return "".join(f"\\x{b:02x}" for b in data)


def client_hello(server_name):
    """The first flight of a real TLS client (Python's ssl, OpenSSL) naming `server_name` (None: no SNI)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


FRONT, HIDDEN = "front.tnk-test.example", "hidden.tnk-test.example"
FRONTED = f"""profile: fronted
security:
  network: allowlist
network:
  allow:
    - {FRONT}
    - {FRONT}:8080
"""


@pytest.fixture
def recorder(test_host, tmp_path):
    """The test host, with RECORDER on its 443 and 8080; yields the directory of its <port>.log files."""
    logs = tmp_path / "recorder"
    logs.mkdir()
    server = subprocess.Popen(["ip", "netns", "exec", NETNS, "/usr/bin/python3", "-c", RECORDER, str(logs), test_host])
    try:
        for _ in range(100):
            try:
                socket.create_connection((test_host, 8080), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield logs
    finally:
        server.kill()
        server.wait()


def fronted_sandbox(tnk, test_host, log):
    (tnk.config_dir / "sandbox.d" / "manifests" / "fronted.yaml").write_text(FRONTED)
    box = Sandbox(tnk, tnk.project("fronted"))
    start_with_hosts(box, {FRONT: test_host, HIDDEN: test_host}, "--profile", "fronted", "--audit-log", str(log))
    return box


def through_proxy(box, request, then=b"", log=None, count=1):
    """What the proxy (and what is behind it) sent back, with line ends as "\\n" (text mode)."""
    result = box.exec("bash", "-c", CLIENT, "client", escaped(request), escaped(then), str(count), audit=log,
                      timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def recorded(logs, port):
    path = logs / f"{port}.log"
    return path.read_bytes() if path.exists() else b""


@pytest.mark.needs_root
def test_l1_malformed_request_with_non_ascii_bytes_gets_400_and_a_net_deny_record(any_tnk, tmp_path, test_host):
    """Security review L1: a refused head with bytes >= 0x80 is answered (400) and recorded (net_deny),
    its bytes escaped; the pair is the same refusal in plain ASCII."""
    log = tmp_path / "audit.ndjson"
    box = fronted_sandbox(any_tnk, test_host, log)
    for name, shown in ((b"a b", 'invalid header name "a b"'), (b"\xff\xc3", 'invalid header name "\\xff\\xc3"')):
        answer = through_proxy(box, b"GET http://x/ HTTP/1.1\r\n" + name + b": a\r\n\r\n", log=log)
        assert answer.startswith("HTTP/1.1 400 Bad Request\n"), (name, answer)
        assert answer.endswith(f"tnk: bad request: {shown}\n"), answer
        denied = wait_for_records(log, "net_deny", lambda rs: any(shown in r["reason"] for r in rs), timeout=5)
        assert any(r["reason"] == f"bad request: {shown}" for r in denied), (name, denied)
    verify = any_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.needs_root
def test_l1_refusal_loop_is_rate_limited_in_supervisor_log_but_not_in_the_audit_log(ns_tnk, tmp_path, test_host):
    """Security review L1/M5: 200 refused requests in a row leave 200 net_deny records, but only a few
    lines and one "similar lines suppressed" note in supervisor.log; a single refusal is logged as is."""
    log = tmp_path / "audit.ndjson"
    box = fronted_sandbox(ns_tnk, test_host, log)
    sandbox_id = ns_tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)["id"]
    supervisor_log = ns_tnk.state_dir / "sandboxes" / sandbox_id / "supervisor.log"
    one = through_proxy(box, f"GET http://{HIDDEN}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode(), log=log)
    assert "is not in this sandbox's allow-list" in one
    assert f"denied {HIDDEN} port 80: not in allow-list" in supervisor_log.read_text()
    through_proxy(box, b"GET http://x/ HTTP/1.1\r\n\xff: a\r\n\r\n", log=log, count=200)
    flood = lambda rs: [r for r in rs if r["reason"].startswith("bad request")]  # noqa: E731
    denied = flood(wait_for_records(log, "net_deny", lambda rs: len(flood(rs)) >= 201))
    assert len(denied) == 201, len(denied)
    lines = supervisor_log.read_text().splitlines()
    logged = [line for line in lines if "bad request" in line]
    assert len(logged) < 100, len(logged)
    assert any(line.endswith("similar lines suppressed") for line in lines), lines[-20:]


@pytest.mark.needs_root
def test_l3_connect_carries_only_a_tls_hello_for_its_own_name(any_tnk, tmp_path, recorder, test_host):
    """Security review L3 (domain fronting): through a CONNECT to an allowed name, a ClientHello for
    that name reaches the server (the pair); one for another name, or with no name, is refused (the
    tunnel closes, net_deny) and never reaches it."""
    log = tmp_path / "audit.ndjson"
    box = fronted_sandbox(any_tnk, test_host, log)
    connect = f"CONNECT {FRONT}:443 HTTP/1.1\r\nHost: {FRONT}:443\r\n\r\n".encode()
    allowed = through_proxy(box, connect, client_hello(FRONT.upper()), log=log)
    assert allowed.startswith("HTTP/1.1 200 Connection established\n\n") and "REACHED" in allowed, allowed
    for sni in (HIDDEN, None):
        refused = through_proxy(box, connect, client_hello(sni), log=log)
        assert refused == "HTTP/1.1 200 Connection established\n\n", (sni, refused)
    seen = recorded(recorder, 443)
    assert FRONT.encode() in seen.lower() and HIDDEN.encode() not in seen and seen.count(b"\n--\n") == 1, seen
    reasons = {f"TLS server name {HIDDEN} is not the CONNECT name", "a TLS ClientHello without a server name"}
    denied = wait_for_records(log, "net_deny", lambda rs: reasons <= {r["reason"] for r in rs})
    assert reasons <= {r["reason"] for r in denied if r["destination"] == FRONT and r["port"] == 443}, denied
    assert any(r["destination"] == FRONT and r["port"] == 443 for r in audit_records(log, "net_allow"))


@pytest.mark.needs_root
def test_l3_plain_http_passes_the_first_request_only(any_tnk, tmp_path, recorder, test_host):
    """Security review L3 (pipelining): the first request of a plain-http connection reaches the allowed
    server (the pair); a second one pipelined behind it, for another Host, does not."""
    log = tmp_path / "audit.ndjson"
    box = fronted_sandbox(any_tnk, test_host, log)
    first = f"POST http://{FRONT}:8080/first HTTP/1.1\r\nHost: {FRONT}:8080\r\nContent-Length: 4\r\n\r\nbody"
    second = f"GET /second HTTP/1.1\r\nHost: {HIDDEN}\r\n\r\n"
    answer = through_proxy(box, (first + second).encode(), log=log)
    assert answer.startswith("HTTP/1.1 200 OK") and answer.endswith("REACHED\n"), answer
    seen = recorded(recorder, 8080)
    assert HIDDEN.encode() not in seen and b"/second" not in seen, seen
    assert seen.startswith(b"POST /first HTTP/1.1\r\n") and seen.endswith(b"\r\n\r\nbody\n--\n"), seen
    allowed = wait_for_records(log, "net_allow", lambda rs: any(r["port"] == 8080 for r in rs))
    assert any(r["destination"] == FRONT and r["port"] == 8080 and r["end"] == "closed" for r in allowed), allowed


def set_id_or_foreign(project: Path, owner: int):
    """Every path below `project` (itself included) that has a set-id bit or another owner than `owner`."""
    found = []
    for path in [project, *project.rglob("*")]:
        st = path.lstat()
        if st.st_mode & 0o6000 or st.st_uid != owner or st.st_gid != owner:
            found.append(f"{path.relative_to(project)} {st.st_mode:o} {st.st_uid}:{st.st_gid}")
    return found


# The ids the harness gives a project run by root (conftest.PROJECT_OWNER), or the user's own.
def project_owner():
    return PROJECT_OWNER if os.geteuid() == 0 else os.getuid()


@pytest.mark.parametrize("run_by", [pytest.param("root", marks=pytest.mark.needs_root),
                                    pytest.param("user", marks=pytest.mark.rootless_suite)])
def test_issue32_r3_h2_the_host_refuses_set_id_files_and_foreign_owners_whatever_guest_root_asks(vm_tnk, run_by):
    """Issue 32 item 2, security review 3 R3-H2 (host side): virtiofsd itself keeps the project's rules, so a
    guest whose kernel no longer does (guest root as PID 1) still cannot leave the host a set-id file or
    one of another owner. Guest root (a `--root` session, in a directory the agent left writable to all)
    copies a shell, makes it 6755, creates a file and chowns it to 1234, makes a directory and a FIFO: on
    the host nothing in the project has a set-id bit or an owner but the user (before: a 6755 shell owned
    by the subordinate id of guest root, seen failing). The control: the agent's ordinary work (create,
    chmod +x and run, rename, symlink, mkdir -p and rm -r, a git repository and commit) works, and its files
    are the user's with the modes it gave them."""
    owner = project_owner()
    project = vm_tnk.project("r3h2-host")
    (project / "victim").write_text("data\n")
    box = Sandbox(vm_tnk, project)
    box.start()
    work = box.sh("cd /workspace && mkdir open && chmod 0777 open && printf 'echo ran\\n' > run.sh && "
                  "chmod +x run.sh && ./run.sh && mv run.sh tool.sh && ln -s tool.sh link && mkdir -p d/e/f && "
                  "touch d/e/f/x && rm -r d && git init -q repo && cd repo && echo a > a && git add a && "
                  "git -c user.email=a@b -c user.name=a commit -q -m a && git log --format=%s")
    assert work.returncode == 0 and work.stdout == "ran\na\n", work
    assert (project / "tool.sh").stat().st_mode & 0o777 == 0o755 and (project / "link").is_symlink()
    assert (project / "repo" / ".git" / "objects").is_dir()
    root = box.exec("sh", "-c", "cd /workspace/open; cp /bin/sh shell && chmod 6755 shell; touch mine; "
                    "chown 1234:1234 mine; mkdir dir; mkfifo fifo; ls -ln", root=True)
    found = set_id_or_foreign(project, owner)
    assert found == [], (found, root.stdout, root.stderr)
    # The agent's own refusals stay as they were (the guest's filter): its chmod u+s fails too.
    assert box.sh("chmod 6755 /workspace/victim").returncode != 0
    assert set_id_or_foreign(project, owner) == []
    # virtiofsd (and the process it serves from) runs as the owner, with no_new_privs and the set-id
    # filter (Seccomp 2: filter mode), under which virtiofsd stacks its own.
    (state,) = sorted((vm_tnk.state_dir / "sandboxes").iterdir())
    supervisor = int((state / "supervisor.pid").read_text().split()[0])
    table = process_table()
    served = [p for v in children_named(supervisor, "virtiofsd", table) for p in [v, *descendants(v, table)]]
    assert served and all(credentials(p).uids[0] == owner and credentials(p).no_new_privs == "1" and
                          credentials(p).seccomp == "2" for p in served), {p: credentials(p) for p in served}


# A wrapper in place of the guest's /usr/sbin/tnk-agent, as the review's: it leaves a mark on the guest's
# disk when it runs, then runs the real agent, so that the sandbox works either way.
TROJAN_INIT = "#!/bin/sh\necho planted > /var/tmp/r3h2-planted\nexec /usr/sbin/tnk-agent.real \"$@\"\n"


@pytest.mark.parametrize("run_by", [pytest.param("root", marks=pytest.mark.needs_root),
                                    pytest.param("user", marks=pytest.mark.rootless_suite)])
def test_issue32_r3_h2_guest_root_cannot_replace_the_init_of_the_next_start(vm_tnk, run_by):
    """Issue 32 item 2, security review 3 R3-H2 (init): guest root (a `--root` session here; provisioning's
    sudo or a package's postinst alike) replaces /usr/sbin/tnk-agent on the sandbox's disk with a wrapper
    that leaves a mark. After a stop and a start the mark is not there: the kernel's root is the read-only
    base disk and its init the agent tnk put there (before: the wrapper ran as PID 1, seen failing). The
    controls: the wrapper is still on the sandbox's disk (the start did not simply throw the disk away),
    a file the agent left in its home is still there, and the sandbox answers."""
    box = Sandbox(vm_tnk, vm_tnk.project("r3h2-init"))
    box.start()
    assert box.sh("echo kept > /home/agent/mark").returncode == 0
    plant = box.exec("sh", "-c", "mv /usr/sbin/tnk-agent /usr/sbin/tnk-agent.real && cat > /usr/sbin/tnk-agent && "
                     "chmod 755 /usr/sbin/tnk-agent && echo planted", root=True, input=TROJAN_INIT)
    assert plant.returncode == 0 and plant.stdout == "planted\n", plant
    assert box.run("sandbox", "stop", timeout=120).returncode == 0
    assert box.run("sandbox", "start", timeout=300).returncode == 0
    after = box.exec("sh", "-c", "cat /var/tmp/r3h2-planted 2>/dev/null; head -n 1 /usr/sbin/tnk-agent; "
                     "cat /home/agent/mark", root=True)
    assert after.returncode == 0 and after.stdout == "#!/bin/sh\nkept\n", after
