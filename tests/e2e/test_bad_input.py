"""Bad input (issue 16, item 4): each file tnk reads, damaged one way at a time, against the command that
reads it. One table: the file, the damage, the command, the exit code and the words of the one error
line, which names the file. docs/reliability.md ("Bad input") lists the same rows.

The rows that need another user's uid run as root (needs_root); the file runs as an ordinary user in CI
(rootless_suite), where a mode-000 file is unreadable (root reads it anyway)."""
import json
import os

import pytest

from conftest import require
from e2e_util import FAILED, OK, PERMISSION, assert_error, audit_lines, lines_with, write_record
from sandbox_harness import Sandbox, any_tnk  # noqa: F401 (fixture)

pytestmark = pytest.mark.rootless_suite

GOOD_TOML = "server_port = 9\n[sandbox]\ncpus = 2\n"
GOOD_MANIFEST = "profile: base\nresources:\n  cpus: 1\nsecurity:\n  network: inference\n"


def good_audit_log():
    return "\n".join(audit_lines([{"event": "session_start"}])) + "\n"


# file: how to find it, its good content and the command that reads it.
FILES = {
    "sandbox.json": dict(path=lambda t: t.state_dir / "sandboxes" / "tnk-demo" / "sandbox.json",
                         argv=["sandbox", "inspect"]),
    "tnk.toml": dict(path=lambda t: t.config_dir / "tnk.toml", argv=["sandbox", "inspect"]),
    "manifest": dict(path=lambda t: t.config_dir / "sandbox.d" / "manifests" / "base-sandbox.yaml",
                     argv=["sandbox", "inspect", "--profile", "base"]),
    # Refused when it is opened, before any sandbox is started.
    "audit log": dict(path=lambda t: t.home / "audit.ndjson",
                      argv=["sandbox", "exec", "--audit-log", "{path}", "--", "true"]),
    "inference.json": dict(path=lambda t: t.home / ".cache" / "tnk" / "inference.json", argv=["sandbox", "inspect"]),
}


def good_content(tnk, name):
    if name == "sandbox.json":
        return None  # write_record writes it
    return {"tnk.toml": GOOD_TOML, "manifest": GOOD_MANIFEST, "audit log": good_audit_log(),
            "inference.json": "{}"}[name]


def install_good(tnk, name, backend="ns"):
    path = FILES[name]["path"](tnk)
    path.parent.mkdir(parents=True, exist_ok=True)
    if name == "sandbox.json":
        write_record(tnk, "tnk-demo", tnk.home / "code" / "demo", profile="base", backend=backend)
    else:
        path.write_text(good_content(tnk, name))
    os.chmod(path, 0o600)
    return path


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def replace_with(content):
    def damage(path):
        path.write_bytes(content)
    return damage


def chmod(mode):
    return lambda path: os.chmod(path, mode)


def chown_other(path):
    os.chown(path, 4242, 4242)


def chmod_in_shared_group(mode):
    """`mode` with a group that is not the owner's private one (gid 4242: only root can give it)."""
    def damage(path):
        os.chown(path, -1, 4242)
        os.chmod(path, mode)
    return damage


def fifo(path):
    path.unlink()
    os.mkfifo(path, 0o600)


def directory(path):
    path.unlink()
    path.mkdir()


def symlink_elsewhere(path):
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target)


def edit_json(**changes):
    def damage(path):
        record = json.loads(path.read_text())
        record.update(changes)
        path.write_text(json.dumps(record))
    return damage


ROOT = pytest.mark.needs_root
UNREADABLE = "mode 000"  # root reads such a file anyway: an ordinary user's row

