"""A stand-in Kubernetes API server for the k8s backend's runner tests (issue 36), like the lima tests'
stand-in limactl: the real tnk binary and the real kubectl (`kubectl proxy`, which tnk starts) talk to it
over HTTP as they would to a cluster's API server.

It keeps objects in memory by their REST path and answers create, get, merge-patch and delete the way the
API server does (201, 200, 404 and 409 with a Status). Every object written is validated first against the
schemas the unit tests use (tests/unit/backend/k8s/): the agent-sandbox CRDs' v1beta1 openAPIV3Schema, and
for Pod, Secret, Service and NetworkPolicy the schemas made from Kubernetes' Python client. An unknown
field, a wrong type or a missing required field is refused with 422, as `--validate=strict` would be.
Every request is recorded (method, path, body, answer).

What the cluster's controllers would do is done at once, after each write: agent-sandbox's controller
makes the claims (`<claim>-<sandbox>`) and the agent's pod (named as the Sandbox) of a Running Sandbox and
sets its Ready condition; a Suspended one loses its pod and gets Ready False; a pod that restarts runs at
once, and runs nothing.

A pod that runs once (`restartPolicy: Never`: tnk doctor's egress probe) is run for real, as a kubelet
would: its container's command on this machine, with the Service variables every pod gets pointing at this
server. With `enforce_network_policy`, a pod that a NetworkPolicy without egress rules selects runs in a
network namespace of its own (`unshare -rn`), where it reaches nothing, as under a network plugin that
enforces NetworkPolicy; without it, it reaches what this machine reaches, as under one that does not.
docs/k8s-backend.md says what this stands in for."""
import copy
import functools
import json
import re
import subprocess
import threading
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from conftest import REPO

SCHEMA_DIR = REPO / "tests" / "unit" / "backend" / "k8s"
CRDS = {"Sandbox": "agents.x-k8s.io_sandboxes.yaml",
        "SandboxTemplate": "extensions.agents.x-k8s.io_sandboxtemplates.yaml",
        "SandboxWarmPool": "extensions.agents.x-k8s.io_sandboxwarmpools.yaml"}
# The REST collections the stand-in serves: (group/version prefix, plural) -> kind.
KINDS = {("api/v1", "secrets"): "Secret", ("api/v1", "services"): "Service", ("api/v1", "pods"): "Pod",
         ("api/v1", "persistentvolumeclaims"): "PersistentVolumeClaim",
         ("apis/networking.k8s.io/v1", "networkpolicies"): "NetworkPolicy",
         ("apis/agents.x-k8s.io/v1beta1", "sandboxes"): "Sandbox",
         ("apis/extensions.agents.x-k8s.io/v1beta1", "sandboxtemplates"): "SandboxTemplate",
         ("apis/extensions.agents.x-k8s.io/v1beta1", "sandboxwarmpools"): "SandboxWarmPool"}
PATH = re.compile(r"^/(api/v1|apis/[a-z0-9.-]+/v[0-9a-z]+)/namespaces/([a-z0-9-]+)/([a-z]+)(?:/([a-z0-9.-]+))?$")
DISCOVERY = {"/apis/agents.x-k8s.io/v1beta1": [("sandboxes", "Sandbox")],
             "/apis/extensions.agents.x-k8s.io/v1beta1": [("sandboxtemplates", "SandboxTemplate"),
                                                          ("sandboxwarmpools", "SandboxWarmPool")]}
RUNTIME_CLASS = re.compile(r"^/apis/node\.k8s\.io/v1/runtimeclasses/([a-z0-9.-]+)$")


