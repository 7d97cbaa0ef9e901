"""Provisioning with a profile (fingerprint, re-runs, failures, audit), on each backend; pi on ns."""
import json
from pathlib import Path

import pytest

from net_harness import debian_mirror_host, debian_mirror_url, serve, wait_for_records
from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

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


def test_provisioning_runs_once_and_again_when_the_script_changes(any_tnk):
    add_profile(any_tnk, "hello", HELLO.format(marker="one"))
    box = Sandbox(any_tnk, any_tnk.project("prov"))
    log = any_tnk.home / "audit.ndjson"
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
    add_profile(any_tnk, "hello", HELLO.format(marker="two"))
    box.start("--profile", "hello")
    assert box.exec("cat", "/home/agent/provisioned").stdout == "two\n"
    verify = any_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_failing_script_names_its_line_and_leaves_the_sandbox_usable(any_tnk):
    add_profile(any_tnk, "broken", "#!/usr/bin/env bash\nset -Eeuo pipefail\necho step one\nfalse\necho never\n")
    box = Sandbox(any_tnk, any_tnk.project("bad"))
    result = box.run("sandbox", "start", "--backend", box.backend, "--profile", "broken", timeout=900)
    assert result.returncode == 1
    assert "broken.sh line 4" in result.stderr
    assert "hint:" in result.stderr
    assert box.exec("echo", "still-usable").stdout == "still-usable\n"


PROBES = """#!/usr/bin/env bash
set -uo pipefail
try() {{ if "$@" >/dev/null 2>&1; then echo "ALLOWED: $*"; else echo "REFUSED: $*"; fi; }}
echo "{phase} phase as uid $(id -u)"
{probes}"""

ROOT_PROBES = """try touch /opt/by-provision-root
try cat /workspace/by-agent
try mount -o remount,rw /workspace
try mount -t virtiofs workspace /mnt
try touch /workspace/by-provision-root
try chown 0:0 /workspace/by-agent
try chmod 4755 /workspace/by-agent
try rm /workspace/by-agent
"""

AGENT_PROBES = """try touch /home/agent/by-provision
try cat /workspace/by-agent
try touch /workspace/by-provision
try sudo -n true
try grep -qx 'NoNewPrivs:[[:space:]]1' /proc/self/status
"""


def add_root_phase(tnk, name, script):
    (tnk.config_dir / "sandbox.d" / "provision.d" / f"{name}.root.sh").write_text(script)


def test_provisioning_sees_the_project_read_only_even_as_root(any_tnk):
    """Security review M3, the two phases: the root phase (<p>.root.sh) runs first, as root, and the agent phase
    (<p>.sh) then as the agent without sudo; neither can change the project, which both read."""
    add_root_phase(any_tnk, "probes", PROBES.format(phase="root", probes=ROOT_PROBES))
    add_profile(any_tnk, "probes", PROBES.format(phase="agent", probes=AGENT_PROBES))
    box = Sandbox(any_tnk, any_tnk.project("readonly"))
    (box.project / "by-agent").write_text("hi\n")
    (box.project / "by-agent").chmod(0o644)
    started = box.start("--profile", "probes")
    lines = [line.split("] ", 1)[-1] for line in (started.stdout + started.stderr).splitlines()]
    verdicts = [line for line in lines if line.startswith(("ALLOWED: ", "REFUSED: ", "root phase", "agent phase"))]
    # Provisioning may change the sandbox's system (root) and home (agent) and read the project (the
    # positive controls); nothing it runs, root included, can change the project, and the agent's part
    # cannot become root.
    assert verdicts == [
        "root phase as uid 0",
        "ALLOWED: touch /opt/by-provision-root",
        "ALLOWED: cat /workspace/by-agent",
        "REFUSED: mount -o remount,rw /workspace",
        "REFUSED: mount -t virtiofs workspace /mnt",
        "REFUSED: touch /workspace/by-provision-root",
        "REFUSED: chown 0:0 /workspace/by-agent",
        "REFUSED: chmod 4755 /workspace/by-agent",
        "REFUSED: rm /workspace/by-agent",
        "agent phase as uid 1000",
        "ALLOWED: touch /home/agent/by-provision",
        "ALLOWED: cat /workspace/by-agent",
        "REFUSED: touch /workspace/by-provision",
        "REFUSED: sudo -n true",
        "ALLOWED: grep -qx NoNewPrivs:[[:space:]]1 /proc/self/status",
    ], started.stdout + started.stderr
    assert sorted(p.name for p in box.project.iterdir()) == ["by-agent"]
    owner, after = box.project.stat(), (box.project / "by-agent").stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (owner.st_uid, owner.st_gid, 0o100644)
    # The same write as the agent's own session, after provisioning: the project is the agent's.
    assert box.exec("touch", "/workspace/by-session").returncode == 0
    assert box.exec("test", "-e", "/opt/by-provision-root").returncode == 0


