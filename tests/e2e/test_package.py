"""The Debian package, as a user of it meets it: scripts/package.sh builds it (Release, the system compiler,
prefix /usr), apt-get installs it, an ordinary user runs `tnk doctor`, completes `tnk <TAB>` and runs a
sandbox with it, and `dpkg -r` takes it away leaving nothing of it and nothing changed in the accounts."""
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, require
from test_install import bash_completes

pytestmark = pytest.mark.needs_root
USER = os.environ.get("TNK_TEST_USER", "tnk-ci")
ACCOUNT_FILES = ["/etc/passwd", "/etc/group", "/etc/shadow", "/etc/subuid", "/etc/subgid"]
# What a package install and removal may change besides the package's own files: dpkg's and apt's own
# records and caches, man-db's index.
WATCHED = ["/usr", "/etc", "/var/lib", "/opt"]
EXEMPT = ("/var/lib/dpkg", "/var/lib/apt", "/var/lib/man-db", "/var/lib/systemd", "/var/lib/ucf")


def files_under(roots):
    found = set()
    for root in roots:
        for directory, dirs, files in os.walk(root):
            if directory.startswith(EXEMPT):
                dirs[:] = []
                continue
            found.update(os.path.join(directory, name) for name in dirs + files)
    return found


def digest(paths):
    return {p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths if Path(p).exists()}


def installed_status():
    """dpkg's status of tnk when it is installed ("install ok installed", a half-installed state), else "".
    A removed package's record ("deinstall ok config-files": dpkg keeps its postrm until a purge) is not
    an install."""
    query = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "tnk"], capture_output=True, text=True)
    status = query.stdout.strip() if query.returncode == 0 else ""
    return "" if status.endswith(("not-installed", "config-files")) else status


def run(*argv, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=kwargs.pop("timeout", 900), **kwargs)
    assert result.returncode == 0, f"{argv}: {result.stdout}\n{result.stderr}"
    return result


def as_user(home: Path, *argv, cwd=None, check=True, timeout=900):
    env = ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TNK_SERVER_PORT=9",
           f"XDG_CACHE_HOME={pwd.getpwnam(USER).pw_dir}/.cache"]  # the user's image cache, built once
    result = subprocess.run(["runuser", "-u", USER, "--", *env, *argv], capture_output=True, text=True,
                            timeout=timeout, cwd=cwd or home)
    if check:
        assert result.returncode == 0, f"{argv}: {result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    require(shutil.which("cpack") and shutil.which("apt-get"), "cpack and apt-get are needed")
    require(not installed_status() and not Path("/usr/bin/tnk").exists(),
            "a tnk is already installed on this machine: the test would replace it")
    tree = os.environ.get("TNK_PACKAGE_TREE", str(REPO / "build-package"))
    built = run("bash", str(REPO / "scripts/package.sh"), tree, timeout=3600)
    return Path(built.stdout.strip().splitlines()[-1])


def test_the_package_installs_runs_as_a_user_and_removes_cleanly(package):
    fields = run("dpkg-deb", "-f", str(package), "Depends", "Recommends").stdout
    for needed in ("uidmap", "mmdebstrap", "e2fsprogs", "libc6", "libssl3"):  # libssl: loaded by routes
        assert needed in fields, fields
    for recommended in ("qemu-system-x86", "linux-source-6.1", "bash-completion"):
        assert recommended in fields, fields
    listed = run("dpkg-deb", "-c", str(package)).stdout
    paths = [line.split()[-1].lstrip(".") for line in listed.splitlines()]
    assert all(p.startswith("/usr/") or p == "/" for p in paths), [p for p in paths if not p.startswith("/usr/")]

    before = files_under(WATCHED)
    accounts = digest(ACCOUNT_FILES)
    home = Path(tempfile.mkdtemp(prefix="tnk-package-", dir="/tmp"))
    try:
        installed = run("apt-get", "install", "-y", "--no-install-recommends", str(package),
                        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        assert "tnk doctor" in installed.stdout  # postinst says what to run; it changes nothing
        assert digest(ACCOUNT_FILES) == accounts, "installing the package changed an account file"
        assert Path("/usr/libexec/tnk/tnk-agent").is_file()
        assert run("man", "-w", "tnk").stdout.strip() == "/usr/share/man/man1/tnk.1"

        if subprocess.run(["id", USER], capture_output=True).returncode != 0:
            run("useradd", "--create-home", "--shell", "/bin/sh", USER)
        run("/usr/bin/tnk", "setup", "--user", USER)  # what an administrator runs once: only what is missing
        project = home / "code/hello"
        project.mkdir(parents=True)
        (project / "greeting.txt").write_text("hello from the host\n")
        run("chown", "-R", f"{USER}:", str(home))

        doctor = as_user(home, "tnk", "doctor", check=False)
        assert "ns backend: user namespaces" in doctor.stdout, doctor.stdout + doctor.stderr
        assert "FAIL  ns backend" not in doctor.stdout, doctor.stdout
        as_user(home, "tnk", "init")
        as_user(home, "tnk", "sandbox", "start", "--backend", "ns", "--profile", "base", cwd=project, timeout=1800)
        inside = as_user(home, "tnk", "sandbox", "exec", "--", "sh", "-c", "id -un; cat /workspace/greeting.txt",
                         cwd=project)
        assert inside.stdout == "agent\nhello from the host\n", inside.stdout
        # bash completes `tnk <TAB>` from /usr/share/bash-completion, with nothing sourced by hand.
        skel = Path("/etc/skel/.bashrc")
        (home / ".bashrc").write_text((skel.read_text() if skel.exists() else "") + "\nPS1='READY> '\n")
        env = {"HOME": str(home), "TERM": "dumb", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
        assert "sandbox " in bash_completes(home, env, "tnk sa")
        as_user(home, "tnk", "sandbox", "delete", "--yes", cwd=project)
    finally:
        accounts_before_removal = digest(ACCOUNT_FILES)
        removed = subprocess.run(["dpkg", "-r", "tnk"], capture_output=True, text=True, timeout=300)
    try:
        assert removed.returncode == 0, removed.stderr
        assert not Path("/usr/bin/tnk").exists()
        left = sorted(files_under(WATCHED) - before)
        assert left == [], f"left behind by the package: {left}"
        assert digest(ACCOUNT_FILES) == accounts_before_removal, "removing the package changed an account file"
        assert installed_status() == ""
        # The user's own data is theirs: dpkg -r leaves it.
        assert (home / ".config/tnk/sandbox.d").is_dir()
    finally:
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run(["dpkg", "--purge", "tnk"], capture_output=True)  # dpkg's own record of it, too
