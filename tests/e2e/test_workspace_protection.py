"""mounts.readonly (issue 14): protected project paths, on ns and vm, for `agent` and root inside, each
probe beside a control that the same operation works on a path that is not protected; git inside a
sandbox on a plain project and on a linked worktree. docs/workspace.md describes what this shows."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from sandbox_harness import Sandbox, any_tnk, vm_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

GUARDED = """profile: guarded
mounts:
  workspace: /workspace
  readonly:
    - .git/hooks
    - .git/config
    - .envrc
    - .not-there
"""

HOOK = "#!/bin/sh\necho original hook\n"

# Each line: ALLOWED or REFUSED, the command, and (refused) the error it got. perl stands in for
# mount(8) and umount(8), which the image does not have: 165 is mount(2), 166 umount2(2) on x86_64.
PROBES = r"""
cd /workspace
try() { if out=$("$@" 2>&1 >/dev/null); then echo "ALLOWED: $*"; else echo "REFUSED: $*: $out" | head -1; fi; }
try sh -c 'echo evil > .git/hooks/pre-commit'
try sh -c 'echo evil > .git/hooks/post-checkout'
try sh -c 'printf "[core]\n\thooksPath = /workspace/evil\n" >> .git/config'
try sh -c 'echo evil > .envrc'
try chmod 777 .git/hooks
try rm -f .envrc
try rm -rf .git/hooks
try mv .git/hooks .git/hooks-old
try mv .envrc .envrc-old
try sh -c 'echo evil > new-envrc && mv -f new-envrc .envrc'
try sh -c 'mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit'
try ln .git/config config-link
try ln .envrc envrc-link
try perl -e 'syscall(166, "/workspace/.git/hooks", 2) == 0 or die "$!\n"'
try perl -e 'syscall(166, "/workspace/.envrc", 2) == 0 or die "$!\n"'
try perl -e 'syscall(165, 0, "/workspace/.git/hooks", 0, 4128, 0) == 0 or die "$!\n"'
try sh -c 'echo evil > .git/hooks/pre-commit'
"""

# The same operations on paths nobody protects: they work for `agent`.
CONTROLS = r"""
cd /workspace
try() { if out=$("$@" 2>&1 >/dev/null); then echo "ALLOWED: $*"; else echo "REFUSED: $*: $out" | head -1; fi; }
try sh -c 'echo fine > .git/description'
try sh -c 'echo fine > free/file'
try chmod 777 free
try sh -c 'echo fine > free-new && mv -f free-new free/file'
try ln free/file free-link
try mv free free-old
try mv free-old free
try rm -rf free2
"""


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path):
    git("init", "-q", "-b", "main", cwd=path)
    git("config", "user.name", "t", cwd=path)
    git("config", "user.email", "t@example.com", cwd=path)
    (path / "README").write_text("hello\n")
    git("add", "README", cwd=path)
    git("commit", "-q", "-m", "first", cwd=path)
    hook = path / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK)
    hook.chmod(0o755)


def guarded_project(tnk, name):
    (tnk.config_dir / "sandbox.d" / "manifests" / "guarded.yaml").write_text(GUARDED)
    box = Sandbox(tnk, tnk.project(name))
    make_repo(box.project)
    (box.project / ".envrc").write_text("export SAFE=1\n")
    (box.project / "free").mkdir()
    (box.project / "free" / "file").write_text("free\n")
    (box.project / "free2").mkdir()
    return box


def outcomes(text):
    return [line for line in text.splitlines() if line.startswith(("ALLOWED", "REFUSED"))]


def snapshot(project: Path):
    git_dir = project / ".git"
    return {
        "hooks": sorted(p.name for p in (git_dir / "hooks").iterdir()),
        "pre-commit": (git_dir / "hooks" / "pre-commit").read_text(),
        "config": (git_dir / "config").read_text(),
        "envrc": (project / ".envrc").read_text(),
        "git is a dir": git_dir.is_dir() and not git_dir.is_symlink(),
    }


def protection(box):
    doc = box.tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)
    return {p["path"]: p["state"] for p in doc["protected_paths"]}


@pytest.mark.parametrize("root", [False, True], ids=["agent", "root"])
def test_protected_paths_stay_read_only_whatever_the_sandbox_tries(any_tnk, root):
    box = guarded_project(any_tnk, "guard")
    before = snapshot(box.project)
    started = box.start("--profile", "guarded")
    probes = box.sh(PROBES, root=root)
    results = outcomes(probes.stdout)
    assert len(results) == 17, probes.stdout + probes.stderr
    allowed = [r for r in results if r.startswith("ALLOWED")]
    assert allowed == [], "\n".join(results)
    # ns: the mount refuses, not the ids: root inside meets the read-only file system too. vm: the guest's
    # kernel refuses root's write to the agent's files before virtiofsd sees it (root sessions do not map
    # the agent), so the agent's probes are the ones that meet the host's read-only mount there.
    first = results[0]
    if root and box.backend == "vm":
        assert "Permission denied" in first, first
    else:
        assert "Read-only file system" in first, first
    assert snapshot(box.project) == before
    assert not (box.project / ".git-old").exists() and not (box.project / "config-link").exists()
    # Control: the same operations on paths that are not protected work for `agent`.
    controls = outcomes(box.sh(CONTROLS).stdout)
    assert controls and all(r.startswith("ALLOWED") for r in controls), "\n".join(controls)
    assert (box.project / "free" / "file").read_text() == "fine\n"
    assert protection(box) == {".git/hooks": "protected", ".git/config": "protected", ".envrc": "protected",
                               ".not-there": "missing"}
    assert ".not-there" in started.stderr and "not protected" in started.stderr


def test_the_guest_has_no_mount_of_its_own_to_undo_on_vm(vm_tnk):
    """On vm the read-only binds are virtiofsd's, on the host: the guest's mount table shows only the
    share, so there is nothing for the guest's kernel to remount or unmount."""
    box = guarded_project(vm_tnk, "guestview")
    box.start("--profile", "guarded")
    mounts = box.exec("cat", "/proc/self/mountinfo").stdout
    assert [line for line in mounts.splitlines() if "/workspace" in line.split()[4]] != []
    assert not [line for line in mounts.splitlines() if line.split()[4].startswith("/workspace/")]
    assert "Read-only file system" in box.sh("echo x > /workspace/.git/config").stderr


