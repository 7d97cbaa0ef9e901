"""The k8s backend's runner through the real tnk binary and the real kubectl, against the stand-in API
server (k8s_standin.py), which validates every object written against the CRDs' and Kubernetes' schemas
and records what was asked (issue 36): start, a second start, stop, start again, delete, the runtime-class
refusal, a start the cluster refuses half-way, and what is not built yet (sessions).
No real cluster is involved: docs/k8s-backend.md says what has run where."""
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from conftest import require
from e2e_util import FAILED, OK, USAGE, assert_error
from k8s_standin import StandinApiServer

pytestmark = pytest.mark.rootless_suite  # nothing runs on this machine but tnk and kubectl

NS = "agents"
PLAN_KINDS = ["Secret", "NetworkPolicy", "NetworkPolicy", "NetworkPolicy", "Service", "Pod", "SandboxTemplate",
              "Sandbox"]


class K8sWorld:
    """An initialized tnk whose [k8s] names the stand-in's kubeconfig and context."""

    def __init__(self, tnk, tmp_path, runtime_class="gvisor", extra=""):
        require(shutil.which("kubectl") is not None, "kubectl is not installed (scripts/install-deps.sh)")
        self.tnk = tnk
        self.server = StandinApiServer(tmp_path)
        self.cluster = self.server.cluster
        assert tnk.run("init").returncode == OK
        runtime = f'runtime_class = "{runtime_class}"\n' if runtime_class else ""
        config = tnk.config_dir / "tnk.toml"
        config.write_text(config.read_text() + f'\n[k8s]\nkubeconfig = "{self.server.kubeconfig}"\n'
                          f'context = "standin"\nnamespace = "{NS}"\n{runtime}{extra}')

    def run(self, *args, **kwargs):
        kwargs.setdefault("cwd", self.tnk.project("demo"))
        return self.tnk.run(*args, **kwargs)

    def start(self, *extra):
        return self.run("sandbox", "start", "--backend", "k8s", "--profile", "base", *extra)

    def started(self):
        result = self.start()
        assert result.returncode == OK, result.stderr
        return result

    def mark(self):
        return len(self.cluster.requests)

    def asked_since(self, mark):
        return [(r["method"], r["path"].rsplit("/", 2)[-2] if r["method"] != "POST" else r["path"].rsplit("/", 1)[1])
                for r in self.cluster.requests[mark:]]

    def status(self):
        rows = json.loads(self.run("-o", "json", "sandbox", "ls").stdout)
        return {r["name"]: r["status"] for r in rows}

    def sandbox(self):
        return self.cluster.get(f"/apis/agents.x-k8s.io/v1beta1/namespaces/{NS}/sandboxes/tnk-demo")


@pytest.fixture
def k8s(tnk, tmp_path):
    world = K8sWorld(tnk, tmp_path)
    yield world
    world.server.close()


def test_start_creates_every_object_in_order_each_valid_and_waits_until_ready(k8s):
    result = k8s.started()
    assert k8s.cluster.kinds_created() == PLAN_KINDS
    assert all(r["code"] in (200, 201, 404) for r in k8s.cluster.requests), k8s.cluster.requests
    assert "created and started tnk-demo (k8s backend)" in result.stderr
    assert k8s.sandbox()["spec"]["operatingMode"] == "Running"
    assert k8s.sandbox()["spec"]["podTemplate"]["spec"]["runtimeClassName"] == "gvisor"
    assert k8s.cluster.names("persistentvolumeclaims") == ["home-tnk-demo", "workspace-tnk-demo"]
    token = k8s.cluster.get(f"/api/v1/namespaces/{NS}/secrets/tnk-demo-keys")["stringData"]["token"]
    assert len(token) == 32 and token not in result.stderr  # the start's own token, never printed
    assert k8s.status() == {"tnk-demo": "running"}
    record = json.loads((k8s.tnk.state_dir / "sandboxes" / "tnk-demo" / "sandbox.json").read_text())
    assert record["backend"] == "k8s" and record["mount_point"] == "/workspace"
    assert record["image_id"].startswith("tnk-base:")


def test_a_second_start_only_asks(k8s):
    k8s.started()
    mark = k8s.mark()
    result = k8s.started()
    assert [m for m, _ in k8s.asked_since(mark)] == ["GET"] * len(k8s.asked_since(mark)), k8s.asked_since(mark)
    assert "started" not in result.stderr


