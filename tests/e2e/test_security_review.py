"""Regression tests of findings of the outside security review (named by finding: test_h2_... is H2),
through the built binary. Each refusal is paired with an allowed control in the same run."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import TNK_BIN, require
from net_harness import audit_records, wait_for_records
from sandbox_harness import Sandbox, ns_tnk, sandbox, vm_sandbox, vm_tnk  # noqa: F401 (fixtures)

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
OPEN = "security:\n  network: open\n"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


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


@pytest.mark.needs_root
def test_h2_open_refuses_the_hosts_own_addresses_on_link_neighbours_and_other_ports(host_netns, ns_tnk, tmp_path):
    """Security review H2: under `open`, a CONNECT to an address of the host's own interface (a service
    on 0.0.0.0/[::]) or to an on-link neighbour is refused, and `open` means ports 80 and 443 only."""
    (ns_tnk.config_dir / "sandbox.d" / "manifests" / "wide.yaml").write_text(f"profile: wide\n{OPEN}")
    log = tmp_path / "audit.ndjson"
    box = Sandbox(ns_tnk, ns_tnk.project("wide"))
    started = in_netns(TNK_BIN, "sandbox", "start", "--backend", "ns", "--profile", "wide", "--audit-log", str(log),
                       cwd=str(box.project), env=ns_tnk.env, timeout=900)
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
    verify = ns_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


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
    flood = vm_sandbox.sh("head -c 12M /dev/zero | tr '\\0' x > /dev/ttyS0 && echo M5-CONSOLE-AFTER > /dev/ttyS0",
                          root=True, timeout=900)
    assert flood.returncode == 0, flood.stderr
    assert wait_for_text(serial, b"M5-CONSOLE-AFTER"), "the console's last text never reached serial.log"
    sizes = {p.name: p.stat().st_size for p in (serial, rotated) if p.exists()}
    assert serial.stat().st_size <= M5_CAP, sizes
    assert rotated.exists() and rotated.stat().st_size <= M5_CAP, sizes
    assert b"M5-CONSOLE-BEFORE" not in rotated.read_bytes() + serial.read_bytes()  # the oldest part was dropped
    assert vm_sandbox.exec("true").returncode == 0  # the guest still answers


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
