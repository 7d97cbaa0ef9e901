#!/usr/bin/env bash
# The ns backend against its peers, in one run (issue 35's targets, which replaced issue 3's):
#   warm `tnk sandbox exec -- true` <= 3x the host's fork+exec of /bin/true and <= 0.6x
#   `bwrap --unshare-all ... true` on the same image tree;
#   `tnk --version` <= 1.5x /bin/true;
#   cold start + exec of a stopped sandbox <= 20 ms;
#   workspace metadata work (create 5000 files, stat them, git status) <= 1.2x the host.
# Usage: bench/ns.sh [ROUNDS] (default 30), as a user (rootless, the normal way) or root. A built tnk (TNK_BIN, default build/tnk),
# bwrap and git. Uses a temporary HOME; the image cache is the caller's (built on first use).
set -euo pipefail

rounds=${1:-30}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/ns.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }
command -v bwrap >/dev/null || { echo "bench/ns.sh: bwrap is missing (scripts/install-deps.sh)" >&2; exit 1; }

source "$repo/bench/sandbox_home.sh"

"$tnk" -q init >/dev/null
echo "== starting the sandbox (builds the image on first use)"
"$tnk" sandbox start --backend ns --profile base
image=$("$tnk" -o json image build | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')

j() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@"; }

echo
echo "== exec latency (ms)"
python3 "$repo/bench/timing.py" "$rounds" \
  "host true=$(j /bin/true)" \
  "tnk exec (warm)=$(j "$tnk" sandbox exec -- true)" \
  "bwrap --unshare-all=$(j bwrap --unshare-all --ro-bind "$image" / --proc /proc --dev /dev /bin/true)" \
  --ratio "tnk exec (warm)/bwrap --unshare-all" --ratio "tnk exec (warm)/host true"

echo
echo "== CLI start-up (ms)"
python3 "$repo/bench/timing.py" "$rounds" \
  "host true=$(j /bin/true)" \
  "tnk --version=$(j "$tnk" --version)" \
  "tnk sandbox ls=$(j "$tnk" sandbox ls)" \
  --ratio "tnk --version/host true"

echo
echo "== where one warm exec's time goes (tnk --timings)"
"$tnk" -q --timings sandbox exec -- true

echo
echo "== cold start + exec of a stopped sandbox (ms; the stop before each run is not timed)"
python3 "$repo/bench/timing.py" "$rounds" \
  "tnk start+exec (cold)=$(j "$tnk" sandbox exec -- true)" \
  --before "tnk start+exec (cold)=$(j "$tnk" -q sandbox stop)"

echo
echo "== workspace metadata: 5000 files created, stat'ed, then git status (ms)"
meta='rm -rf m && mkdir m && cd m && for i in $(seq 5000); do : > f$i; done && stat -c %s f* >/dev/null && git init -q . && git status --porcelain >/dev/null'
"$tnk" sandbox exec -- true
# On the host as the project's owner, whose files `agent` shares (run by root: the stand-in owner).
as_owner=()
[ "$(id -u)" -ne 0 ] || as_owner=(setpriv --reuid=4242 --regid=4242 --clear-groups)
python3 "$repo/bench/timing.py" "$rounds" \
  "host=$(j "${as_owner[@]}" bash -c "cd '$project' && $meta")" \
  "tnk exec=$(j "$tnk" sandbox exec -- bash -c "cd /workspace && $meta")" \
  --ratio "tnk exec/host"
