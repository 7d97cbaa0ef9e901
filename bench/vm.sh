#!/usr/bin/env bash
# The vm backend against its peers, in one run (its targets; on a host without hardware KVM, under TCG):
#   (a) cold start to the first command (`tnk sandbox start` + first `tnk sandbox exec -- true` of a stopped
#       sandbox) <= 1 s and <= 1.15x a plain QEMU boot of the same kernel and base disk to the agent's ready
#       marker (the same QEMU command line without QMP, virtiofs and the network; no supervisor);
#   (b) warm `tnk sandbox exec -- true` <= 1.3x a bare fork+exec of /bin/true inside the guest; the agent's
#       own ping round trip (`tnk sandbox agent-ping`, over the supervisor's agent connection) beside them;
#   (c) workspace metadata (git status, find -printf over 5000 files) on /workspace (virtiofs) <= 2x the
#       same tree on the guest's own disk;
#   (d) host memory of an idle sandbox (supervisor + QEMU + virtiofsd + relays, RSS and PSS) <= 100 MiB,
#       beside a plain QEMU that booted the same guest and idled as long.
# Usage: bench/vm.sh [ROUNDS] (default 10; warm exec runs 3x as many), as an ordinary user (run by root,
# QEMU's command line names its disks by descriptor, which the plain QEMU cannot boot again). A built tnk (TNK_BIN,
# default build/tnk), qemu-system-x86_64, qemu-img, git and python3. Uses a temporary HOME; the kernel and
# disk cache is the caller's (built on first use). SETTLE=seconds before the memory is read (default 10).
set -euo pipefail