def test_a_profile_written_for_sudo_is_told_to_move_its_root_work(ns_tnk):
    """A profile of the original tnk (one script that runs sudo) fails with one message saying what to change."""
    add_profile(ns_tnk, "old", "#!/usr/bin/env bash\nset -Eeuo pipefail\nsudo apt-get install -y tree\n")
    box = Sandbox(ns_tnk, ns_tnk.project("oldstyle"))
    result = box.run("sandbox", "start", "--backend", "ns", "--profile", "old", timeout=900)
    assert result.returncode == 1, result.stderr
    assert "old.sh line 3" in result.stderr
    assert "move what needs root into provision.d/old.root.sh" in result.stderr, result.stderr


FETCH = """#!/usr/bin/env bash
set -Eeuo pipefail
code=$(curl -sS -o /dev/null -w '%{{http_code}}' {release})
echo "mirror answered $code"
bare_proxy=$(printf '%s' "$http_proxy" | sed 's|//[^@/]*@|//|')
bare=$(curl -sS -o /dev/null -w '%{{http_code}}' --proxy "$bare_proxy" {release} || true)
echo "without the run's proxy credential: $bare"
if curl -sS --max-time 5 http://127.0.0.1:{port}/ || curl -sS --max-time 5 http://host.lima.internal:{port}/; then
  echo "REACHED-HOST-LOOPBACK"
fi
"""


def test_provisioning_reaches_the_mirror_but_not_host_loopback(any_tnk, tmp_path):
    other = serve(b"OTHER-SERVICE")
    try:
        port = other.server_address[1]
        add_profile(any_tnk, "fetch", FETCH.format(release=debian_mirror_url() + "/dists/bookworm/Release", port=port))
        log = tmp_path / "audit.ndjson"
        box = Sandbox(any_tnk, any_tnk.project("fetch"))
        started = box.start("--profile", "fetch", "--audit-log", str(log))
        assert "mirror answered 200" in started.stderr + started.stdout
        # Security review M3: the same proxy, without the credential only this run was given.
        assert "without the run's proxy credential: 407" in started.stderr
        assert "REACHED-HOST-LOOPBACK" not in started.stderr + started.stdout
        records = wait_for_records(log, "net_allow", lambda rs: rs != [])
        assert {r["destination"] for r in records if r["policy"] == "provision"} == {debian_mirror_host()}
        # The same curl after provisioning (policy inference): the provisioning way out is closed.
        after = box.exec("curl", "-sS", "--max-time", "5", debian_mirror_url() + "/dists/bookworm/Release")
        assert after.returncode != 0
    finally:
        other.shutdown()


# ns only: under TCG emulation, node's install in a vm takes minutes; the vm provisions through the same
# proxy, tested above.
def test_pi_profile_provisions_and_pi_runs(ns_tnk, tmp_path):
    log = tmp_path / "audit.ndjson"
    box = Sandbox(ns_tnk, ns_tnk.project("pi"))
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
    # pi, node and npm are root's (/usr/local), run by the agent; where earlier versions of the profile
    # kept them in the agent's home, and in the agent's PATH, the agent plants its own: a new run of both
    # phases runs none of them, and pi still works.
    assert box.exec("stat", "-c", "%U", "/usr/local/lib/tnk-node/bin/node", "/usr/local/bin/pi").stdout == "root\nroot\n"
    assert plain_sh(box, PLANT).returncode == 0
    assert plain_sh(box, "test -x ~/.local/lib/tnk-node/bin/node && test -x ~/.local/bin/npm").returncode == 0
    again = box.start("--profile", "pi", "--reprovision")
    assert "[ OK ] pi " in again.stderr and "Pi environment initialized successfully" in again.stderr, again.stderr
    marks = plain_sh(box, "ls /tmp | grep '^planted-ran-' || true", root=True)
    assert marks.stdout == "", "provisioning ran the agent's planted programs: " + marks.stdout
    assert plain_sh(box, "pi --version").stdout.strip() != ""


# Security review L7: provisioning runs in the sandbox and tnk echoes its output on stderr, so its
# control sequences (OSC 52 sets the clipboard, OSC 0 the title) are shown as text, never sent raw.
# Session output is the documented exception: `sandbox exec` passes the same bytes through, like ssh.
TERMINAL_SEQUENCES = """#!/usr/bin/env bash
printf 'clip \\033]52;c;cHduZWQ=\\a end\\n'
printf 'title \\033]0;owned\\033\\\\ end\\n' >&2
"""


