#!/usr/bin/python3
"""Builds (or finds) the disk of a stock Debian test host: tests/hosts/build_image.py RELEASE [--build-deps].

The disk is an ext4 image of an `mmdebstrap --variant=minbase` root file system from the mirror this
machine's apt uses, with an ordinary user `alice` (uid 1000, subordinate ids, passwordless sudo,
lingering) and a unit that runs whatever the runner hands in (tests/hosts/guest/). It is cached under
${XDG_CACHE_HOME:-~/.cache}/tnk-test-hosts/<release>-<hash>/ (disk.img, vmlinuz, initrd.img,
image.json), where the hash covers everything that decides its content: the package list, this file,
the guest files and the mirror sources. A build happens in a temporary directory that is renamed into
place when complete, so an interrupted build leaves nothing that looks usable.

--build-deps adds what scripts/install-deps.sh installs on a fresh machine (compilers, QEMU, the kernel
source, npm...), for the suite that runs the README's quick start: installing them under emulation
would take longer than the rest of the run. A disk of its own, with its own hash.

Prints the cache directory on the last line of stdout; progress goes to stderr. Runs as root
(mmdebstrap's root mode, chroot, and reading the kernel in /boot, which is 0600).
"""
import glob
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RELEASES = ("bookworm", "trixie")
DISK_SIZE = "6G"  # sparse; the handed-in sandbox images (two copies) land in the run's overlay
BUILD_DEPS_DISK_SIZE = "12G"
# What a stock host of the test has: systemd with logind and a user manager (the cgroup layout tnk
# meets on a real machine), the kernel to boot, and tnk's runtime needs (Depends of the Debian
# package, cmake/Package.cmake: mmdebstrap, uidmap, e2fsprogs, ca-certificates; git, which tnk runs
# for workspaces). apparmor: trixie boots with it enabled, bookworm gets it too so both are alike.
# The last line is for the suite ns-e2e.sh, which runs end-to-end files of tests/e2e in the host:
# pytest; gcc and libc6-dev for the probe the isolation tests compile on the host (compile_probe);
# curl, which the network tests run on the host as the control of each denial.
PACKAGES = [
    "systemd", "systemd-sysv", "udev", "dbus", "dbus-user-session", "libpam-systemd",
    "linux-image-amd64", "uidmap", "sudo", "iproute2", "procps", "kmod", "e2fsprogs",
    "ca-certificates", "libseccomp2", "python3", "apparmor", "mmdebstrap", "git",
    "python3-pytest", "gcc", "libc6-dev", "curl",
]
USER, UID, SUBID_START, SUBID_COUNT = "alice", 1000, 100000, 65536
GUEST_FILES = ["guest/tnk-host-test.service", "guest/tnk-host-boot"]


def log(msg):
    print(f"build-image: {msg}", file=sys.stderr, flush=True)


def apt_mirrors():
    """(uri, signed_by) of the host's Debian main archive and of its security archive, from
    /etc/apt/sources.list and sources.list.d (deb822 *.sources and one-line *.list). Returns the raw
    text too: it goes into the hash, so another mirror makes another disk."""
    main = security = None
    texts = []
    files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) + \
        sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    for path in files:
        if not os.path.isfile(path):
            continue
        text = open(path).read()
        texts.append(path + "\n" + text)
        entries = []
        if path.endswith(".sources"):
            for stanza in text.split("\n\n"):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[0].isspace():
                        continue
                    key, value = line.split(":", 1)
                    fields[key.strip().lower()] = value.strip()
                if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                    for uri in fields.get("uris", "").split():
                        entries.append((uri, fields.get("suites", "").split(), fields.get("signed-by", "")))
        else:
            for line in text.splitlines():
                words = line.split("#", 1)[0].split()
                if not words or words[0] != "deb":
                    continue
                signed = ""
                if words[1].startswith("["):
                    opts = []
                    while not words[1].endswith("]"):
                        opts.append(words.pop(1))
                    opts.append(words.pop(1))
                    for o in " ".join(opts).strip("[]").split():
                        if o.startswith("signed-by="):
                            signed = o.split("=", 1)[1]
                entries.append((words[1], [words[2]], signed))
        for uri, suites, signed in entries:
            for s in suites:
                if s.endswith("-security") or s.endswith("/updates"):
                    security = security or (uri.rstrip("/"), signed)
                elif "-" not in s:
                    main = main or (uri.rstrip("/"), signed)
    if not main:
        sys.exit("build-image: no Debian archive in this machine's apt sources")
    return main, security, texts


def install_deps_packages():
    """The packages scripts/install-deps.sh installs on a fresh machine, as it lists them."""
    script = os.path.join(HERE, "..", "..", "scripts", "install-deps.sh")
    return subprocess.run(["bash", script, "--list"], capture_output=True, text=True, check=True).stdout.split()


def recipe(release, build_deps=False):
    main, security, texts = apt_mirrors()
    sources = []  # one-line entries for mmdebstrap; signed-by kept where the host has it
    for (uri, signed), suites in ((main, [release, release + "-updates"]),
                                  (security, [release + "-security"])):
        if uri is None:
            continue
        opt = f" [signed-by={signed}]" if signed else ""
        sources.append(f"deb{opt} {uri} {' '.join(suites)} main")
    own = {p: open(os.path.join(HERE, p)).read() for p in ["build_image.py"] + GUEST_FILES}
    packages = sorted(set(PACKAGES + install_deps_packages())) if build_deps else PACKAGES
    # The compilers, QEMU, the kernel source and a build tree's objects need room beyond the stock disk.
    disk_size = BUILD_DEPS_DISK_SIZE if build_deps else DISK_SIZE
    return {"release": release, "packages": packages, "disk_size": disk_size, "sources": sources,
            "host_apt": texts, "files": own, "user": [USER, UID, SUBID_START, SUBID_COUNT]}


