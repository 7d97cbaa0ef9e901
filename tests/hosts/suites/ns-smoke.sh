#!/bin/bash
# ns-smoke: the ns backend on a stock Debian host (tests/hosts/README.md): setup, doctor, init, start,
# exec, shell, checkpoint, fork, stop, delete; a sandbox's limits in the supervisor's systemd scope, seen
# from outside; a 2 GiB allocation in a 512 MiB profile killed and reported while the sandbox goes on; a fork loop
# stopped at the pids limit; the opt-in; and (root's pass) a user's start refused without a systemd user
# manager. Run inside the test host by entry.sh, once as root and once as alice in a login session:
#   ns-smoke.sh PASS RESULTS_DIR
# The steps and their results: guest/steps.sh; the last line is "host-suite: N passed, N failed".
set -u
pass=$1 R=$2
. "$(dirname "$0")/steps.sh"
export PATH=/opt/tnk/bin:$PATH
# The test host's -cpu max shows an (emulated) /dev/kvm, so `auto` could pick the vm backend, whose guest
# kernel takes half an hour to compile here: this suite is about the ns backend.
export TNK_BACKEND=ns
if [ "$pass" = root ]; then export HOME=/root USER=root LOGNAME=root; fi  # a service has no HOME
cd "$HOME" || exit 1
# logind names a session session-N.scope, or session-cN.scope when PAM gave no audit session id (su
# from a service): either is a login session.
in_session() { grep -Eq '^0::/user\.slice/user-[0-9]+\.slice/session-c?[0-9]+\.scope$' "$2" && grep -q '^active$' "$2"; }

project=$HOME/code/smoke
mkdir -p "$project" "$HOME/code/unlimited" "$HOME/code/limits" "$HOME/code/forks"
# tnk run by root refuses a project that root owns (the agent would write into it as host root): root's
# projects belong to alice, as a user's project would.
[ "$pass" = root ] && chown alice:alice "$project" "$HOME/code/unlimited" "$HOME/code/limits" "$HOME/code/forks"
tnk=$(command -v tnk)
cgroup_of_shell() { cat /proc/self/cgroup; systemctl is-active user@1000.service; }
in_project() { local d=$1; shift; (cd "$d" && "$@"); }
# Manifests are written with umask 022: trixie's default 002 gives 0664, which tnk refuses to read.
manifest() {  # NAME MEMORY: a profile with that memory limit and no network
  umask 022
  printf 'profile: %s\nresources:\n  cpus: 1\n  memory: %s\n  disk: 8GiB\nsecurity:\n  network: none\n' "$1" "$2" \
    >"$HOME/.config/tnk/sandbox.d/manifests/$1.yaml"
}
# The sandbox's cgroup as seen from outside: the directory named by its id, and its limits.
sandbox_cgroup() {  # ID
  local dir; dir=$(find /sys/fs/cgroup -mindepth 2 -maxdepth 9 -type d -name "$1" 2>/dev/null | head -1)
  [ -n "$dir" ] || { echo "no cgroup named $1"; return 1; }
  echo "$dir"; echo "memory.max $(cat "$dir/memory.max")"; echo "pids.max $(cat "$dir/pids.max")"
  echo "cpu.max $(cat "$dir/cpu.max")"; echo "parent: $(cat "$dir/../cgroup.procs" | wc -l) process(es) in $(basename "$(dirname "$dir")")"
}
limits_placed() { grep -q '^memory.max 536870912$' "$2" && grep -q '^pids.max 4096$' "$2" && grep -q '^cpu.max 100000 100000$' "$2"; }
oom_reported() { [ "$1" -eq 137 ] && grep -q "OOM killer ended a process of this command" "$2"; }

