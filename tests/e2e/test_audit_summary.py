"""`tnk audit summary` on a log of real ns sessions with `inference_request` records (the gateway's,
docs/audit-format.md) written into it beside a running session, under the writers' flock, with the
chain continued: counts per model and per session, text and JSON, a broken chain (a warning, the
summary still printed, exit 1), and the files that are not a log (66, 1)."""
import json
import subprocess
import time

import pytest

from conftest import TNK_BIN
from e2e_util import FAILED, NOT_FOUND, OK, append_audit, assert_error, audit_lines, lines_with
from sandbox_harness import Sandbox, ns_tnk  # noqa: F401 (fixture)

pytestmark = pytest.mark.rootless_suite


def request(served, status, latency, ttfb, **extra):
    record = {"event": "inference_request", "policy": "inference", "method": "POST",
              "path": "/v1/chat/completions", "status": status, "model_requested": "coder",
              "model_served": served, "stream": True, "latency_ms": latency, "ttfb_ms": ttfb,
              "bytes_up": 512, "bytes_down": 20480, "end": "closed"}
    record.update(extra)
    return record


def wait_for_event(log, event, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and any(json.loads(line)["event"] == event for line in log.read_text().splitlines()):
            return
        time.sleep(0.1)
    raise AssertionError(f"no {event} record in {log} after {timeout} s")


def records(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


def log_with_requests(ns_tnk, tmp_path):
    """A started sandbox's log: a session `sh -c <wait for /workspace/go>` with three requests written
    while it runs, then one more session (`true`) without requests, then two requests after both."""
    box = Sandbox(ns_tnk, ns_tnk.project("sum"))
    log = tmp_path / "audit.ndjson"
    box.start("--audit-log", str(log))
    wait = "while [ ! -e /workspace/go ]; do sleep 0.05; done"
    session = subprocess.Popen([TNK_BIN, "sandbox", "exec", "--audit-log", str(log), "--", "sh", "-c", wait],
                               cwd=box.project, env=ns_tnk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_event(log, "exec_invocation")
        sid = records(log)[0]["container_id"]
        append_audit(log, [request("qwen2.5-coder-7b", 200, 800.0, 30.0, prompt_tokens=40, completion_tokens=300),
                           request("qwen2.5-coder-7b", 200, 1200.0, 50.0, prompt_tokens=2, completion_tokens=11),
                           request("qwen2.5-coder-7b", 429, 0.5, 0.4)], container_id=sid)
        (box.project / "go").touch()
        assert session.wait(timeout=30) == OK, session.stderr.read()
    finally:
        session.kill()
        session.wait()
    assert box.exec("true", audit=log).returncode == OK
    append_audit(log, [request("llama3", 200, 100.0, 10.0, stream=False, prompt_tokens=5, completion_tokens=6),
                       request("", 0, 10000.0, 0.0, model_requested="", end="error: connection reset")],
                 container_id=sid)
    return box, log


def test_summary_counts_per_model_and_session(ns_tnk, tmp_path):
    box, log = log_with_requests(ns_tnk, tmp_path)
    all_records = records(log)
    start_seq = next(r["seq"] for r in all_records if r["event"] == "session_start")
    argv = next(r["argv"] for r in all_records if r["event"] == "exec_invocation")
    assert argv[-3:] == ["sh", "-c", "while [ ! -e /workspace/go ]; do sleep 0.05; done"], argv

    text = box.run("audit", "summary", str(log))
    assert text.returncode == OK, text.stderr
    assert lines_with(text.stderr, "warning:") == [], text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"{log}: {len(all_records)} records, 5 inference requests"
    rows = {line.split("  ")[0]: line.split() for line in lines if line and not line.startswith(str(log))}
    #                                 requests errors prompt completion no-tokens p50 p95 ttfb-p50 ttfb-p95
    assert rows["qwen2.5-coder-7b"][1:] == ["3", "1", "42", "311", "1", "800.0", "1200.0", "30.0", "50.0"]
    assert rows["llama3"][1:] == ["1", "0", "5", "6", "0", "100.0", "100.0", "10.0", "10.0"]
    assert rows["(none)"][1:6] == ["1", "1", "0", "0", "1"] and rows["(none)"][-2:] == ["-", "-"]
    assert rows["total"][1:6] == ["5", "2", "47", "317", "2"]
    session_rows = [line for line in lines if line.startswith(f"#{start_seq} ")]
    assert len(session_rows) == 1 and "sh -c while [ ! -e /workspace/go ]" in session_rows[0], lines
    assert session_rows[0].split()[-9:-5] == ["3", "1", "42", "311"], session_rows
    assert rows["no session"][2:4] == ["2", "1"]

    doc = box.tnk.json("audit", "summary", str(log), "-o", "json")
    assert doc["path"] == str(log) and doc["records"] == len(all_records)
    assert doc["chain"]["ok"] is True and doc["chain"]["records"] == len(all_records)
    models = {m["model"]: m for m in doc["models"]}
    assert set(models) == {"qwen2.5-coder-7b", "llama3", ""}
    assert models["qwen2.5-coder-7b"]["latency_ms"] == {"median": 800.0, "p95": 1200.0}
    assert models[""]["ttfb_ms"] == {"median": None, "p95": None}  # no answer: no first byte
    in_session, outside = doc["sessions"]
    assert in_session["session"]["start_seq"] == start_seq and in_session["session"]["argv"] == argv
    assert in_session["session"]["exit_seq"] > start_seq and in_session["requests"] == 3
    assert outside["session"] is None and outside["requests"] == 2
    assert doc["total"] == {"requests": 5, "errors": 2, "prompt_tokens": 47, "completion_tokens": 317,
                            "without_tokens": 2, "latency_ms": {"median": 800.0, "p95": 10000.0},
                            "ttfb_ms": {"median": 20.0, "p95": 50.0}}
    ndjson = box.run("audit", "summary", str(log), "-o", "ndjson")
    assert ndjson.returncode == OK and json.loads(ndjson.stdout) == doc and ndjson.stdout.count("\n") == 1

    # The log is still one chain that tnk itself continues and verifies.
    assert box.run("audit", "verify", str(log)).returncode == OK


def test_broken_chain_is_a_warning_and_the_summary_is_still_printed(ns_tnk, tmp_path):
    box, log = log_with_requests(ns_tnk, tmp_path)
    lines = log.read_text().splitlines()
    edited = next(i for i, line in enumerate(lines) if '"model_served":"llama3"' in line)
    lines[edited] = lines[edited].replace('"completion_tokens":6', '"completion_tokens":6000')
    log.write_text("".join(line + "\n" for line in lines))

    text = box.run("audit", "summary", str(log))
    assert text.returncode == FAILED
    assert lines_with(text.stderr, "warning:") == [
        f"warning: audit log {log}: chain broken at line {edited + 2}: record edited: prev hash of line "
        f"{edited + 2} does not match line {edited + 1}; the summary counts every record that could be read, "
        "edited or not"], text.stderr
    assert lines_with(text.stderr, "error:") == []
    assert text.stdout.startswith(f"{log}: {len(lines)} records, 5 inference requests\n")
    doc_run = box.run("audit", "summary", str(log), "-o", "json")
    assert doc_run.returncode == FAILED
    doc = json.loads(doc_run.stdout)
    assert doc["chain"]["ok"] is False and doc["chain"]["bad_line"] == edited + 2
    assert doc["total"]["completion_tokens"] == 311 + 6000


def test_missing_file_and_not_a_log(tnk, tmp_path):
    missing = tmp_path / "nope.ndjson"
    assert_error(tnk.run("audit", "summary", str(missing)), NOT_FOUND,
                 f"cannot read audit log {missing}: No such file or directory")
    other = tmp_path / "notes.txt"
    other.write_text("hello\n{\"not\": \"a record\"}\n")
    assert_error(tnk.run("audit", "summary", str(other)), FAILED,
                 f"{other} is not an audit log: none of its lines is a record with \"event\" and \"seq\"")
    as_json = tnk.run("audit", "summary", str(other), "-o", "json")
    assert json.loads(as_json.stdout)["error"]["exit_code"] == FAILED


def test_empty_log_has_no_requests(tnk, tmp_path):
    empty = tmp_path / "empty.ndjson"
    empty.write_text("")
    result = tnk.run("audit", "summary", str(empty))
    assert result.returncode == OK and result.stdout == f"{empty}: 0 records, 0 inference requests\n"


# The sandbox chooses the model a request names (model_requested, and model_served when the endpoint
# echoes it) and the argv it runs: in text they are made safe for the terminal like every name tnk
# prints. The same log's plain name is the control.
def test_names_from_the_sandbox_are_printed_without_control_sequences(tnk, tmp_path):
    hostile = "evil\x1b]52;c;cm0gLXJmIH4=\x07"
    log = tmp_path / "audit.ndjson"
    log.write_text("".join(line + "\n" for line in audit_lines([
        {"event": "session_start"}, {"event": "exec_invocation", "argv": ["pi", "\x1b[2J"]},
        request(hostile, 200, 1.0, 0.5), request("plain-model", 200, 1.0, 0.5)])))
    result = tnk.run("audit", "summary", str(log))
    assert result.returncode == OK, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "evil\\x1b]52;c;cm0gLXJmIH4=\\x07  " in result.stdout
    assert "pi \\x1b[2J  " in result.stdout
    assert "\nplain-model  " in result.stdout
    models = {m["model"] for m in tnk.json("audit", "summary", str(log), "-o", "json")["models"]}
    assert models == {hostile, "plain-model"}  # the data keeps what was sent
