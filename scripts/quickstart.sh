#!/usr/bin/env bash
# The README's first command: install what tnk needs, build it, prepare the host for rootless
# sandboxes (`tnk setup`), and run the main job on a demo project as an ordinary user, tnk's normal
# way. Run by a user with sudo, the demo runs as that user; run as root (a fresh server, a CI machine),
# it runs as the account `tnk-demo` (TNK_DEMO_USER), which it creates. The demo uses its own HOME
# (TNK_DEMO_HOME, default ~/.tnk-demo of the demo user), so it never touches your ~/.config or ~/code.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/install-deps.sh
bash scripts/build.sh build

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
if [ "$(id -u)" -eq 0 ]; then
  user=${TNK_DEMO_USER:-tnk-demo}
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
else
  user=$(id -un)
fi
user_home=$(getent passwd "$user" | cut -d: -f6)

# Subordinate ids for the user's sandboxes, the kvm group, a cgroup subtree: only what is missing.
echo; echo "\$ sudo tnk setup --user $user"
"${sudo[@]}" "$repo/build/tnk" setup --user "$user"

# The demo account never logs in. On a systemd host with cgroup v2 a sandbox's limits come from the
# user's systemd manager (docs/rootless.md), which runs without a login session only for a lingering
# user: so the account lingers, and the demo waits for its manager. (A user with sudo runs the demo in
# their own session, which has its manager.)
if [ "$(id -u)" -eq 0 ] && [ -d /run/systemd/system ] && [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  echo; echo "\$ loginctl enable-linger $user"
  loginctl enable-linger "$user"
  manager=/run/user/$(id -u "$user")/systemd/private
  for _ in $(seq 120); do [ -S "$manager" ] && break; sleep 0.5; done
  [ -S "$manager" ] || echo "quickstart: $user's systemd manager did not start within 60 s; the demo's start will say what is missing"
fi

# Root's build tree may sit where the demo user cannot read it: the user gets its own install, in
# ~/.local (`cmake --install`: bin/tnk, libexec/tnk/tnk-agent, share/tnk/, the manual page and completions).
if [ "$(id -u)" -eq 0 ]; then
  prefix="$user_home/.local"
  cmake --install build --prefix "$prefix" >/dev/null
  chown -R "$user:" "$prefix"
  tnk="$prefix/bin/tnk"
else
  tnk="$repo/build/tnk"
fi

demo_home=${TNK_DEMO_HOME:-$user_home/.tnk-demo}
demo=$(cat <<'DEMO'
set -euo pipefail
tnk=$1
export HOME=$2
# The sandbox image is cached in the user's own cache directory, so it is built once per machine.
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$(getent passwd "$(id -un)" | cut -d: -f6)/.cache}"
unset XDG_CONFIG_HOME XDG_STATE_HOME
project="$HOME/code/tnk-demo"
mkdir -p "$project/src"
[ -f "$project/README.md" ] || printf '# tnk demo project\n' >"$project/README.md"
[ -f "$project/src/hello.py" ] || printf 'print("hello from the sandbox")\n' >"$project/src/hello.py"
run() { echo; echo "\$ $*"; "$@"; }
cd "$project"
if [ ! -d "$HOME/.config/tnk/sandbox.d" ]; then run "$tnk" init; fi
run "$tnk" doctor
run "$tnk" sandbox inspect
run "$tnk" sandbox start --profile base   # the bundled default, pi, also installs the pi agent (minutes)
run "$tnk" sandbox exec -- sh -c 'id && ls -la /workspace && env | grep "^TNK_" | sort'
echo
echo "demo: user $(id -un), HOME $HOME, project $project"
echo "the sandbox keeps running: \`HOME=$HOME tnk sandbox shell\` enters it, \`... tnk sandbox stop\` stops it"
DEMO
)
if [ "$(id -u)" -eq 0 ]; then
  # A clean environment, but the caller's choice of backend (TNK_BACKEND) still applies.
  runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 ${TNK_BACKEND:+"TNK_BACKEND=$TNK_BACKEND"} \
    bash -c "$demo" demo "$tnk" "$demo_home"
else
  bash -c "$demo" demo "$tnk" "$demo_home"
fi
