"""`-o json` / `-o ndjson` documents: they parse, and they carry exactly the fields docs/json-output.md
documents (a documented field that disappears, or an undocumented one that appears, fails here)."""
import json
import re
from pathlib import Path

import pytest

from e2e_util import OK, append_audit, audit_lines, write_record

DOC = Path(__file__).resolve().parents[2] / "docs" / "json-output.md"


# ---- the doc's tables ---------------------------------------------------------------------------

def doc_tables():
    """{marker: [(first cell, second cell), ...]} for every `<!-- fields: X -->` / `<!-- keys: X -->` table."""
    tables, current = {}, None
    for line in DOC.read_text().splitlines():
        marker = re.fullmatch(r"<!-- (fields|keys): ([a-z-]+) -->", line.strip())
        if marker:
            current = tables.setdefault(f"{marker.group(1)}:{marker.group(2)}", [])
            continue
        if current is None:
            continue
        if not line.startswith("|"):
            if line.strip() == "" and current:
                current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if set(cells[0]) <= set("-") or not cells[0].startswith("`"):
            continue  # the header row and the separator
        current.append((cells[0].strip("`"), cells[1]))
    return tables


class Field:
    def __init__(self):
        self.children = {}
        self.optional = False
        self.nullable = False


def field_tree(rows):
    """`a.b`, `a[].b`, `[].b`, `a.*.b` paths -> a tree of Field; `[]` = every element, `*` = every key."""
    root = Field()
    for path, type_cell in rows:
        node = root
        for token in re.findall(r"\[\]|[^.\[\]]+", path):
            node = node.children.setdefault(token, Field())
        node.optional = "optional" in type_cell
        node.nullable = "or null" in type_cell
    return root


def check_fields(value, node, where="$"):
    if not node.children or (value is None and node.nullable):
        return
    if "[]" in node.children:
        assert isinstance(value, list), f"{where}: expected an array"
        assert value, f"{where}: empty array, the test cannot check its elements"
        for i, item in enumerate(value):
            check_fields(item, node.children["[]"], f"{where}[{i}]")
        return
    assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
    if "*" in node.children:
        assert value, f"{where}: empty object"
        for key, item in value.items():
            check_fields(item, node.children["*"], f"{where}.{key}")
        return
    for name, child in node.children.items():
        if not child.optional:
            assert name in value, f"{where}.{name} is documented but missing"
        if name in value:
            check_fields(value[name], child, f"{where}.{name}")
    undocumented = set(value) - set(node.children)
    assert not undocumented, f"{where}: fields not in docs/json-output.md: {sorted(undocumented)}"


# ---- producing each document ------------------------------------------------------------------

def fake_image(tnk):
    """The current recipe's image, as a directory with the files `tnk image` reads (no build)."""
    plan = tnk.json("image", "build", "-n", "-o", "json")
    image_dir = Path(plan["path"])
    (image_dir / "rootfs").mkdir(parents=True)
    (image_dir / "image.json").write_text(json.dumps({
        "schema": 1, "id": plan["id"], "size_bytes": 1000, "inodes": 10, "built_at": 1736935800,
        "build_seconds": 38.5, "recipe": plan["recipe"], "recipe_hash": plan["recipe_hash"],
        "mmdebstrap_version": "1.3.5"}))
    return plan


def produce_image(tnk, name):
    if name == "image-build-dry-run":
        return tnk.json("image", "build", "-n", "-o", "json")
    plan = fake_image(tnk)
    if name == "image-ls":
        return tnk.json("image", "ls", "-o", "json")
    if name == "image-build":
        return tnk.json("image", "build", "-o", "json")
    return tnk.json("image", "rm", plan["id"], "--yes", "-o", "json")


@pytest.fixture
def world(initialized, tmp_path):
    """A HOME where every document has something in each array: specs, a sandbox record, a config file
    with a line, an audit log."""
    tnk = initialized
    project = tnk.home / "code" / "demo"
    write_record(tnk, "tnk-demo", project)
    (tnk.config_dir / "tnk.toml").write_text('model_name = "m"\n')
    log = tmp_path / "audit.ndjson"
    log.write_text("".join(line + "\n" for line in audit_lines([{"event": "sandbox_delete"}])))
    return tnk, project, log


def produce(world, name):
    tnk, project, log = world
    if name == "error":
        result = tnk.run("sandbox", "inspect", "-o", "json", cwd=tnk.home)
        assert result.returncode != OK
        return json.loads(result.stdout)
    if name == "config-init":
        return tnk.json("config", "init", "-o", "json")
    if name == "init":
        return tnk.json("init", "--force", "-o", "json")
    if name.startswith("image-"):
        return produce_image(tnk, name)
    if name == "audit-summary":  # one request in a session and one outside, so both kinds of row exist
        request = {"event": "inference_request", "model_served": "m", "status": 200, "latency_ms": 1.5,
                   "ttfb_ms": 0.5}
        append_audit(log, [{"event": "session_start"}, {"event": "exec_invocation", "argv": ["true"]}, request,
                           {"event": "session_exit", "exit_code": 0}, request])
        return tnk.json("audit", "summary", str(log), "-o", "json")
    args = {
        "status": ["-o", "json"],
        "ls": ["sandbox", "ls", "-o", "json"],
        "inspect": ["sandbox", "inspect", "-o", "json"],
        "config-show": ["config", "show", "-o", "json"],
        "doctor": ["doctor", "-o", "json"],
        "start-dry-run": ["sandbox", "start", "-n", "-o", "json"],
        "version": ["version", "-o", "json"],
        "audit-verify": ["audit", "verify", str(log), "-o", "json"],
    }[name]
    return tnk.json(*args, cwd=project, env={"TNK_SERVER_PORT": "1234"} if name == "config-show" else None)


