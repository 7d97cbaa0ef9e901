"""Issue 34: the host user changes a running sandbox's allow-list (`tnk sandbox allow`, `deny`, `policy`)
without a restart; `deny` and an expiry cut open connections; rules a stopped sandbox gets apply at its next
start; every change is a policy_change record in a chain `tnk audit verify` passes; a refused request waits
for approval (`tnk sandbox pending`, `approve`, item 2); and nothing inside the sandbox (agent or root)
reaches the control socket, lists or approves what waits, or changes the policy through the proxy.

The first test, the approval's, the refused entry's and the probes from inside run on ns and vm (the policy lives in the
supervisor, the same on both); the others on ns.
The "outside" host is an HTTP server on an address of this machine that the allow-list's address check
passes (not loopback, private or reserved: TEST-NET-1 on this test machine's eth0), so the same tests run
as root and as an ordinary user; nothing leaves the machine."""
import ipaddress
import json
import os
import pwd
import queue
import signal
import subprocess
import threading
import time

import pytest

from conftest import TNK_BIN, require
from net_harness import audit_records, debian_mirror_host, serve, wait_for_records
from sandbox_harness import Sandbox, any_tnk, compile_probe, ns_tnk  # noqa: F401 (fixtures)
from test_output import check_fields, doc_tables, field_tree

pytestmark = pytest.mark.rootless_suite  # scripts/e2e-as-user.sh runs this file as an ordinary user

ALLOWLIST = """security:
  network: allowlist
network:
  allow:
    - listed.tnk-test.example
"""


def outside_address():
    """An IPv4 address of this machine that the proxy's allow-list check lets through, or None."""
    out = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True).stdout
    for iface in json.loads(out or "[]"):
        for info in iface.get("addr_info", []):
            address = ipaddress.ip_address(info["local"])
            internal = address.is_private or address.is_loopback or address.is_link_local or address.is_reserved
            if not internal or address in ipaddress.ip_network("192.0.2.0/24"):  # TEST-NET-1 passes the check
                return str(address)
    return None


@pytest.fixture
def outside():
    """An HTTP server on this machine's outside-looking address: OUTSIDE-OK, and a slow GET /stream."""
    address = outside_address()
    require(address is not None, "this machine has no address the allow-list's address check passes")
    server = serve(b"OUTSIDE-OK", host=address)
    yield server
    server.shutdown()
    server.server_close()


def target_of(server):
    host, port = server.server_address[:2]
    return f"{host}:{port}"


def started_allowlist(tnk, log):
    (tnk.config_dir / "sandbox.d" / "manifests" / "live.yaml").write_text("profile: live\n" + ALLOWLIST)
    box = Sandbox(tnk, tnk.project("live"))
    box.start("--profile", "live", "--audit-log", str(log))
    return box


def fetch(box, url):
    """The answer's body, or curl's complaint; curl's own status in `code`."""
    return box.exec("curl", "-sS", "--max-time", "10", url)