# (file, damage name, damage, exit code, words of the error line; None: no error line)
TABLE = [
    ("sandbox.json", "truncated", truncate, FAILED, "is corrupt: not a JSON object"),
    ("sandbox.json", "empty", replace_with(b""), FAILED, "is corrupt: not a JSON object"),
    ("sandbox.json", "binary garbage", replace_with(b"\xff\xfe\x00garbage"), FAILED, "is corrupt: not a JSON object"),
    ("sandbox.json", "a JSON list", replace_with(b"[1, 2]"), FAILED, "is corrupt: not a JSON object"),
    ("sandbox.json", "required field missing", edit_json(profile=None), FAILED, "is corrupt: field 'profile'"),
    ("sandbox.json", "field of the wrong type", edit_json(created_at="x"), FAILED,
     "is corrupt: field 'created_at' must be an integer"),
    ("sandbox.json", "optional field of the wrong type", edit_json(image_id=5), FAILED,
     "is corrupt: field 'image_id' must be a string"),
    ("sandbox.json", "unknown backend", edit_json(backend="docker"), FAILED, "unknown backend 'docker'"),
    ("sandbox.json", "newer schema", edit_json(schema=2), FAILED, "was written by a newer tnk (schema 2)"),
    ("sandbox.json", "mode 0666", chmod(0o666), PERMISSION, "its mode is 0666, so others can change it"),
    pytest.param("sandbox.json", "mode 0620 in a shared group", chmod_in_shared_group(0o620), PERMISSION,
                 "its mode is 0620, so others can change it", marks=ROOT),
    ("sandbox.json", UNREADABLE, chmod(0), PERMISSION, "Permission denied"),
    pytest.param("sandbox.json", "owned by another user", chown_other, PERMISSION, "owned by uid 4242", marks=ROOT),
    ("sandbox.json", "a FIFO", fifo, PERMISSION, "it is not a regular file"),
    ("sandbox.json", "a directory", directory, FAILED, "Is a directory"),
    ("sandbox.json", "a symbolic link", symlink_elsewhere, PERMISSION, "it is a symbolic link"),

    ("tnk.toml", "truncated", replace_with(b"server_port = 9\n[sandb"), FAILED, "cannot parse"),
    ("tnk.toml", "binary garbage", replace_with(b"\xff\xfe"), FAILED, "invalid utf-8"),
    ("tnk.toml", "value of the wrong type", replace_with(b'server_port = "x"\n'), FAILED,
     "key 'server_port' must be an integer from 1 to 65535"),
    ("tnk.toml", "a route with an http upstream",
     replace_with(b'[[routes]]\nname = "gh"\nupstream = "http://github.com"\n'), FAILED,
     ":3:12: key 'routes.upstream' must be an https:// URL"),
    ("tnk.toml", "[inference] a limit that is no size", replace_with(b'[inference]\nanswer_limit = "lots"\n'), FAILED,
     "key 'inference.answer_limit' must be a size"),
    ("tnk.toml", "[inference] value out of range", replace_with(b"[inference]\nconcurrency = 65\n"), FAILED,
     "key 'inference.concurrency' must be an integer from 1 to 64"),
    ("tnk.toml", "[inference] alias to an empty model", replace_with(b'[inference.aliases]\nfast = ""\n'), FAILED,
     "key 'inference.aliases.fast' must be a table of name = \"served model\""),
    ("tnk.toml", "[inference] key from a variable and a file", replace_with(
        b'[inference]\napi_key_env = "K"\napi_key_file = "~/k"\n'), FAILED,
     "keys 'inference.api_key_env' and 'inference.api_key_file' are both set"),
    ("tnk.toml", "empty", replace_with(b""), OK, None),
    ("tnk.toml", "mode 0666", chmod(0o666), PERMISSION, "its mode is 0666, so others can change it"),
    # Debian 13's umask 002: the user's own private group may write it (src/core/trusted_file.h).
    ("tnk.toml", "mode 0664 in the owner's private group", chmod(0o664), OK, None),
    ("tnk.toml", UNREADABLE, chmod(0), PERMISSION, "Permission denied"),
    pytest.param("tnk.toml", "owned by another user", chown_other, PERMISSION, "owned by uid 4242", marks=ROOT),
    ("tnk.toml", "a FIFO", fifo, PERMISSION, "it is not a regular file"),
    ("tnk.toml", "a directory", directory, FAILED, "Is a directory"),
    ("tnk.toml", "a symbolic link (dotfiles)", symlink_elsewhere, OK, None),

    ("manifest", "truncated", replace_with(b"profile: base\nsecurity:\n  network: [inf"), FAILED, "invalid YAML"),
    ("manifest", "not a mapping", replace_with(b"- a\n- b\n"), FAILED, "a manifest must be a mapping of keys"),
    ("manifest", "value of the wrong type", replace_with(b"resources:\n  cpus: lots\n"), FAILED,
     "resources.cpus: must be a whole number of CPUs"),
    ("manifest", "empty", replace_with(b""), OK, None),
    ("manifest", "mode 0666", chmod(0o666), PERMISSION, "its mode is 0666, so others can change it"),
    ("manifest", UNREADABLE, chmod(0), PERMISSION, "Permission denied"),
    pytest.param("manifest", "owned by another user", chown_other, PERMISSION, "owned by uid 4242", marks=ROOT),

    ("audit log", "truncated", truncate, FAILED, "it ends with an incomplete record"),
    ("audit log", "last line garbage", replace_with(b"garbage\n"), FAILED, "its last line is not an audit record"),
    ("audit log", "mode 0644", chmod(0o644), PERMISSION, "its mode is 0644, expected 0600"),
    pytest.param("audit log", "owned by another user", chown_other, PERMISSION, "owned by uid 4242", marks=ROOT),
    ("audit log", "a FIFO", fifo, PERMISSION, "it is not a regular file"),
    ("audit log", "a symbolic link", symlink_elsewhere, PERMISSION, "it is a symbolic link"),

    # A cache file: thrown away when it cannot be used (docs/state-layout.md, "Cache directory").
    ("inference.json", "binary garbage", replace_with(b"\xff\x00"), OK, None),
    ("inference.json", "a JSON list", replace_with(b"[]"), OK, None),
]


