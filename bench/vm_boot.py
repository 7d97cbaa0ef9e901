"""Cold start of a vm sandbox against a plain QEMU boot of the same guest, for bench/vm.sh.

usage: vm_boot.py plain QEMU_PID WORKDIR
         Writes WORKDIR/plain.json: the argv of the sandbox's own QEMU (QEMU_PID) minus the supervisor's
         parts (QMP, virtiofs, network), with its serial console on a pipe, a token of its own and a
         throwaway overlay (WORKDIR/plain.qcow2) on the same base disk.
       vm_boot.py cold ROUNDS TNK WORKDIR
         Interleaved rounds of: `tnk sandbox stop` (untimed); the plain QEMU, timed until the agent's
         ready marker on its console, then killed; `tnk sandbox start` and the first
         `tnk sandbox exec -- true`, each timed. Run it in the sandbox's project directory.
       vm_boot.py idle SECONDS WORKDIR
         Boots the plain QEMU once, lets it idle for SECONDS after the marker and prints
         "<Rss kB> <Pss kB>" from its /proc/<pid>/smaps_rollup.
"""
import json
import os
import statistics
import subprocess
import sys
import time

MARKER = b"tnk-agent: ready"  # what tnk-agent (PID 1) prints on the console once it serves the port
TOKEN = "0123456789abcdef0123456789abcdef"


def option_value(argv, i):
    return argv[i + 1] if i + 1 < len(argv) else ""


def plain_argv(qemu_pid, workdir):
    """The sandbox's QEMU command line, without what only the supervisor serves."""
    with open(f"/proc/{qemu_pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
    out, base, i = [], None, 0
    while i < len(argv):
        opt, value = argv[i], option_value(argv, i)
        if opt in ("-mon", "-netdev") or (opt == "-chardev" and value.startswith(("socket,id=qmp", "socket,id=vfs"))) \
                or (opt == "-device" and value.startswith(("vhost-user-fs", "virtio-net"))):
            i += 2
            continue
        if opt == "-chardev" and value.startswith(("file,id=serial0", "socket,id=serial0")):  # the console
            value = "stdio,id=serial0,signal=off"
        elif opt == "-chardev" and value.startswith("socket,id=agent"):
            value = f"socket,id=agent,path={workdir}/plain-agent.sock,server=on,wait=off"
        elif opt == "-drive" and value.startswith("id=root"):
            overlay = value.split("file=", 1)[1].split(",format=", 1)[0].replace(",,", ",")
            if overlay.startswith("/dev/fdset/"):
                sys.exit("vm_boot.py: run bench/vm.sh as an ordinary user: run by root, QEMU is handed its disks as "
                         "descriptors (security review H1) and its command line names no file to boot again")
            base = backing_file(overlay)
            value = value.replace(value.split("file=", 1)[1].split(",format=", 1)[0], f"{workdir}/plain.qcow2")
        elif opt == "-append":  # the agent's words of this boot: a token, and no workspace or NIC
            words = [w for w in value.split() if not w.startswith(("tnk.mount=", "tnk.ip=", "tnk.token="))]
            value = " ".join(words + [f"tnk.token={TOKEN}"])
        out.append(opt)
        if i + 1 < len(argv) and not argv[i + 1].startswith("-") or opt == "-append":
            out.append(value)
            i += 1
        i += 1
    if base is None:
        sys.exit("vm_boot.py: no root disk in the sandbox's QEMU command line")
    return out, base


def backing_file(overlay):
    info = subprocess.run(["qemu-img", "info", "-U", "--output=json", overlay], check=True, capture_output=True)
    return json.loads(info.stdout)["full-backing-filename"]


def new_overlay(base, workdir):
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", base, "-F", "raw", f"{workdir}/plain.qcow2"],
                   check=True)


def boot_plain(argv, settle=None):
    """Seconds until the marker; with `settle`, also (rss_kb, pss_kb) that many seconds later."""
    began = time.perf_counter()
    qemu = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    seen = b""
    try:
        while MARKER not in seen:
            chunk = qemu.stdout.read1(4096)
            if not chunk:
                sys.exit(f"vm_boot.py: the plain QEMU ended before the agent was ready: {seen[-400:]!r}")
            seen = seen[-4096:] + chunk
        elapsed = time.perf_counter() - began
        memory = None
        if settle is not None:
            time.sleep(settle)
            memory = smaps_rollup(qemu.pid)
        return elapsed, memory
    finally:
        qemu.kill()
        qemu.wait()


def smaps_rollup(pid):
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                fields[key] = int(rest.split()[0])
    return fields["Rss"], fields["Pss"]


def timed(argv):
    began = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if result.returncode != 0:
        sys.exit(f"vm_boot.py: {' '.join(argv)} exited {result.returncode}")
    return time.perf_counter() - began


def load_plain(workdir):
    with open(f"{workdir}/plain.json") as f:
        saved = json.load(f)
    return saved["argv"], saved["base"]


def cold(rounds, tnk, workdir):
    argv, base = load_plain(workdir)
    times = {"tnk start": [], "tnk first exec": [], "tnk start + first exec": [], "plain QEMU to agent ready": []}
    for _ in range(rounds):  # the sandbox is stopped while the plain QEMU boots: one VM at a time
        subprocess.run([tnk, "-q", "sandbox", "stop"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        new_overlay(base, workdir)
        times["plain QEMU to agent ready"].append(boot_plain(argv)[0])
        start = timed([tnk, "-q", "sandbox", "start", "--backend", "vm", "--profile", "base"])
        first = timed([tnk, "-q", "sandbox", "exec", "--", "true"])
        times["tnk start"].append(start)
        times["tnk first exec"].append(first)
        times["tnk start + first exec"].append(start + first)
    print(f"{'':<30} {'median ms':>10} {'p10':>8} {'p90':>8}   ({rounds} interleaved runs)")
    for name, samples in times.items():
        samples.sort()
        print(f"{name:<30} {statistics.median(samples) * 1000:>10.0f} {samples[len(samples) // 10] * 1000:>8.0f} "
              f"{samples[(len(samples) * 9) // 10] * 1000:>8.0f}")
    ratio = statistics.median(times["tnk start + first exec"]) / statistics.median(times["plain QEMU to agent ready"])
    print(f"ratio tnk start + first exec / plain QEMU = {ratio:.2f}")
    print("plain QEMU: " + " ".join(argv))


def idle(seconds, workdir):
    argv, base = load_plain(workdir)
    new_overlay(base, workdir)
    _, (rss, pss) = boot_plain(argv, settle=seconds)
    print(rss, pss)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "plain":
        plain, disk = plain_argv(int(sys.argv[2]), sys.argv[3])
        with open(f"{sys.argv[3]}/plain.json", "w") as f:
            json.dump({"argv": plain, "base": disk}, f)
    elif len(sys.argv) == 5 and sys.argv[1] == "cold":
        cold(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "idle":
        idle(float(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(__doc__)