def background(box, *argv):
    return subprocess.Popen([TNK_BIN, "sandbox", "exec", "--", *argv], cwd=str(box.project), env=dict(box.tnk.env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def watch_pending(box):
    """`tnk sandbox pending --watch -o ndjson` running, and a queue of the objects it prints."""
    watch = subprocess.Popen([TNK_BIN, "sandbox", "pending", "--watch", "-o", "ndjson"], cwd=str(box.project),
                             env=dict(box.tnk.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in watch.stdout], daemon=True).start()
    return watch, lines


def check_chain(log, changes):
    """The policy_change records: as many as `changes`, in order, each starting from the last one's policy."""
    records = audit_records(log, "policy_change")
    assert [(r["action"], r["rule"]) for r in records] == changes, records
    for before, after in zip(records, records[1:]):
        assert after["old_policy_hash"] == before["new_policy_hash"], (before, after)
    return records


def test_allow_deny_and_expiry_change_a_running_sandbox(any_tnk, tmp_path, outside):
    """On ns and vm: the policy lives in the supervisor, the same on both."""
    log = tmp_path / "audit.ndjson"
    box = started_allowlist(any_tnk, log)
    target = target_of(outside)
    url = f"http://{target}/"
    before = fetch(box, url)
    assert "is not in this sandbox's allow-list" in before.stdout, before.stdout + before.stderr
    hash_before = any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)["hash"]

    # A loop of requests that started before the change sees it, without a restart.
    loop = background(box, "sh", "-c", f"for i in $(seq 300); do c=$(curl -s -o /dev/null -w '%{{http_code}}' "
                                       f"--max-time 5 {url}); echo $c; [ $c = 200 ] && exit 0; sleep 0.05; done; exit 1")
    time.sleep(1.5)
    allow = box.run("sandbox", "allow", target)
    assert allow.returncode == 0, allow.stderr
    assert f"allow {target} is in force" in allow.stdout, allow.stdout
    out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, out + err
    assert out.split()[0] == "403" and out.split()[-1] == "200", out
    assert fetch(box, url).stdout == "OUTSIDE-OK"
    policy = any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert target in policy["allow"] and policy["hash"] != hash_before and policy["running"] is True
    assert policy["profile_allow"] == ["listed.tnk-test.example"]
    assert [(r["action"], r["entry"]) for r in policy["rules"]] == [("allow", target)]
    check_fields(policy, field_tree(doc_tables()["fields:policy"]))  # exactly what docs/json-output.md says
    address, port = target.split(":")
    text = box.run("sandbox", "policy").stdout  # each entry: what asked for it, how it is enforced
    assert "allow listed.tnk-test.example  (network.allow; proxy: name listed.tnk-test.example, ports 80 and 443)" \
        in text, text
    assert f"allow {target}  (tnk sandbox allow ({policy['rules'][0]['who']}); proxy: address {address}, port {port})" \
        in text, text

    # deny cuts a connection held open (a slow streaming answer) and refuses the next one.
    stream = background(box, "curl", "-sSN", "--max-time", "60", f"http://{target}/stream")
    deadline = time.monotonic() + 20
    while "GET /stream" not in outside.seen and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    denied_at = time.monotonic()
    deny = box.run("sandbox", "deny", target)
    assert deny.returncode == 0, deny.stderr
    assert "1 open connection(s) cut" in deny.stdout, deny.stdout
    stream_out, _ = stream.communicate(timeout=30)
    assert time.monotonic() - denied_at < 10, "the stream went on after deny"
    assert "line 1" in stream_out and "line 590" not in stream_out
    refused = fetch(box, url)
    assert f"{target.split(':')[0]} is denied to this sandbox" in refused.stdout, refused.stdout
    cut = wait_for_records(log, "net_allow", lambda rs: any(r["end"].startswith("cut") for r in rs if "end" in r))
    assert any(r.get("end") == "cut: the policy no longer allows it" and r["port"] == outside.server_address[1]
               for r in cut), cut

    # A temporary rule ends by itself.
    temporary = box.run("sandbox", "allow", target, "--for", "3s")
    assert temporary.returncode == 0, temporary.stderr
    assert fetch(box, url).stdout == "OUTSIDE-OK"
    time.sleep(4)
    assert "is not in this sandbox's allow-list" in fetch(box, url).stdout
    assert any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)["rules"] == []

    records = check_chain(log, [("allow", target), ("deny", target), ("allow", target), ("expire", target)])
    assert records[0]["old_policy_hash"] == hash_before and records[0]["running"] is True
    assert records[1]["cut"] == 1 and records[2]["until"] is not None and records[3]["who"] == "tnk"
    assert all(r["who"] for r in records)
    verify = any_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_rules_of_a_stopped_sandbox_apply_at_its_next_start(ns_tnk, tmp_path, outside):
    log = tmp_path / "audit.ndjson"
    box = started_allowlist(ns_tnk, log)
    assert box.run("sandbox", "stop").returncode == 0
    target = target_of(outside)
    allow = box.run("sandbox", "allow", target)
    assert allow.returncode == 0, allow.stderr
    assert "is not running: recorded 'allow " + target + "' for its next start" in allow.stdout, allow.stdout
    stored = ns_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert stored["running"] is False and target in stored["allow"]
    start = box.start("--profile", "live", "--audit-log", str(log))
    assert f"extra network rules (tnk sandbox allow/deny) apply: allow {target}" in start.stderr, start.stderr
    assert fetch(box, f"http://{target}/").stdout == "OUTSIDE-OK"
    running = ns_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert running["hash"] == stored["hash"]


