#!/usr/bin/python3
"""Boots a stock Debian test host under QEMU and runs suites in it, each as root and as alice.

  tests/hosts/run.py RELEASE SUITE[,SUITE...] --prefix TNK_PREFIX [--image-dir DIR] [--timeout S] [--results DIR]

RELEASE: bookworm or trixie (build_image.py builds or finds its disk). SUITE: a file name in
tests/hosts/suites/ (ns-smoke.sh); several, separated by commas, run one after the other in the same
boot (root's pass of each, then alice's), which saves a boot and the image's hand-in. TNK_PREFIX: a
`cmake --install` prefix, handed in read-only over 9p at /opt/tnk. --image-dir: the host's sandbox image directory (.../tnk/images/<id>), handed in as a
read-only ext4 disk and copied into root's and alice's caches in the guest (guest/entry.sh). The results
(per suite and pass: results/<suite>/<pass>/, with result.json) land in --results (default: a new
directory under /tmp, printed at the end).

Streams the guest's serial console with a "[release]" prefix, kills the guest at the timeout, and exits
0 when both passes of every suite passed, 1 when a step failed, 2 when the guest never reported.
"""
import argparse
import glob
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", ".."))
PASSES = ("root", "alice")


def say(msg):
    print(f"test-host: {msg}", flush=True)


def kvm_works():
    """True only if KVM runs guest code here: the CPU has VMX/SVM, /dev/kvm opens, and a one-sector
    guest under -accel kvm prints to its serial port. (On some machines /dev/kvm exists and QEMU starts
    with -accel kvm, but no guest code runs.)"""
    flags = open("/proc/cpuinfo").read()
    if not re.search(r"\b(vmx|svm)\b", flags):
        return False
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError:
        return False
    # xor ax,ax; mov ds,ax; mov si,msg; mov dx,0x3f8; l: lodsb; test al,al; jz h; out dx,al; jmp l;
    # h: hlt; jmp h; msg: "KVMOK\n"
    code = bytes.fromhex("31c08ed8be157cbaf803ac84c07403eeebf8f4ebfd") + b"KVMOK\n\0"
    with tempfile.NamedTemporaryFile(suffix=".img") as f:
        f.write(code.ljust(510, b"\0") + b"\x55\xaa")
        f.flush()
        try:
            p = subprocess.run(["timeout", "10", "qemu-system-x86_64", "-accel", "kvm", "-display", "none",
                                "-serial", "stdio", "-monitor", "none", "-nodefaults",
                                "-drive", f"file={f.name},format=raw,if=floppy"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=20)
        except subprocess.TimeoutExpired:
            return False
    return b"KVMOK" in p.stdout


def build_image(release, build_deps):
    """Runs build_image.py; returns (cache dir, seconds if it built one else None)."""
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "build_image.py"), release]
                         + (["--build-deps"] if build_deps else []),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    built = False
    for line in p.stderr:  # progress, shown as it comes
        built = built or line.rstrip().endswith(" s") and " ready in " in line
        sys.stderr.write(line)
    out = p.stdout.read().strip().splitlines()
    if p.wait() != 0 or not out:
        sys.exit("test-host: the host disk was not built")
    return out[-1], (time.monotonic() - t if built else None)


def suite_needs(suites):
    """What a suite asks of the run, on a line `# test-host-needs: WORD...`: `e2e` (the end-to-end
    tests, copied into the work share at repo/), `network` (a NIC on QEMU's user network),
    `build-deps` (a host disk with install-deps' packages) and `repo` (this repository with its build
    tree, as a writable disk mounted at the same path: repo_disk). Declared by the suite so that the
    others (ns-smoke.sh) keep running offline and without the copies."""
    needs = set()
    for suite in suites:
        for line in open(suite):
            if line.startswith("# test-host-needs:"):
                needs.update(line.split(":", 1)[1].split())
    return needs


