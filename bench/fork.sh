#!/usr/bin/env bash
# Checkpoints and forks (issue 33's targets), on one backend, in one run:
#   checkpoint of a provisioned, running sandbox (ns: <= 1 s with the pi profile: PROFILE=pi);
#   restore of a running sandbox (stopped, put back, started again);
#   `fork -n 4` until all four have run a first command <= 2x one start (stop, then start + first exec);
#   the host memory (RSS of its supervisor's processes) and disk (its state directory) each fork costs,
#   beside the parent's.
# Usage: bench/fork.sh [ns|vm] [ROUNDS] (default ns, 5), as an ordinary user or root. A built tnk (TNK_BIN,
# default build/tnk) and python3. PROFILE=name (default base) is provisioned first. Uses a temporary HOME;
# the image cache is the caller's. STATE_DIR=dir puts the sandboxes' state there (a file system that
# shares blocks, XFS or btrfs, to see checkpoints and forks copy-on-write).
set -euo pipefail

backend=${1:-ns}
rounds=${2:-5}
profile=${PROFILE:-base}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/fork.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }

source "$repo/bench/sandbox_home.sh"
if [ -n "${STATE_DIR:-}" ]; then
  export XDG_STATE_HOME
  XDG_STATE_HOME=$(mktemp -d "$STATE_DIR/tnk-bench-state-XXXXXX")
  trap 'cd "$project" && "$tnk" shutdown --timeout 2 >/dev/null 2>&1; "$tnk" sandbox delete --yes >/dev/null 2>&1; cd /; rm -rf "$XDG_STATE_HOME" "$work" 2>/dev/null || true' EXIT
fi
echo "   state on: $(df -T "${XDG_STATE_HOME:-$HOME}" | awk 'NR==2 {print $2}') ($(findmnt -no SOURCE -T "${XDG_STATE_HOME:-$HOME}"))"

now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# The milliseconds one run of "$@" takes.
timed() {
  local began
  began=$(now_ms)
  "$@" >/dev/null
  echo $(($(now_ms) - began))
}
state=${XDG_STATE_HOME:-$HOME/.local/state}/tnk/sandboxes
# RSS (MiB) of a running sandbox's supervisor and every process below it.
sandbox_rss() {
  local todo=("$(cut -d' ' -f1 "$state/$1/supervisor.pid")") total=0
  while [ ${#todo[@]} -gt 0 ]; do
    local p=${todo[0]}
    todo=("${todo[@]:1}")
    total=$((total + $(awk '/^Rss:/ {print $2}' /proc/"$p"/smaps_rollup 2>/dev/null || echo 0)))
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
  echo "$((total / 1024))"
}
disk_mib() { { du -sxm --exclude=base.img --exclude=checkpoints "$state/$1" 2>/dev/null || true; } | cut -f1; }  # what the user cannot read is left out
delete_forks() {
  for f in $("$tnk" sandbox ls -q | grep '\.[0-9]*$' || true); do "$tnk" -q --sandbox "$f" sandbox delete --yes; done
}

"$tnk" -q init >/dev/null
echo "== $backend: starting and provisioning the sandbox with profile $profile"
"$tnk" sandbox start --backend "$backend" --profile "$profile"
"$tnk" -q sandbox exec -- true
id=$("$tnk" -o json sandbox inspect 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "   machine: $(nproc) cores, load: $(uptime | sed 's/.*load average: //')"

echo
echo "== checkpoint of the running sandbox (ms, median of $rounds)"
for i in $(seq "$rounds"); do timed "$tnk" -q sandbox checkpoint "c$i"; done | median | sed 's/^/   checkpoint: /'
"$tnk" sandbox checkpoints | sed 's/^/   /' | head -3

echo
echo "== restore of the running sandbox to a checkpoint (ms, median of $rounds)"
for i in $(seq "$rounds"); do timed "$tnk" -q sandbox restore c1; done | median | sed 's/^/   restore: /'

echo
echo "== one start of the stopped sandbox to its first command (ms, median of $rounds)"
one=$(for _ in $(seq "$rounds"); do
  "$tnk" -q sandbox stop
  timed "$tnk" -q sandbox exec -- true
done | median)
echo "   start + exec: $one"

echo
echo "== fork -n 4 until all four ran a first command (ms, median of $rounds)"
four=$(for _ in $(seq "$rounds"); do
  delete_forks
  began=$(now_ms)
  "$tnk" -q sandbox fork -n 4 >/dev/null
  for f in $("$tnk" sandbox ls -q | grep '\.[0-9]*$'); do "$tnk" -q --sandbox "$f" sandbox exec -- true & done
  wait
  echo $(($(now_ms) - began))
done | median)
echo "   fork -n 4 + exec in each: $four"
python3 -c "print(f'   ratio fork -n 4 / one start: {$four / $one:.2f}x (target <= 2x)')"

echo
echo "== what each fork costs while idle (RSS of its processes; its state directory as this user sees it, without"
echo "   the base disk it links and the checkpoints)"
sleep "${SETTLE:-5}"
printf '   %-28s %8s %8s\n' sandbox "RSS MiB" "disk MiB"
for s in "$id" $("$tnk" sandbox ls -q | grep '\.[0-9]*$'); do
  printf '   %-28s %8s %8s\n' "$s" "$(sandbox_rss "$s")" "$(disk_mib "$s")"
done
delete_forks