def test_under_open_deny_cuts_and_refuses_a_name_and_remove_lifts_it(any_tnk, tmp_path):
    """`open` lets every name through, so the one change that means something there is taking a name away:
    `deny` refuses it and cuts a download in progress; `policy --remove` drops the rule and the name passes
    again. The outside is the Debian mirror (open refuses the host's own addresses and its links)."""
    (any_tnk.config_dir / "sandbox.d" / "manifests" / "wide.yaml").write_text(
        "profile: wide\nsecurity:\n  network: open\n")
    log = tmp_path / "audit.ndjson"
    box = Sandbox(any_tnk, any_tnk.project("wide"))
    box.start("--profile", "wide", "--audit-log", str(log))
    mirror = debian_mirror_host()
    url = f"http://{mirror}/debian/dists/bookworm/Release"
    reached = box.exec("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", url)
    assert reached.stdout == "200", reached.stderr
    # A slow download (11 MB at 8 kB/s) into the project, held open until its first bytes are on the host;
    # then the deny. What the sockets had buffered before the cut still drains into curl, slowly: the proxy's
    # record of the cut is the proof, and curl is stopped.
    slow = background(box, "curl", "-sS", "--limit-rate", "8k", "--max-time", "300", "-o", "/workspace/slow.part",
                      f"http://{mirror}/debian/dists/bookworm/main/Contents-amd64.gz")
    part = box.project / "slow.part"
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert part.exists() and part.stat().st_size > 0, "the download did not start"
    deny = box.run("sandbox", "deny", mirror)
    assert deny.returncode == 0, deny.stderr
    assert "1 open connection(s) cut" in deny.stdout, deny.stdout
    cut = wait_for_records(log, "net_allow", lambda rs: any(r["destination"] == mirror and
                                                            r.get("end", "").startswith("cut") for r in rs))
    assert any(r["rule"] == "open" and r["end"] == "cut: the policy no longer allows it" for r in cut), cut
    slow.kill()
    slow.communicate()
    refused = fetch(box, url)
    assert f"{mirror} is denied to this sandbox" in refused.stdout, refused.stdout + refused.stderr
    policy = any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert policy["policy"] == "open" and policy["deny"] == [mirror], policy

    remove = box.run("sandbox", "policy", "--remove", mirror)
    assert remove.returncode == 0, remove.stderr
    assert f"remove {mirror} is in force" in remove.stdout, remove.stdout
    again = box.exec("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", url)
    assert again.stdout == "200", again.stderr
    missing = box.run("sandbox", "policy", "--remove", mirror)
    assert missing.returncode == 66 and f"has no rule for {mirror}" in missing.stderr, missing.stderr
    check_chain(log, [("deny", mirror), ("remove", mirror)])
    assert any_tnk.run("audit", "verify", str(log)).returncode == 0


def test_bad_hosts_and_durations_are_usage_errors(ns_tnk, tmp_path):
    box = started_allowlist(ns_tnk, tmp_path / "audit.ndjson")
    host = box.run("sandbox", "allow", "exa mple.org")
    assert host.returncode == 64 and "invalid host 'exa mple.org'" in host.stderr, host.stderr
    duration = box.run("sandbox", "allow", "example.org", "--for", "3x")
    assert duration.returncode == 64 and "invalid duration '3x'" in duration.stderr, duration.stderr
    registry = box.run("sandbox", "deny", "@debian")
    assert registry.returncode == 64 and "hint:" in registry.stderr


def test_an_allow_entry_the_policy_cannot_enforce_refuses_the_start(any_tnk):
    """Issue 34 item 3: network.allow under --network open would be widened, under inference dropped."""
    (any_tnk.config_dir / "sandbox.d" / "manifests" / "live.yaml").write_text("profile: live\n" + ALLOWLIST)
    box = Sandbox(any_tnk, any_tnk.project("live"))
    for policy in ("open", "inference"):
        start = box.run("sandbox", "start", "--backend", box.backend, "--profile", "live", "--network", policy)
        assert start.returncode == 64, start.stderr
        assert f"network.allow entry 'listed.tnk-test.example' cannot be enforced under --network {policy}" \
            in start.stderr, start.stderr
    box.start("--profile", "live")  # the pair: under allowlist the same manifest starts


