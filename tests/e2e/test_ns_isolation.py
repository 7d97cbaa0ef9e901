"""ns backend only: what the namespaces and seccomp refuse, tested in pairs (the forbidden thing fails in
the sandbox; the same probe succeeds on the host). test_isolation.py has the tests both backends pass."""
import os
import subprocess

import pytest

from sandbox_harness import compile_probe, ns_tnk, sandbox  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user


def test_proc_shows_only_the_sandbox(sandbox):
    inside = sandbox.exec("sh", "-c", "ls /proc | grep -E '^[0-9]+$'").stdout.split()
    assert "1" in inside and str(os.getpid()) not in inside and len(inside) < 20
    assert str(os.getpid()) in os.listdir("/proc")  # the same listing on the host shows the test runner
    init = sandbox.exec("cat", "/proc/1/cmdline").stdout
    assert "/" not in init.replace("\0", " ").split()[0]  # PID 1 names no host path


@pytest.mark.needs_root  # its positive control writes a host setting
def test_root_inside_cannot_change_the_host_kernel(sandbox, tmp_path):
    probe = compile_probe(sandbox.project)
    value = open("/proc/sys/vm/swappiness").read().strip()
    with open("/proc/sys/vm/swappiness", "w") as f:  # host root may write it (the same value)
        f.write(value)
    write = sandbox.sh(f"echo {value} > /proc/sys/vm/swappiness", root=True)
    assert write.returncode != 0, "root in the sandbox wrote the host's /proc/sys"
    assert sandbox.exec("cat", "/proc/sys/vm/swappiness").stdout.strip() == value  # readable
    host = subprocess.run([str(probe), "finit_module"], capture_output=True, text=True).stdout.strip()
    inside = sandbox.exec("/workspace/probe", "finit_module", root=True).stdout.strip()
    assert host != "EPERM" and inside == "EPERM"


@pytest.mark.parametrize("call", ["tiocsti", "keyctl", "bpf", "unshare_user", "perf_event_open", "modify_ldt"])
def test_seccomp_refuses_what_the_host_allows(sandbox, call):
    probe = compile_probe(sandbox.project)
    host = subprocess.run([str(probe), call], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    inside = sandbox.exec("/workspace/probe", call, input="")
    assert host.stdout.strip() != "EPERM", f"{call} is refused on the host too: the pair proves nothing"
    assert inside.stdout.strip() == "EPERM", inside.stdout + inside.stderr


def test_m1_vsock_refused_inside_and_an_inet_socket_is_not(sandbox):
    """Security review M1: AF_VSOCK is not tied to a network namespace; the sandbox's filter refuses it
    (and every family but unix, inet, inet6 and netlink) as a kernel without it would."""
    probe = compile_probe(sandbox.project)
    host = subprocess.run([str(probe), "vsock"], capture_output=True, text=True)
    if host.stdout.strip() != "OK":
        pytest.skip(f"this host cannot make an AF_VSOCK socket ({host.stdout.strip()}): the pair would prove nothing")
    assert sandbox.exec("/workspace/probe", "vsock").stdout.strip() == "EAFNOSUPPORT"
    assert sandbox.exec("/workspace/probe", "vsock", root=True).stdout.strip() == "EAFNOSUPPORT"
    assert sandbox.exec("/workspace/probe", "inet").stdout.strip() == "OK"


def test_mount_refused_inside_allowed_in_own_namespace_on_host(sandbox):
    probe = compile_probe(sandbox.project)
    host = subprocess.run(["unshare", "-Urm", str(probe), "mount"], capture_output=True, text=True)
    assert host.stdout.strip() == "OK"
    assert sandbox.exec("/workspace/probe", "mount", root=True).stdout.strip() == "EPERM"
