"""`cmake --install` of the build tree that made TNK_BIN: the layout, a relocated install finding its files
beside itself, the manual page against every command's --help, and completion in bash without sourcing
anything by hand. The Debian package is tested in test_package.py."""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TNK_BIN, require

BUILD = Path(TNK_BIN).resolve().parent
LAYOUT = [
    "bin/tnk",
    "libexec/tnk/tnk-agent",
    "share/tnk/specs/sandbox.d/manifests/pi.yaml",
    "share/tnk/specs/sandbox.d/provision.d/lib/provision-lib.sh",
    "share/tnk/kernel/tnk-guest.config",
    "share/man/man1/tnk.1",
    "share/bash-completion/completions/tnk",
    "share/zsh/site-functions/_tnk",
    "share/fish/vendor_completions.d/tnk.fish",
    "share/doc/tnk/README.md",
]


def install(prefix: Path):
    require((BUILD / "CMakeCache.txt").exists(), f"{BUILD} is not a CMake build tree")
    result = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return prefix


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    return install(tmp_path_factory.mktemp("install") / "prefix")


def run_installed(binary: Path, home: Path, *args):
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TNK_SERVER_PORT": "9"}
    return subprocess.run([str(binary), *args], env=env, capture_output=True, text=True, timeout=120)


def test_install_puts_each_file_where_its_users_look(prefix):
    for relative in LAYOUT:
        assert (prefix / relative).is_file(), relative
    assert os.access(prefix / "bin/tnk", os.X_OK) and os.access(prefix / "libexec/tnk/tnk-agent", os.X_OK)
    # Nothing outside the prefix (CMake lists every file it installed).
    installed = (BUILD / "install_manifest.txt").read_text().split()
    assert installed and all(path.startswith(str(prefix) + "/") for path in installed), installed


def doctor_checks(binary: Path, home: Path):
    result = run_installed(binary, home, "doctor", "-o", "json")
    return {check["id"]: check for check in json.loads(result.stdout)["checks"]}


def test_a_relocated_install_finds_its_files_beside_itself(prefix, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(prefix, moved, symlinks=True)
    tnk = moved / "bin/tnk"
    init = run_installed(tnk, tmp_path / "home", "init")
    assert init.returncode == 0, init.stderr
    assert f"bundled specs ({moved}/share/tnk/specs)" in init.stdout + init.stderr
    checks = doctor_checks(tnk, tmp_path / "home")
    assert "is not installed" not in checks["vm_disk"]["summary"], checks["vm_disk"]  # the agent, in libexec
    assert "is not installed" not in checks["vm_kernel"]["summary"], checks["vm_kernel"]  # the kernel fragment
    # The same checks with the files taken away: no fallback to the build or source tree.
    (moved / "libexec/tnk/tnk-agent").unlink()
    shutil.rmtree(moved / "share/tnk/kernel")
    checks = doctor_checks(tnk, tmp_path / "home")
    assert f"tnk-agent is not installed at {moved}/bin/tnk-agent" in checks["vm_disk"]["summary"], checks["vm_disk"]
    assert "is not installed" in checks["vm_kernel"]["summary"], checks["vm_kernel"]
    shutil.rmtree(moved / "share/tnk/specs")
    again = run_installed(tnk, tmp_path / "home2", "init")
    assert again.returncode != 0, again.stdout


# --- the manual page against --help ---------------------------------------------------------------


def help_tree(tnk: Path, home: Path, path=()):
    """{("sandbox", "start"): {"--profile", "-n", "--dry-run", ...}, ...} from each command's --help."""
    text = run_installed(tnk, home, *path, "--help").stdout
    flags, subcommands, section = set(), [], None
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]*( [a-z]+)*:$", line.strip()) and not line.startswith(" "):
            section = line.strip()
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue
        first = line.split()[0] if line.split() else ""
        if section == "Options:" and first.startswith("-"):
            flags.update(name for name in first.split(",") if name.startswith("-"))
        elif section == "Subcommands:":
            subcommands.append(first)
    tree = {tuple(path): flags}
    for sub in subcommands:
        tree.update(help_tree(tnk, home, (*path, sub)))
    return tree


