#!/usr/bin/env bash
# The egress proxy against a direct connection, in one run (issue 5): throughput of a large download
# and the time of small requests, from the host straight to a test server and from an `allowlist`
# sandbox through its proxy to the same server. The server is a test host in a network namespace of
# its own (198.51.100.2 on a veth pair: nothing leaves the machine).
# Usage: bench/net.sh [ROUNDS] (default 10). Needs root, iproute2, curl and a built tnk (TNK_BIN).
set -euo pipefail

rounds=${1:-10}
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/net.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }
netns=tnk-bench-net
ip_addr=198.51.100.2
name=bench.tnk-test.example

work=$(mktemp -d /tmp/tnk-bench-XXXXXX)
cache=${XDG_CACHE_HOME:-$HOME/.cache}
cleanup() {
  HOME=$work/home XDG_CACHE_HOME=$cache "$tnk" shutdown --timeout 2 >/dev/null 2>&1 || true
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
  ip link del tnk-bench0 2>/dev/null || true
  ip netns del "$netns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== test host $ip_addr (its own network namespace) serving 256 MiB and 1 KiB files"
ip netns del "$netns" 2>/dev/null || true
ip netns add "$netns"
ip link add tnk-bench0 type veth peer name tnk-bench1
ip link set tnk-bench1 netns "$netns"
ip addr add 198.51.100.1/24 dev tnk-bench0 && ip link set tnk-bench0 up
ip -n "$netns" addr add "$ip_addr/24" dev tnk-bench1
ip -n "$netns" link set tnk-bench1 up && ip -n "$netns" link set lo up
mkdir -p "$work/www"
head -c $((256 << 20)) /dev/zero >"$work/www/big"
head -c 1024 /dev/zero >"$work/www/small"
ip netns exec "$netns" python3 -m http.server --bind "$ip_addr" --directory "$work/www" 80 >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://$ip_addr/small" && break; sleep 0.1; done

mkdir -p "$work/home/code/bench"
export HOME=$work/home XDG_CACHE_HOME=$cache TNK_SERVER_PORT=9
cd "$HOME/code/bench"
"$tnk" -q init >/dev/null
printf 'profile: netbench\nsecurity:\n  network: allowlist\nnetwork:\n  allow:\n    - %s\n' "$name" \
  >"$HOME/.config/tnk/sandbox.d/manifests/netbench.yaml"
# The supervisor resolves the test name through a private /etc/hosts (the host's own is untouched).
{ cat /etc/hosts; printf '%s\t%s\n' "$ip_addr" "$name"; } >"$work/hosts"
unshare --mount --propagation private -- sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh \
  "$work/hosts" "$tnk" -q sandbox start --backend ns --profile netbench

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo
echo "== throughput of a 256 MiB download, MB/s (median of $rounds)"
direct=$(for _ in $(seq "$rounds"); do curl -s -o /dev/null -w '%{speed_download}\n' "http://$ip_addr/big"; done | median)
proxied=$(for _ in $(seq "$rounds"); do
  "$tnk" -q sandbox exec -- curl -s -o /dev/null -w '%{speed_download}\n' "http://$name/big"
done | median)
awk -v d="$direct" -v p="$proxied" 'BEGIN {
  printf "  host, direct:               %8.1f MB/s\n", d / 1e6
  printf "  sandbox, through the proxy: %8.1f MB/s\n", p / 1e6
  printf "  ratio proxy/direct:         %8.2f\n", p / d }'

echo
echo "== time of one small request on a new connection, ms (median of $((rounds * 20)))"
urls=()  # one curl for all requests: its own start-up is not timed; each URL needs its own -o
for _ in $(seq $((rounds * 20))); do urls+=(-o /dev/null "http://NAME/small"); done
direct=$(curl -s -H 'Connection: close' -w '%{time_total}\n' "${urls[@]/NAME/$ip_addr}" | median)
proxied=$("$tnk" -q sandbox exec -- curl -s -H 'Connection: close' -w '%{time_total}\n' \
  "${urls[@]/NAME/$name}" | median)
awk -v d="$direct" -v p="$proxied" 'BEGIN {
  printf "  host, direct:               %8.2f ms\n", d * 1000
  printf "  sandbox, through the proxy: %8.2f ms\n", p * 1000
  printf "  added by the proxy:         %8.2f ms\n", (p - d) * 1000 }'
