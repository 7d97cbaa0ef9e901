"""Small helpers shared by the end-to-end tests: message checks, fake sandbox records, audit logs."""
import fcntl
import hashlib
import json
import os
import re

# sysexits-style exit codes (docs: `tnk --help` footer)
OK, FAILED, USAGE, NOT_FOUND, PERMISSION = 0, 1, 64, 66, 77

GENESIS = "0" * 64


def lines_with(text, prefix):
    return [line for line in text.splitlines() if line.startswith(prefix)]


def assert_error(result, code, message=None, hint=True):
    """The command failed with `code` and printed its error once: `error: ...` then `hint: ...`."""
    assert result.returncode == code, f"exit {result.returncode}, expected {code}\nstderr: {result.stderr}"
    lines = result.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, f"expected exactly one error line:\n{result.stderr}"
    first = lines[errors[0]]
    assert not first.startswith("error: error:"), first
    if message is not None:
        assert message in first, f"{message!r} not in {first!r}"
    if hint:
        assert errors[0] + 1 < len(lines) and lines[errors[0] + 1].startswith("hint: "), (
            f"no hint line right after the error:\n{result.stderr}"
        )
        assert len(lines_with(result.stderr, "hint:")) == 1, result.stderr
    return first


def canonical(path):
    return os.path.realpath(str(path))


def write_record(tnk, sandbox_id, project_dir, state_dir=None, **overrides):
    """Writes a valid sandbox.json (src/state/record.cc, schema 1), as `sandbox start` would, into
    `state_dir` (default: the tnk fixture's ~/.local/state/tnk)."""
    record = {
        "schema": 1,
        "id": sandbox_id,
        "backend": "ns",
        "project_dir": canonical(project_dir),
        "profile": "dev",
        "mount_point": "/workspace",
        "image_id": "",
        "provision_fingerprint": "",
        "created_at": 1700000000,
        "started_at": None,
        "stopped_at": None,
    }
    record.update(overrides)
    directory = (state_dir or tnk.state_dir) / "sandboxes" / sandbox_id
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sandbox.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def audit_lines(events, container_id="tnk-demo", first_seq=1, prev=GENESIS):
    """Audit records in tnk's chain format (docs/audit-format.md): sorted keys, compact, seq from
    `first_seq`, prev = sha256 of the previous line without its newline (`prev` for the first)."""
    lines = []
    for seq, event in enumerate(events, start=first_seq):
        record = {"container_id": container_id, "prev": prev, "seq": seq, "ts": 1736935800 + seq}
        record.update(event)
        line = json.dumps(record, sort_keys=True, separators=(",", ":"))
        lines.append(line)
        prev = sha256(line)
    return lines


def append_audit(path, events, container_id="tnk-demo"):
    """Appends `events` to the audit log at `path`, continuing its chain, under the same exclusive flock
    tnk's writers take, so that it can run beside a session writing to the same log."""
    with open(path, "r+") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        existing = log.read().splitlines()
        last = json.loads(existing[-1]) if existing else None
        lines = audit_lines(events, container_id, last["seq"] + 1 if last else 1,
                            sha256(existing[-1]) if existing else GENESIS)
        log.write("".join(line + "\n" for line in lines))
    return lines


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def strip_ansi(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
