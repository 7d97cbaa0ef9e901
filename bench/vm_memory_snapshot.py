#!/usr/bin/env python3
"""Can a vm sandbox's memory be saved and restored with its workspace share attached? (issue 33)

Boots tnk's guest (its kernel and base disk from the cache, its microvm command line, tnk-agent as init)
with the workspace on vhost-user-fs, starts a background counter inside that appends to a file in
/workspace, saves the guest (QMP `stop`, `migrate file:`), kills QEMU and virtiofsd, restores it in new
ones (`-incoming defer`, `migrate-incoming`, `cont`) and checks on the host that the counter goes on.

Run twice, with each QEMU/virtiofsd pair: the host's own (Debian 12: QEMU 7.2 and the C virtiofsd, which
refuse: "non-migratable device"), and Debian 13's (QEMU 10, the Rust virtiofsd with --migration-mode),
installed by mmdebstrap into a root file system cached under ~/.cache/tnk-bench/ (keyed by the suite and
the package list) and run through chroot. Prints the save and restore times and the snapshot's size.

Usage: sudo bench/vm_memory_snapshot.py [--cache DIR] [--memory MiB]   (root: chroot and bind mounts;
the kernel and base disk come from DIR/tnk, default ~/.cache, as `tnk image build --vm` made them).
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIXIE_PACKAGES = ["qemu-system-x86", "qemu-utils", "virtiofsd"]
TOKEN = "0123456789abcdef0123456789abcdef"


def newest(pattern_dir: Path, name: str) -> Path:
    found = sorted(pattern_dir.glob(f"*/{name}"), key=lambda p: p.stat().st_mtime)
    if not found:
        sys.exit(f"vm_memory_snapshot: no {name} under {pattern_dir} (run `tnk image build --vm`)")
    return found[-1]


def trixie_root(cache: Path) -> Path:
    key = hashlib.sha256(" ".join(["trixie", *TRIXIE_PACKAGES]).encode()).hexdigest()[:12]
    root = cache / "tnk-bench" / f"trixie-qemu-{key}"
    if not (root / "usr/bin/qemu-system-x86_64").exists():
        print(f"== building {root} with mmdebstrap (once)", flush=True)
        root.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=root.parent))  # beside it: the rename stays on one file system
        subprocess.run(["mmdebstrap", "--variant=apt", "--include=" + ",".join(TRIXIE_PACKAGES), "trixie",
                        str(work / "root")], check=True)  # mmdebstrap's default Debian mirror
        (work / "root").rename(root)
        shutil.rmtree(work)
    return root


class Qmp:
    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rw")
        self.file.readline()
        self.call("qmp_capabilities")

    def call(self, command, **arguments):
        self.file.write(json.dumps({"execute": command, "arguments": arguments}) + "\n")
        self.file.flush()
        while True:
            answer = json.loads(self.file.readline())
            if "event" not in answer:
                return answer


def agent_frame(kind: int, session: int, payload: bytes) -> bytes:
    return struct.pack(">IBBHII", 0x544E4B41, 1, kind, 0, session, len(payload)) + payload  # agent/frame.h


def start_counter(agent_sock: Path):
    """One agent session that starts the counter in the background and ends (docs/agent-protocol.md)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(agent_sock))
    s.sendall(agent_frame(0x01, 0, json.dumps({"version": 1, "token": TOKEN}).encode()))
    counter = "i=0; while :; do i=$((i+1)); echo $i >> /workspace/count.txt; sleep 0.2; done"
    request = {"argv": ["/bin/sh", "-c", f"setsid sh -c '{counter}' </dev/null >/dev/null 2>&1 &"],
               "env": ["PATH=/usr/bin:/bin"], "cwd": "/workspace", "uid": 1000, "gid": 1000, "confined": True}
    s.sendall(agent_frame(0x10, 1, json.dumps(request).encode()))
    s.sendall(agent_frame(0x13, 1, b""))
    time.sleep(2)
    s.close()