def page_sections(page: str):
    """The roff source, split into the global options and each command's .SS section."""
    text = page.replace("\\-", "-")
    sections = {}
    head, _, rest = text.partition(".SH COMMANDS\n")
    sections[()] = head.partition(".SH GLOBAL OPTIONS\n")[2]
    commands, _, _ = rest.partition("\n.SH ENVIRONMENT")
    for chunk in commands.split(".SS \"")[1:]:
        title, _, body = chunk.partition("\"\n")
        words = title.split(" [")[0].split()
        sections[tuple(words[1:])] = body
    return sections


def missing_from_page(tree, sections):
    missing = []
    for path, flags in tree.items():
        if path not in sections:
            missing.append(" ".join(("tnk",) + path))
            continue
        for flag in flags:
            # Global options and -h are described once, under GLOBAL OPTIONS; a command lists its own.
            # Only an option's own line counts (".B -n, --dry-run"), not a mention in a description.
            labels = [line for line in (sections[path] + sections[()]).splitlines() if line.startswith(".B ")]
            if not any(re.search(r"[ ,]" + re.escape(flag) + r"([ ,]|$)", label) for label in labels):
                missing.append(f"tnk {' '.join(path)} {flag}")
    return missing


def test_the_manual_page_names_every_command_and_flag_of_the_cli(prefix, tmp_path):
    tnk = prefix / "bin/tnk"
    tree = help_tree(tnk, tmp_path / "home")
    assert ("sandbox", "start") in tree and "--profile" in tree[("sandbox", "start")], tree.keys()
    page = (prefix / "share/man/man1/tnk.1").read_text()
    sections = page_sections(page)
    assert missing_from_page(tree, sections) == []
    # The check can fail: the page without one flag's line is caught.
    broken = page.replace(".B \\-\\-reprovision\n", ".B \\-\\-something\\-else\n")
    assert broken != page
    assert missing_from_page(tree, page_sections(broken)) == ["tnk sandbox start --reprovision"]
    for section in ("ENVIRONMENT", "IN THE SANDBOX", "FILES", "EXIT STATUS", "EXAMPLES"):
        assert f".SH {section}\n" in page, section
    for name in ("TNK_BACKEND", "TNK_INFERENCE_URL", "XDG_STATE_HOME", "NO_COLOR"):
        assert f".B {name.replace('-', chr(92) + '-')}\n" in page, name