def test_inspect_shows_how_the_proxy_enforces_each_requested_entry(ns_tnk):
    """Issue 34 item 3: for each entry the manifest asks for, `inspect` says how the proxy enforces it, as
    `tnk sandbox policy` does (a name on 80 and 443, subdomains on one port)."""
    wide = ALLOWLIST + "    - '*.docs.tnk-test.example:8443'\n"
    (ns_tnk.config_dir / "sandbox.d" / "manifests" / "live.yaml").write_text("profile: live\n" + wide)
    project = ns_tnk.project("live")
    doc = ns_tnk.json("sandbox", "inspect", "--profile", "live", "-o", "json", cwd=project)
    assert [(e["entry"], e["enforced"]) for e in doc["network"]["entries"]] == [
        ("listed.tnk-test.example", "proxy: name listed.tnk-test.example, ports 80 and 443"),
        ("*.docs.tnk-test.example:8443", "proxy: subdomains of docs.tnk-test.example, port 8443")]
    text = ns_tnk.run("sandbox", "inspect", "--profile", "live", cwd=project).stdout
    assert "*.docs.tnk-test.example:8443  (proxy: subdomains of docs.tnk-test.example, port 8443)" in text, text


@pytest.mark.parametrize("identity", ["agent", "root"])
def test_nothing_inside_can_change_the_policy(any_tnk, tmp_path, outside, identity):
    """The control socket is not in the sandbox's mount namespace (ns) or kernel (vm), no abstract socket leads
    out of its network namespace, and neither the proxy nor the inference gateway takes policy from requests;
    the same change from the host succeeds."""
    log = tmp_path / "audit.ndjson"
    box = started_allowlist(any_tnk, log)
    probe = compile_probe(box.project)
    root = identity == "root"
    target = target_of(outside)
    ctl = any_tnk.state_dir / "sandboxes" / box.tnk.json("sandbox", "inspect", "-o", "json", cwd=box.project)["id"]
    ctl = ctl / "ctl.sock"
    # Harmless side by side with malicious: the probe reaches the supervisor from the host...
    host = subprocess.run([str(probe), "unix", str(ctl)], capture_output=True, text=True)
    assert host.stdout.strip() == "OK", host.stdout + host.stderr
    # The sandbox's own refused request waits for approval (issue 34 item 2); the host's probe sees it too.
    assert "is not in this sandbox's allow-list" in fetch(box, f"http://{target}/").stdout
    [request] = any_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project)
    host = subprocess.run([str(probe), "unix", str(ctl), "pending"], capture_output=True, text=True)
    assert host.stdout.strip() == "OK", host.stdout + host.stderr
    # ...and not from inside: not by its path, nor by any abstract name the sandbox can see, neither the
    # change that approves nor the list of what waits.
    for message in ([], ["pending"]):
        inside = box.exec("/workspace/probe", "unix", str(ctl), *message, root=root)
        assert inside.stdout.strip() == "ENOENT", inside.stdout + inside.stderr
    abstract = box.sh("grep -o '@.*' /proc/net/unix || true", root=root).stdout.split()
    for name in abstract + ["@tnk", "@/tnk/ctl.sock"]:
        for message in ([], ["pending"]):
            tried = box.exec("/workspace/probe", "unix", name, *message, root=root).stdout.strip()
            assert tried != "OK", f"{name} answered a policy request from inside"
    # Requests to the proxy, and to the inference gateway beside it, dressed as policy changes or approvals
    # are refused like any other unlisted host or unknown path.
    body = json.dumps({"allow": [target], "deny": []})
    gateway = box.sh("printf %s \"$TNK_INFERENCE_URL\"", root=root).stdout.strip().removesuffix("/v1")
    assert gateway.startswith("http://"), gateway
    for crafted in (["http://tnk-proxy.invalid/policy", "-X", "POST", "-d", body],
                    ["-X", "PUT", "-d", body, "http://tnk-proxy.invalid/allow"],
                    ["-X", "POST", f"http://tnk-proxy.invalid/approve/{request['id']}"],
                    ["--proxy-header", f"X-Tnk-Allow: {target}", f"http://{target}/"],
                    ["--proxy-header", f"X-Tnk-Approve: {request['id']}", f"http://{target}/"],
                    ["--noproxy", "*", "-X", "POST", "-d", body, f"{gateway}/policy"],
                    ["--noproxy", "*", "-X", "POST", f"{gateway}/approve/{request['id']}"],
                    ["--noproxy", "*", "-H", f"X-Tnk-Allow: {target}", f"{gateway}/v1/models"]):
        box.exec("curl", "-sS", "--max-time", "5", *crafted, root=root)
    still = fetch(box, f"http://{target}/")
    assert "is not in this sandbox's allow-list" in still.stdout, still.stdout
    [waiting] = [r for r in any_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project) if r["entry"] == target]
    assert waiting["id"] == request["id"] and waiting["count"] > request["count"], waiting
    approved = box.run("sandbox", "approve", request["id"])
    assert approved.returncode == 0, approved.stderr
    assert fetch(box, f"http://{target}/").stdout == "OUTSIDE-OK"
    changes = [(r["who"], r["action"], r["rule"]) for r in audit_records(log, "policy_change")]
    user = pwd.getpwuid(os.geteuid()).pw_name
    assert changes == [("probe", "allow", "*.example"), (user, "allow", target)], changes  # the host's probe, then tnk


