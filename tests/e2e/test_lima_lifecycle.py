"""The lima backend's lifecycle through the real tnk binary and the stand-in limactl (issue 6):
start, a second start, stop, delete, ls, inspect, a failed `limactl start`, and `start -n`.
No real Lima runs here; see lima_harness.py."""
import json

import yaml

from e2e_util import FAILED, OK, assert_error
from lima_harness import lima  # noqa: F401 (fixture)


def test_start_creates_the_instance_from_the_planned_yaml(lima):
    result = lima.started()
    assert lima.commands() == ["list", "create", "start", "list"]
    create = lima.calls()[1]
    yaml_file = lima.tnk.state_dir / "sandboxes" / "tnk-demo" / "lima.yaml"
    assert create == ["--tty=false", "create", "--name", "tnk-demo", str(yaml_file)]
    config = yaml.safe_load(yaml_file.read_text())
    project = lima.tnk.project("demo").resolve()
    assert config["mounts"] == [{"location": str(project), "mountPoint": "/workspace", "writable": True}]
    assert config["vmType"] == "vz" and config["mountType"] == "virtiofs"
    assert config["ssh"] == {"loadDotSSHPubKeys": False, "forwardAgent": False, "forwardX11": False}
    assert all(rule.get("ignore") for rule in config["portForwards"])
    assert config["containerd"] == {"system": False, "user": False}
    assert "created and started tnk-demo (lima backend)" in result.stderr
    row = lima.ls()["tnk-demo"]
    assert (row["status"], row["backend"], row["mount"]) == ("running", "lima", "/workspace")
    assert lima.instance("tnk-demo")["status"] == "Running"


def test_second_start_of_a_running_sandbox_only_asks(lima):
    lima.started()
    mark = lima.mark()
    result = lima.started()
    assert lima.commands_since(mark) == ["list", "list"], lima.calls()[mark:]  # inspect's and start's own
    assert "started" not in result.stderr


def test_stop_then_start_again_reuses_the_instance(lima):
    lima.started()
    stop = lima.run("sandbox", "stop")
    assert stop.returncode == OK, stop.stderr
    assert "stopped tnk-demo" in stop.stderr
    assert lima.ls()["tnk-demo"]["status"] == "stopped"
    assert lima.instance("tnk-demo")["status"] == "Stopped"
    assert json.loads(lima.record_path("tnk-demo").read_text())["stopped_at"] is not None
    mark = lima.mark()
    lima.started()
    assert lima.commands_since(mark) == ["list", "list", "start", "list"]
    # stopping a stopped sandbox is not an error and runs no `limactl stop`
    lima.run("sandbox", "stop")
    mark = lima.mark()
    again = lima.run("sandbox", "stop")
    assert again.returncode == OK and "is not running" in again.stderr
    assert "stop" not in lima.commands_since(mark)


def test_stop_all_and_by_name(lima):
    lima.started("demo")
    lima.started("other")
    by_name = lima.run("sandbox", "stop", "--name", "tnk-other")
    assert by_name.returncode == OK, by_name.stderr
    assert {n: r["status"] for n, r in lima.ls().items()} == {"tnk-demo": "running", "tnk-other": "stopped"}
    everything = lima.tnk.run("shutdown")
    assert everything.returncode == OK, everything.stderr
    assert {r["status"] for r in lima.ls().values()} == {"stopped"}


