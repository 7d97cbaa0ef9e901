"""The project seen from both sides (issue 35 item 4): whatever the share caches to make metadata fast,
an edit made on the host is seen inside within about a second (in place, by an editor's rename, a new
file, a removal), and an edit made inside is on the host when the command that made it has returned.
On ns the project is a bind mount, so this holds trivially; on vm it is virtiofsd's cache policy
(`cache=auto`: entries and attributes kept for 1 s) that the test holds to it.

Each host edit is made while a reader inside polls for it every 50 ms, warm: it has already read the
old state, so anything the guest cached would show. The time is taken on the host, from the edit to the
line that reports it, so it includes the reader's poll step and the trip of its output."""
import subprocess
import time

import pytest

from conftest import TNK_BIN
from sandbox_harness import Sandbox, any_tnk  # noqa: F401 (fixtures)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

SEEN_WITHIN_S = 1.0  # the promise (docs/workspace.md)
SLACK_S = 0.5        # the reader's 50 ms poll step and its output's way out, under TCG on a loaded machine

# Reads `$1` as a test of its state until it holds (`$2`: a shell condition over $state), printing "seen".
READER = r"""
cd /workspace
state() { if [ -e "$1" ]; then cat "$1"; else echo MISSING; fi; }
echo ready
while :; do s=$(state "$1"); eval "$2" && { echo seen; exit 0; }; sleep 0.05; done
"""


def watch(box, path, condition):
    """A reader inside, started and warm (it has read `path` at least once), waiting for `condition`."""
    reader = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", "bash", "-c", READER, "-", path, condition],
                              cwd=str(box.project), env=dict(box.tnk.env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert reader.stdout.readline() == "ready\n", reader.stderr.read()
    time.sleep(0.3)  # a few reads of the old state
    return reader


def seen_after(reader, edit):
    """Makes the edit on the host, then the seconds until the reader inside reports it."""
    edited = time.monotonic()
    edit()
    line = reader.stdout.readline()
    elapsed = time.monotonic() - edited
    reader.wait(timeout=30)
    assert line == "seen\n", (line, reader.stderr.read())
    return elapsed


def rename_into_place(path, text):
    """What an editor's save or a checkout does: a new file renamed over the old one."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.rename(path)


def test_a_host_edit_is_seen_inside_within_a_second(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("sync"))
    (box.project / "notes.txt").write_text("old\n")
    (box.project / "config.txt").write_text("old\n")
    (box.project / "gone.txt").write_text("here\n")
    box.start()
    edits = {
        "in place": ("notes.txt", '[ "$s" = new-and-longer ]',
                     lambda: (box.project / "notes.txt").write_text("new-and-longer\n")),
        "renamed over": ("config.txt", '[ "$s" = renamed ]',
                         lambda: rename_into_place(box.project / "config.txt", "renamed\n")),
        "created": ("fresh.txt", '[ "$s" = fresh ]', lambda: (box.project / "fresh.txt").write_text("fresh\n")),
        "removed": ("gone.txt", '[ "$s" = MISSING ]', lambda: (box.project / "gone.txt").unlink()),
    }
    times = {}
    for what, (path, condition, edit) in edits.items():
        times[what] = seen_after(watch(box, path, condition), edit)
    print(f"{box.backend}: host edits seen inside after " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
    late = {what: t for what, t in times.items() if t > SEEN_WITHIN_S + SLACK_S}
    assert not late, late


def test_an_edit_inside_is_on_the_host_when_its_command_returns(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("sync-back"))
    (box.project / "kept.txt").write_text("old\n")
    box.start()
    for round_ in range(5):
        text = f"written inside {round_}"
        made = box.exec("bash", "-c", 'cd /workspace && echo "$1" > kept.txt && echo "$1" > "new-$2.txt" && '
                        'rm -f "new-$(( $2 - 1 )).txt" && chmod +x kept.txt', "-", text, str(round_))
        assert made.returncode == 0, made.stderr
        # At once, with no wait: what the command wrote is there.
        assert (box.project / "kept.txt").read_text() == text + "\n"
        assert (box.project / f"new-{round_}.txt").read_text() == text + "\n"
        assert not (box.project / f"new-{round_ - 1}.txt").exists()
        assert (box.project / "kept.txt").stat().st_mode & 0o111