def test_l7_provisioning_output_is_echoed_without_control_sequences(ns_tnk):
    add_profile(ns_tnk, "sequences", TERMINAL_SEQUENCES)
    box = Sandbox(ns_tnk, ns_tnk.project("l7"))
    started = box.start("--profile", "sequences")
    assert "\x1b" not in started.stderr + started.stdout
    assert "clip \\x1b]52;c;cHduZWQ=\\x07 end\n" in started.stderr
    assert "title \\x1b]0;owned\\x1b\\ end\n" in started.stderr
    raw = box.exec("printf", "\\033]52;c;cHduZWQ=\\a\\033]0;owned\\033\\\\")
    assert raw.stdout == "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x1b\\"


# Security review M3: an agent session must not be able to take over provisioning, whose root phase is
# root and which has egress of its own. The agent plants `sh`, `bash`, `sudo`, `node`, `npm` and `curl` on
# every path provisioning ever used or uses (its own PATH, where earlier versions of the pi profile kept node,
# the old staging directory, the temporary directories, and the system's directories, which it cannot write),
# leaves a process in the background (which could ptrace the run or use its proxy) and tries to change the
# staged scripts; then the profile changes, so the running sandbox is provisioned again. Both phases call
# every name, from /tmp; a planted program leaves a mark naming itself and the uid it ran as.
TOKENED = """#!/usr/bin/env bash
set -Eeuo pipefail
source "$(dirname "$0")/lib/provision-lib.sh"
_lib_init_provision_state m3 "{rev}"
echo "provisioning {rev} as $(id -un) from $0"
cd /tmp
""" + "".join(f"{name} --version >/dev/null 2>&1 || true\n" for name in ("sh", "bash", "sudo", "node", "npm", "curl")) + """
_lib_finalize_provision_state
"""

ROOT_CALLS = """#!/usr/bin/env bash
set -Eeuo pipefail
echo "root phase {rev} as $(id -un)"
cd /tmp
""" + "".join(f"{name} --version >/dev/null 2>&1 || true\n" for name in ("sh", "bash", "sudo", "node", "npm", "curl"))

PLANTED_NAMES = "sh bash sudo node npm curl"
PLANT_DIRS = ("~/.local/bin ~/bin ~/.local/lib/tnk-node/bin ~/.local/lib/tnk-pi/bin /tmp/tnk-provision /tmp /var/tmp "
              "/dev/shm /usr/local/bin /usr/local/sbin /usr/bin /bin /var/lib/tnk/provision")

PLANT = f"""set -e
for dir in {PLANT_DIRS}; do
  mkdir -p "$dir" 2>/dev/null || true
  for name in {PLANTED_NAMES}; do
    printf '#!/bin/dash\\ntouch /tmp/planted-ran-%s-$(id -u)\\nexec /usr/bin/%s "$@"\\n' "$name" "$name" \\
      > "$dir/$name" 2>/dev/null && chmod 755 "$dir/$name" && echo "planted $dir/$name" || true
  done
done
setsid /bin/bash -c 'exec -a tnk-m3-sleeper sleep 7777' </dev/null >/dev/null 2>&1 &
"""

COUNT_SLEEPERS = "grep -al 'tnk-m3-sleepe[r]' /proc/[0-9]*/cmdline 2>/dev/null | grep -c . || true"


def plain_sh(box, script, **kwargs):
    """A shell by its path: not what the agent planted in its PATH."""
    return box.exec("/bin/sh", "-c", script, **kwargs)