step cgroup-of-pass "" "$([ "$pass" = alice ] && echo in_session || echo ran)" -- cgroup_of_shell
step version "" ok -- tnk version
step doctor "informational: it has failures to report on a bare host" ran -- tnk doctor
step setup "" ok -- sudo "$tnk" setup --user alice
step init "" ok -- tnk init
step start "" ok -- in_project "$project" tnk sandbox start --profile base
step exec-true "" ok -- in_project "$project" tnk sandbox exec -- true
# Where AppArmor 4 runs (Debian 13), `tnk setup` wrote its profile and loaded it (its kernel switch for
# user namespaces is off there, so the profile is not needed today, and must break nothing): the
# supervisor of the running sandbox is seen under it.
apparmor4() { [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ] && [ -e /etc/apparmor.d/abi/4.0 ]; }
supervisor_label() {
  local pid; pid=$(pgrep -o -u "$(id -u)" -f '__supervise tnk-smoke') || { echo "no supervisor"; return 1; }
  echo "profile of /etc/apparmor.d/tnk names: $(grep -o '^profile tnk [^ ]*' /etc/apparmor.d/tnk)"
  echo "supervisor $pid runs as: $(cat "/proc/$pid/attr/current")"
}
runs_under_profile() { grep -q "^profile of /etc/apparmor.d/tnk names: profile tnk $tnk$" "$2" && grep -q ': tnk (unconfined)$' "$2"; }
apparmor4 && step apparmor-supervisor "" runs_under_profile -- supervisor_label
step exec-cgroup "" ok -- in_project "$project" tnk sandbox exec -- cat /proc/self/cgroup
step shell "" ok -- in_project "$project" tnk sandbox shell --no-tty -c 'echo "a shell in $(hostname)"'
# Issue 33: a checkpoint of the running sandbox holds it still with the cgroup v2 freezer of its own
# cgroup (systemd's hosts), and two forks run beside it, each its own sandbox.
freezer_used() {
  ok "$1" && grep -q 'held still by the cgroup v2 freezer' "$HOME/.local/state/tnk/sandboxes/tnk-smoke/supervisor.log"
}
step checkpoint "" freezer_used -- in_project "$project" tnk sandbox checkpoint smoke
fork_two() {
  in_project "$project" tnk sandbox fork -n 2 && in_project "$project" tnk --sandbox tnk-smoke.2 sandbox exec -- hostname &&
    in_project "$project" tnk sandbox ls
}
forked() { ok "$1" && grep -q '^tnk-smoke.2$' "$2" && grep -Eq '^tnk-smoke.1 +running .* tnk-smoke$' "$2"; }
step fork "" forked -- fork_two
step fork-delete "" ok -- in_project "$project" sh -c 'tnk --sandbox tnk-smoke.1 sandbox delete -y && tnk --sandbox tnk-smoke.2 sandbox delete -y'
step stop "" ok -- in_project "$project" tnk sandbox stop
step delete "" ok -- in_project "$project" tnk sandbox delete -y

# Limits, with no allow_unlimited: a 512 MiB profile, seen from outside, then a 2 GiB allocation in it.
step limits-manifest "" ok -- manifest limits 512MiB
step limits-start "" ok -- in_project "$HOME/code/limits" tnk sandbox start --profile limits
step limits-cgroup "" limits_placed -- sandbox_cgroup tnk-limits
# tail keeps a line in memory, and /dev/zero has no newline: 2 GiB resident, unless killed.
step limits-memory "" oom_reported -- \
  in_project "$HOME/code/limits" tnk sandbox exec -- sh -c 'head -c 2G /dev/zero | tail >/dev/null'
step limits-after-oom "the sandbox goes on" ok -- in_project "$HOME/code/limits" tnk sandbox exec -- true
step limits-session-after-oom "the user's session is unaffected" "$([ "$pass" = alice ] && echo in_session || echo ran)" -- cgroup_of_shell
step limits-stop "" ok -- in_project "$HOME/code/limits" tnk sandbox stop
step limits-restart "" ok -- in_project "$HOME/code/limits" tnk sandbox exec -- true
step limits-delete "" ok -- in_project "$HOME/code/limits" tnk sandbox delete -y