def test_a_missing_protected_path_that_appears_is_reported_loudly(any_tnk):
    box = guarded_project(any_tnk, "appear")
    audit = any_tnk.home / "audit.ndjson"
    box.start("--profile", "guarded")
    created = box.exec("touch", "/workspace/.not-there", audit=audit)
    assert created.returncode == 0
    assert ".not-there" in created.stderr and "appeared" in created.stderr
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    appeared = [r for r in records if r["event"] == "protected_path_appeared"]
    assert [r["path"] for r in appeared] == [".not-there"]
    assert protection(box)[".not-there"] == "appeared"
    # Control: a session that creates nothing says nothing.
    quiet = box.exec("true")
    assert "appeared" not in quiet.stderr
    stopped = box.run("sandbox", "stop")
    assert ".not-there" in stopped.stderr


def test_git_works_inside_with_the_default_protections(any_tnk):
    """The bundled base profile protects .git/hooks, .git/config and .envrc: commit, checkout, stash
    and fetch still work inside."""
    box = Sandbox(any_tnk, any_tnk.project("gitwork"))
    make_repo(box.project)
    remote = box.project / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=box.project)
    git("push", "-q", str(remote), "main", cwd=box.project)
    git("remote", "add", "origin", "/workspace/remote.git", cwd=box.project)
    (box.project / ".envrc").write_text("export SAFE=1\n")
    box.start()
    assert protection(box) == {".git/hooks": "protected", ".git/config": "protected", ".envrc": "protected",
                               ".git/commondir": "missing"}
    script = r"""
set -e
cd /workspace
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
echo two >> README
git commit -q -am second --no-verify
git checkout -q -b side
echo three >> README
git stash -q
git stash pop -q
git checkout -q -- README
git checkout -q main
git fetch -q origin
git status --porcelain
git log --format=%s | head -2
"""
    result = box.sh(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["second", "first"]
    assert (box.project / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    assert git("log", "--format=%s", "side", cwd=box.project).splitlines() == ["second", "first"]


def test_git_init_add_commit_status_inside_behave_as_on_the_host(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("fresh"))
    (box.project / "a.txt").write_text("a\n")
    box.start()
    script = r"""
set -e
cd /workspace
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
git init -q -b main
git add a.txt
git commit -q -m one
git status --porcelain
git log --format=%s
"""
    result = box.sh(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "one\n"
    assert git("log", "--format=%s", cwd=box.project) == "one\n"
    # The new repository's hooks and config did not exist at start: tnk says so.
    assert ".git/hooks" in result.stderr and "appeared" in result.stderr


def test_a_linked_worktree_sees_its_git_dirs_and_the_main_hooks_stay_read_only(any_tnk):
    main = any_tnk.project("mainrepo")
    make_repo(main)
    (main / "secret.txt").write_text("not for the sandbox\n")
    git("worktree", "add", "-q", "-b", "feature", str(main.parent / "linked"), cwd=main)
    box = Sandbox(any_tnk, any_tnk.project("linked"))
    box.start()
    common = str(main / ".git")
    state = protection(box)
    assert state[".git"] == "protected"
    assert state[common + "/hooks"] == "protected" and state[common + "/config"] == "protected"
    script = f"""
cd /workspace
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
echo change >> README
git commit -q -am on-the-worktree --no-verify || echo COMMIT-FAILED
git status --porcelain
try() {{ if out=$("$@" 2>&1 >/dev/null); then echo "ALLOWED: $*"; else echo "REFUSED: $*: $out" | head -1; fi; }}
try sh -c 'echo evil > {common}/hooks/pre-commit'
try sh -c 'echo evil >> {common}/config'
try sh -c 'echo "gitdir: /workspace/evil" > /workspace/.git'
try cat {main}/secret.txt
try ls {main}/README
"""
    result = box.sh(script)
    assert "COMMIT-FAILED" not in result.stdout, result.stdout + result.stderr
    results = outcomes(result.stdout)
    assert len(results) == 5 and all(r.startswith("REFUSED") for r in results), result.stdout
    assert git("log", "--format=%s", "feature", cwd=main).splitlines()[0] == "on-the-worktree"
    assert (main / ".git" / "hooks" / "pre-commit").read_text() == HOOK
