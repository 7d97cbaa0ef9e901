#!/usr/bin/env bash
# Issue 34: how soon a running sandbox decides by the policy `tnk sandbox allow` changed. Each round
# denies a test server, starts a prober inside an `allowlist` sandbox that asks for it through the proxy
# over and over, runs `tnk sandbox allow`, and takes the time from the command's return to the first
# request the server receives (its own clock, the host's: the same as tnk's). The prober's own loop
# (one curl per try) is in the figure, so it is an upper bound. Printed against the 50 ms target.
# The server listens on an address of this machine the allow-list's address check passes (not
# loopback, private or reserved), so nothing leaves the machine; root is not needed.
# Usage: bench/policy.sh [ROUNDS] (default 50), as an ordinary user (tnk refuses a project root owns;
# root: runuser -u USER -- bench/policy.sh). Needs curl, python3 and a built tnk (TNK_BIN).
set -euo pipefail
[ "$(id -u)" != 0 ] || { echo "bench/policy.sh: run it as an ordinary user (tnk refuses a project root owns)" >&2; exit 1; }

rounds=${1:-50}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/policy.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }
address=$(python3 - <<'PY'
import ipaddress, json, subprocess
for iface in json.loads(subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True).stdout):
    for info in iface.get("addr_info", []):
        a = ipaddress.ip_address(info["local"])
        if a in ipaddress.ip_network("192.0.2.0/24") or not (a.is_private or a.is_loopback or a.is_reserved):
            print(a); raise SystemExit
PY
)
[ -n "$address" ] || { echo "bench/policy.sh: this machine has no address the allow-list's check passes" >&2; exit 1; }

work=$(mktemp -d /tmp/tnk-bench-XXXXXX)
cache=${XDG_CACHE_HOME:-$HOME/.cache}
cleanup() {
  # delete, not only stop: a rootless sandbox's files belong to the user's subordinate ids, which tnk removes
  (cd "$work/home/code/bench" 2>/dev/null && HOME=$work/home XDG_CACHE_HOME=$cache "$tnk" -q sandbox delete --yes \
    >/dev/null 2>&1) || true
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Each request's arrival, in ns since the epoch, one line each, to arrivals.log.
python3 - "$address" "$work" <<'PY' &
import http.server, socketserver, sys, time
address, work = sys.argv[1], sys.argv[2]
log = open(f"{work}/arrivals.log", "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        log.write(f"{time.time_ns()}\n")
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
server = socketserver.ThreadingTCPServer((address, 0), H)
open(f"{work}/port", "w").write(str(server.server_address[1]))
server.serve_forever()
PY
server=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
target=$address:$(cat "$work/port")

mkdir -p "$work/home/code/bench"
export HOME=$work/home XDG_CACHE_HOME=$cache TNK_SERVER_PORT=9
cd "$HOME/code/bench"
"$tnk" -q init >/dev/null
printf 'profile: policybench\nsecurity:\n  network: allowlist\n' >"$HOME/.config/tnk/sandbox.d/manifests/policybench.yaml"
"$tnk" -q sandbox start --backend ns --profile policybench

echo "== from \`tnk sandbox allow $target\` returning to the first request it lets through, ms ($rounds rounds)"
probe="while :; do [ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://$target/)\" = 200 ] && exit 0; done"
for _ in $(seq "$rounds"); do
  "$tnk" -q sandbox deny "$target" >/dev/null
  : >"$work/arrivals.log"
  "$tnk" -q sandbox exec -- sh -c "$probe" &
  prober=$!
  sleep 0.4  # the prober is asking (and refused) by now
  "$tnk" -q sandbox allow "$target" >/dev/null
  returned=$(date +%s%N)
  wait "$prober"
  first=$(head -1 "$work/arrivals.log")
  echo $(((first - returned) / 1000)) >>"$work/latencies"  # microseconds; below 0: in force before the return
done
sort -n "$work/latencies" | awk -v target=50 '{a[NR]=$1} END {
  median = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
  printf "  median: %8.2f ms\n  worst:  %8.2f ms\n  target: %8.2f ms (%s)\n", median / 1000, a[NR] / 1000, target,
         a[NR] / 1000 < target ? "met by every round" : "missed"
}'
