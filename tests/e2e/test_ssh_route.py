"""Issue 34 item 4: git over SSH through an SSH route (docs/network.md, "SSH routes"). A stand-in OpenSSH
server (Debian's openssh-server: the test's own /usr/sbin/sshd with its own host key, on an address of
this machine the allow-list's address check passes) holds a bare git repository and an authorized_keys
with a key that exists only on the host, in an ssh-agent the test starts. With the route, `git push` over
SSH from inside works and its signature is an allowed ssh_sign record; a second sshd with another host key,
which the allow-list lets the sandbox reach but no route lists, gets no signature (refused, recorded); a
signature outside any session (ssh-keygen -Y sign through the agent) is refused; the agent lists only the
route's identity and refuses to remove keys; no file, environment or argument inside holds the private
key. Without the route the same push fails. Each on ns and vm, but the refused start without a host agent
(decided before a backend runs), on ns."""
import getpass
import os
import secrets
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import require
from net_harness import audit_records, free_port, wait_for_records
from sandbox_harness import Sandbox, any_tnk, ns_tnk  # noqa: F401 (fixtures)
from secret_search import compile_secret_search, find_in_sandbox
from test_live_policy import outside_address

pytestmark = pytest.mark.rootless_suite  # scripts/e2e-as-user.sh runs this file as an ordinary user

SSHD = "/usr/sbin/sshd"


def keygen(path, comment):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def fingerprint(pub_path):
    return subprocess.run(["ssh-keygen", "-l", "-f", str(pub_path)], capture_output=True, text=True,
                          check=True).stdout.split()[1]


class Sshd:
    """/usr/sbin/sshd -D on address:port with its own host key, letting in `authorized_keys` as the
    user running the test."""

    def __init__(self, directory, address, name, authorized_keys):
        self.dir = directory / name
        self.dir.mkdir()
        self.address, self.port = address, free_port()
        self.host_pub = keygen(self.dir / "host_key", name)
        self.host_fingerprint = fingerprint(self.dir / "host_key.pub")
        config = self.dir / "sshd_config"
        config.write_text(f"Port {self.port}\nListenAddress {address}\nHostKey {self.dir / 'host_key'}\n"
                          f"PidFile none\nAuthorizedKeysFile {authorized_keys}\nStrictModes no\nUsePAM no\n"
                          "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                          "PermitRootLogin prohibit-password\nLogLevel VERBOSE\n")
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation directory
        self.log = open(self.dir / "sshd.log", "wb")
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=self.log, stderr=self.log)
        deadline = time.time() + 10
        while b"Server listening" not in (self.dir / "sshd.log").read_bytes():
            assert self.process.poll() is None and time.time() < deadline, (self.dir / "sshd.log").read_text()
            time.sleep(0.05)

    def url(self, repo):
        return f"ssh://{getpass.getuser()}@{self.address}:{self.port}{repo}"

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture
def ssh_world():
    """The host's agent holding the user key, the listed sshd (A) and an unlisted one (B), a bare repo."""
    require(os.path.exists(SSHD), "openssh-server is not installed (scripts/install-deps.sh)")
    address = outside_address()
    require(address is not None, "this machine has no address the allow-list's address check passes")
    directory = Path(tempfile.mkdtemp(prefix="tnk-ssh-", dir="/tmp"))  # short: the agent's socket path
    os.chmod(directory, 0o755)
    world = type("SshWorld", (), {})()
    world.dir = directory
    world.user_pub = keygen(directory / "user_key", "tnk-test-user")
    world.user_fingerprint = fingerprint(directory / "user_key.pub")
    world.private_key = (directory / "user_key").read_text()
    (directory / "authorized_keys").write_text(world.user_pub + "\n")
    world.agent_sock = directory / "agent.sock"
    world.agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(world.agent_sock)], stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not world.agent_sock.exists():
        assert time.time() < deadline, "ssh-agent did not start"
        time.sleep(0.05)
    env = dict(os.environ, SSH_AUTH_SOCK=str(world.agent_sock))
    subprocess.run(["ssh-add", "-q", str(directory / "user_key")], env=env, check=True)
    world.repo = directory / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(world.repo)], check=True)
    world.listed = Sshd(directory, address, "listed", directory / "authorized_keys")
    world.unlisted = Sshd(directory, address, "unlisted", directory / "authorized_keys")
    try:
        yield world
    finally:
        world.listed.stop()
        world.unlisted.stop()
        world.agent.terminate()
        world.agent.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(directory)])