# A fork loop against the pids limit (4096, docs/ns-backend.md), in a profile whose memory holds 4096
# shells: dash subshells blocked opening a FIFO, until a fork fails (dash then says "Cannot fork" and
# exits 2), at most 4600. Checked: the loop failed, short of 4600. Then opening the FIFO for writing and
# closing it ends every holder (builtins only: no fork is left until then).
fork_loop() {
  umask 022
  cat >"$HOME/code/forks/forkloop.sh" <<'LOOP'
mkfifo /tmp/hold
i=0
while [ $i -lt 4600 ]; do
  { read -r _ </tmp/hold; } &
  i=$((i + 1))
  [ $((i % 500)) -eq 0 ] && echo "forked $i"
done
echo "forked $i"
LOOP
  in_project "$HOME/code/forks" tnk sandbox exec -- sh -c \
    'sh /workspace/forkloop.sh; echo "loop exit $?"; exec 3>/tmp/hold; exec 3>&-; echo released'
}
# Not anchored: the exec's stdout and stderr reach the log as two streams, and dash writes its error in
# two pieces ("...: 0: ", then "Cannot fork"), between which "loop exit 2" can land (seen in CI).
pids_bound() { grep -Eq 'loop exit [1-9]' "$2" && ! grep -q '^forked 4600$' "$2" && grep -q 'released$' "$2"; }
step forks-manifest "" ok -- manifest forks 3GiB
step forks-start "" ok -- in_project "$HOME/code/forks" tnk sandbox start --profile forks
step forks-pids "" pids_bound -- fork_loop
step forks-after "the sandbox goes on" ok -- in_project "$HOME/code/forks" tnk sandbox exec -- true
step forks-delete "" ok -- in_project "$HOME/code/forks" tnk sandbox delete -y

# The opt-in still starts a sandbox (with its limits where they have a place, as here).
allow_unlimited() {  # a top-level key: it has to come before tnk.toml's first [table]; sed keeps the mode
  sed -i '1i allow_unlimited = true' "$HOME/.config/tnk/tnk.toml" && head -1 "$HOME/.config/tnk/tnk.toml"
}
step set-allow-unlimited "" ok -- allow_unlimited
step unlimited-start "" ok -- in_project "$HOME/code/unlimited" tnk sandbox start --profile base
step unlimited-exec-true "" ok -- in_project "$HOME/code/unlimited" tnk sandbox exec -- true
step unlimited-delete "" ok -- in_project "$HOME/code/unlimited" tnk sandbox delete -y

# Root's pass only: alice without a login session and without lingering has no systemd manager to give
# her supervisor a scope: her start is refused (77), naming the fix. Lingering is restored after.
no_manager_start() {
  loginctl disable-linger alice && systemctl stop user@1000.service
  runuser -u alice -- sh -c 'cd && tnk init --force >/dev/null && mkdir -p code/nomanager && cd code/nomanager && tnk sandbox start --profile base'
  local rc=$?
  loginctl enable-linger alice; runuser -u alice -- sh -c 'rm -rf ~/.config/tnk ~/code/nomanager'
  return $rc
}
refused_with_linger_fix() { [ "$1" -eq 77 ] && grep -q 'loginctl enable-linger alice' "$2" && grep -q 'no systemd user manager runs for alice' "$2"; }
[ "$pass" = root ] && step no-manager-refused "" refused_with_linger_fix -- no_manager_start

# Root's pass only, security review 3 R3-L3: the profile lets the binary it names create user namespaces,
# so setup names only a binary root alone can change. Run from a copy in alice's home, it writes none (and
# the installed binary's profile stays); the installed binary's own setup wrote one (above).
setup_from_users_copy() {
  install -o alice -m 0755 "$tnk" /home/alice/tnk-copy && /home/alice/tnk-copy setup --user alice; local rc=$?
  rm -f /home/alice/tnk-copy; echo "the profile names: $(grep -o '^profile tnk [^ ]*' /etc/apparmor.d/tnk)"; return $rc
}
no_profile_for_users_copy() {
  ok "$1" && grep -q 'no AppArmor profile written (.*/home/alice is owned by uid 1000)' "$2" &&
    grep -q "^the profile names: profile tnk $tnk$" "$2"
}
[ "$pass" = root ] && apparmor4 && step apparmor-users-binary "" no_profile_for_users_copy -- setup_from_users_copy

# Root's pass only, where the kernel has AppArmor's switch for unprivileged user namespaces (Ubuntu's
# default is on; Debian's off): turned on, `tnk setup` writes its profile and loads it with
# apparmor_parser, and alice's pass then runs with it loaded.
apparmor_restricted_setup() {
  sysctl -w kernel.apparmor_restrict_unprivileged_userns=1 && "$tnk" setup --user alice &&
    grep -q "$tnk" /etc/apparmor.d/tnk && grep -q '^tnk (unconfined)$' /sys/kernel/security/apparmor/profiles &&
    echo "profile tnk loaded"
}
if [ "$pass" = root ] && [ -f /proc/sys/kernel/apparmor_restrict_unprivileged_userns ] &&
   [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
  step apparmor-profile "" ok -- apparmor_restricted_setup
fi

finish
