#!/usr/bin/env python3
"""The fault injector (issue 16): seeded kill -9 points during tnk's commands, and what must hold after each.

For each seed, in a temporary HOME of its own (the image cache is the caller's, so nothing is built per
seed), the injector puts one sandbox in the state the command needs, runs the command (`sandbox start`,
`exec`, `shell` on a terminal, `stop`, `delete`, `shutdown`), and after a seeded delay sends SIGKILL to one
of the processes tnk has at that moment: the CLI itself, the supervisor, and on ns its PID 1 (tnk-init),
the joiner, the proxy, the forwarder and the session's process, on vm QEMU, virtiofsd, the proxy, the
forwarder, and inside the guest the connect bridge (killed through the guest, as root inside it) and the
command's session (killed by an agent session; the guest agent itself is PID 1, which nothing inside can
kill). Every command is audited.

After each fault, checked from the outside:
  1. the project's files are byte for byte what they were (sha256), plus only what the command writes;
  2. `tnk sandbox ls -o json` says a state that matches the processes (running: its supervisor is alive;
     otherwise none of the sandbox's processes is);
  3. the audit log verifies (`tnk audit verify`), and each session_start in it has its session_exit, unless
     the CLI, which writes them, was the one killed;
  4. the next `tnk sandbox start` recovers it: what was written in the sandbox's home before the fault is
     still there, it is provisioned, and its network proxy answers (with the refusal of a name not allowed);
  5. nothing is left: no mount under the state directory, the sandbox's lock is free, its session is gone
     once the command ended, and when it is not running, no socket in its directory and no process it ever
     had (after a fault that ended it, or a stop, the recovered sandbox is stopped and checked again).

With --image-builds, every seed is a `sandbox start` of a new sandbox in an empty image cache of its own
(on vm the caller's guest kernel is copied in, so that only the image and its base disk are built), killed
during the build: the CLI, mmdebstrap, apt or dpkg under it, and on vm mke2fs or qemu-img. Checked then,
besides the above: every process of the build has ended (an orphaned mmdebstrap holds the build lock until
it does), and after the next start no work directory of a build or removal is left in the cache.

With --kernel-builds (vm), every seed is the same in a cache whose images and base disks are the caller's
(linked in) but whose guest kernel directory is empty, killed while the kernel is built: the CLI, tar
unpacking the source, make, the compiler (cc1) or the linker. Checked as for image builds, and the next
start builds the kernel again from nothing.

Seeds are printed with what each did; a failing seed replays with --seed N (the delay and the victim are
drawn from the seed; what the victim was doing at that instant is timing and may differ).

Usage: tests/faults/inject.py --backend ns|vm [--seeds N] [--first S] [--seed S ...] [--tnk PATH]
                              [--image-builds | --kernel-builds]
Prints one line per seed and `faults: <backend> <n> seeds, <k> faults injected, <f> failed, <bytes> bytes
lost`; exits 1 when a seed failed. Run as a user (tnk's normal way) or as root.
"""
import argparse
import fcntl
import hashlib
import json
import os
import pty
import random
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from procs import descendants, process_table  # noqa: E402 (tests/procs.py)

REPO = Path(__file__).resolve().parents[2]
OPERATIONS = ["start", "exec", "shell", "stop", "delete", "shutdown"]
HOST_VICTIMS = {
    "ns": ["cli", "supervisor", "tnk-init", "tnk-joiner", "tnk-proxy", "tnk-forwarder", "session"],
    "vm": ["cli", "supervisor", "qemu", "virtiofsd", "tnk-proxy", "tnk-forwarder", "guest"],
}
# Killed through the guest; which one is a draw of its own, after the others (so that the seeds drawn before
# the session joined the bridge replay as they did).
GUEST_VICTIMS = ["guest-bridge", "guest-session"]
# What runs while an image is built (comm names, matched among the CLI's descendants); "apt" is apt-get
# or dpkg, whichever is running.
BUILD_VICTIMS = {"image": {"ns": ["cli", "mmdebstrap", "apt"], "vm": ["cli", "mmdebstrap", "apt", "mke2fs", "qemu-img"]},
                 "kernel": {"vm": ["cli", "tar", "make", "cc1", "ld"]}}
