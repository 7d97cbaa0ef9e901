"""ns backend: resource limits from the profile's manifest, where the host lets tnk apply them."""
import subprocess

from conftest import require
from sandbox_harness import Sandbox, ns_tnk  # noqa: F401 (fixtures)

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
    started = box.start("--profile", "small")
    require("limits not applied" not in started.stderr, f"this host gives tnk no memory cgroup: {started.stderr}")
    host = subprocess.run(["bash", "-c", HOG], capture_output=True, text=True)
    assert host.returncode == 0 and host.stdout.strip() == str(300 * 1024 * 1024)  # fine without the limit
    inside = box.exec("bash", "-c", HOG)
    assert inside.returncode == 137, inside.stdout + inside.stderr  # the hog was OOM-killed
    assert box.exec("echo", "alive").stdout == "alive\n"  # and the sandbox lives on