def row_id(row):
    values = row.values if hasattr(row, "values") else row
    return f"{values[0]}: {values[1]}"


def run_on(tnk, name, path):
    argv = [a.replace("{path}", str(path)) for a in FILES[name]["argv"]]
    return tnk.run(*argv, cwd=tnk.home / "code" / "demo", timeout=60)


def use_backend(tnk, backend):
    """New sandboxes on `backend` (TNK_BACKEND); the sandbox.json rows' record says it too."""
    tnk.env["TNK_BACKEND"] = backend


# Each row on both Linux backends: the files are read before a backend acts, and must be on either.
@pytest.mark.parametrize("backend", ["ns", "vm"])
@pytest.mark.parametrize("name, damage_name, damage, code, words", TABLE, ids=[row_id(r) for r in TABLE])
def test_damaged_file(initialized, name, damage_name, damage, code, words, backend):
    if damage_name == UNREADABLE:
        require(os.geteuid() != 0, "an ordinary user's row: root reads a file of mode 000")
    tnk = initialized
    use_backend(tnk, backend)
    path = install_good(tnk, name, backend)
    if name != "sandbox.json":
        write_record(tnk, "tnk-demo", tnk.home / "code" / "demo", profile="base", backend=backend)
    damage(path)
    result = run_on(tnk, name, path)
    if words is None:
        assert result.returncode == code, result.stderr
        assert lines_with(result.stderr, "error:") == [], result.stderr
        return
    line = assert_error(result, code, words)
    assert str(path) in line, f"the error does not name {path}: {line}"


@pytest.mark.parametrize("backend", ["ns", "vm"])
@pytest.mark.parametrize("name", ["sandbox.json", "tnk.toml", "manifest", "inference.json"])
def test_undamaged_file_is_read(initialized, name, backend):
    # The control of every row above but the audit log's (its command starts a sandbox: next test).
    tnk = initialized
    use_backend(tnk, backend)
    write_record(tnk, "tnk-demo", tnk.home / "code" / "demo", profile="base", backend=backend)
    path = install_good(tnk, name, backend)
    result = run_on(tnk, name, path)
    assert result.returncode == OK, result.stderr
    assert lines_with(result.stderr, "error:") == []


def test_undamaged_audit_log_is_continued(any_tnk):
    box = Sandbox(any_tnk, any_tnk.project("demo"))
    box.start()
    path = install_good(any_tnk, "audit log")
    result = run_on(any_tnk, "audit log", path)
    assert result.returncode == OK, result.stderr
    assert [json.loads(l)["seq"] for l in path.read_text().splitlines()][:2] == [1, 2]


def test_tnk_init_installs_specs_others_cannot_write(tnk, tmp_path):
    # A specs checkout made with umask 002: its manifests are installed without group write, so that
    # the check above does not refuse them.
    source = tmp_path / "specs"
    (source / "sandbox.d" / "manifests").mkdir(parents=True)
    manifest = source / "sandbox.d" / "manifests" / "base-sandbox.yaml"
    manifest.write_text(GOOD_MANIFEST)
    os.chmod(manifest, 0o664)
    assert tnk.run("init", "--git-url", str(source)).returncode == OK
    installed = tnk.config_dir / "sandbox.d" / "manifests" / "base-sandbox.yaml"
    assert installed.stat().st_mode & 0o777 == 0o644
