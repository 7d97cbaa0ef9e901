#!/usr/bin/env bash
# Review mode's checkpoints (issue 14 item 5): `tnk sandbox diff` and `tnk sandbox apply` on a 5,000-file
# project (a git work tree) with 100 changed files, each well under a second.
# Usage: bench/review.sh [ROUNDS] [BACKEND] (default 4, at most 4; ns), as a user or root. A built tnk (TNK_BIN,
# default build/tnk) and git. Uses a temporary HOME; the image cache is the caller's. Every apply round
# first lets a session change 100 files again and stops the sandbox (untimed); the last block applies
# them with the sandbox running.
set -euo pipefail

rounds=${1:-4}
# One session, then two per round (a stopped and a running apply), each deleting 10 of 100 files.
[ "$rounds" -le 4 ] || { echo "bench/review.sh: at most 4 rounds (each session deletes 10 of 100 files)" >&2; exit 1; }
backend=${2:-ns}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/review.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }

source "$repo/bench/sandbox_home.sh"

echo "== a project of 5000 files in 50 directories"
for d in $(seq 50); do
  mkdir -p "src/d$d"
  for f in $(seq 100); do echo "file $d/$f" > "src/d$d/f$f.txt"; done
done
printf '*.log\n' > .gitignore
g() { git -c safe.directory='*' -c user.name=b -c user.email=b@example.com "$@"; }
g init -q . && g add -A && g commit -q -m files
[ "$(id -u)" -ne 0 ] || chown -R 4242:4242 "$project"

"$tnk" -q init >/dev/null
echo "== starting the sandbox in review mode (builds the image on first use)"
"$tnk" sandbox start --backend "$backend" --profile base --review
# 100 changes, different each time (an apply round makes them again): 60 edits, 20 new files, 10
# deletions (the next 10 of src/d10's 100), 10 mode changes (toggled).
change='cd /workspace && for d in 1 2 3 4 5 6; do for f in $(seq 10); do echo edit >> src/d$d/f$f.txt; done; done &&
  n=$(date +%s%N) && for f in $(seq 20); do echo $n > src/d7/new-$n-$f.txt; done &&
  ls src/d10 | head -10 | while read f; do rm src/d10/$f; done &&
  for f in $(seq 10); do if [ -x src/d9/f$f.txt ]; then chmod 644 src/d9/f$f.txt; else chmod 755 src/d9/f$f.txt; fi; done'
"$tnk" sandbox exec -- sh -c "$change"
"$tnk" -q sandbox stop
"$tnk" -o json sandbox diff | python3 -c 'import json,sys; d=json.load(sys.stdin); print("the layer holds", len(d["changes"]), "changes; .gitignore from", d["gitignore"])'

j() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@"; }
echo
echo "== diff of 100 changes in 5000 files, sandbox stopped (ms)"
python3 "$repo/bench/timing.py" "$rounds" \
  "tnk sandbox diff=$(j "$tnk" sandbox diff)" \
  "tnk sandbox diff --stat=$(j "$tnk" sandbox diff --stat)" \
  "tnk sandbox diff --patch=$(j bash -c "$tnk sandbox diff --patch >/dev/null")"

echo
echo "== apply of the same 100 changes (ms; the session that makes them again, and the stop, are not timed)"
again="$tnk sandbox exec -- sh -c '$change' >/dev/null && $tnk -q sandbox stop"
python3 "$repo/bench/timing.py" "$rounds" \
  "tnk sandbox apply=$(j "$tnk" sandbox apply)" \
  --before "tnk sandbox apply=$(j bash -c "$again")"

echo
echo "== apply of 100 changes while the sandbox runs (ms; the session that makes them, after a start, is not timed)"
"$tnk" -q sandbox start --backend "$backend" --profile base --review
live="$tnk sandbox exec -- sh -c '$change' >/dev/null"
python3 "$repo/bench/timing.py" "$rounds" \
  "tnk sandbox apply (running)=$(j "$tnk" sandbox apply)" \
  --before "tnk sandbox apply (running)=$(j bash -c "$live")"