def test_delete_removes_the_instance_and_the_state(lima):
    lima.started()
    result = lima.run("sandbox", "delete", "--yes")
    assert result.returncode == OK, result.stderr
    assert "deleted tnk-demo" in result.stderr
    calls = lima.calls()
    assert ["--tty=false", "stop", "tnk-demo"] in calls
    assert ["--tty=false", "delete", "--force", "tnk-demo"] in calls
    assert lima.instance("tnk-demo") is None
    assert not (lima.tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    assert lima.ls() == {}
    assert lima.tnk.project("demo").is_dir()  # the project itself is never touched


def test_delete_without_yes_off_a_terminal_is_refused(lima):
    lima.started()
    result = lima.run("sandbox", "delete")
    assert_error(result, 77, "refusing to delete tnk-demo")
    assert lima.instance("tnk-demo")["status"] == "Running"


def test_a_failed_first_start_leaves_nothing_behind(lima):
    result = lima.start(env={"FAKE_LIMACTL_FAIL": "start"})
    line = assert_error(result, FAILED, "`limactl start` of tnk-demo failed (exit 1)")
    assert "simulated start failure" in line
    assert lima.commands()[-1] == "delete"  # the half-created instance is removed again
    assert lima.instance("tnk-demo") is None
    assert not (lima.tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    assert lima.ls() == {}
    # and the next start works from nothing
    lima.started()
    assert lima.ls()["tnk-demo"]["status"] == "running"


def test_a_failed_start_of_a_stopped_sandbox_changes_nothing(lima):
    lima.started()
    assert lima.run("sandbox", "stop").returncode == OK
    record_before = lima.record_path("tnk-demo").read_bytes()
    result = lima.start(env={"FAKE_LIMACTL_FAIL": "start"})
    assert_error(result, FAILED, "`limactl start` of tnk-demo failed")
    assert lima.record_path("tnk-demo").read_bytes() == record_before
    assert lima.instance("tnk-demo")["status"] == "Stopped"
    assert lima.ls()["tnk-demo"]["status"] == "stopped"
    assert "delete" not in lima.commands()


def test_an_instance_tnk_did_not_create_is_not_taken_over(lima):
    lima.started()
    # tnk's state is lost, Lima's instance stays: the next start must not adopt it silently
    record = lima.record_path("tnk-demo")
    record.unlink()
    result = lima.start()
    assert_error(result, FAILED, "a Lima instance named tnk-demo exists, but tnk did not create it")


def test_inspect_states_what_lima_cannot_enforce(lima):
    lima.started()
    doc = lima.tnk.json("sandbox", "inspect", "-o", "json", cwd=lima.tnk.project("demo"))
    assert doc["backend"]["name"] == "lima" and doc["state"] == "running"
    limits = doc["network_limits"]
    assert any("'inference' is not enforced" in line for line in limits), limits
    assert any("host.lima.internal" in line for line in limits), limits
    text = lima.run("sandbox", "inspect").stdout
    assert "not enforced" in text and "passwordless sudo" in text


def test_inspect_of_an_ns_sandbox_has_no_lima_limits(lima):
    doc = lima.tnk.json("sandbox", "inspect", "--backend", "ns", "-o", "json", cwd=lima.tnk.project("demo"))
    assert doc["network_limits"] == []
    assert "not_enforceable" not in {p["state"] for p in doc["protected_paths"]}


def test_lima_says_it_cannot_enforce_the_protected_paths(lima):
    """mounts.readonly (docs/workspace.md): the bundled profile lists paths; on lima none is enforced, and
    start and inspect say so. The ns control is the test above."""
    started = lima.started()
    doc = lima.tnk.json("sandbox", "inspect", "-o", "json", cwd=lima.tnk.project("demo"))
    states = {p["path"]: p["state"] for p in doc["protected_paths"]}
    assert ".git/hooks" in states and set(states.values()) == {"not_enforceable"}, states
    assert "mounts.readonly is not enforced on lima" in started.stderr
    assert "read-only" in lima.run("sandbox", "inspect").stdout


def test_ls_says_unknown_when_limactl_is_missing(lima):
    lima.started()
    lima.tnk.env["PATH"] = "/usr/bin:/bin"
    result = lima.tnk.run("sandbox", "ls", "-o", "json")
    assert result.returncode == OK, result.stderr
    assert json.loads(result.stdout)[0]["status"] == "unknown"
    assert "warning:" in result.stderr and "limactl" in result.stderr


def test_dry_run_prints_the_yaml_and_the_commands_and_changes_nothing(lima):
    result = lima.start("demo", "-n")
    assert result.returncode == OK, result.stderr
    out = result.stdout
    assert "vmType: vz" in out and "loadDotSSHPubKeys: false" in out
    assert "limactl --tty=false create --name tnk-demo" in out
    assert "limactl --tty=false start tnk-demo" in out
    assert "'inference' is not enforced" in out
    assert lima.calls() == []  # nothing asked of Lima for a sandbox that does not exist yet
    assert not (lima.tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    doc = json.loads(lima.start("demo", "-n", "-o", "json").stdout)
    assert doc["backend"] == "lima" and doc["state"] == "absent"
    assert doc["commands"][1][:4] == ["limactl", "--tty=false", "create", "--name"]
    assert yaml.safe_load(doc["yaml"])["mounts"][0]["mountPoint"] == "/workspace"


def test_dry_run_of_a_running_sandbox_runs_nothing_more(lima):
    lima.started()
    doc = json.loads(lima.start("demo", "-n", "-o", "json").stdout)
    assert doc["state"] == "running"
    assert doc["commands"] == [["limactl", "list", "--format", "json"]]


def test_doctor_reports_lima_without_failing(lima):
    with_fake = lima.tnk.run("doctor", "-o", "json")
    check = next(c for c in json.loads(with_fake.stdout)["checks"] if c["id"] == "lima")
    assert check["status"] == "ok" and "Lima 1.0.3" in check["summary"], check
    assert check["required"] is False
    lima.tnk.env["PATH"] = "/usr/bin:/bin"
    without = lima.tnk.run("doctor", "-o", "json")
    check = next(c for c in json.loads(without.stdout)["checks"] if c["id"] == "lima")
    assert check["status"] == "info" and check["summary"].startswith("not applicable"), check
    assert without.returncode == with_fake.returncode


def test_start_without_limactl_says_so(lima):
    lima.tnk.env["PATH"] = "/usr/bin:/bin"
    result = lima.start()
    line = assert_error(result, 66, "limactl")
    assert "not installed" in line and "hint: install Lima" in result.stderr
    assert not (lima.tnk.state_dir / "sandboxes" / "tnk-demo" / "sandbox.json").exists()