def test_stop_suspends_and_keeps_the_claims_and_a_start_resumes_with_a_new_token(k8s):
    k8s.started()
    token = k8s.cluster.get(f"/api/v1/namespaces/{NS}/secrets/tnk-demo-keys")["stringData"]["token"]
    stop = k8s.run("sandbox", "stop")
    assert stop.returncode == OK, stop.stderr
    assert "stopped tnk-demo" in stop.stderr
    assert k8s.sandbox()["spec"]["operatingMode"] == "Suspended"
    assert k8s.cluster.names("pods") == []  # the agent's pod (the cluster's doing) and the supervisor's (tnk's)
    assert k8s.cluster.names("persistentvolumeclaims") == ["home-tnk-demo", "workspace-tnk-demo"]
    assert k8s.status() == {"tnk-demo": "stopped"}
    mark = k8s.mark()
    again = k8s.started()
    assert "started tnk-demo" in again.stderr
    asked = k8s.asked_since(mark)
    assert ("POST", "pods") in asked and ("PATCH", "sandboxes") in asked
    assert ("POST", "sandboxes") not in asked  # resumed, not made again
    assert k8s.cluster.names("pods") == ["tnk-demo", "tnk-demo-supervisor"]
    assert k8s.cluster.get(f"/api/v1/namespaces/{NS}/secrets/tnk-demo-keys")["stringData"]["token"] != token
    assert k8s.status() == {"tnk-demo": "running"}


