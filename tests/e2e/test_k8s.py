"""The k8s backend's dry run through the real tnk binary (issue 36): `tnk sandbox start --backend k8s
--dry-run` prints the objects as a YAML stream (-o yaml, and the text form) or a `v1` List (-o json),
from the bundled profiles and tnk.toml's [k8s]. No cluster is involved (test_k8s_runner.py has the runner):
docs/k8s-backend.md says what has run where (nothing against a real cluster)."""
import json

import pytest
import yaml

from e2e_util import OK, USAGE, assert_error

pytestmark = pytest.mark.rootless_suite  # no sandbox runs: the same as root and as an ordinary user

KINDS = ["Secret", "NetworkPolicy", "NetworkPolicy", "NetworkPolicy", "Service", "Pod", "SandboxTemplate", "Sandbox"]

K8S_CONFIG = """
[k8s]
namespace = "agents"
runtime_class = "gvisor"
storage_class = "fast-ssd"
image_registry = "registry.example.com/team"
"""


def configure(tnk, tables=K8S_CONFIG, top=""):
    """tnk.toml with `top` first (top-level keys) and `tables` last, around whatever `tnk init` wrote."""
    config = tnk.config_dir / "tnk.toml"
    written = config.read_text() if config.exists() else ""
    config.write_text(top + written + tables)


def dry_run(tnk, *args):
    return tnk.run("sandbox", "start", "--backend", "k8s", "--dry-run", *args, cwd=tnk.project("demo"))


def walk(value):
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def test_yaml_stream_has_every_object_in_apply_order(initialized):
    configure(initialized)
    result = dry_run(initialized, "-o", "yaml")
    assert result.returncode == OK, result.stderr
    assert result.stdout.startswith("# dry run: sandbox tnk-demo, k8s backend, profile pi")
    documents = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in documents] == KINDS
    assert all(d["metadata"]["namespace"] == "agents" for d in documents)
    sandbox = documents[-1]
    assert sandbox["apiVersion"] == "agents.x-k8s.io/v1beta1" and sandbox["metadata"]["name"] == "tnk-demo"
    pod = sandbox["spec"]["podTemplate"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["containers"][0]["image"].startswith("registry.example.com/team/tnk-pi:")
    claims = {c["metadata"]["name"]: c["spec"] for c in sandbox["spec"]["volumeClaimTemplates"]}
    assert set(claims) == {"home", "workspace"}
    assert all(c["storageClassName"] == "fast-ssd" for c in claims.values())
    template = documents[-2]
    assert template["spec"]["networkPolicyManagement"] == "Unmanaged"
    assert sandbox["metadata"]["labels"]["tnk/fingerprint"] == template["metadata"]["labels"]["tnk/fingerprint"]
    # no host directory reaches the cluster
    assert not any(isinstance(v, dict) and "hostPath" in v for d in documents for v in walk(d))
    assert str(initialized.project("demo")) not in result.stdout


def test_json_is_a_list_of_the_same_objects(initialized):
    configure(initialized)
    as_yaml = list(yaml.safe_load_all(dry_run(initialized, "-o", "yaml").stdout))
    result = dry_run(initialized, "-o", "json")
    assert result.returncode == OK, result.stderr
    listing = json.loads(result.stdout)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "List")
    assert listing["items"] == as_yaml
    lines = dry_run(initialized, "-o", "ndjson").stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_yaml
    assert dry_run(initialized).stdout == dry_run(initialized, "-o", "yaml").stdout  # text is the same stream


def test_network_none_has_no_service_and_no_way_out(initialized):
    documents = list(yaml.safe_load_all(dry_run(initialized, "--network", "none", "-o", "yaml").stdout))
    assert "Service" not in [d["kind"] for d in documents]
    agent = next(d for d in documents if d["metadata"]["name"] == "tnk-demo-agent")
    assert agent["spec"]["egress"] == []
    # without a runtime class the dry run says what that means
    text = dry_run(initialized, "--network", "none").stdout
    assert "# note: no k8s.runtime_class" in text


def test_k8s_keys_are_checked_and_shown(initialized):
    configure(initialized)
    shown = initialized.json("config", "show", "-o", "json")
    assert json.dumps(shown).count("k8s.runtime_class") >= 1
    (initialized.config_dir / "tnk.toml").write_text('[k8s]\nnamespace = "Not_A_Name"\n')
    result = dry_run(initialized)
    assert result.returncode != OK
    assert "k8s.namespace" in result.stderr or "namespace" in result.stderr


def test_yaml_output_works_for_other_reports_too(initialized):
    result = initialized.run("config", "show", "-o", "yaml")
    assert result.returncode == OK, result.stderr
    assert yaml.safe_load(result.stdout) == initialized.json("config", "show", "-o", "json")
    bad = initialized.run("sandbox", "ls", "-o", "xml")
    assert_error(bad, USAGE, hint=True)