DOCUMENTS = ["error", "status", "ls", "inspect", "config-show", "config-init", "init", "doctor", "version",
             "audit-verify", "audit-summary", "start-dry-run", "image-ls", "image-build", "image-build-dry-run", "image-rm"]


# Documented, and checked where a running sandbox exists (test_network.py; diff, apply: test_review.py;
# policy, pending: test_live_policy.py).
RUNNING_DOCUMENTS = ["forward", "diff", "apply", "policy", "pending"]


def test_doc_documents_exactly_these_outputs():
    fields = {key.split(":", 1)[1] for key in doc_tables() if key.startswith("fields:")}
    assert fields == set(DOCUMENTS) | set(RUNNING_DOCUMENTS)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_documented_fields_present(world, name):
    rows = doc_tables()[f"fields:{name}"]
    assert rows, f"docs/json-output.md has an empty table for {name}"
    check_fields(produce(world, name), field_tree(rows))


def test_config_show_settings_documented(world):
    documented = {key for key, _ in doc_tables()["keys:config-show-settings"]}
    settings = produce(world, "config-show")["settings"]
    assert set(settings) == documented
    # the optional fields appear exactly where the doc says
    paths = {key for key, cell in doc_tables()["keys:config-show-settings"] if "yes" in cell}
    for key in paths:
        assert "path" in settings[key], key
    assert settings["server_port"]["env"] == "TNK_SERVER_PORT"
    assert settings["model_name"]["line"] == 1


def test_doctor_check_ids_documented(world):
    documented = {key for key, _ in doc_tables()["keys:doctor-checks"]}
    checks = produce(world, "doctor")["checks"]
    assert {c["id"] for c in checks} == documented
    required = {key for key, cell in doc_tables()["keys:doctor-checks"] if cell == "yes"}
    assert {c["id"] for c in checks if c["required"]} == required


def test_field_checker_catches_a_missing_field():
    tree = field_tree([("a", "object"), ("a.b", "string"), ("c", "string (optional)")])
    check_fields({"a": {"b": "x"}}, tree)
    with pytest.raises(AssertionError, match="documented but missing"):
        check_fields({"a": {}}, tree)
    with pytest.raises(AssertionError, match="not in docs"):
        check_fields({"a": {"b": "x"}, "d": 1}, tree)


# ---- formats -------------------------------------------------------------------------------------

def test_documents_are_one_line(world):
    tnk, project, _ = world
    for args in (["sandbox", "inspect"], ["doctor"], ["config", "show"], ["version"], []):
        for fmt in ("json", "ndjson"):
            result = tnk.run(*args, "-o", fmt, cwd=project)
            assert result.stdout.count("\n") == 1 and result.stdout.endswith("\n"), (args, fmt)
            json.loads(result.stdout)


def test_output_flag_before_or_after_the_subcommand(world):
    tnk, project, _ = world
    before = tnk.run("-o", "json", "sandbox", "inspect", cwd=project)
    after = tnk.run("sandbox", "inspect", "-o", "json", cwd=project)
    assert json.loads(before.stdout) == json.loads(after.stdout)


def test_ls_formats(world):
    tnk, project, _ = world
    write_record(tnk, "tnk-other", tnk.project("other"), backend="vm", profile="pi")
    rows = tnk.json("sandbox", "ls", "-o", "json")
    assert isinstance(rows, list)
    assert [r["name"] for r in rows] == ["tnk-demo", "tnk-other"]
    assert rows[1]["backend"] == "vm" and rows[1]["profile"] == "pi"
    assert rows[0]["project"] == str(project) and rows[0]["mount"] == "/workspace"

    ndjson = tnk.run("sandbox", "ls", "-o", "ndjson")
    lines = ndjson.stdout.splitlines()
    assert [json.loads(line) for line in lines] == rows

    for extra in ([], ["-o", "json"]):
        quiet = tnk.run("sandbox", "ls", "-q", *extra)
        assert quiet.stdout == "tnk-demo\ntnk-other\n", extra

    text = tnk.run("sandbox", "ls").stdout.splitlines()
    assert text[0].split() == ["NAME", "STATUS", "BACKEND", "PROFILE", "MOUNT", "PROJECT"]
    assert text[1].split()[0] == "tnk-demo" and text[2].split()[0] == "tnk-other"


def test_ls_empty(tnk):
    assert tnk.json("sandbox", "ls", "-o", "json") == []
    assert tnk.run("sandbox", "ls", "-o", "ndjson").stdout == ""
    assert tnk.run("sandbox", "ls", "-q").stdout == ""
    assert "no sandboxes yet" in tnk.run("sandbox", "ls").stdout


def test_version_document(tnk):
    doc = tnk.json("version", "-o", "json")
    assert doc["name"] == "tnk"
    assert tnk.run("--version").stdout == f"tnk {doc['version']}\n"


def test_status_document_lists_sandboxes_like_ls(world):
    tnk, _, _ = world
    assert tnk.json("-o", "json")["sandboxes"] == tnk.json("sandbox", "ls", "-o", "json")


def test_json_error_document_matches_exit_status(tnk):
    for cwd, code in ((tnk.home, 64), (tnk.home / "code", 64)):
        result = tnk.run("sandbox", "inspect", "-o", "ndjson", cwd=cwd)
        assert result.returncode == code
        doc = json.loads(result.stdout)
        assert doc["error"]["exit_code"] == code
        assert doc["error"]["kind"] == "usage"
        assert result.stdout.count("\n") == 1