def test_m3_an_agent_session_cannot_take_over_provisioning(any_tnk):
    add_root_phase(any_tnk, "m3", ROOT_CALLS.format(rev="one"))
    add_profile(any_tnk, "m3", TOKENED.format(rev="one"))
    box = Sandbox(any_tnk, any_tnk.project("m3"))
    first = box.start("--profile", "m3")
    assert "root phase one as root" in first.stderr
    assert "provisioning one as agent from /var/lib/tnk/provision/m3.sh" in first.stderr
    planted = plain_sh(box, PLANT)
    assert planted.returncode == 0, planted.stderr
    home = "/home/agent"
    where = {line.split()[1].rsplit("/", 1)[0] for line in planted.stdout.splitlines()}
    # What the agent can write, it did; the system's directories and the staging directory it cannot.
    assert where == {f"{home}/.local/bin", f"{home}/bin", f"{home}/.local/lib/tnk-node/bin",
                     f"{home}/.local/lib/tnk-pi/bin", "/tmp/tnk-provision", "/tmp", "/var/tmp", "/dev/shm"}, where
    # Positive controls: the planted programs are what the agent's own sessions run by name, and the
    # background process outlives the session that started it.
    for name in PLANTED_NAMES.split():
        box.exec(name, "--version")
    marks = plain_sh(box, "ls /tmp | grep '^planted-ran-' | sort").stdout.split()
    assert marks == sorted(f"planted-ran-{name}-1000" for name in PLANTED_NAMES.split()), marks
    assert plain_sh(box, "rm /tmp/planted-ran-*").returncode == 0
    assert plain_sh(box, COUNT_SLEEPERS).stdout.strip() == "1"
    # The staging directory is root's: the agent cannot change what the next run sources.
    staged = plain_sh(box, "touch /var/lib/tnk/provision/m3.sh || echo REFUSED; touch /tmp/mine && echo ALLOWED")
    assert staged.stdout.split() == ["REFUSED", "ALLOWED"], staged.stdout + staged.stderr

    add_root_phase(any_tnk, "m3", ROOT_CALLS.format(rev="two"))
    add_profile(any_tnk, "m3", TOKENED.format(rev="two"))
    again = box.start("--profile", "m3")
    assert "ending the agent's processes" in again.stderr
    assert "root phase two as root" in again.stderr and "provisioning two as agent" in again.stderr, again.stderr
    marks = plain_sh(box, "ls /tmp | grep '^planted-ran-' || true", root=True)
    assert marks.stdout == "", "provisioning ran the agent's planted programs: " + marks.stdout
    assert plain_sh(box, COUNT_SLEEPERS).stdout.strip() == "0", "the agent's background process survived"


# ns only: the decision is the host's, the same for every backend (tested above on both).
def test_m3_start_reprovisions_on_request_and_when_the_token_inside_is_deleted(ns_tnk):
    add_profile(ns_tnk, "m3", TOKENED.format(rev="one"))
    box = Sandbox(ns_tnk, ns_tnk.project("m3tok"))
    assert "provisioning one" in box.start("--profile", "m3").stderr
    assert "provisioning one" not in box.start("--profile", "m3").stderr  # unchanged: skipped
    assert "provisioning one" in box.start("--profile", "m3", "--reprovision").stderr
    # The original's documented way: delete the token inside, then `start`. shell and exec do not look.
    assert box.exec("rm", "/home/agent/.local/state/tnk/provision.lock").returncode == 0
    assert "provisioning one" not in box.exec("true").stderr
    assert "provisioning one" in box.start("--profile", "m3").stderr
    assert "provisioning one" not in box.start("--profile", "m3").stderr


# The sandbox can change the model the endpoint lists first (Ollama's /api/copy makes a new newest
# one), so that alone never re-provisions a running sandbox; a restart, or --reprovision, applies it.
# Nor does it reach the running sandbox's later sessions: exec and shell hand them what the start was
# told (the warm path, docs/ns-backend.md), and `start` says what the endpoint serves now.
def test_m3_the_endpoints_model_alone_does_not_reprovision_a_running_sandbox(ns_tnk):
    models = serve(json.dumps({"data": [{"id": "first-model"}]}).encode())
    try:
        port = models.server_address[1]
        (ns_tnk.config_dir / "tnk.toml").write_text(f'inference_url = "http://127.0.0.1:{port}/v1"\n')
        add_profile(ns_tnk, "hello", HELLO.format(marker="m"))
        box = Sandbox(ns_tnk, ns_tnk.project("m3model"))
        assert "model=first-model" in box.start("--profile", "hello").stderr
        models.answer = json.dumps({"data": [{"id": "planted-model"}]}).encode()
        # tnk remembers the endpoint's answer for 30 s (inference.json in its cache directory).
        (Path(ns_tnk.env["XDG_CACHE_HOME"]) / "tnk" / "inference.json").unlink(missing_ok=True)
        running = box.exec("printenv", "TNK_MODEL_NAME")
        assert running.stdout == "first-model\n"  # what the start was told
        assert "provisioning as" not in running.stderr
        again = box.start("--profile", "hello")
        assert "provisioning as" not in again.stderr
        assert "tnk sandbox start --reprovision" in again.stderr
        assert "model=planted-model" in box.start("--profile", "hello", "--reprovision").stderr
        assert box.exec("printenv", "TNK_MODEL_NAME").stdout == "planted-model\n"  # what the last start was told
    finally:
        models.shutdown()
