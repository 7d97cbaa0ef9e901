"""Issue 32, item 5: the programs tnk runs on the host, looked at from outside.

M2 (security review): every helper tnk starts on the host (npm, git) runs from "/", not from the
project the sandbox writes, and git runs nothing a repository's config names. M6: run by root, the
relays (tnk-proxy, tnk-forwarder, tnk-routes) run as an id of root's range, not as uid 0. Each probe is
paired with the same thing where it is allowed: the user's own ~/.npmrc still names the registry,
`.gitignore` still hides files from review, the relays still carry traffic."""
import os
import subprocess
import time
from pathlib import Path

import pytest

from net_harness import children_named, free_port, supervisor_pid
from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)
from test_network import OPEN, PERL_SERVER, RELAY_HOST, assert_forwarded, manifest
from test_review import REVIEWED, diff
from test_setup import subid_files_restored  # noqa: F401 (a fixture)
from test_workspace_protection import git, make_repo

# Run by root, a start reserves root's subordinate ranges when it has none (security review L5): the
# host's /etc/subuid and /etc/subgid are put back after each test.
pytestmark = pytest.mark.usefixtures("subid_files_restored")

ATTACKER = "m2-attacker.example"  # the registry the sandbox's .npmrc names
USERS_OWN = "m2-users-own.example"  # the registry the user's ~/.npmrc names

# Provisioning asks its proxy for both registries' hosts: 403 is the proxy's refusal; anything else
# (502: allowed, but the name does not resolve here) means the host was on the allow-list.
ASK_PROXY = """#!/usr/bin/env bash
set -Eeuo pipefail
for host in {hosts}; do
  echo "proxy says $host: $(curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://$host/ || true)"
done
"""


def proxy_answers(output):
    answers = {}
    for line in output.splitlines():
        if "proxy says " in line:
            host, code = line.split("proxy says ", 1)[1].split(": ", 1)
            answers[host] = code.strip()
    return answers


# ns only: which hosts provisioning may reach is the host's decision, the same for every backend.
def test_issue32_m2_a_planted_npmrc_adds_no_host_to_provisioning(ns_tnk):
    (ns_tnk.home / ".npmrc").write_text(f"registry=https://{USERS_OWN}/\n")  # the control: the user's own
    (ns_tnk.config_dir / "sandbox.d" / "provision.d" / "m2.sh").write_text(
        ASK_PROXY.format(hosts=f"{ATTACKER} {USERS_OWN}"))
    box = Sandbox(ns_tnk, ns_tnk.project("m2npm"))
    first = box.start("--profile", "m2")
    assert proxy_answers(first.stderr + first.stdout) == {ATTACKER: "403", USERS_OWN: "502"}, first.stderr
    # What the review's probe does: the sandbox makes its project an npm project with a registry.
    planted = box.sh(f"cd /workspace && echo {{}} > package.json && echo registry=https://{ATTACKER}/ > .npmrc")
    assert planted.returncode == 0, planted.stderr
    assert box.run("sandbox", "stop").returncode == 0
    again = box.start("--profile", "m2", "--reprovision")  # from the project, as a user types it
    answers = proxy_answers(again.stderr + again.stdout)
    assert answers[ATTACKER] == "403", f"the sandbox's .npmrc added {ATTACKER} to provisioning: {answers}"
    assert answers[USERS_OWN] == "502", answers  # the user's ~/.npmrc is still what names the registry


# Each command runs `touch <marker>/<key>`: every key of a repository's config git would run, and a
# hook of every name git knows in the hooks directory core.hooksPath names.
RUNNABLE_KEYS = ("core.fsmonitor", "core.pager", "diff.external", "diff.m2.textconv", "filter.m2.clean",
                 "filter.m2.smudge", "filter.m2.process", "core.sshCommand", "core.askPass", "credential.helper",
                 "core.editor", "sequence.editor", "gpg.program", "core.alternateRefsCommand")
HOOKS = ("pre-commit", "post-checkout", "post-index-change", "reference-transaction", "post-merge",
         "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "push-to-checkout")


def plant_runnable_config(project: Path, marker: Path):
    hooks = project / ".m2-hooks"
    hooks.mkdir()
    for name in HOOKS:
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}/hook-{name}\n")
        (hooks / name).chmod(0o755)
    for key in RUNNABLE_KEYS:
        git("config", key, f"touch {marker}/{key}; false", cwd=project)
    git("config", "core.hooksPath", str(hooks), cwd=project)
    (project / ".gitattributes").write_text("* filter=m2 diff=m2\n")


def plant_path_git(project: Path, marker: Path):
    """A `git` at the project's top, which a relative PATH entry finds when git runs in the project."""
    fake = project / "git"
    fake.write_text(f"#!/bin/sh\ntouch {marker}/relative-path-git\nexec /usr/bin/git \"$@\"\n")
    fake.chmod(0o755)