def configure(tnk, world, route=True):
    """tnk.toml with the SSH route to the listed sshd (or none), and an allowlist profile."""
    if route:
        (tnk.config_dir / "tnk.toml").write_text(
            f'[[ssh_routes]]\nhost = "{world.listed.address}"\nport = {world.listed.port}\n'
            f'host_key = "{world.listed.host_pub}"\nidentities = ["{world.user_pub}"]\n')
    (tnk.config_dir / "sandbox.d" / "manifests" / "sshroute.yaml").write_text(
        "profile: sshroute\nsecurity:\n  network: allowlist\nnetwork:\n  allow:\n    - listed.tnk-test.example\n")
    tnk.env["SSH_AUTH_SOCK"] = str(world.agent_sock)


def git_push(box, remote, branch, ssh_options=""):
    """`ssh_options` go after the route's own (GIT_SSH_COMMAND), as a process inside could add them."""
    extra = f' GIT_SSH_COMMAND="$GIT_SSH_COMMAND {ssh_options}"' if ssh_options else ""
    script = ("set -e; cd /tmp; rm -rf w; git init -q w; cd w; echo x > f; git add f;"
              " git -c user.name=t -c user.email=t@t commit -qm c;"
              f"{extra} GIT_TERMINAL_PROMPT=0 git push {remote} HEAD:refs/heads/{branch}")
    return box.sh(script, timeout=300)