def test_delete_removes_the_sandboxs_objects_and_claims_and_keeps_the_shared_template(k8s):
    k8s.started()
    deleted = k8s.run("sandbox", "delete", "--yes")
    assert deleted.returncode == OK, deleted.stderr
    for plural in ("sandboxes", "pods", "services", "secrets", "persistentvolumeclaims"):
        assert k8s.cluster.names(plural) == [], plural
    # the template and its deny-all policy serve every sandbox of the profile's fingerprint
    assert len(k8s.cluster.names("sandboxtemplates")) == 1
    assert [n for n in k8s.cluster.names("networkpolicies") if not n.endswith("-deny")] == []
    assert not (k8s.tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    assert k8s.status() == {}


@pytest.mark.parametrize("runtime_class,message", [
    (None, "k8s.runtime_class is not set"),
    ("runc", "runs plain containers (handler runc)"),
    ("firecracker", "the cluster has no RuntimeClass 'firecracker'"),
])
def test_a_plain_container_or_a_missing_runtime_class_is_refused_and_nothing_is_created(tnk, tmp_path, runtime_class,
                                                                                        message):
    world = K8sWorld(tnk, tmp_path, runtime_class=runtime_class)
    try:
        result = world.start()
        assert_error(result, FAILED, message, hint=True)
        assert world.cluster.kinds_created() == []
        assert not (tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    finally:
        world.server.close()


def test_k8s_allow_runc_opts_in_to_a_plain_container(tnk, tmp_path):
    world = K8sWorld(tnk, tmp_path, runtime_class="runc", extra="allow_runc = true\n")
    try:
        assert world.start().returncode == OK
        assert world.sandbox()["spec"]["podTemplate"]["spec"]["runtimeClassName"] == "runc"
    finally:
        world.server.close()


def test_a_start_the_cluster_refuses_half_way_leaves_nothing(k8s):
    k8s.cluster.refuse["Pod"] = (403, 'pods "tnk-demo-supervisor" is forbidden: exceeded quota: agents')
    result = k8s.start()
    assert_error(result, FAILED, "the cluster refused to create Pod tnk-demo-supervisor: pods \"tnk-demo-supervisor\" "
                                 "is forbidden: exceeded quota", hint=True)
    assert "(HTTP 403)" in result.stderr
    assert k8s.cluster.kinds_created() == PLAN_KINDS[:5]
    # what this start made is gone again, the shared template included (this start made it)
    assert all(k8s.cluster.names(p) == [] for p in ("secrets", "networkpolicies", "services", "pods", "sandboxes"))
    assert not (k8s.tnk.state_dir / "sandboxes" / "tnk-demo").exists()
    del k8s.cluster.refuse["Pod"]
    assert k8s.start().returncode == OK  # and the next start begins from nothing


def test_the_stand_in_refuses_what_the_schemas_refuse(k8s):
    """The stand-in is only worth its passes if it fails: a misspelt field, a wrong type and a missing
    required field are each refused with 422, through the same kubectl proxy path tnk uses."""
    k8s.started()
    sandbox = k8s.sandbox()
    cluster = k8s.cluster
    base = f"/apis/agents.x-k8s.io/v1beta1/namespaces/{NS}/sandboxes"
    for broken, problem in [({"operatingModee": "Running"}, "unknown field"),
                            ({"operatingMode": 3}, "the schema says string"),
                            ({"operatingMode": "Paused"}, "is not one of")]:
        code, answer = cluster.handle("PATCH", f"{base}/tnk-demo", {"spec": broken})
        assert code == 422 and problem in answer["message"], answer
    no_template = {**sandbox, "metadata": {"name": "other", "namespace": NS}, "spec": {"replicas": 1}}
    code, answer = cluster.handle("POST", base, no_template)
    assert code == 422 and "required field 'podTemplate' missing" in answer["message"], answer


def test_an_unreachable_cluster_is_named(k8s):
    config = k8s.tnk.config_dir / "tnk.toml"
    config.write_text(config.read_text().replace('context = "standin"', 'context = "elsewhere"'))
    result = k8s.start()
    assert_error(result, FAILED, hint=True)
    assert "127.0.0.1:1" in result.stderr or "connection refused" in result.stderr.lower(), result.stderr
    assert not (k8s.tnk.state_dir / "sandboxes" / "tnk-demo").exists()


def test_without_kubectl_the_error_says_how_to_get_it(k8s, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = k8s.run("sandbox", "start", "--backend", "k8s", "--profile", "base", env={"PATH": str(empty)})
    assert_error(result, FAILED, "kubectl is not installed", hint=True)
    assert "kubernetes-client" in result.stderr


def test_sessions_are_refused_with_one_message_until_they_are_built(k8s):
    k8s.started()
    result = k8s.run("sandbox", "exec", "--", "true")
    assert_error(result, FAILED, "sessions on the k8s backend are not built yet", hint=True)


def k8s_checks(world):
    """`tnk doctor --backend k8s`'s own checks, by id (the host's checks are the rest of the report)."""
    result = world.run("-o", "json", "doctor", "--backend", "k8s", timeout=180)
    assert result.returncode in (OK, FAILED), result.stderr
    return {c["id"]: c for c in json.loads(result.stdout)["checks"] if c["id"].startswith("k8s_")}


def probe_pods_ran(world):
    return [r["body"]["metadata"]["name"] for r in world.cluster.requests
            if r["method"] == "POST" and r["body"]["kind"] == "Pod"]


def test_doctor_sees_a_cluster_that_enforces_egress_and_one_that_does_not(k8s):
    """The pair: the same two probe pods, on a stand-in whose pods under a deny-all NetworkPolicy run in
    a network namespace of their own (a plugin that enforces it) and on one whose pods all reach this
    machine (a plugin that does not). Each run's objects are deleted again."""
    checks = k8s_checks(k8s)
    assert [c["status"] for c in checks.values()] == ["ok"] * 4, checks
    assert "v1.30.0-standin" in checks["k8s_cluster"]["summary"] and "context standin" in checks["k8s_cluster"]["summary"]
    assert "could not reach the API server's Service" in checks["k8s_egress"]["summary"]
    assert len(probe_pods_ran(k8s)) == 2
    assert k8s.cluster.names("pods") == [] and k8s.cluster.names("networkpolicies") == []

    k8s.cluster.enforce_network_policy = False
    checks = k8s_checks(k8s)
    assert checks["k8s_egress"]["status"] == "fail", checks
    assert "does not enforce NetworkPolicy" in checks["k8s_egress"]["summary"]
    assert "Calico" in checks["k8s_egress"]["fix"]
    assert k8s.cluster.names("pods") == [] and k8s.cluster.names("networkpolicies") == []


def test_doctor_names_what_the_cluster_lacks(k8s):
    k8s.cluster.agent_sandbox_installed = False
    del k8s.cluster.runtime_classes["gvisor"]
    checks = k8s_checks(k8s)
    assert checks["k8s_agent_sandbox"]["status"] == "fail"
    assert "does not serve sandboxes" in checks["k8s_agent_sandbox"]["summary"]
    assert checks["k8s_runtime_class"]["status"] == "fail"
    assert "no RuntimeClass 'gvisor'" in checks["k8s_runtime_class"]["summary"]
    config = k8s.tnk.config_dir / "tnk.toml"
    config.write_text(config.read_text().replace('context = "standin"', 'context = "elsewhere"'))
    checks = k8s_checks(k8s)
    assert checks["k8s_cluster"]["status"] == "fail" and "127.0.0.1:1" in checks["k8s_cluster"]["summary"]
    assert all(c["status"] == "fail" and "not reached" in c["summary"]
               for i, c in checks.items() if i != "k8s_cluster"), checks


def test_doctor_backend_other_than_k8s_is_a_usage_error(k8s):
    result = k8s.run("doctor", "--backend", "vm")
    assert_error(result, USAGE, "only k8s has checks of its own", hint=True)


def test_the_secret_gets_the_api_key_and_each_routes_credential_and_nothing_prints_them(tnk, tmp_path):
    routes = ('[[routes]]\nname = "git"\nupstream = "https://git.example"\nheader = "Authorization: Bearer '
              '{credential}"\nsource = "env:TNK_TEST_ROUTE"\n')
    world = K8sWorld(tnk, tmp_path)
    config = tnk.config_dir / "tnk.toml"
    config.write_text('inference_url = "http://infer.example:8080/v1"\n' + config.read_text() + "\n" + routes +
                      '[inference]\napi_key_env = "TNK_TEST_KEY"\n')
    try:
        result = world.run("sandbox", "start", "--backend", "k8s", "--profile", "base",
                           env={"TNK_TEST_ROUTE": "route-secret-42", "TNK_TEST_KEY": "key-secret-43"})
        assert result.returncode == OK, result.stderr
        data = world.cluster.get(f"/api/v1/namespaces/{NS}/secrets/tnk-demo-keys")["stringData"]
        assert (data["route-git"], data["inference-api-key"]) == ("route-secret-42", "key-secret-43")
        pod = world.cluster.get(f"/api/v1/namespaces/{NS}/pods/tnk-demo-supervisor")
        assert "secret-4" not in json.dumps(pod) and "secret-4" not in json.dumps(world.sandbox())
        assert "secret-4" not in result.stdout + result.stderr
    finally:
        world.server.close()


def test_kubectl_proxys_socket_is_the_users_alone(k8s, tmp_path):
    """The proxy speaks for the kubeconfig's user: its socket is in a directory of mode 0700, so another
    local user cannot connect, while tnk (its owner) does: seen from the stand-in while tnk's request to it
    is in flight, and after the command, nothing of it is left."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    os.chmod(tmpdir, 0o1777)
    seen = []

    def look(method, path):
        if method != "GET" or not path.endswith("/sandboxes/tnk-demo") or seen:
            return
        (directory,) = tmpdir.glob("tnk-kubectl-*")
        socket_path = directory / "api.sock"
        seen.append((stat.S_IMODE(directory.stat().st_mode), socket_path.is_socket(),
                     connects(socket_path, None), connects(socket_path, "nobody") if os.geteuid() == 0 else None))

    k8s.cluster.on_request = look
    result = k8s.run("sandbox", "start", "--backend", "k8s", "--profile", "base", env={"TMPDIR": str(tmpdir)})
    assert result.returncode == OK, result.stderr
    mode, is_socket, owner_connects, other_connects = seen[0]
    assert (mode, is_socket, owner_connects) == (0o700, True, "connected")
    # another user is refused by the directory's mode (checked when the test runs as root, which can be one)
    assert other_connects in ("PermissionError", None)
    assert list(tmpdir.iterdir()) == []


def connects(path, user):
    """What `user` (None: this process's) gets connecting to the unix socket at `path`: "connected" or the
    exception's name."""
    probe = (f"import socket\ntry:\n socket.socket(socket.AF_UNIX).connect({str(path)!r}); print('connected')\n"
             "except OSError as e:\n print(type(e).__name__)")
    argv = [sys.executable, "-c", probe]
    if user:
        argv = ["runuser", "-u", user, "--"] + argv
    return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
