"""Isolation on each backend, tested from the outside and in pairs (the forbidden thing fails in the
sandbox; the same probe succeeds where it is allowed). Every test runs on ns and on vm."""
import os
import subprocess

import pytest

from net_harness import audit_records, serve, wait_for_records
from sandbox_harness import Sandbox, any_sandbox, any_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user


def test_host_secret_and_sibling_project_are_invisible(any_sandbox):
    home = any_sandbox.tnk.home
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_test").write_text("SECRET-HOST-KEY-3b1f\n")
    sibling = any_sandbox.tnk.project("sibling")
    (sibling / "notes.txt").write_text("SECRET-SIBLING-9c2e\n")
    (any_sandbox.project / "readme.txt").write_text("PROJECT-MARKER-7a4d\n")
    # The same cat: the project file is readable, the host's key and the sibling are not there.
    assert any_sandbox.exec("cat", "/workspace/readme.txt").stdout == "PROJECT-MARKER-7a4d\n"
    for path in (home / ".ssh" / "id_test", sibling / "notes.txt"):
        result = any_sandbox.exec("cat", str(path))
        assert result.returncode == 1 and "No such file" in result.stderr
    # A search of the whole sandbox finds the project's marker and neither secret.
    search = 'cd / && rg -uuu -l --no-messages -e "$1" -e "$2" -e "$3" $(ls -A / | grep -v -x -e proc -e sys -e dev)'
    found = any_sandbox.exec("sh", "-c", search, "sh", "PROJECT-MARKER-7a4d", "SECRET-HOST-KEY-3b1f", "SECRET-SIBLING-9c2e",
                         timeout=300)
    assert found.stdout.split() == ["workspace/readme.txt"]


def test_host_environment_does_not_leak(any_sandbox):
    env = {"AWS_SECRET_ACCESS_KEY": "leak-me-5e6f", "SSH_AUTH_SOCK": "/tmp/agent.sock"}
    result = any_sandbox.exec("env", env_flags=["MY_FLAG=given"], env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "MY_FLAG=given" in lines  # the explicit -e reaches the sandbox
    assert any(line.startswith("TNK_INFERENCE_URL=http://host.lima.internal:") for line in lines)
    assert not any("leak-me-5e6f" in line or line.startswith("SSH_AUTH_SOCK=") for line in lines)


def test_only_the_inference_endpoint_is_reachable(any_tnk):
    endpoint, other = serve(b"ENDPOINT-OK"), serve(b"OTHER-SERVICE")
    try:
        any_tnk.env["TNK_SERVER_PORT"] = str(endpoint.server_address[1])
        box = Sandbox(any_tnk, any_tnk.project("net"))
        box.start()
        port, other_port = endpoint.server_address[1], other.server_address[1]
        ok = box.exec("curl", "-sS", "--max-time", "5", f"http://host.lima.internal:{port}/v1/models")
        assert ok.returncode == 0 and ok.stdout == "ENDPOINT-OK", ok.stderr
        ok = box.exec("curl", "-sS", "--max-time", "5", f"http://host.tnk.internal:{port}/health")
        assert ok.stdout == "ENDPOINT-OK"
        # The host itself reaches the other service; the sandbox does not, by any name.
        assert subprocess.run(["curl", "-sS", f"http://127.0.0.1:{other_port}/"], capture_output=True,
                              text=True).stdout == "OTHER-SERVICE"
        # vm: 10.0.2.2 is where the guest reaches the relays: QEMU connects for it in its own network
        # namespace, where no other host service is.
        hosts = ["127.0.0.1", "host.lima.internal"] + (["10.0.2.2"] if box.backend == "vm" else [])
        for host in hosts:
            denied = box.exec("curl", "-sS", "--max-time", "5", f"http://{host}:{other_port}/")
            assert denied.returncode != 0 and "OTHER-SERVICE" not in denied.stdout, host
            raw = box.exec("bash", "-c", f"exec 3<>/dev/tcp/{host}/{other_port}")
            assert raw.returncode != 0, host
        devices = box.exec("cat", "/proc/net/dev").stdout
        interfaces = sorted(line.split(":")[0].strip() for line in devices.splitlines()[2:])
        assert interfaces == (["eth0", "lo"] if box.backend == "vm" else ["lo"])
    finally:
        endpoint.shutdown()
        other.shutdown()


@pytest.mark.needs_root  # it gives the project to another user
def test_workspace_files_belong_to_the_project_owner(any_tnk):
    # The owner is read when the sandbox starts: its workspace mount maps agent to that owner.
    box = Sandbox(any_tnk, any_tnk.project("owned"))
    os.chown(box.project, 1234, 1234)
    box.start()
    assert box.exec("id", "-u").stdout.strip() == "1000"
    made = box.sh("echo hi > /workspace/made-inside && mkdir -p /workspace/d/e && touch /workspace/d/e/f")
    assert made.returncode == 0, made.stderr
    for path in ("made-inside", "d", "d/e/f"):
        st = os.stat(box.project / path)
        assert (st.st_uid, st.st_gid) == (1234, 1234), path
    (box.project / "from-host").write_text("x")
    os.chown(box.project / "from-host", 1234, 1234)
    assert box.exec("stat", "-c", "%u", "/workspace/from-host").stdout.strip() == "1000"


def build_deb(dest):
    root = dest / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "share" / "tnk-probe").mkdir(parents=True)
    (root / "usr" / "share" / "tnk-probe" / "marker").write_text("installed\n")
    (root / "DEBIAN" / "control").write_text(
        "Package: tnk-probe\nVersion: 1.0\nArchitecture: all\nMaintainer: tnk tests <t@example.invalid>\n"
        "Description: package installed by the isolation test\n")
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(dest / "tnk-probe.deb")],
                   check=True, capture_output=True)