def branch_exists(world, branch):
    return subprocess.run(["git", "-C", str(world.repo), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
                          capture_output=True).returncode == 0


def test_git_push_over_ssh_through_the_route_and_the_key_stays_on_the_host(any_tnk, ssh_world):
    log = ssh_world.dir / "audit.ndjson"
    configure(any_tnk, ssh_world)
    box = Sandbox(any_tnk, any_tnk.project("sshroute"))
    box.start("--profile", "sshroute", "--audit-log", str(log))

    pushed = git_push(box, ssh_world.listed.url(str(ssh_world.repo)), "main")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert branch_exists(ssh_world, "main"), "the push did not reach the server"
    # What let SSH through, as `tnk sandbox policy` shows it: the route, not the profile.
    target = f"{ssh_world.listed.address}:{ssh_world.listed.port}"
    policy = any_tnk.json("sandbox", "policy", "-o", "json", cwd=box.project)
    assert [e["source"] for e in policy["entries"] if e["entry"] == target] == ["[[ssh_routes]] of tnk.toml"], policy
    assert target in policy["allow"] and target not in policy["profile_allow"], policy
    # The unlisted server, once the allow-list passes it (an address: a live rule), is reachable, but the
    # agent signs nothing for it.
    allowed = box.run("sandbox", "allow", f"{ssh_world.unlisted.address}:{ssh_world.unlisted.port}")
    assert allowed.returncode == 0, allowed.stderr
    unlisted = ssh_world.unlisted.url(str(ssh_world.repo))
    refused = git_push(box, unlisted, "unlisted")  # ssh itself knows only the routes' host keys
    assert refused.returncode != 0 and "Host key verification failed" in refused.stderr, refused.stderr
    # A process inside that ignores host keys gets as far as asking the agent, which refuses.
    refused = git_push(box, unlisted, "unlisted", "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null")
    assert refused.returncode != 0 and not branch_exists(ssh_world, "unlisted"), refused.stderr
    assert "Permission denied (publickey)" in refused.stderr, refused.stderr

    records = wait_for_records(log, "ssh_sign", lambda rs: len(rs) >= 2)
    listed = f"{ssh_world.listed.address}:{ssh_world.listed.port}"
    assert records[0]["allowed"] is True and records[0]["host"] == listed, records
    assert records[0]["identity"] == ssh_world.user_fingerprint, records
    assert records[0]["host_key"] == ssh_world.listed.host_fingerprint, records
    assert records[1]["allowed"] is False and records[1]["host"] == "", records
    assert records[1]["host_key"] == ssh_world.unlisted.host_fingerprint, records
    assert "not an SSH route's" in records[1]["reason"], records
    verify = any_tnk.run("audit", "verify", str(log))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_the_agent_inside_signs_nothing_else_and_no_private_key_is_inside(any_tnk, ssh_world):
    log = ssh_world.dir / "audit.ndjson"
    configure(any_tnk, ssh_world)
    box = Sandbox(any_tnk, any_tnk.project("sshroute"))
    compile_secret_search(box)
    box.start("--profile", "sshroute", "--audit-log", str(log))

    listed = box.exec("ssh-add", "-L")  # only the route's identity, and the agent holds it
    assert listed.returncode == 0 and listed.stdout.split()[:2] == ssh_world.user_pub.split()[:2], listed
    removed = box.exec("ssh-add", "-D")
    assert removed.returncode != 0, removed.stdout + removed.stderr
    # A signature outside any SSH session (as `git commit -S` with an SSH key would ask): refused.
    (box.project / "pub").write_text(ssh_world.user_pub + "\n")
    signed = box.sh("echo data > /tmp/d && ssh-keygen -Y sign -n git -f /workspace/pub -U /tmp/d")
    assert signed.returncode != 0, signed.stdout + signed.stderr
    records = wait_for_records(log, "ssh_sign", lambda rs: len(rs) >= 1)
    assert records[0]["allowed"] is False and records[0]["identity"] == ssh_world.user_fingerprint, records
    assert "not bound to a host key" in records[0]["reason"], records
    # The control: after that, a push through the route still works.
    pushed = git_push(box, ssh_world.listed.url(str(ssh_world.repo)), "after")
    assert pushed.returncode == 0, pushed.stderr

    # The private key: its OpenSSH body lines (each unique to it) are nowhere inside, neither in files nor
    # in any process's environment or arguments; the control string planted is found.
    body = [line for line in ssh_world.private_key.splitlines() if not line.startswith("-----")]
    marker = "-----BEGIN OPENSSH PRIVATE KEY-----"
    hits, summary = find_in_sandbox(box, "tnk-control-" + secrets.token_hex(8), [*body, marker])
    assert "/tmp/planted" in hits[0], (hits, summary)
    assert all(hits[i] == [] for i in range(1, len(body) + 1)), (hits, summary)
    # The armour line is the format's marker, which ssh's own programs hold: in them only.
    assert all(where.startswith(("/usr/bin/", "/usr/lib/", "/lib/")) for where in hits[len(body) + 1]), hits
    env = box.exec("env").stdout
    assert "SSH_AUTH_SOCK=/run/tnk/ssh-agent.sock" in env and "PRIVATE KEY" not in env, env


def test_without_the_route_ssh_fails(any_tnk, ssh_world):
    configure(any_tnk, ssh_world, route=False)
    box = Sandbox(any_tnk, any_tnk.project("sshroute"))
    box.start("--profile", "sshroute")
    assert box.exec("printenv", "SSH_AUTH_SOCK").returncode != 0
    pushed = git_push(box, ssh_world.listed.url(str(ssh_world.repo)), "noroute")
    assert pushed.returncode != 0 and not branch_exists(ssh_world, "noroute"), pushed.stderr


def test_ssh_routes_need_the_hosts_agent(ns_tnk, ssh_world):
    configure(ns_tnk, ssh_world)
    del ns_tnk.env["SSH_AUTH_SOCK"]
    box = Sandbox(ns_tnk, ns_tnk.project("sshroute"))
    started = box.run("sandbox", "start", "--backend", "ns", "--profile", "sshroute", timeout=900)
    assert started.returncode == 64, started.stderr
    assert "tnk.toml has [[ssh_routes]], but no SSH agent runs for them" in started.stderr, started.stderr