class Validator:
    """The subset of OpenAPI v3 the schemas use, applied as strict field validation would: the same rules as
    tests/unit/backend/k8s/openapi_validator.h (not CEL rules, not defaults)."""

    def __init__(self, definitions):
        self.definitions = definitions

    def problems(self, schema, value, path=""):
        out = []
        self._check(schema, value, path, out)
        return out

    def _resolve(self, schema):
        while "$ref" in schema:
            schema = self.definitions[schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def _check(self, schema, value, path, out):
        schema = self._resolve(schema)
        if schema.get("x-kubernetes-int-or-string"):
            if not isinstance(value, (int, str)) or isinstance(value, bool):
                out.append(f"{path}: not an integer or a string")
        elif "anyOf" in schema and not any(not self.problems(o, value, path) for o in schema["anyOf"]):
            out.append(f"{path}: matches none of anyOf")
        kind = schema.get("type")
        if kind and not type_matches(kind, value):
            out.append(f"{path}: is {type(value).__name__}, the schema says {kind}")
            return
        if "enum" in schema and value not in schema["enum"]:
            out.append(f"{path}: {value!r} is not one of {schema['enum']}")
        if isinstance(value, str):
            if len(value) > schema.get("maxLength", len(value)) or len(value) < schema.get("minLength", 0):
                out.append(f"{path}: length {len(value)} outside the schema's")
            if "pattern" in schema and not re.search(schema["pattern"], value):
                out.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value < schema.get("minimum", value) or value > schema.get("maximum", value):
                out.append(f"{path}: {value} outside the schema's range")
        if isinstance(value, dict):
            for name in schema.get("required", []):
                if name not in value:
                    out.append(f"{path}: required field {name!r} missing")
            extra = schema.get("additionalProperties")
            open_ = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
            for key, item in value.items():
                if key in schema.get("properties", {}):
                    self._check(schema["properties"][key], item, f"{path}.{key}", out)
                elif isinstance(extra, dict):
                    self._check(extra, item, f"{path}.{key}", out)
                elif not open_:
                    out.append(f"{path}.{key}: unknown field")
        if isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                self._check(schema["items"], item, f"{path}[{i}]", out)


def type_matches(kind, value):
    return {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}[kind](value)


@functools.lru_cache(maxsize=None)
def load_schemas():
    """Once per test run: the CRDs are 1.5 MB of YAML."""
    builtin = json.loads((SCHEMA_DIR / "schemas" / "builtin.json").read_text())
    kinds = dict(builtin["kinds"])
    for kind, name in CRDS.items():
        crd = yaml.load((SCHEMA_DIR / "crds" / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
        schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
        schema["properties"]["metadata"] = {"$ref": "#/definitions/V1ObjectMeta"}  # the API server checks it
        kinds[kind] = schema
    return kinds, Validator(builtin["definitions"])


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                  "reason": reason, "code": code}


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class Cluster:
    """The stand-in's state: objects by path, runtime classes, what was asked, and faults to inject."""

    def __init__(self):
        self.kinds, self.validator = load_schemas()  # read only
        self.objects = {}
        self.runtime_classes = {"gvisor": "runsc", "kata": "kata", "runc": "runc"}
        self.requests = []
        self.refuse = {}  # kind -> (code, message): creating one fails, as a quota or an admission webhook would
        self.agent_sandbox_installed = True  # whether the API serves agent-sandbox's groups (discovery)
        self.enforce_network_policy = True
        self.address = ("127.0.0.1", 0)  # this server's, for the pods' Service variables
        self.on_request = None  # called with (method, path) before each answer, outside the lock
        self.lock = threading.Lock()

    def handle(self, method, path, body):
        if self.on_request:
            self.on_request(method, path)
        with self.lock:
            code, answer = self._handle(method, path, body)
            self.requests.append({"method": method, "path": path, "body": body, "code": code})
            return code, answer

    def _handle(self, method, path, body):
        if method == "GET" and path == "/version":
            return 200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-standin"}
        if method == "GET" and path in DISCOVERY:
            if not self.agent_sandbox_installed:
                return status(404, "NotFound", "the server could not find the requested resource")
            return 200, {"kind": "APIResourceList", "groupVersion": path[len("/apis/"):],
                         "resources": [{"name": n, "namespaced": True, "kind": k} for n, k in DISCOVERY[path]]}
        found = RUNTIME_CLASS.match(path)
        if found and method == "GET":
            name = found.group(1)
            if name not in self.runtime_classes:
                return status(404, "NotFound", f'runtimeclasses.node.k8s.io "{name}" not found')
            return 200, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                         "handler": self.runtime_classes[name]}
        found = PATH.match(path)
        if not found or (found.group(1), found.group(3)) not in KINDS:
            return status(404, "NotFound", f"the server could not find the requested resource ({path})")
        prefix, ns, plural, name = found.groups()
        kind = KINDS[(prefix, plural)]
        collection = f"/{prefix}/namespaces/{ns}/{plural}"
        if method == "POST" and name is None:
            return self._create(kind, collection, ns, body)
        key = f"{collection}/{name}"
        if key not in self.objects:
            return status(404, "NotFound", f'{plural} "{name}" not found')
        if method == "GET":
            return 200, self.objects[key]
        if method == "PATCH":
            patched = merge_patch(self.objects[key], body)
            problems = self._problems(kind, patched)
            if problems:
                return status(422, "Invalid", f'{kind} "{name}" is invalid: ' + "; ".join(problems))
            self.objects[key] = patched
            self._reconcile()
            return 200, patched
        if method == "DELETE":
            del self.objects[key]
            self._reconcile()
            return 200, status(200, "", "")[1] | {"status": "Success"}
        return status(405, "MethodNotAllowed", f"{method} is not served here")

    def _problems(self, kind, obj):
        if kind not in self.kinds:
            return []
        return self.validator.problems(self.kinds[kind], obj)

    def _create(self, kind, collection, ns, obj):
        if not isinstance(obj, dict) or obj.get("kind") != kind:
            return status(400, "BadRequest", f"the body is not a {kind}")
        meta = obj.get("metadata", {})
        if meta.get("namespace", ns) != ns:
            return status(400, "BadRequest", "the namespace of the object does not match the request's")
        if kind in self.refuse:
            code, message = self.refuse[kind]
            return status(code, "Forbidden", message)
        problems = self._problems(kind, obj)
        if problems:
            return status(422, "Invalid", f'{kind} "{meta.get("name")}" is invalid: ' + "; ".join(problems))
        key = f"{collection}/{meta['name']}"
        if key in self.objects:
            return status(409, "AlreadyExists", f'{collection.rsplit("/", 1)[1]} "{meta["name"]}" already exists')
        stored = copy.deepcopy(obj)
        stored["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now(), resourceVersion="1")
        if kind == "Pod":
            stored["status"] = {"phase": "Running"}
            if obj["spec"].get("restartPolicy") == "Never":
                stored["status"] = {"phase": "Pending"}
                threading.Thread(target=self._run_once, args=(key, stored), daemon=True).start()
        self.objects[key] = stored
        self._reconcile()
        return 201, stored

    def _confined(self, pod):
        """Whether a NetworkPolicy in the pod's namespace selects it and lets no egress through."""
        labels = pod["metadata"].get("labels", {})
        for obj in self.objects.values():
            if obj["kind"] != "NetworkPolicy" or obj["metadata"]["namespace"] != pod["metadata"]["namespace"]:
                continue
            wanted = obj["spec"]["podSelector"].get("matchLabels", {})
            if all(labels.get(k) == v for k, v in wanted.items()) and "Egress" in obj["spec"].get("policyTypes", []) \
                    and not obj["spec"].get("egress"):
                return True
        return False

    def _run_once(self, key, pod):
        """A kubelet's run of a pod's one container, to its end: the exit code goes into the pod's status."""
        container = pod["spec"]["containers"][0]
        argv = container.get("command", []) + container.get("args", [])
        with self.lock:
            confined = self.enforce_network_policy and self._confined(pod)
        env = {"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": self.address[0],
               "KUBERNETES_SERVICE_PORT": str(self.address[1])}
        ran = subprocess.run((["unshare", "-rn"] if confined else []) + argv, env=env, capture_output=True,
                             timeout=120)
        with self.lock:
            if key in self.objects:
                self.objects[key]["status"] = {
                    "phase": "Succeeded" if ran.returncode == 0 else "Failed",
                    "containerStatuses": [{"name": container["name"], "ready": False, "restartCount": 0,
                                           "image": container["image"], "imageID": "", "state": {
                                               "terminated": {"exitCode": ran.returncode}}}]}

    def _reconcile(self):
        """agent-sandbox's controller, at once: claims, the agent's pod and the Ready condition."""
        for key, obj in list(self.objects.items()):
            if obj["kind"] != "Sandbox":
                continue
            ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
            pod_key = f"/api/v1/namespaces/{ns}/pods/{name}"
            running = obj["spec"].get("operatingMode", "Running") == "Running"
            for claim in obj["spec"].get("volumeClaimTemplates", []):
                claim_key = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claim['metadata']['name']}-{name}"
                self.objects.setdefault(claim_key, {
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": f"{claim['metadata']['name']}-{name}", "namespace": ns},
                    "spec": claim["spec"], "status": {"phase": "Bound"}})
            if running:
                self.objects.setdefault(pod_key, {"apiVersion": "v1", "kind": "Pod",
                                                  "metadata": {"name": name, "namespace": ns},
                                                  "spec": obj["spec"]["podTemplate"]["spec"],
                                                  "status": {"phase": "Running"}})
            else:
                self.objects.pop(pod_key, None)
            obj["status"] = {"conditions": [{
                "type": "Ready", "status": "True" if running else "False", "lastTransitionTime": now(),
                "reason": "DependenciesReady" if running else "SandboxSuspended",
                "message": "Pod is Ready" if running else "the Sandbox is suspended"}]}

    def kinds_created(self):
        return [r["body"]["kind"] for r in self.requests if r["method"] == "POST" and r["code"] == 201]

    def names(self, plural):
        return sorted(k.rsplit("/", 1)[1] for k in self.objects if k.rsplit("/", 2)[1] == plural)

    def get(self, path):
        return self.objects.get(path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        code, answer = self.server.cluster.handle(self.command, self.path.split("?")[0], body)
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def log_message(self, *args):
        pass


class StandinApiServer:
    """The server on a loopback port, in a thread, and a kubeconfig that points kubectl at it."""

    def __init__(self, directory: Path):
        self.cluster = Cluster()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.cluster = self.cluster
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.kubeconfig = directory / "kubeconfig"
        port = self.httpd.server_address[1]
        self.cluster.address = ("127.0.0.1", port)
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
            "clusters": [{"name": "standin", "cluster": {"server": f"http://127.0.0.1:{port}"}},
                         {"name": "nowhere", "cluster": {"server": "http://127.0.0.1:1"}}],
            "users": [{"name": "tester", "user": {}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "tester"}},
                         {"name": "elsewhere", "context": {"cluster": "nowhere", "user": "tester"}}]}))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