def prepare_work(work, suites, image_dir, needs=()):
    """The read-write share: the entry script, the suites (beside steps.sh, which they source), run.env,
    the build host's apt sources and CA files (the sandbox image's id hashes them), and results/ for the
    guest to fill."""
    os.chmod(work, 0o755)  # alice reads the suite from it
    if "e2e" in needs:
        # What conftest.py and the harness modules read, laid out as in the repository (conftest's REPO is
        # tests/e2e/../..): tests/e2e, tests/procs.py, docs/ (test_output.py reads json-output.md). Copied
        # per run, like the suite, so a change to a test needs no disk rebuild. tnk's specs come with the
        # install prefix (/opt/tnk/share/tnk).
        repo = os.path.join(HERE, "..", "..")
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
        shutil.copytree(os.path.join(repo, "tests", "e2e"), os.path.join(work, "repo", "tests", "e2e"), ignore=skip)
        shutil.copy(os.path.join(repo, "tests", "procs.py"), os.path.join(work, "repo", "tests", "procs.py"))
        shutil.copytree(os.path.join(repo, "docs"), os.path.join(work, "repo", "docs"), ignore=skip)
    shutil.copy(os.path.join(HERE, "guest", "entry.sh"), os.path.join(work, "entry.sh"))
    shutil.copy(os.path.join(HERE, "guest", "shift_ids.py"), os.path.join(work, "shift_ids.py"))
    shutil.copy(os.path.join(HERE, "guest", "steps.sh"), os.path.join(work, "steps.sh"))
    for suite in suites:
        shutil.copy(suite, os.path.join(work, os.path.basename(suite)))
    os.makedirs(os.path.join(work, "host-etc", "apt"))
    os.makedirs(os.path.join(work, "host-etc", "ca"))
    for src in glob.glob("/etc/apt/sources.list.d/*.sources") + glob.glob("/etc/apt/sources.list.d/*.list"):
        shutil.copy(src, os.path.join(work, "host-etc", "apt"))
    if os.path.isfile("/etc/apt/sources.list"):
        shutil.copy("/etc/apt/sources.list", os.path.join(work, "host-etc", "sources.list"))
    for src in glob.glob("/usr/local/share/ca-certificates/*.crt"):
        shutil.copy(src, os.path.join(work, "host-etc", "ca"))
    image_id = os.path.basename(os.path.normpath(image_dir)) if image_dir else ""
    suite_names = [os.path.basename(suite) for suite in suites]
    repo_path = REPO if "repo" in needs else ""
    for value in (image_id, *suite_names, repo_path):  # run.env is sourced by the guest's shell: plain words
        if not re.fullmatch(r"[A-Za-z0-9._/-]*", value):
            sys.exit(f"test-host: not a plain name or path: {value!r}")
    with open(os.path.join(work, "run.env"), "w") as f:
        f.write(f"SUITES='{' '.join(suite_names)}'\nIMAGE_ID={image_id}\nREPO_PATH={repo_path}\n")
    os.makedirs(os.path.join(work, "results"))


def image_drives(image_dir, scratch):
    """QEMU's arguments for the sandbox image: two throwaway qcow2 overlays of its cached disk, root's
    (the guest's /dev/vdb) and alice's (/dev/vdc), which the guest mounts as each user's image directory
    (entry.sh). Mounted, not copied: a copy of its 186 MB each took 130 and 98 s of the emulated CPU
    under CI's load."""
    if not image_dir:
        return []
    disk, drives = image_disk(image_dir), []
    for user in ("root", "alice"):
        overlay = os.path.join(scratch, f"image-{user}.qcow2")
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", disk, "-F", "raw", overlay], check=True)
        drives += ["-drive", f"file={overlay},format=qcow2,if=virtio"]
    return drives


def image_disk(image_dir):
    """The host's sandbox image as an ext4 disk, cached next to the host disks by image id (an image
    never changes after its build); each run writes only its overlays of it (image_drives)."""
    image_id = os.path.basename(os.path.normpath(image_dir))
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "tnk-test-hosts", "sandbox-images")
    path = os.path.join(cache, image_id + ".ext4")
    if os.path.isfile(path):
        return path
    os.makedirs(cache, exist_ok=True)
    t = time.monotonic()
    size_mb = int(subprocess.run(["du", "-sm", image_dir], capture_output=True, text=True, check=True)
                  .stdout.split()[0]) * 3 // 2 + 64
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        subprocess.run(["nice", "-n", "10", "mke2fs", "-q", "-t", "ext4", "-d", image_dir, tmp, f"{size_mb}M"],
                       check=True)
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    say(f"sandbox image disk {path} made in {time.monotonic() - t:.1f} s")
    return path