rounds=${1:-10}
settle=${SETTLE:-10}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/vm.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }
for tool in qemu-system-x86_64 qemu-img git python3; do
  command -v "$tool" >/dev/null || { echo "bench/vm.sh: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

source "$repo/bench/sandbox_home.sh"

j() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
load() { echo "   load: $(uptime | sed 's/.*load average/load average/') ($(nproc) cores)"; }

# Every process of the running sandbox: the supervisor and its descendants.
sandbox_pids() {
  local sup
  sup=$(cut -d' ' -f1 "$HOME/.local/state/tnk/sandboxes/$id/supervisor.pid")
  local todo=("$sup")
  while [ ${#todo[@]} -gt 0 ]; do
    local p=${todo[0]}
    todo=("${todo[@]:1}")
    echo "$p"
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
}
qemu_pid() { for p in $(sandbox_pids); do [[ $(cat /proc/"$p"/comm) != qemu-system* ]] || echo "$p"; done; }

# RSS and PSS (smaps_rollup) of every process of the sandbox, and their sum, in MiB.
sandbox_memory() {
  for p in $(sandbox_pids); do
    awk -v name="$(cat /proc/"$p"/comm)" -v pid="$p" '/^Rss:/ {r=$2} /^Pss:/ {s=$2}
      END {printf "  %-18s %7d %9.1f %9.1f\n", name, pid, r/1024, s/1024}' /proc/"$p"/smaps_rollup 2>/dev/null || true
  done | tee "$work/memory"  # a process that ended meanwhile is left out
  awk '{r+=$3; s+=$4} END {printf "  %-18s %7s %9.1f %9.1f\n", "total", "", r, s}' "$work/memory"
}

"$tnk" -q init >/dev/null
echo "== starting the sandbox (builds the guest kernel and base disk on first use)"
"$tnk" sandbox start --backend vm --profile base
"$tnk" -q sandbox exec -- true
id=$("$tnk" -o json sandbox inspect 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
python3 "$repo/bench/vm_boot.py" plain "$(qemu_pid)" "$work"

echo
echo "== (a) cold start to the first command, ms (the stop before each run is not timed)"
load
python3 "$repo/bench/vm_boot.py" cold "$rounds" "$tnk" "$work"
load

echo
echo "== (b) command latency on a running sandbox, ms"
load
"$tnk" -q sandbox exec -- true
python3 "$repo/bench/timing.py" $((rounds * 3)) "tnk exec (warm)=$(j "$tnk" sandbox exec -- true)" | tee "$work/warm"
warm=$(awk '$1 == "tnk" {print $4}' "$work/warm")
ping=$("$tnk" -o json sandbox agent-ping --count 200 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["median_us"] / 1000)' || echo nan)
fork='for i in $(seq 100); do s=$EPOCHREALTIME; /bin/true; e=$EPOCHREALTIME; echo $(( ${e/[.,]/} - ${s/[.,]/} )); done'
guest=$("$tnk" -q sandbox exec -- bash -c "$fork" | median | awk '{print $1 / 1000}')
awk -v w="$warm" -v p="$ping" -v g="$guest" 'BEGIN {
  printf "agent ping round trip        %10.2f   (200 pings over the supervisor'"'"'s agent connection)\n", p
  printf "guest fork+exec /bin/true    %10.2f   (100 runs inside the guest, in one exec)\n", g
  printf "ratio tnk exec (warm) / guest fork+exec = %.2f\n", w / g }'
load

echo
echo "== (c) workspace metadata, 5000 files (50 dirs x 100) in a git repository, ms per run"
load
mkdir -p meta && (cd meta && for d in $(seq 50); do
  mkdir "d$d" && for f in $(seq 100); do echo "$f" >"d$d/f$f"; done
done && git init -q . && git add -A && git -c user.name=bench -c user.email=bench@invalid commit -qm files)
# Run by root, the tree is given to the project's stand-in owner, whom the guest's agent is.
[ "$(id -u)" -ne 0 ] || chown -R 4242:4242 meta
meta='set -e; rm -rf /home/agent/meta; cp -a /workspace/meta /home/agent/meta
for d in /workspace/meta /home/agent/meta; do git -C "$d" status --porcelain >/dev/null; done  # refresh both indexes
t() { local s=$EPOCHREALTIME; "$@" >/dev/null; local e=$EPOCHREALTIME; echo $(( ${e/[.,]/} - ${s/[.,]/} )); }
for r in $(seq ROUNDS); do
  for where in workspace:/workspace/meta local:/home/agent/meta; do
    echo "${where%%:*}-git $(t git -C "${where#*:}" status --porcelain)"
    echo "${where%%:*}-find $(t find "${where#*:}" -printf "%s %T@\n")"
  done
done; rm -rf /home/agent/meta'
"$tnk" -q sandbox exec -- bash -c "${meta/ROUNDS/$rounds}" >"$work/meta"
for test in git find; do
  ws=$(awk -v k="workspace-$test" '$1 == k {print $2}' "$work/meta" | median)
  local=$(awk -v k="local-$test" '$1 == k {print $2}' "$work/meta" | median)
  awk -v t="$test" -v w="$ws" -v l="$local" -v n="$rounds" 'BEGIN {
    name = (t == "git") ? "git status" : "find -printf %s %T@"
    printf "%-20s /workspace (virtiofs) %8.1f   /home/agent (guest disk) %8.1f   ratio %.2f   (median of %d)\n",
      name, w / 1000, l / 1000, w / l, n }'
done
load

echo
echo "== (d) host memory of the sandbox, MiB"
echo "  after (a) to (c):  process                pid       RSS       PSS"
sandbox_memory
"$tnk" -q sandbox stop
"$tnk" -q sandbox start --backend vm --profile base
"$tnk" -q sandbox exec -- true
sleep "$settle"
echo "  idle, ${settle} s after a fresh start and one exec:"
sandbox_memory
"$tnk" -q sandbox stop
read -r rss pss < <(python3 "$repo/bench/vm_boot.py" idle "$settle" "$work")
awk -v r="$rss" -v s="$pss" -v t="$settle" 'BEGIN {
  printf "  %-18s %7s %9.1f %9.1f   (booted to the ready marker, then %d s idle)\n",
    "plain QEMU", "", r/1024, s/1024, t }'
load
