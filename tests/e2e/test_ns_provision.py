"""ns backend: provisioning with a profile (fingerprint, re-runs, failures, audit)."""
import json

from net_harness import debian_mirror_host, wait_for_records
from ns_harness import NsSandbox, ns_tnk  # noqa: F401 (fixtures)

HELLO = """#!/usr/bin/env bash
set -Eeuo pipefail
source "$(dirname "$0")/lib/provision-lib.sh"
echo "provisioning as $(id -un) with model=$TNK_MODEL_NAME mount=$TNK_WORKSPACE_MOUNT"
echo "{marker}" > "$HOME/provisioned"
"""


def add_profile(tnk, name, script):
    provision = tnk.config_dir / "sandbox.d" / "provision.d"
    (provision / f"{name}.sh").write_text(script)


def audit_events(path):
    return [json.loads(line)["event"] for line in path.read_text().splitlines()]


def test_provisioning_runs_once_and_again_when_the_script_changes(ns_tnk):
    add_profile(ns_tnk, "hello", HELLO.format(marker="one"))
    box = NsSandbox(ns_tnk, ns_tnk.project("prov"))
    log = ns_tnk.home / "audit.ndjson"
    first = box.start("--profile", "hello", "--audit-log", str(log))
    assert "provisioning as agent with model=" in first.stdout + first.stderr
    assert box.exec("cat", "/home/agent/provisioned").stdout == "one\n"
    events = audit_events(log)
    assert events[:2] == ["sandbox_start", "provision_start"] and events[-1] == "provision_end"
    assert "provision_output" in events
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(r.get("line", "").startswith("provisioning as agent") for r in lines)
    again = box.start("--profile", "hello")
    assert "provisioning as" not in again.stdout + again.stderr  # unchanged inputs: skipped
    add_profile(ns_tnk, "hello", HELLO.format(marker="two"))
    box.start("--profile", "hello")
    assert box.exec("cat", "/home/agent/provisioned").stdout == "two\n"
    verify = ns_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_failing_script_names_its_line_and_leaves_the_sandbox_usable(ns_tnk):
    add_profile(ns_tnk, "broken", "#!/usr/bin/env bash\nset -Eeuo pipefail\necho step one\nfalse\necho never\n")
    box = NsSandbox(ns_tnk, ns_tnk.project("bad"))
    result = box.run("sandbox", "start", "--backend", "ns", "--profile", "broken", timeout=900)
    assert result.returncode == 1
    assert "broken.sh line 4" in result.stderr
    assert "hint:" in result.stderr
    assert box.exec("echo", "still-usable").stdout == "still-usable\n"


def test_pi_profile_provisions_and_pi_runs(ns_tnk, tmp_path):
    log = tmp_path / "audit.ndjson"
    box = NsSandbox(ns_tnk, ns_tnk.project("pi"))
    box.start("--profile", "pi", "--audit-log", str(log))
    result = box.exec("pi", "--help")
    assert result.returncode == 0, result.stderr
    assert "pi" in result.stdout.lower()
    # Under its default provision policy: the Debian mirror and npm's registry, each connection a record.
    provision = [r for r in wait_for_records(log, "net_allow", lambda rs: rs != []) if r["policy"] == "provision"]
    assert {r["destination"] for r in provision} >= {debian_mirror_host()}, provision
    assert any(r["port"] == 443 and r["bytes_down"] > 0 for r in provision), "no record of npm's registry"
    verify = ns_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr
