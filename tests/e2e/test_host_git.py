"""Issue 32, item 1 (security review 3, R3-H1): after a session, direct or review-and-apply, the
user's ordinary git commands on the host run nothing the sandbox wrote. Each probe has the sandbox
plant a command of its choosing (core.fsmonitor, a hook) where the host's git would find it, runs the
user's git on the host, and looks from outside for the marker file that command makes; each is paired
with a control that a harmless nested repository or an ordinary change still works. docs/workspace.md
("The host's git") describes what this shows."""
import json
import subprocess
from pathlib import Path

import pytest

from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)
from test_workspace_protection import git, make_repo

pytestmark = pytest.mark.rootless_suite


def host_git(project, *args):
    """What the user types on the host: no -c option of tnk's."""
    return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=project, capture_output=True, text=True,
                          timeout=60)


def runs(marker: Path):
    """A command for the host's git to run: it leaves `marker`, then fails (fsmonitor's answer)."""
    return f"touch {marker}; false"


def held_records(audit: Path):
    return [r for r in map(json.loads, audit.read_text().splitlines()) if r["event"] == "git_entry_held"]


NESTED = r"""
set -e
cd /workspace
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
mkdir {name} && cd {name} && git init -q && git commit -q --allow-empty -m s
{configure}
cd .. && git add {name}
"""


def nested_repo(box, name, configure="true", **kwargs):
    result = box.sh(NESTED.format(name=name, configure=configure), **kwargs)
    assert result.returncode == 0, result.stderr
    return result


def test_issue32_a_gitlink_to_a_nested_repo_runs_nothing_on_the_host(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("gitlink"))
    make_repo(box.project)
    marker = any_tnk.home / "gitlink.pwned"
    audit = any_tnk.home / "audit.ndjson"
    box.start()
    planted = nested_repo(box, "evil", f"git config core.fsmonitor '{runs(marker)}'", audit=audit)
    host_git(box.project, "status", "--short")
    assert not marker.exists(), "the host's git status ran the nested repository's core.fsmonitor"
    assert "held" in planted.stderr and "evil/.git/config" in planted.stderr, planted.stderr
    assert (box.project / "evil" / ".git" / "config.tnk-held").exists()
    assert [Path(r["path"]).name for r in held_records(audit)] == ["config"]
    # Control: a nested repository with nothing to run stays as it is, and the host's git sees it.
    quiet = nested_repo(box, "fine")
    assert "held" not in quiet.stderr, quiet.stderr
    assert (box.project / "fine" / ".git" / "config").exists()
    assert "fine" in host_git(box.project, "status", "--short").stdout
    assert not marker.exists()
    stopped = box.run("sandbox", "stop")
    assert "evil/.git/config" in stopped.stderr and "held" in stopped.stderr, stopped.stderr


WORKTREE_PLANT = r"""
G=$(sed -n "s/^gitdir: //p" /workspace/.git)
mkdir -p "$G/e/objects" "$G/e/refs"
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "{cmd}"\n' > "$G/e/config"
echo "$G/e" > "$G/commondir" && echo PLANTED
"""


@pytest.mark.parametrize("review", [False, True], ids=["direct", "review"])
def test_issue32_a_linked_worktree_keeps_its_commondir(any_tnk, review):
    main = any_tnk.project("wtmain")
    make_repo(main)
    git("worktree", "add", "-q", "-b", "feature", str(main.parent / "wtlinked"), cwd=main)
    box = Sandbox(any_tnk, any_tnk.project("wtlinked"))
    marker = any_tnk.home / "worktree.pwned"
    box.start(*(["--review"] if review else []))
    planted = box.sh(WORKTREE_PLANT.replace("{cmd}", runs(marker)))
    box.run("sandbox", "stop")
    host_git(box.project, "status", "--short")
    assert not marker.exists(), "the host's git status read a config the sandbox wrote"
    assert "PLANTED" not in planted.stdout, planted.stdout + planted.stderr
    # Control: git inside still commits on the worktree, and the host sees the commit.
    box.start(*(["--review"] if review else []))
    committed = box.sh("cd /workspace && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m inside "
                       "--no-verify && echo DONE")
    assert "DONE" in committed.stdout, committed.stderr
    assert git("log", "-1", "--format=%s", "feature", cwd=main) == "inside\n"