def test_a_refused_request_waits_for_approval_and_approve_lets_it_through(any_tnk, tmp_path, outside):
    """Issue 34 item 2, on ns and vm: a refused request is pending (counted, first and last seen), --watch
    prints it as it comes, and `approve ID` is `allow HOST:PORT` of it, without a restart."""
    log = tmp_path / "audit.ndjson"
    box = started_allowlist(any_tnk, log)
    target = target_of(outside)
    url = f"http://{target}/"
    assert any_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project) == []
    assert box.run("sandbox", "pending").stdout.startswith("no request of ")

    watch, lines = watch_pending(box)
    try:
        assert "is not in this sandbox's allow-list" in fetch(box, url).stdout
        first = lines.get(timeout=30)
        address, port = target.split(":")
        assert (first["entry"], first["count"], first["host"], first["port"]) == (target, 1, address, int(port)), first
        assert "is not in this sandbox's allow-list" in fetch(box, url).stdout
        again = lines.get(timeout=30)
        assert (again["id"], again["count"]) == (first["id"], 2), again
        assert lines.empty()
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=10)
    assert watch.returncode == 0, watch.stderr.read()

    fetch(box, url)
    listing = any_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project)
    check_fields(listing, field_tree(doc_tables()["fields:pending"]))  # exactly what docs/json-output.md says
    [request] = listing
    assert (request["id"], request["entry"], request["count"]) == (first["id"], target, 3), request
    assert request["first_seen_ms"] < request["last_seen_ms"] and request["reason"] == "not in allow-list"
    text = box.run("sandbox", "pending").stdout
    assert "ID" in text and "HOST:PORT" in text and f"{request['id']}  {target}" in text, text
    ndjson = box.run("sandbox", "pending", "-o", "ndjson").stdout.splitlines()
    assert [json.loads(line)["id"] for line in ndjson] == [request["id"]]

    approve = box.run("sandbox", "approve", request["id"], "--for", "10m")
    assert approve.returncode == 0, approve.stderr
    assert f"allow {target} for 10m is in force" in approve.stdout, approve.stdout
    assert fetch(box, url).stdout == "OUTSIDE-OK"
    assert any_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project) == []
    policy = any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert [(r["action"], r["entry"], r["expires"] is not None) for r in policy["rules"]] == [("allow", target, True)]
    check_chain(log, [("allow", target)])  # the record `allow` writes

    # Approved, it is no longer pending: its ID is unknown now.
    unknown = box.run("sandbox", "approve", request["id"])
    assert unknown.returncode == 66, unknown.stderr
    assert f"error: no pending request '{request['id']}' in sandbox" in unknown.stderr, unknown.stderr
    assert "hint: run `tnk sandbox pending` to list them" in unknown.stderr, unknown.stderr
    as_json = box.run("sandbox", "approve", "-o", "json", "0000abcd")
    assert as_json.returncode == 66 and json.loads(as_json.stdout)["error"]["kind"] == "not_found"


def test_pending_of_a_stopped_sandbox_and_a_watch_that_outlives_it(ns_tnk, tmp_path, outside):
    box = started_allowlist(ns_tnk, tmp_path / "audit.ndjson")
    target = target_of(outside)
    watch, lines = watch_pending(box)
    fetch(box, f"http://{target}/")
    assert lines.get(timeout=30)["entry"] == target
    assert box.run("sandbox", "stop").returncode == 0
    watch.wait(timeout=30)  # the watch ends with the sandbox
    assert watch.returncode == 0, watch.stderr.read()

    stopped = box.run("sandbox", "pending")
    assert stopped.returncode == 0 and "is not running: no request is pending" in stopped.stdout, stopped.stdout
    assert ns_tnk.json("sandbox", "pending", "-o", "json", cwd=box.project) == []
    approve = box.run("sandbox", "approve", "0000abcd")
    assert approve.returncode == 64 and "is not running: no request of it is pending" in approve.stderr
    assert "tnk sandbox allow HOST[:PORT]" in approve.stderr
    again = box.run("sandbox", "pending", "--watch")
    assert again.returncode == 64 and "is not running" in again.stderr, again.stderr