def test_issue32_m2_host_git_runs_nothing_from_repo_config(ns_tnk, tmp_path):
    """Start (the git guard's snapshot), a session (its walk), review's `git check-ignore` (sandbox diff)
    and stop, with a repository whose config names a command for every key git runs, and a PATH whose
    first entry is empty (the working directory): no command runs. The control: git still works for
    review (.gitignore hides debug.log)."""
    marker = tmp_path / "ran"
    marker.mkdir(mode=0o777)
    os.chmod(marker, 0o777)  # a command run as the user (or as root) could leave its mark
    (ns_tnk.config_dir / "sandbox.d" / "manifests" / "reviewed.yaml").write_text(REVIEWED)
    box = Sandbox(ns_tnk, ns_tnk.project("m2git"))
    make_repo(box.project)
    (box.project / ".gitignore").write_text("*.log\n")
    plant_runnable_config(box.project, marker)
    plant_path_git(box.project, marker)
    ns_tnk.env["PATH"] = ":" + ns_tnk.env["PATH"]  # "" first: the calling directory, searched first
    box.start("--profile", "reviewed")
    # --no-optional-locks: a status that finds the index racily clean (the files made within its mtime's
    # second, as a fast build did) rewrites .git/index, a change the diff rightly lists.
    session = box.sh("cd /workspace && echo x > debug.log && echo y > kept.txt && "
                     "(git --no-optional-locks status --short >/dev/null 2>&1; true)")
    assert session.returncode == 0, session.stderr
    doc = diff(box)
    assert box.run("sandbox", "stop").returncode == 0
    ran = sorted(p.name for p in marker.iterdir())
    assert ran == [], f"tnk's git on the host ran: {ran}"
    # The control: git still read the project (check-ignore), and the planted git was reachable.
    assert doc["gitignore"] == "git" and doc["ignored_hidden"] == 1, doc
    assert [c["path"] for c in doc["changes"]] == ["kept.txt"], doc["changes"]
    subprocess.run(["git", "status"], cwd=box.project, env={**os.environ, "PATH": ":/usr/bin:/bin"},
                   capture_output=True, timeout=60)
    assert (marker / "relative-path-git").exists(), "the control: a git run in the project finds ./git"


def root_range_start(file):
    """Root's own range in `file` (/etc/subuid or /etc/subgid); None when it has none."""
    for line in Path(file).read_text().splitlines() if Path(file).exists() else []:
        parts = line.split(":")
        if len(parts) == 3 and parts[0] in ("root", "0") and int(parts[2]) >= 65536:
            return int(parts[1])
    return None


def ids_of(pid):
    fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":\t" in line)
    return {"uids": {int(u) for u in fields["Uid"].split()}, "gids": {int(g) for g in fields["Gid"].split()},
            "groups": fields["Groups"].split(), "caps": int(fields["CapEff"], 16) | int(fields["CapPrm"], 16)}


@pytest.mark.needs_root
def test_issue32_m6_root_relays_run_unprivileged(any_tnk):
    """Run by root, the proxy and the forwarders (inference, a port forward) run as id 65535 of root's
    range, as QEMU does: every uid and gid that id, no supplementary group, no capability; the review's
    probe (probe_m6_root_relay_uid.sh) found uid 0. The control: the supervisor, read the same way, is
    uid 0; and the relays still work: the port forward reaches a server inside, the proxy answers with
    its policy."""
    manifest(any_tnk, "wide", OPEN)
    box = Sandbox(any_tnk, any_tnk.project("m6"))
    box.start("--profile", "wide")
    started = box.exec("sh", "-c", 'setsid perl -e "$1" 8000 >/dev/null 2>&1 &', "sh", PERL_SERVER)
    assert started.returncode == 0, started.stderr
    host_port = free_port()
    assert box.run("sandbox", "forward", f"{host_port}:8000").returncode == 0
    (state,) = (any_tnk.state_dir / "sandboxes").iterdir()
    supervisor = supervisor_pid(any_tnk, state.name)
    for _ in range(50):  # the forward's relay names itself a moment after `forward` returns
        relays = children_named(supervisor, "tnk-proxy") + children_named(supervisor, "tnk-forwarder")
        if len(relays) == 3:
            break
        time.sleep(0.1)
    assert len(relays) == 3, (relays, (state / "supervisor.log").read_text()[-2000:])  # proxy, inference, forward
    for pid in relays:
        ids = ids_of(pid)
        assert 0 not in ids["uids"] | ids["gids"], f"relay {pid} runs as root: {ids}"
    account = (root_range_start("/etc/subuid") + 65535, root_range_start("/etc/subgid") + 65535)
    for pid in relays:
        ids = ids_of(pid)
        assert (ids["uids"], ids["gids"]) == ({account[0]}, {account[1]}), (pid, ids)
        assert ids["groups"] == [] and ids["caps"] == 0, (pid, ids)
    assert 0 in ids_of(supervisor)["uids"]  # the control: read the same way, the supervisor is root
    assert_forwarded(host_port)  # the port forward's relay carries traffic
    refused = box.exec("curl", "-sS", "--max-time", "20", "--noproxy", "", "--proxy",
                       f"http://{RELAY_HOST[box.backend]}:3128", "http://127.0.0.1/")
    assert "a host-internal address" in refused.stdout, (refused.stdout, refused.stderr)  # the proxy decides