def test_issue32_config_worktree_that_appears_is_held(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("cfgwt"))
    make_repo(box.project)
    git("config", "core.repositoryformatversion", "1", cwd=box.project)
    git("config", "extensions.worktreeConfig", "true", cwd=box.project)
    marker = ns_tnk.home / "cfgwt.pwned"
    box.start()
    planted = box.sh(f"printf '[core]\\n\\tfsmonitor = \"{runs(marker)}\"\\n' > /workspace/.git/config.worktree")
    assert planted.returncode == 0, planted.stderr
    host_git(box.project, "status", "--short")
    assert not marker.exists(), "the host's git status ran .git/config.worktree's core.fsmonitor"
    assert ".git/config.worktree" in planted.stderr and "held" in planted.stderr, planted.stderr
    # Control: a config.worktree of data only is not held.
    quiet = box.sh("printf '[core]\\n\\tsparseCheckout = false\\n' > /workspace/.git/config.worktree")
    assert "held" not in quiet.stderr and (box.project / ".git" / "config.worktree").exists()


def test_issue32_a_submodules_git_dir_is_read_only(ns_tnk):
    lib = ns_tnk.home / "libsrc"
    lib.mkdir()
    make_repo(lib)
    box = Sandbox(ns_tnk, ns_tnk.project("withsub"))
    make_repo(box.project)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib", cwd=box.project)
    git("commit", "-q", "-m", "sub", cwd=box.project)
    marker = ns_tnk.home / "modules.pwned"
    box.start()
    planted = box.sh(f"cd /workspace && git -C lib config core.fsmonitor '{runs(marker)}' && echo PLANTED;"
                     f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/modules/lib/hooks/post-checkout && echo HOOKED")
    host_git(box.project, "status", "--short")
    host_git(box.project, "-c", "protocol.file.allow=always", "submodule", "update", "--init")
    assert not marker.exists(), "the host's git ran the submodule's config or hook the sandbox wrote"
    assert "PLANTED" not in planted.stdout and "HOOKED" not in planted.stdout, planted.stdout
    # Control: the submodule still takes commits inside.
    committed = box.sh("cd /workspace/lib && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m in "
                       "&& echo DONE")
    assert "DONE" in committed.stdout, committed.stderr


def test_issue32_a_hooks_path_inside_the_project_is_read_only(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("husky"))
    make_repo(box.project)
    (box.project / ".husky").mkdir()
    (box.project / ".husky" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (box.project / ".husky" / "pre-commit").chmod(0o755)
    git("config", "core.hooksPath", ".husky", cwd=box.project)
    marker = ns_tnk.home / "husky.pwned"
    box.start()
    planted = box.sh(f"printf '#!/bin/sh\\ntouch {marker}\\n' > /workspace/.husky/pre-commit && echo PLANTED;"
                     "echo fine > /workspace/ordinary.txt && echo CONTROL")
    assert "CONTROL" in planted.stdout  # control: an ordinary file is written
    host_git(box.project, "add", "ordinary.txt")
    host_git(box.project, "-c", "user.name=u", "-c", "user.email=u@h", "commit", "-q", "-m", "host")
    assert not marker.exists(), "the host's git commit ran a hook the sandbox wrote"
    assert "PLANTED" not in planted.stdout, planted.stdout
    assert git("log", "-1", "--format=%s", cwd=box.project) == "host\n"


def test_issue32_review_mode_flags_a_nested_repo_and_apply_holds_it(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("revgit"))
    make_repo(box.project)
    marker = ns_tnk.home / "review.pwned"
    box.start("--review")
    nested_repo(box, "evil", f"git config core.fsmonitor '{runs(marker)}'")
    nested_repo(box, "fine")
    box.run("sandbox", "stop")
    diff = box.tnk.json("sandbox", "diff", "-o", "json", cwd=box.project)
    flagged = {c["path"]: c["runs_on_host"] for c in diff["changes"]}
    assert flagged["evil/.git/config"] and flagged[".git/index"], flagged
    applied = box.run("sandbox", "apply")
    assert applied.returncode == 0, applied.stderr
    assert "evil/.git/config" in applied.stderr and "held" in applied.stderr, applied.stderr
    host_git(box.project, "status", "--short")
    assert not marker.exists(), "after apply, the host's git status ran the nested repository's core.fsmonitor"
    assert (box.project / "fine" / ".git" / "config").exists()  # control: the harmless one is applied


def test_issue32_review_mode_applies_a_named_git_entry_knowingly(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("revnamed"))
    make_repo(box.project)
    box.start("--review")
    nested_repo(box, "tool", "git config alias.st status")
    box.run("sandbox", "stop")
    applied = box.run("sandbox", "apply", "tool", ".git/index")
    assert applied.returncode == 0, applied.stderr
    assert "held" not in applied.stderr, applied.stderr
    assert "st = status" in (box.project / "tool" / ".git" / "config").read_text()