# How long each command takes here (s), at first; then what the last runs of it that nothing cut short
# took. The seed draws the kill point as a fraction of it ("at 37% of a stop").
DURATION = {"ns": {"start": 3.0, "exec": 2.7, "shell": 2.7, "stop": 0.3, "delete": 0.4, "shutdown": 0.4,
                   "image-build": 30},
            "vm": {"start": 8.0, "exec": 4.0, "shell": 4.0, "stop": 2.0, "delete": 2.5, "shutdown": 2.5,
                   "image-build": 60, "kernel-build": 300}}
PROJECT_OWNER = 4242  # as root, tnk refuses a project root owns (conftest.py says why)
SESSION = ("i=0; echo start > /workspace/fault-out-{seed}; while [ $i -lt 25 ]; do "
           "echo line $i >> /workspace/fault-out-{seed}; i=$((i+1)); sleep 0.1; done; echo fault-marker-{seed}")
PROVISION = """#!/usr/bin/env bash
set -Eeuo pipefail
echo "provisioning step 1"
sleep 1
echo "provisioned" > "$HOME/provisioned"
echo "provisioning step 2"
sleep 1
"""


class Failure(Exception):
    pass


class Run:
    """One seed's world: a HOME, a project, one sandbox."""

    def __init__(self, args, seed, backend):
        self.args, self.seed, self.backend = args, seed, backend
        self.home = Path(tempfile.mkdtemp(prefix=f"tnk-fault-{seed}-"))
        self.project = self.home / "code" / f"faults-{os.getpid()}-{seed}"  # a name no other run has
        self.project.mkdir(parents=True)
        self.env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
                    "XDG_CACHE_HOME": args.cache, "TNK_AUDIT": "1", "TNK_BACKEND": backend,
                    "TNK_PROVISION_PROFILE": "faults"}
        self.name = None
        self.seen = {}  # (pid, starttime) -> comm of every process the sandbox had in this seed
        self.build_seen = {}  # ... and of an image build the command ran
        self.cache = None  # an image cache of the seed's own (--image-builds, --kernel-builds)
        self.lost_bytes = 0
        self.setup()

    def begin(self, seed):
        self.seed, self.seen, self.build_seen, self.lost_bytes = seed, {}, {}, 0
        self.audit_before = {log: len(log.read_text().splitlines()) for log in self.audit_logs()}
        for old in self.project.glob("fault-out-*"):
            old.unlink()

    def tnk(self, *argv, timeout=300, check=True):
        try:
            done = subprocess.run([self.args.tnk, *argv], cwd=self.project, env=self.env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"`tnk {' '.join(argv)}` did not end in {timeout} s")
        if check and done.returncode != 0:
            raise Failure(f"`tnk {' '.join(argv)}` exited {done.returncode}: {done.stderr.strip()[-800:]}")
        return done

    def setup(self):
        self.tnk("-q", "init")  # (before any seed: a failure here is the machine's, and ends the run)
        provision = self.home / ".config/tnk/sandbox.d/provision.d/faults.sh"
        provision.write_text(PROVISION)
        provision.chmod(0o700)
        rng = random.Random(self.seed)
        for i in range(rng.randint(3, 12)):  # the project: files of random sizes, one in a subdirectory
            path = self.project / ("src" if i % 3 == 0 else ".") / f"file{i}.bin"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(rng.randbytes(rng.choice([0, 1, 100, 4096, 70000])))
        if os.geteuid() == 0:
            for entry in [self.project, *self.project.rglob("*")]:
                os.lchown(entry, PROJECT_OWNER, PROJECT_OWNER)
        self.checksums = self.project_checksums()

    def project_checksums(self):
        sums = {}
        for path in sorted(self.project.rglob("*")):
            if path.is_file() and not path.name.startswith("fault-out-"):
                sums[str(path.relative_to(self.project))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return sums

    def sandbox_dir(self):
        dirs = [d for d in (self.home / ".local/state/tnk/sandboxes").glob("*") if not d.name.startswith(".")]
        return dirs[0] if dirs else None

    def leftovers_of_deletes(self):
        return [d.name for d in (self.home / ".local/state/tnk/sandboxes").glob(".*")]

    def supervisor_pid(self):
        directory = self.sandbox_dir()
        try:
            return int((directory / "supervisor.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError, TypeError):
            return None

    def status(self):
        listed = json.loads(self.tnk("-o", "json", "sandbox", "ls").stdout or "[]")
        return listed[0]["status"] if listed else "absent"

    def tree(self):
        """The sandbox's processes now: the supervisor's descendants, and any process whose command line
        names the sandbox (an orphan after its supervisor died: QEMU's -name, the supervisor's forks)."""
        self.name = self.name or (self.sandbox_dir().name if self.sandbox_dir() else None)  # a start made it
        table = process_table(cmdlines=True)
        mine = set()
        if self.name:
            for pid, p in table.items():
                words = p.cmdline.split()
                pairs = set(zip(words, words[1:]))  # whole words: tnk-f1 is not tnk-f10
                if ("__supervise", self.name) in pairs or ("-name", f"tnk-{self.name}") in pairs:
                    mine.add(pid)
        grown = True
        while grown:
            grown = False
            for pid, p in table.items():
                if p.ppid in mine and pid not in mine:
                    mine.add(pid)
                    grown = True
        for pid in mine:
            self.seen[(pid, table[pid].starttime)] = table[pid].comm
        # ... and every process it had before that is still alive (an orphaned virtiofsd names nothing).
        return {pid: p for pid, p in table.items() if (pid, p.starttime) in self.seen and p.state != "Z"}

    def ensure(self, wanted):
        """Puts the sandbox in state `wanted`: absent, stopped or running."""
        if wanted == "absent":
            if self.sandbox_dir():
                self.tnk("sandbox", "delete", "--yes")
            return
        self.tnk("-q", "sandbox", "start", "--profile", "faults", "--network", "allowlist", timeout=600)
        self.name = self.sandbox_dir().name
        self.tnk("sandbox", "exec", "--", "sh", "-c", f"echo kept-{self.seed} > $HOME/kept")
        self.tree()
        if wanted == "stopped":
            self.tnk("-q", "sandbox", "stop")

    def empty_cache(self):
        """Points tnk at a new image cache (the last seed's is removed). Building images, it is empty but
        for, on vm, a copy of the caller's guest kernel; building kernels, it has the caller's images and
        base disks, linked in, and no kernel. The sandbox is absent by then, so nothing uses the old cache."""
        self.remove_cache()
        self.cache = self.home / f"cache-{self.seed}"
        (self.cache / "tnk").mkdir(parents=True)
        if self.args.builds == "kernel":
            for part in ("images", "disks"):
                (self.cache / "tnk" / part).symlink_to(Path(self.args.cache) / "tnk" / part)
        elif self.backend == "vm":
            shutil.copytree(Path(self.args.cache) / "tnk/kernels", self.cache / "tnk/kernels")
        self.env["XDG_CACHE_HOME"] = str(self.cache)

    def remove_cache(self):
        """tnk removes the images (a rootless image holds files of the user's subordinate range)."""
        if self.cache is None:
            return
        if self.args.builds == "kernel":  # the images and disks are the caller's: only the links go
            shutil.rmtree(self.cache, ignore_errors=True)
            self.cache, self.env["XDG_CACHE_HOME"] = None, self.args.cache
            return
        listed = json.loads(self.tnk("-o", "json", "image", "ls", check=False).stdout or "[]")
        ids = [entry["id"] for entry in listed if "id" in entry] if isinstance(listed, list) else []
        if ids:
            self.tnk("-q", "image", "rm", "--yes", "--force", *ids, check=False)
        shutil.rmtree(self.cache, ignore_errors=True)
        self.cache, self.env["XDG_CACHE_HOME"] = None, self.args.cache

    def build_processes(self, cli):
        """The processes below the CLI (the build's), remembered so that their end can be checked."""
        table = process_table()
        below = descendants(cli.pid, table)
        for pid in below:
            self.build_seen[(pid, table[pid].starttime)] = table[pid].comm
        return {pid: table[pid] for pid in below}

    def check_build_ended(self, timeout=120):
        """Every process of the build has ended: killed with it, or ended by its own (an orphaned
        mmdebstrap, which holds the build lock, ends when its output pipe has no reader)."""
        deadline = time.monotonic() + timeout
        while True:
            table = process_table()
            left = [f"{pid} {comm}" for (pid, start), comm in self.build_seen.items()
                    if pid in table and table[pid].starttime == start and table[pid].state != "Z"]
            if not left:
                return
            if time.monotonic() > deadline:
                raise Failure(f"processes of the image build still run {timeout} s after the command ended: "
                              + ", ".join(left))
            time.sleep(0.5)

    def check_cache_tidy(self):
        """After a start that built: no work directory of a build or removal, and no lock held."""
        parts = ("kernels",) if self.args.builds == "kernel" else ("images", "disks", "kernels")
        left = [str(p.relative_to(self.cache)) for part in parts
                for p in (self.cache / "tnk" / part).glob(".*")]
        if left:
            raise Failure(f"work directories left in the image cache after the next start: {left}")
        for lock_file in (self.cache / "tnk").glob("*/*.lock"):
            with open(lock_file) as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise Failure(f"{lock_file} is still held")

    def command(self, op):
        if op == "start":
            return ["sandbox", "start", "--profile", "faults", "--network", "allowlist"]
        if op == "exec":
            return ["sandbox", "exec", "--", "sh", "-c", SESSION.format(seed=self.seed)]
        if op == "shell":
            return ["sandbox", "shell", "-c", SESSION.format(seed=self.seed)]
        if op == "stop":
            return ["sandbox", "stop"]
        if op == "delete":
            return ["sandbox", "delete", "--yes"]
        return ["shutdown", "--timeout", "10"]

    def launch(self, op):
        argv = [self.args.tnk, *self.command(op)]
        if op == "shell":  # a terminal, as a person's shell has
            controller, terminal = pty.openpty()
            child = subprocess.Popen(argv, cwd=self.project, env=self.env, stdin=terminal, stdout=terminal,
                                     stderr=terminal, start_new_session=True)
            os.close(terminal)
            child.terminal = controller
            return child
        child = subprocess.Popen(argv, cwd=self.project, env=self.env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child.terminal = None
        return child

    def kill_in_guest(self, victim, delay):
        """One session inside, started with the command: it waits out the delay there (a session under TCG
        takes a second to start, so waiting here would miss the command) and kills its target as soon as
        it is there. The bridge is root's, matched by its name (its command line is the agent's); the
        command's session is the agent's, killed by an agent session (a --root session's user namespace
        does not map the agent, so it may not signal it), matched by a pattern that does not match the
        hunting shell's own command line."""
        if victim == "guest-bridge":
            root, match = ["--root"], ["-x", "tnk-bridge"]
        else:
            root, match = [], ["-f", f"fault-ou[t]-{self.seed};"]
        pkill = " ".join(shlex.quote(word) for word in ["pkill", "-9", *match])
        hunt = f"sleep {delay:.2f}; for i in $(seq 100); do {pkill} && exit 0; sleep 0.05; done; exit 1"
        done = self.tnk("sandbox", "exec", *root, "--", "sh", "-c", hunt, check=False, timeout=60)
        return f"{victim} ({pkill} inside)" if done.returncode == 0 else None

    def kill(self, victim, cli, until):
        """Kills `victim` as soon as it exists (from now until `until`); returns what was killed."""
        while time.monotonic() < until and cli.poll() is None:
            if victim == "cli":
                if self.args.builds:
                    self.build_processes(cli)
                cli.kill()
                return f"cli {cli.pid}"
            for pid, label in self.candidates(victim, cli):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                return f"{label} {pid}"
            time.sleep(0.02)
        return None

    def candidates(self, victim, cli):
        """The processes that are `victim` now, each with what to call it."""
        if self.args.builds and victim in BUILD_VICTIMS[self.args.builds][self.backend]:
            return [(pid, p.comm) for pid, p in self.build_processes(cli).items()
                    if p.comm == victim or (victim == "apt" and p.comm in ("apt-get", "dpkg"))]
        return [(pid, victim) for pid, p in self.tree().items() if self.matches(victim, pid, p.comm, p.cmdline)]

    def matches(self, victim, pid, comm, cmdline):
        if victim == "supervisor":  # the one supervisor.pid names, not a fork that has not taken its name yet
            return comm == "tnk-supervisor" and pid == self.supervisor_pid()
        if victim == "qemu":
            return comm.startswith("qemu-system")
        if victim == "virtiofsd":
            return comm == "virtiofsd"
        if victim == "session":  # sh under exec, bash -lc under shell
            return f"fault-out-{self.seed}" in cmdline and comm in ("sh", "bash")
        return comm == victim[:15]

    def wait(self, cli):
        try:
            if cli.terminal is not None:
                deadline = time.monotonic() + 300
                while cli.poll() is None and time.monotonic() < deadline:
                    try:
                        os.read(cli.terminal, 65536)
                    except OSError:
                        time.sleep(0.05)
                cli.wait(timeout=5)
                os.close(cli.terminal)
                return cli.returncode
            cli.communicate(timeout=300)
            return cli.returncode
        except subprocess.TimeoutExpired:
            cli.kill()
            raise Failure("the command hung for 300 s after the fault")

    def check_project(self):
        now = self.project_checksums()
        lost = [name for name in self.checksums if now.get(name) != self.checksums[name]]
        extra = sorted(set(now) - set(self.checksums))
        if lost or extra:
            lost_bytes = sum((self.project / n).stat().st_size if (self.project / n).exists() else 0 for n in lost)
            self.lost_bytes = lost_bytes or len(lost)
            raise Failure(f"project files changed: {lost} missing or different, {extra} unexpected")

    def check_state_matches_processes(self):
        deadline = time.monotonic() + 30  # a stop or a death being noticed takes a moment
        while True:
            state, live = self.status(), self.tree()
            supervisors = [pid for pid, p in live.items() if p.comm == "tnk-supervisor"]
            vm_alive = self.backend != "vm" or any(p.comm.startswith("qemu-system") for p in live.values())
            if state == "running" and len(supervisors) == 1 and vm_alive:
                return state
            if state in ("stopped", "broken", "absent") and not live:
                return state
            if time.monotonic() > deadline:
                pid = self.supervisor_pid()
                named = process_table(cmdlines=True).get(pid) if pid else None
                raise Failure(f"`sandbox ls` says {state}, processes of {self.name}: "
                              + ", ".join(f"{pid} {p.comm}" for pid, p in sorted(live.items()))
                              + f"; supervisor.pid names {pid}: {named}")
            time.sleep(0.2)

    def audit_logs(self):
        return list((self.home / ".local/state/tnk/audit").glob("*.ndjson"))

    def check_audit(self, cli_killed):
        """Every log verifies, and every session_start this seed wrote has its session_exit (a status, or
        `lost` when the supervisor went away under it): only a killed CLI, the log's writer, may leave one
        open."""
        for log in self.audit_logs():
            done = self.tnk("audit", "verify", str(log), check=False)
            if done.returncode != 0:
                raise Failure(f"audit log {log} does not verify: {done.stdout.strip()} {done.stderr.strip()}")
            lines = log.read_text().splitlines()[self.audit_before.get(log, 0):]
            events = [json.loads(line).get("event") for line in lines]
            open_sessions = events.count("session_start") - events.count("session_exit")
            if open_sessions and not cli_killed:
                raise Failure(f"audit log {log}: {open_sessions} session_start without its session_exit")

    def recover(self, had_sandbox):
        self.tnk("-q", "sandbox", "start", "--profile", "faults", "--network", "allowlist", timeout=600)
        self.name = self.sandbox_dir().name
        # One session looks at all of it (a session under TCG takes a while): the home kept what was written
        # before the fault, the sandbox is provisioned, and its network works: the allowlist proxy
        # (restarted by the supervisor when it died) answers, with the refusal of a name not on the list.
        probe = ("cat /home/agent/kept; cat /home/agent/provisioned; curl -sS -m 20 -o /dev/null -w '%{http_code}\\n' "
                 "http://not-allowed.tnk-faults.example/")
        looked = self.tnk("sandbox", "exec", "--", "sh", "-c", probe, check=False, timeout=120)
        lines = looked.stdout.split("\n")
        if had_sandbox and lines[0] != f"kept-{self.seed}":
            raise Failure(f"the sandbox's home lost what was written before the fault: {looked.stdout!r} "
                          f"{looked.stderr.strip()[-300:]}")
        if "provisioned" not in lines:
            raise Failure(f"the recovered sandbox is not provisioned: {looked.stdout!r}")
        if "403" not in lines:
            raise Failure(f"the recovered sandbox's proxy did not answer with a refusal: {looked.stdout!r} "
                          f"{looked.stderr.strip()[-300:]}")
        self.tree()

    def check_nothing_left(self, state):
        """What the fault left, in the state it left: no mount under the state directory and a free lock
        (tnk holds it only while it changes the state), always; the session gone once its command ended;
        and when the sandbox is not running, no socket in its directory and no process it ever had."""
        state_dir = str(self.home / ".local/state/tnk")
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f if state_dir in line]
        if mounts:
            raise Failure(f"mounts left: {mounts}")
        directory = self.sandbox_dir()
        if directory is None:
            return
        with open(directory / "lock", "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Failure(f"{directory / 'lock'} is still held")
        deadline = time.monotonic() + 15
        while True:
            table = process_table(cmdlines=True)
            left = [f"{pid} {p.comm}" for pid, p in table.items() if p.state != "Z" and (
                f"fault-out-{self.seed}" in p.cmdline or (state != "running" and (pid, p.starttime) in self.seen))]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if left:
            raise Failure(f"processes left ({state}): {', '.join(left)}")
        if state == "stopped":  # (a broken one keeps what its killed supervisor could not remove, until a start)
            sockets = [str(p) for p in directory.rglob("*") if stat.S_ISSOCK(p.lstat().st_mode)]
            if sockets:
                raise Failure(f"sockets left ({state}): {sockets}")

    def cleanup(self, keep_home):
        """Ends the seed's sandbox and any stray process it left, so that the next seed starts clean; the
        HOME of a failed seed is kept for a look."""
        if self.home is None:
            return
        try:
            self.tnk("sandbox", "stop" if keep_home else "delete", *([] if keep_home else ["--yes"]), check=False,
                     timeout=120)
        except Failure:
            pass
        table = process_table()
        for (pid, start), _ in {**self.seen, **self.build_seen}.items():
            if pid in table and table[pid].starttime == start:
                os.kill(pid, signal.SIGKILL)
        if not keep_home:
            try:
                self.remove_cache()
            except Failure:
                pass
            shutil.rmtree(self.home, ignore_errors=True)
        self.home = None


def one_seed(args, run, seed):
    """Returns (passed, a fault was injected, bytes lost); passed is None when the seed could not be set up."""
    rng = random.Random(seed)
    backend = args.backend
    op = OPERATIONS[seed % len(OPERATIONS)]  # every command as often; the rest is drawn from the seed
    victims = HOST_VICTIMS[backend]
    if args.builds:
        op, victims = "start", BUILD_VICTIMS[args.builds][backend]
    if op not in ("exec", "shell"):  # (a kill through the guest is a session: it would start a stopped sandbox)
        victims = [v for v in victims if v not in ("session", "guest")]
    before = "absent" if args.builds else rng.choice(["absent", "stopped"]) if op == "start" else (
        rng.choice(["running", "stopped"]) if op == "delete" else "running")
    if op == "delete" and before == "stopped":
        victims = ["cli"]  # a stopped sandbox has no other process
    victim = rng.choice(victims)
    fraction = rng.random()
    if victim == "guest":
        victim = rng.choice(GUEST_VICTIMS)
    timed = f"{args.builds}-build" if args.builds else op
    expected = DURATION[backend][timed]
    delay = args.at if args.at is not None else fraction * expected
    run.begin(seed)
    started = time.monotonic()
    what = f"{op} (from {before}{f', building its {args.builds}' if args.builds else ''})"
    line = f"seed {seed}: {backend} {what}, kill {victim} at {fraction:.0%} ({delay:.2f} s)"
    killed, outcome = None, None
    try:
        if args.builds:
            run.ensure("absent")
            run.empty_cache()
        else:
            run.ensure("running")  # the sandbox exists and has its marker; `before` is made from there
            run.ensure(before)
    except Failure as failure:  # before any fault: tnk or this machine cannot run the seed at all
        print(f"{line}: SETUP FAILED: {failure}", flush=True)
        return None, False, 0
    try:
        cli = run.launch(op)
        launched = time.monotonic()
        if victim.startswith("guest-"):
            killed = run.kill_in_guest(victim, delay)
        else:
            time.sleep(delay)
            killed = run.kill(victim, cli, launched + expected * 2)
        status = run.wait(cli)
        if killed is None:  # a whole run: how long this command takes now
            DURATION[backend][timed] = (expected + time.monotonic() - launched) / 2
        outcome = f"exit {status}"
        if args.builds:
            run.check_build_ended()
        run.check_project()
        state = run.check_state_matches_processes()
        run.check_audit(cli_killed=killed is not None and killed.startswith("cli"))
        run.check_nothing_left(state)
        run.recover(before != "absent" and op != "delete")
        run.check_project()
        if run.leftovers_of_deletes():  # a delete cut short: the start that made the sandbox anew removes it
            raise Failure(f"left by a delete after the next start: {run.leftovers_of_deletes()}")
        if args.builds:
            run.check_cache_tidy()
        if op in ("stop", "delete", "shutdown") or state != "running":  # a whole stop of what was recovered, too
            run.tnk("-q", "sandbox", "stop")
            run.check_nothing_left(run.check_state_matches_processes())
        print(f"{line}: {'killed ' + killed if killed else 'nothing to kill (the command had ended)'}; "
              f"{outcome}, then {state}; recovered; nothing left ({time.monotonic() - started:.1f} s)", flush=True)
        return True, killed is not None, 0
    except Failure as failure:
        print(f"{line}: FAILED ({killed or 'no kill'}; {outcome}): {failure}\n  replay: {sys.argv[0]} "
              f"--backend {backend} --seed {seed}  (HOME kept: {run.home})", flush=True)
        return False, killed is not None, run.lost_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["ns", "vm"], required=True)
    parser.add_argument("--seeds", type=int, help="how many seeds (default 200, unless --faults is given)")
    parser.add_argument("--faults", type=int, help="run seeds until this many faults were injected")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--seed", type=int, action="append", help="run only this seed (repeatable)")
    parser.add_argument("--at", type=float, help="kill at this many seconds into the command, not the seed's point "
                        "(to replay a failed seed's line exactly)")
    parser.add_argument("--tnk", default=os.environ.get("TNK_BIN", str(REPO / "build/tnk")))
    parser.add_argument("--cache", default=os.environ.get("TNK_TEST_CACHE") or os.environ.get("XDG_CACHE_HOME")
                        or str(Path.home() / ".cache"), help="the image cache (default: yours)")
    parser.add_argument("--keep-homes", action="store_true", help="keep every seed's HOME, not only a failed one's")
    builds = parser.add_mutually_exclusive_group()
    builds.add_argument("--image-builds", action="store_const", dest="builds", const="image",
                        help="every seed starts a new sandbox in an empty image cache and kills during the build")
    builds.add_argument("--kernel-builds", action="store_const", dest="builds", const="kernel",
                        help="(vm) every seed starts a new sandbox without a guest kernel and kills during its build")
    args = parser.parse_args()
    if args.builds == "kernel" and args.backend != "vm":
        parser.error("--kernel-builds needs --backend vm (only the vm backend has a guest kernel)")
    if args.seeds is None and args.faults is None:
        args.seeds = 200
    seeds = args.seed or list(range(args.first, args.first + (args.seeds or 5 * args.faults)))
    failed = injected = lost = setup_failures = ran = 0
    try:
        run = Run(args, seeds[0], args.backend)  # one HOME and project for the seeds; a new one after a failure
    except Failure as failure:
        print(f"faults: cannot set up: {failure}")
        return 2
    try:
        for seed in seeds:
            if args.faults and injected >= args.faults:
                break
            ok, kill, lost_bytes = one_seed(args, run, seed)
            if ok is None:
                setup_failures += 1
                if setup_failures == 3:
                    print("faults: stopping: three seeds could not even be set up (see above)")
                    return 2
            else:
                ran += 1
                failed += not ok
                injected += kill
                lost += lost_bytes
            if not ok:
                run.cleanup(keep_home=True)  # stopped, not deleted: its logs stay for a look
                run = Run(args, seed, args.backend)
    finally:
        run.cleanup(keep_home=args.keep_homes)
    seeds = seeds[:ran]
    print(f"faults: {args.backend} {len(seeds)} seeds, {injected} faults injected, {failed} failed, "
          f"{lost} bytes lost")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