def run(argv, **kw):
    subprocess.run(argv, check=True, **kw)


def customize(root, release):
    """What a stock host needs to boot unattended under QEMU (tests/hosts/README.md, "The disk")."""
    def write(rel, text, mode=0o644):
        path = os.path.join(root, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    write("/etc/fstab", "/dev/vda / ext4 rw,relatime 0 1\n")
    write("/etc/hostname", f"{release}-host\n")
    write("/etc/hosts", f"127.0.0.1 localhost\n127.0.1.1 {release}-host\n")
    # A machine id of its own: an empty or missing one makes systemd treat the boot as a first boot.
    write("/etc/machine-id", secrets.token_hex(16) + "\n", 0o444)
    # The runner talks to the serial console; a getty there would fight over it.
    os.symlink("/dev/null", os.path.join(root, "etc/systemd/system/serial-getty@ttyS0.service"))
    # Timers (apt-daily, man-db, e2scrub, fstrim...) compete for the CPU under emulation.
    for link in glob.glob(os.path.join(root, "etc/systemd/system/timers.target.wants/*")):
        os.unlink(link)
    run(["chroot", root, "useradd", "--create-home", "--uid", str(UID), "--shell", "/bin/bash",
         "--groups", "sudo", USER])
    # useradd may or may not add a subordinate range (it depends on login.defs): write it explicitly.
    for f in ("etc/subuid", "etc/subgid"):
        write(f, f"{USER}:{SUBID_START}:{SUBID_COUNT}\n")
    write(f"/etc/sudoers.d/{USER}", f"{USER} ALL=(ALL) NOPASSWD:ALL\n", 0o440)
    run(["chroot", root, "visudo", "-c", "-q"])
    write(f"/var/lib/systemd/linger/{USER}", "")  # what `loginctl enable-linger` leaves
    # The runner's hook: a unit that mounts the work share and runs the entry script found there.
    for name, dest, mode in (("tnk-host-test.service", "/etc/systemd/system/tnk-host-test.service", 0o644),
                             ("tnk-host-boot", "/usr/local/sbin/tnk-host-boot", 0o755)):
        write(dest, open(os.path.join(HERE, "guest", name)).read(), mode)
    os.symlink("/etc/systemd/system/tnk-host-test.service",
               os.path.join(root, "etc/systemd/system/multi-user.target.wants/tnk-host-test.service"))


def build(r, out):
    release = r["release"]
    tmp = f"{out}.tmp-{os.getpid()}"
    root = os.path.join(tmp, "rootfs")
    os.makedirs(tmp)
    try:
        t0 = time.monotonic()
        log(f"mmdebstrap {release} minbase from {r['sources'][0].split()[-4]} (a few minutes)")
        with open(os.path.join(tmp, "mmdebstrap.log"), "w") as logf:
            p = subprocess.run(["nice", "-n", "10", "mmdebstrap", "--variant=minbase", "--mode=root",
                                "--include=" + ",".join(r["packages"]), "--skip=cleanup/apt/lists",
                                release, root] + r["sources"], stdout=logf, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            sys.exit(f"build-image: mmdebstrap failed ({p.returncode}); see {tmp}/mmdebstrap.log")
        t1 = time.monotonic()
        log(f"  rootfs done in {t1 - t0:.0f} s; customizing")
        customize(root, release)
        # The kernel and initrd, booted directly by QEMU (-kernel/-initrd), so no boot loader.
        for pat, name in (("boot/vmlinuz-*", "vmlinuz"), ("boot/initrd.img-*", "initrd.img")):
            found = sorted(glob.glob(os.path.join(root, pat)))
            if not found:
                sys.exit(f"build-image: no {pat} in the root file system")
            shutil.copy(found[-1], os.path.join(tmp, name))
        kernel_version = os.path.basename(found[-1])[len("initrd.img-"):]
        log(f"  mke2fs -t ext4 -d rootfs disk.img {r['disk_size']}")
        run(["nice", "-n", "10", "mke2fs", "-q", "-t", "ext4", "-d", root, os.path.join(tmp, "disk.img"), r["disk_size"]])
        t2 = time.monotonic()
        shutil.rmtree(root)
        info = {"release": release, "kernel": kernel_version, "recipe": r,
                "seconds": {"mmdebstrap": round(t1 - t0, 1), "total": round(t2 - t0, 1)}, "built_at": int(time.time())}
        with open(os.path.join(tmp, "image.json"), "w") as f:
            json.dump(info, f, indent=1)
        os.rename(tmp, out)  # atomic: the cache directory appears only when complete
        log(f"  {out} ready in {t2 - t0:.0f} s")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def main():
    args = sys.argv[1:]
    build_deps = "--build-deps" in args
    args = [a for a in args if a != "--build-deps"]
    if len(args) != 1 or args[0] not in RELEASES:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(RELEASES)}}} [--build-deps]")
    release = args[0]
    r = recipe(release, build_deps)
    digest = hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()[:12]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tnk-test-hosts")
    out = os.path.join(cache, f"{release}{'-build-deps' if build_deps else ''}-{digest}")
    if os.path.isfile(os.path.join(out, "image.json")):
        log(f"{out} is already built")
    else:
        if os.geteuid() != 0:
            sys.exit("build-image: building a host disk needs root (mmdebstrap root mode, chroot)")
        os.makedirs(cache, exist_ok=True)
        build(r, out)
    print(out)


if __name__ == "__main__":
    main()
