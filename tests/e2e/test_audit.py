"""`tnk audit verify` on logs in tnk's chain format (docs/audit-format.md): an intact chain, and an
edited, a deleted and a truncated record, each reported with its line number. Then where an audit log
may be (L6)."""
import json

import pytest

from e2e_util import FAILED, GENESIS, OK, PERMISSION, USAGE, assert_error, audit_lines, sha256
from sandbox_harness import Sandbox, ns_tnk  # noqa: F401 (fixture)

EVENTS = [
    {"event": "sandbox_start", "backend": "vm", "profile": "pi", "project_dir": "/home/ann/code/demo"},
    {"event": "session_start", "workdir": "/workspace", "tty": False, "requires_tty": False,
     "runtime_env": {"TNK_MODEL_NAME": "qwen"}},
    {"event": "exec_invocation", "argv": ["bash", "-l"], "tty": False, "runtime_env": {"TNK_MODEL_NAME": "qwen"},
     "user_env_names": ["DEBUG"]},
    {"event": "session_exit", "exit_code": 0},
    {"event": "sandbox_stop", "reason": "user"},
]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "audit.ndjson"
    lines = audit_lines(EVENTS)
    path.write_text("".join(line + "\n" for line in lines))
    return path, lines


def verify(tnk, path):
    text = tnk.run("audit", "verify", str(path))
    doc_run = tnk.run("audit", "verify", str(path), "-o", "json")
    assert doc_run.returncode == text.returncode
    return text, json.loads(doc_run.stdout)


def test_intact_chain(tnk, log):
    path, lines = log
    text, doc = verify(tnk, path)
    assert text.returncode == OK, text.stderr
    assert text.stdout == f"ok: {path}: 5 records, chain intact\n"
    assert doc == {"records": 5, "ok": True, "bad_line": None, "problem": None, "last_hash": sha256(lines[-1])}


def test_empty_log_is_valid(tnk, tmp_path):
    path = tmp_path / "empty.ndjson"
    path.write_text("")
    text, doc = verify(tnk, path)
    assert text.returncode == OK
    assert doc == {"records": 0, "ok": True, "bad_line": None, "problem": None, "last_hash": GENESIS}


def test_edited_record_shows_at_the_next_line(tnk, log):
    path, lines = log
    lines[2] = lines[2].replace('"bash"', '"zsh"')
    path.write_text("".join(line + "\n" for line in lines))
    text, doc = verify(tnk, path)
    assert text.returncode == FAILED
    assert text.stdout.startswith(f"broken: {path}:4: ")
    assert "record edited" in text.stdout
    assert doc["ok"] is False and doc["bad_line"] == 4 and doc["records"] == 3
    assert doc["problem"] == "record edited: prev hash of line 4 does not match line 3"


def test_edited_first_prev(tnk, log):
    path, lines = log
    lines[0] = lines[0].replace(GENESIS, "1" * 64)
    path.write_text("".join(line + "\n" for line in lines))
    text, doc = verify(tnk, path)
    assert text.returncode == FAILED
    assert doc["bad_line"] == 1 and doc["records"] == 0
    assert doc["problem"] == "record edited: prev hash of line 1 is not 64 zeros"


def test_deleted_record(tnk, log):
    path, lines = log
    del lines[2]
    path.write_text("".join(line + "\n" for line in lines))
    text, doc = verify(tnk, path)
    assert text.returncode == FAILED
    assert text.stdout.startswith(f"broken: {path}:3: ")
    assert doc["bad_line"] == 3 and doc["records"] == 2
    assert doc["problem"] == "record 3 missing: seq jumps from 2 to 4"
    assert doc["last_hash"] == sha256(lines[1])


def test_deleted_first_record(tnk, log):
    path, lines = log
    path.write_text("".join(line + "\n" for line in lines[1:]))
    _, doc = verify(tnk, path)
    assert doc["bad_line"] == 1
    assert doc["problem"] == "record 1 missing: the log starts at seq 2"


def test_truncated_last_record(tnk, log):
    path, lines = log
    content = "".join(line + "\n" for line in lines)
    path.write_text(content[: len(content) - 20])
    text, doc = verify(tnk, path)
    assert text.returncode == FAILED
    assert text.stdout.startswith(f"broken: {path}:5: ")
    assert doc["bad_line"] == 5 and doc["records"] == 4
    assert doc["problem"] == "truncated or invalid JSON: line 5 does not end with a newline"


def test_record_cut_short_in_the_middle(tnk, log):
    path, lines = log
    lines[1] = lines[1][:30]
    path.write_text("".join(line + "\n" for line in lines))
    _, doc = verify(tnk, path)
    assert doc["bad_line"] == 2
    assert doc["problem"] == "truncated or invalid JSON: line 2 does not parse"


def test_duplicated_record(tnk, log):
    path, lines = log
    lines.insert(3, lines[2])
    path.write_text("".join(line + "\n" for line in lines))
    _, doc = verify(tnk, path)
    assert doc["bad_line"] == 4
    assert doc["problem"] == "record duplicated or out of order: seq goes from 3 to 3 at line 4"


# Security review L6: the sandbox can write its project, so an audit log there could be rewritten or a
# parent swapped for a symbolic link that sends the writes (root's, for a root supervisor) elsewhere.
# Both are refused before the sandbox starts; the same log name outside the project is accepted.
def test_l6_audit_log_inside_the_project_is_refused_and_outside_accepted(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("l6"))
    inside = box.run("sandbox", "start", "--backend", box.backend, "--profile", "base",
                     "--audit-log", "logs/audit.ndjson")
    assert_error(inside, USAGE, f"refusing audit log {box.project}/logs/audit.ndjson: it is inside the project "
                                f"directory {box.project}, which the sandbox can write")
    assert not (box.project / "logs").exists()
    outside = ns_tnk.home / "logs" / "audit.ndjson"
    box.start("--audit-log", str(outside))
    assert json.loads(outside.read_text().splitlines()[0])["event"] == "sandbox_start"
    again = box.exec("true", audit=box.project / "logs" / "audit.ndjson")
    assert_error(again, USAGE, "it is inside the project directory")
    assert box.exec("true", audit=outside).returncode == OK


def test_l6_audit_log_under_a_symlinked_parent_is_refused_and_nothing_is_created_behind_it(ns_tnk):
    box = Sandbox(ns_tnk, ns_tnk.project("l6link"))
    target = ns_tnk.home / "elsewhere"
    target.mkdir()
    link = ns_tnk.home / "logs"
    link.symlink_to(target)  # what a sandbox could plant in a directory it can write
    result = box.run("sandbox", "start", "--backend", box.backend, "--profile", "base",
                     "--audit-log", str(link / "sub" / "audit.ndjson"))
    assert_error(result, PERMISSION, f"refusing to follow {link}: it is a symbolic link")
    assert list(target.iterdir()) == []