def test_a_package_installed_in_one_sandbox_is_absent_from_another(any_tnk):
    first = Sandbox(any_tnk, any_tnk.project("first"))
    second = Sandbox(any_tnk, any_tnk.project("second"))
    first.start()
    second.start()
    build_deb(first.project)
    installed = first.exec("dpkg", "-i", "/workspace/tnk-probe.deb", root=True)
    assert installed.returncode == 0, installed.stderr
    assert first.exec("dpkg", "-s", "tnk-probe").returncode == 0
    assert first.exec("cat", "/usr/share/tnk-probe/marker").stdout == "installed\n"
    assert second.exec("dpkg", "-s", "tnk-probe").returncode == 1
    assert second.exec("test", "-e", "/usr/share/tnk-probe/marker").returncode == 1
    # and it stays installed across a restart of its sandbox
    assert first.run("sandbox", "stop").returncode == 0
    assert first.exec("cat", "/usr/share/tnk-probe/marker").stdout == "installed\n"


OFFLINE = """profile: offline
mounts:
  workspace: /workspace
security:
  network: none
"""


def test_network_none_blocks_even_the_endpoint(any_tnk, tmp_path):
    endpoint = serve(b"ENDPOINT-OK")
    offline_log, online_log = tmp_path / "offline.ndjson", tmp_path / "online.ndjson"
    try:
        port = endpoint.server_address[1]
        any_tnk.env["TNK_SERVER_PORT"] = str(port)
        (any_tnk.config_dir / "sandbox.d" / "manifests" / "offline.yaml").write_text(OFFLINE)
        offline = Sandbox(any_tnk, any_tnk.project("offline"))
        online = Sandbox(any_tnk, any_tnk.project("online"))
        offline.start("--profile", "offline", "--audit-log", str(offline_log))
        online.start("--audit-log", str(online_log))
        url = f"http://host.lima.internal:{port}/v1/models"
        assert online.exec("curl", "-sS", "--max-time", "5", url, audit=online_log).stdout == "ENDPOINT-OK"
        denied = offline.exec("curl", "-sS", "--max-time", "5", url, audit=offline_log)
        assert denied.returncode != 0 and "ENDPOINT-OK" not in denied.stdout
        # The pair in the logs: the endpoint connection is a record; under `none` nothing got through
        # (the kernel refused it inside the sandbox: no relay saw it, so there is nothing to record).
        records = wait_for_records(online_log, "inference_request", lambda rs: rs != [])
        assert any(r["rule"] == "inference endpoint" for r in records)
        assert audit_records(offline_log, "inference_request") == audit_records(offline_log, "net_allow") == []
        for log in (offline_log, online_log):
            assert any_tnk.run("audit", "verify", str(log)).returncode == 0
    finally:
        endpoint.shutdown()