def repo_disk(scratch):
    """This repository as the guest sees it on a user's machine after a clone and a build: its tracked
    files, .git and build/ (not the other build trees), on an ext4 disk labelled tnk-repo that the guest
    mounts at the same absolute path, so that CMake's cache and ninja's records hold there too. Made in
    the run's scratch directory from hard links (no copy of the 2 GB tree where they work), and thrown
    away with it: the guest writes into it."""
    stage = os.path.join(scratch, "repo")
    tracked = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], capture_output=True, check=True).stdout
    names = [n.decode() for n in tracked.split(b"\0") if n] + [".git", "build"]
    for name in names:
        src = os.path.join(REPO, name)
        if not os.path.lexists(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(stage, name)), exist_ok=True)
        # cp -al: hard links, within one file system; -a where the scratch directory is on another.
        if subprocess.run(["cp", "-al", src, os.path.join(stage, name)], stderr=subprocess.DEVNULL).returncode:
            subprocess.run(["cp", "-a", src, os.path.join(stage, name)], check=True)
    size_mb = int(subprocess.run(["du", "-sm", stage], capture_output=True, text=True, check=True)
                  .stdout.split()[0]) * 3 // 2 + 1024
    path = os.path.join(scratch, "repo.ext4")
    t = time.monotonic()
    subprocess.run(["nice", "-n", "10", "mke2fs", "-q", "-t", "ext4", "-L", "tnk-repo", "-d", stage, path,
                    f"{size_mb}M"], check=True)
    shutil.rmtree(stage)
    say(f"repository disk for {REPO} made in {time.monotonic() - t:.1f} s ({size_mb} MB)")
    return path