class Guest:
    def __init__(self, root: str, work: Path, memory: int):
        self.root, self.work, self.memory = root, work, memory
        self.procs = []

    def run(self, argv, log):
        prefix = ["chroot", self.root] if self.root != "/" else []
        self.procs.append(subprocess.Popen(prefix + argv, stdout=open(self.work / log, "w"), stderr=subprocess.STDOUT))

    def boot(self, virtiofsd: str, incoming: bool, tag: str):
        w = self.inside(self.work)
        for name in ("vfs.sock", "qmp.sock", "agent.sock"):
            (self.work / name).unlink(missing_ok=True)
        if "libexec" in virtiofsd:  # the Rust one (Debian 13), which can hand its state to QEMU's migration
            fs = [virtiofsd, f"--socket-path={w}/vfs.sock", f"--shared-dir={w}/proj", "--cache=auto",
                  "--sandbox=none", "--migration-mode=find-paths"]
        else:  # the C one in QEMU 7.2 (Debian 12)
            fs = [virtiofsd, f"--socket-path={w}/vfs.sock", "-o", f"source={w}/proj", "-o", "cache=auto",
                  "-o", "sandbox=chroot"]
        self.run(fs, f"virtiofsd-{tag}.log")
        deadline = time.monotonic() + 10
        while not (self.work / "vfs.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        append = ("quiet ro console=ttyS0 reboot=t panic=-1 root=/dev/vdb rootfstype=ext4 no_timer_check noapictimer "
                  f"init=/sbin/tnk-agent tnk.token={TOKEN} tnk.port=tnk.agent tnk.host=10.0.2.2 tnk.mount=/workspace "
                  "tnk.hostname=snap tnk.ip=10.0.2.15/24 tnk.root=/dev/vda")
        argv = ["qemu-system-x86_64", "-M", "microvm,x-option-roms=off,acpi=off,memory-backend=mem",
                "-global", "virtio-mmio.force-legacy=false", "-accel", "tcg,tb-size=64", "-cpu", "max,-erms,-fsrm",
                "-smp", "1", "-m", str(self.memory), "-object",
                f"memory-backend-memfd,id=mem,size={self.memory}M,share=on", "-nodefaults", "-no-user-config",
                "-display", "none", "-no-reboot", "-kernel", f"{w}/vmlinux", "-append", append,
                "-serial", f"file:{w}/serial-{tag}.log",
                "-chardev", f"socket,id=qmp,path={w}/qmp.sock,server=on,wait=off", "-mon", "chardev=qmp,mode=control",
                "-device", "virtio-serial-device",
                "-chardev", f"socket,id=agent,path={w}/agent.sock,server=on,wait=off",
                "-device", "virtserialport,chardev=agent,name=tnk.agent",
                "-drive", f"id=root,file={w}/disk.qcow2,format=qcow2,if=none,cache=writeback",
                "-device", "virtio-blk-device,drive=root",
                "-drive", f"id=boot,file={w}/base.img,format=raw,if=none,readonly=on",
                "-device", "virtio-blk-device,drive=boot",
                "-chardev", f"socket,id=vfs,path={w}/vfs.sock",
                "-device", "vhost-user-fs-device,chardev=vfs,tag=workspace,event_idx=off",
                "-netdev", "user,id=net0", "-device", "virtio-net-device,netdev=net0"]
        if incoming:
            argv += ["-incoming", "defer"]
        self.run(argv, f"qemu-{tag}.log")
        while not (self.work / "qmp.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def inside(self, path: Path) -> str:
        return "/" + str(path.relative_to(self.root)) if self.root != "/" else str(path)

    def kill(self):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []


def count(work: Path) -> int:
    lines = (work / "proj/count.txt").read_text().split() if (work / "proj/count.txt").exists() else []
    return int(lines[-1]) if lines else 0


def trial(label: str, root: str, virtiofsd: str, args, kernel: Path, base: Path) -> None:
    print(f"== {label}", flush=True)
    work = Path(tempfile.mkdtemp(dir=None if root == "/" else Path(root) / "tmp", prefix="tnk-snap-"))
    (work / "proj").mkdir()
    os.chown(work / "proj", 1000, 1000)  # the guest's agent
    shutil.copy(kernel, work / "vmlinux")
    subprocess.run(["cp", "--sparse=always", str(base), str(work / "base.img")], check=True)
    guest = Guest(root, work, args.memory)
    qemu_img = ["chroot", root, "qemu-img"] if root != "/" else ["qemu-img"]
    subprocess.run(qemu_img + ["create", "-q", "-f", "qcow2", "-b", f"{guest.inside(work)}/base.img", "-F", "raw",
                               f"{guest.inside(work)}/disk.qcow2"], check=True)
    try:
        guest.boot(virtiofsd, False, "save")
        deadline = time.monotonic() + 60
        while "tnk-agent: ready" not in (work / "serial-save.log").read_text(errors="replace"):
            if time.monotonic() > deadline:
                sys.exit(f"{label}: the guest did not become ready (see {work})")
            time.sleep(0.2)
        start_counter(work / "agent.sock")
        before = count(work)
        qmp = Qmp(work / "qmp.sock")
        began = time.monotonic()
        qmp.call("stop")
        answer = qmp.call("migrate", uri=f"file:{guest.inside(work)}/memory.bin")
        if "error" in answer:
            print(f"   save refused: {answer['error']['desc']}")
            return
        while (state := qmp.call("query-migrate")["return"]).get("status") not in ("completed", "failed"):
            time.sleep(0.05)
        saved = time.monotonic() - began
        if state["status"] != "completed":
            print(f"   save failed: {state.get('error-desc')}")
            return
        size = (work / "memory.bin").stat().st_size
        guest.kill()
        at_kill = count(work)
        began = time.monotonic()
        guest.boot(virtiofsd, True, "restore")
        qmp = Qmp(work / "qmp.sock")
        answer = qmp.call("migrate-incoming", uri=f"file:{guest.inside(work)}/memory.bin")
        if "error" in answer:
            print(f"   restore refused: {answer['error']['desc']}")
            return
        while qmp.call("query-status")["return"]["status"] == "inmigrate":
            time.sleep(0.02)
        qmp.call("cont")
        restored = time.monotonic() - began
        time.sleep(3)
        after = count(work)
        verdict = "goes on" if after > at_kill else "STOPPED"
        print(f"   counter: {before} when saved, {at_kill} when killed, {after} 3 s after the restore: {verdict}")
        print(f"   save {saved * 1000:.0f} ms, {size / 2**20:.1f} MiB for {args.memory} MiB of guest memory; "
              f"restore (new QEMU and virtiofsd to running) {restored * 1000:.0f} ms")
    finally:
        guest.kill()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=str(Path.home() / ".cache"))
    parser.add_argument("--memory", type=int, default=512)
    parser.add_argument("--keep", action="store_true", help="keep the work directories (logs, snapshot)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("vm_memory_snapshot: run as root (chroot and bind mounts)")
    cache = Path(args.cache)
    kernel = newest(cache / "tnk/kernels", "vmlinux")
    base = newest(cache / "tnk/disks", "base.img")
    print(f"   kernel {kernel}\n   base disk {base}")
    host_qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    trial(f"this host: {host_qemu}, /usr/lib/qemu/virtiofsd", "/", "/usr/lib/qemu/virtiofsd", args, kernel, base)
    root = trixie_root(cache)
    for mount in ("proc", "dev"):
        subprocess.run(["mount", "--bind", f"/{mount}", str(root / mount)], check=True)
    try:
        version = subprocess.run(["chroot", str(root), "qemu-system-x86_64", "--version"], capture_output=True,
                                 text=True).stdout.split("\n")[0]
        trial(f"Debian 13 (chroot {root}): {version}, /usr/libexec/virtiofsd", str(root), "/usr/libexec/virtiofsd",
              args, kernel, base)
    finally:
        for mount in ("dev", "proc"):
            subprocess.run(["umount", "-l", str(root / mount)])


if __name__ == "__main__":
    main()
