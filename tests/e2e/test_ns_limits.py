"""ns backend: resource limits from the profile's manifest, where the host lets tnk apply them."""
import subprocess

from conftest import require
from sandbox_harness import Sandbox, ns_tnk, sandbox  # noqa: F401 (fixtures)

HOG = "set -o pipefail; head -c 300M /dev/zero | tail -n 1 | wc -c"

MANIFEST = """profile: small
resources:
  cpus: 1
  memory: 64MiB
mounts:
  workspace: /workspace
security:
  network: inference
"""


def test_memory_limit_kills_the_hog_not_the_sandbox(ns_tnk):
    (ns_tnk.config_dir / "sandbox.d" / "manifests" / "small.yaml").write_text(MANIFEST)
    box = Sandbox(ns_tnk, ns_tnk.project("small"))
    started = box.run("sandbox", "start", "--backend", "ns", "--profile", "small", timeout=900)
    # Without a cgroup for the limits the start is refused (security review M5; test_setup.py).
    require(started.returncode != 77, f"this host gives tnk no memory cgroup: {started.stderr}")
    assert started.returncode == 0 and "limits not applied" not in started.stderr, started.stderr
    host = subprocess.run(["bash", "-c", HOG], capture_output=True, text=True)
    assert host.returncode == 0 and host.stdout.strip() == str(300 * 1024 * 1024)  # fine without the limit
    inside = box.exec("bash", "-c", HOG)
    assert inside.returncode == 137, inside.stdout + inside.stderr  # the hog was OOM-killed
    # ... and the command says why (the exit event's note, issue 31), naming the limit.
    assert "OOM killer ended a process of this command" in inside.stderr, inside.stderr
    assert "(64 MiB, resources.memory" in inside.stderr, inside.stderr
    assert box.exec("echo", "alive").stdout == "alive\n"  # and the sandbox lives on


def test_m5_every_tmpfs_has_a_size_even_without_a_memory_limit(sandbox):
    """Security review M5: an unsized tmpfs takes up to half the host's memory. The sandbox's /dev/shm
    stops at 256 MiB; the same 300 MiB fit in the sandbox's /tmp (2 GiB), and in the host's /dev/shm."""
    write = "head -c 300M /dev/zero > {0}/m5-probe; status=$?; rm -f {0}/m5-probe; exit $status"
    host = subprocess.run(["sh", "-c", write.format("/dev/shm")], capture_output=True, text=True)
    assert host.returncode == 0, "the host's /dev/shm cannot take 300 MiB: the pair would prove nothing"
    full = sandbox.exec("sh", "-c", write.format("/dev/shm"))
    assert full.returncode != 0 and "No space left on device" in full.stderr, full.stderr
    assert sandbox.exec("sh", "-c", write.format("/tmp")).returncode == 0
    sizes = sandbox.exec("df", "-k", "--output=target,size", "/tmp", "/dev/shm", "/run").stdout.split()
    assert sizes[3:] == ["/tmp", str(2 * 1024 * 1024), "/dev/shm", str(256 * 1024), "/run", str(16 * 1024)], sizes