def test_man_finds_the_installed_page(prefix):
    require(shutil.which("man") is not None, "man is not installed (apt-get install man-db)")
    env = {"PATH": "/usr/bin:/bin", "MANPATH": str(prefix / "share/man"), "MANWIDTH": "120", "LANG": "C.UTF-8"}
    shown = subprocess.run(["man", "-P", "cat", "tnk"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    for command in ("tnk sandbox start", "tnk sandbox exec", "tnk doctor", "tnk audit verify", "tnk setup"):
        assert command in shown.stdout, command


# --- completion in bash ------------------------------------------------------------------------------


def bash_completes(home: Path, env: dict, typed: str, timeout=20.0, shell="/bin/bash") -> str:
    """Types `typed` and a TAB into an interactive shell on a terminal; returns what the terminal shows."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(shell, [shell, "-i"], env)
    shown = b""

    def read_until(marker: bytes, deadline: float):
        nonlocal shown
        while marker not in shown and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    shown += os.read(fd, 4096)
                except OSError:
                    break

    try:
        read_until(b"READY> ", time.monotonic() + timeout)
        os.write(fd, typed.encode() + b"\t")
        mark = len(shown)
        read_until(b"sandbox ", time.monotonic() + 5)
        return shown[mark:].decode(errors="replace")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def test_bash_completes_tnk_from_the_install_without_sourcing_anything(prefix, tmp_path):
    require(Path("/usr/share/bash-completion/bash_completion").exists(),
            "bash-completion is not installed (apt-get install bash-completion)")
    home = tmp_path / "home"
    home.mkdir()
    # Debian's ~/.bashrc for new users (from /etc/skel) is what loads bash-completion; the prompt marks
    # the moment the shell is ready.
    skel = Path("/etc/skel/.bashrc")
    (home / ".bashrc").write_text((skel.read_text() if skel.exists() else "") + "\nPS1='READY> '\n")
    env = {"HOME": str(home), "TERM": "dumb", "LANG": "C.UTF-8", "PATH": f"{prefix}/bin:/usr/bin:/bin"}
    # A prefix of its own stands in for /usr/local: XDG_DATA_DIRS is where bash-completion looks, and its
    # default (/usr/local/share:/usr/share) covers /usr/local and the package's /usr.
    installed = bash_completes(home, {**env, "XDG_DATA_DIRS": f"{prefix}/share:/usr/share"}, "tnk sa")
    assert "sandbox " in installed, repr(installed)
    # The control: the same shell without the install's share/ completes nothing.
    without = bash_completes(home, {**env, "XDG_DATA_DIRS": "/usr/share"}, "tnk sa")
    assert "sandbox " not in without, repr(without)


def test_zsh_completes_tnk_from_the_install(prefix, tmp_path):
    require(shutil.which("zsh") is not None, "zsh is not installed (apt-get install zsh)")
    home = tmp_path / "home"
    home.mkdir()
    # compinit as a zsh user's .zshrc has it; the prefix's site-functions stands in for
    # /usr/local/share/zsh/site-functions, which Debian's zsh has in its fpath already.
    rc = "autoload -U compinit && compinit -u\nPS1='READY> '\n"
    env = {"HOME": str(home), "ZDOTDIR": str(home), "TERM": "dumb", "LANG": "C.UTF-8",
           "PATH": f"{prefix}/bin:/usr/bin:/bin"}
    (home / ".zshrc").write_text(f"fpath=({prefix}/share/zsh/site-functions $fpath)\n" + rc)
    assert "sandbox " in bash_completes(home, env, "tnk sa", shell="/usr/bin/zsh")
    (home / ".zshrc").write_text(rc)  # the control: without the install's directory, nothing
    assert "sandbox " not in bash_completes(home, env, "tnk sa", shell="/usr/bin/zsh")


# --- completion in fish ------------------------------------------------------------------------------


def fish_completes(prefix: Path, home: Path, typed: str, data_dirs=None):
    """What fish, started with a new user's (empty) configuration, offers for `typed`: {word: description}.
    data_dirs: XDG_DATA_DIRS, or None for a session that does not set it."""
    home.mkdir(exist_ok=True)
    empty = home / "empty"  # the working directory: no file names to offer instead
    empty.mkdir(exist_ok=True)
    env = {"HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "PATH": f"{prefix}/bin:/usr/bin:/bin"}
    if data_dirs is not None:
        env["XDG_DATA_DIRS"] = data_dirs
    result = subprocess.run(["fish", "-c", "complete -C $argv[1]", typed], cwd=empty, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return dict((line.split("\t") + [""])[:2] for line in result.stdout.splitlines() if line)


def sandbox_subcommands(tnk: Path, home: Path):
    text = run_installed(tnk, home, "sandbox", "--help").stdout
    listed = text.partition("Subcommands:\n")[2].partition("\n\n")[0]
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


def test_fish_completes_tnk_from_the_install(prefix, tmp_path):
    require(shutil.which("fish") is not None, "fish is not installed (scripts/install-deps.sh)")
    subcommands = sandbox_subcommands(prefix / "bin/tnk", tmp_path / "tnk-home")
    assert {"start", "exec", "shell", "stop"} <= subcommands, subcommands

    def completes(home, data_dirs=None):
        assert "sandbox" in fish_completes(prefix, home, "tnk sand", data_dirs)
        offered = fish_completes(prefix, home, "tnk sandbox ", data_dirs)
        assert subcommands <= set(offered), offered
        assert offered["start"] == "Create (on first use), start and provision the sandbox", offered

    def completes_nothing(home, data_dirs=None):
        assert fish_completes(prefix, home, "tnk sand", data_dirs) == {}
        assert fish_completes(prefix, home, "tnk sandbox ", data_dirs) == {}

    # An install into ~/.local: fish reads ~/.local/share/fish/vendor_completions.d whatever the session
    # sets (the prefix stands in for ~/.local through a link).
    user = tmp_path / "user"
    user.mkdir()
    (user / ".local").symlink_to(prefix)
    completes(user)
    completes(user, "/usr/share")
    # An install into /usr/local: fish reads <each of XDG_DATA_DIRS>/fish/vendor_completions.d; the
    # prefix's share/ stands in for /usr/local/share, which desktop and systemd sessions name
    # (/usr/local/share:/usr/share). Without XDG_DATA_DIRS, fish 3.6 reads only its own
    # /usr/share/fish/vendor_completions.d, where the Debian package puts the file (docs/install.md).
    local = tmp_path / "local"
    completes(local, f"{prefix}/share:/usr/share")
    # The controls: the same fish without the install's directory offers nothing for tnk.
    completes_nothing(local, "/usr/share")
    completes_nothing(local)