def virtfs(path, tag, readonly):
    return ["-virtfs", f"local,path={path},mount_tag={tag},security_model=none" + (",readonly=on" if readonly else "")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("release", choices=["bookworm", "trixie"])
    ap.add_argument("suites", nargs="?", default="ns-smoke.sh", help="SUITE[,SUITE...] (ns-smoke.sh)")
    ap.add_argument("--prefix", required=True, help="tnk install prefix (cmake --install)")
    ap.add_argument("--image-dir", help="the host's sandbox image directory, .../tnk/images/<id>")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds before a hung guest is killed (1200)")
    ap.add_argument("--results", help="results directory (default: a new one under /tmp)")
    ap.add_argument("--memory", default="4096", help="guest memory in MiB (4096)")
    ap.add_argument("--boot-log", action="store_true", help="show the kernel's messages (no `quiet`)")
    ap.add_argument("--nice", type=int, default=10,
                    help="QEMU's nice level (10: a run beside a build leaves the build its cores; CI gives 0)")
    args = ap.parse_args()
    t_start = time.monotonic()
    suites = [os.path.join(HERE, "suites", name) for name in args.suites.split(",")]
    for suite in suites:
        if not os.path.isfile(suite):
            sys.exit(f"test-host: no suite {suite}")
    if not os.path.isfile(os.path.join(args.prefix, "bin", "tnk")):
        sys.exit(f"test-host: no bin/tnk in {args.prefix}")

    needs = suite_needs(suites)
    disk_dir, build_s = build_image(args.release, "build-deps" in needs)
    work = args.results or tempfile.mkdtemp(prefix=f"tnk-host-{args.release}-")
    os.makedirs(work, exist_ok=True)
    if os.listdir(work):
        sys.exit(f"test-host: {work} is not empty")
    prepare_work(work, suites, args.image_dir, needs)
    scratch = tempfile.mkdtemp(prefix="tnk-host-overlay-")
    overlay = os.path.join(scratch, "run.qcow2")
    # A throwaway overlay: the cached disk is never written, each run starts from the same state.
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", os.path.join(disk_dir, "disk.img"),
                    "-F", "raw", overlay], check=True)
    # KVM only when it really runs guest code; else TCG with -cpu max (not svm=off/vmx=off: with QEMU
    # 7.2 that guest's kernel printed dentry paths as runs of `x`, see tests/hosts/README.md).
    accel = ["-accel", "kvm", "-cpu", "host"] if kvm_works() else ["-accel", "tcg", "-cpu", "max"]
    # no_timer_check: on a loaded machine the emulated CPU is too slow for the kernel's check of the
    # IO-APIC timer, which then panics ("IO-APIC + timer doesn't work!"), as it did here under two builds.
    append = ("root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 systemd.firstboot=off"
              " no_timer_check"
              + ("" if args.boot_log else " quiet"))
    argv = (["nice", "-n", str(args.nice), "qemu-system-x86_64"] + accel +
            ["-m", args.memory, "-smp", "2", "-kernel", os.path.join(disk_dir, "vmlinuz"),
             "-initrd", os.path.join(disk_dir, "initrd.img"), "-append", append,
             "-drive", f"file={overlay},format=qcow2,if=virtio",
             # `network`: QEMU's user network (no privilege, connections made by QEMU on this machine),
             # for the network tests that reach the Debian mirror; the suite configures the guest's side.
             "-nic", "user,model=virtio-net-pci" if "network" in needs else "none",
             "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"]
            + virtfs(os.path.abspath(args.prefix), "tnk", True) + virtfs(work, "work", False)
            + image_drives(args.image_dir, scratch)
            + (["-drive", f"file={repo_disk(scratch)},format=raw,if=virtio"] if "repo" in needs else []))
    say(f"booting {args.release} ({accel[1]}) from {disk_dir}; results in {work}")

    t_boot = time.monotonic()
    marks = {}  # what the guest reported, and when
    qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timed_out = False
    buf = b""
    try:
        while True:
            left = t_boot + args.timeout - time.monotonic()
            if left <= 0:
                timed_out = True
                say(f"the guest did not finish in {args.timeout:.0f} s: killing it")
                qemu.kill()
                break
            ready, _, _ = select.select([qemu.stdout], [], [], min(left, 5))
            if not ready:
                continue
            chunk = os.read(qemu.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                now = time.monotonic() - t_boot
                # search, not startswith: systemd may put terminal escapes before a line (trixie does)
                if "tnk-host: up" in line:
                    marks.setdefault("up", now)
                elif "--- [" in line:
                    marks.setdefault("first_test", now)
                elif "tnk-host: done" in line:
                    marks["done"] = now
                print(f"[{args.release} {now:6.1f}] {line}", flush=True)
    finally:
        if qemu.poll() is None:
            qemu.kill()
        qemu.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    t_end = time.monotonic()

    # Verdict: each pass of each suite must have written its result.json, with no failed step.
    say("results:")
    verdict = 0
    for suite, who in ((os.path.basename(suite), who) for suite in suites for who in PASSES):
        path = os.path.join(work, "results", suite.removesuffix(".sh"), who, "result.json")
        try:
            r = json.load(open(path))
        except (OSError, ValueError):
            say(f"  {who}: no result of {suite} (the guest never reported: {path})")
            verdict = 2
            continue
        say(f"  {who}: {r['passed']} passed, {r['failed']} failed ({suite})")
        for s in r["steps"]:
            if s["result"] != "PASS":
                say(f"    FAIL {s['name']} (exit {s['exit']}){'  [' + s['note'] + ']' if s['note'] else ''}")
        if r["failed"] and verdict == 0:
            verdict = 1
    if timed_out or "done" not in marks:
        verdict = 2
    say("timings:")
    if build_s is not None:
        say(f"  host disk build  {build_s:7.1f} s")
    if "first_test" in marks:
        say(f"  boot to 1st test {marks['first_test']:7.1f} s (system up at {marks.get('up', 0):.1f} s)")
        if "done" in marks:
            say(f"  suites           {marks['done'] - marks['first_test']:7.1f} s (every pass)")
    say(f"  guest run        {t_end - t_boot:7.1f} s (boot to poweroff)")
    say(f"  total            {t_end - t_start:7.1f} s")
    say(f"results in {work}; exit {verdict}")
    sys.exit(verdict)


if __name__ == "__main__":
    main()
