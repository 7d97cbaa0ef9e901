#!/usr/bin/env bash
# The sandbox's inference endpoint against a direct connection to the same server, in one run (issue 15):
# a stand-in OpenAI-compatible server on the host's loopback (bench/openai_standin.py), asked by curl
# on the host at 127.0.0.1:PORT and by curl inside an ns sandbox at its TNK_INFERENCE_URL
# (host.lima.internal:PORT, also host.tnk.internal: the inference forwarder today, the gateway later).
# Targets:
#   added latency of a small request <= 1 ms at the median;
#   time to the first byte of a streamed answer <= 1 ms more than direct;
#   throughput of a large streamed answer (64 MiB of server-sent events) >= 0.9 of direct.
# Each curl runs a whole batch of requests (one new connection each, `Connection: close`), so neither
# curl's nor `tnk sandbox exec`'s start-up is in a figure; host and sandbox batches alternate.
# Usage: bench/gateway.sh [REQUESTS] (default 400 per side), as a user or root. A built tnk (TNK_BIN),
# curl and python3; uses a temporary HOME, the image cache is the caller's.
set -euo pipefail

requests=${1:-400}
rounds=4
repo=$(cd "$(dirname "$0")/.." && pwd)
tnk=${TNK_BIN:-$repo/build/tnk}
[ -x "$tnk" ] || { echo "bench/gateway.sh: no tnk binary at $tnk (run scripts/build.sh)" >&2; exit 1; }

source "$repo/bench/sandbox_home.sh"
home_cleanup=$(trap -p EXIT)
home_cleanup=${home_cleanup#trap -- \'}
home_cleanup=${home_cleanup%\' EXIT}
python3 "$repo/bench/openai_standin.py" "$work/port" &
standin=$!
trap 'kill "$standin" 2>/dev/null || true; '"$home_cleanup" EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
direct=http://127.0.0.1:$port/v1/chat/completions

export TNK_SERVER_PORT=$port  # inference_url's default is http://127.0.0.1:$TNK_SERVER_PORT/v1
"$tnk" -q init >/dev/null
echo "== stand-in server on 127.0.0.1:$port; starting an ns sandbox (network: inference)"
"$tnk" -q sandbox start --backend ns --profile base --network inference
inside=$("$tnk" -q sandbox exec -- sh -c 'printf %s "$TNK_INFERENCE_URL"')/chat/completions
echo "   inside the sandbox: $inside"

small='{"model":"coder","messages":[{"role":"user","content":"hi"}]}'
streamed='{"model":"coder","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
large='{"model":"coder","stream":true,"stream_bytes":67108864,"messages":[{"role":"user","content":"hi"}]}'

# timed BODY URL COUNT CURL...: COUNT requests by one curl (the host's `curl`, or the sandbox's:
# `$tnk -q sandbox exec -- curl`), "time_starttransfer time_total" (seconds) per line.
timed() {
  local body=$1 url=$2 count=$3 urls=()
  shift 3
  for _ in $(seq "$count"); do urls+=(-o /dev/null "$url"); done
  "$@" -s -H 'Connection: close' -H 'Content-Type: application/json' -d "$body" \
    -w '%{time_starttransfer} %{time_total}\n' "${urls[@]}"
}
in_sandbox=("$tnk" -q sandbox exec -- curl)

per_round=$((requests / rounds))
for _ in $(seq "$rounds"); do
  timed "$small" "$direct" "$per_round" curl >>"$work/small.direct"
  timed "$small" "$inside" "$per_round" "${in_sandbox[@]}" >>"$work/small.sandbox"
  timed "$streamed" "$direct" "$per_round" curl >>"$work/stream.direct"
  timed "$streamed" "$inside" "$per_round" "${in_sandbox[@]}" >>"$work/stream.sandbox"
done
for _ in $(seq 9); do
  curl -s -o /dev/null -d "$large" -w '%{speed_download}\n' "$direct" >>"$work/large.direct"
  "${in_sandbox[@]}" -s -o /dev/null -d "$large" -w '%{speed_download}\n' "$inside" >>"$work/large.sandbox"
done

python3 - "$work" <<'EOF'
import statistics
import sys
from pathlib import Path

work = Path(sys.argv[1])


def column(name, index, scale=1000.0):
    return sorted(float(line.split()[index]) * scale for line in (work / name).read_text().splitlines())


def p95(values):
    return values[(len(values) * 95 + 99) // 100 - 1]


verdicts = []


def verdict(ok, target):
    verdicts.append(ok)
    return f"{'PASS' if ok else 'MISS'} (target: {target})"


def compare(title, name, index, target):
    direct, sandbox = column(f"{name}.direct", index), column(f"{name}.sandbox", index)
    print(f"\n== {title}, ms ({len(direct)} requests each way)")
    print(f"  {'':28} {'median':>8} {'p95':>8}")
    print(f"  {'host, direct:':28} {statistics.median(direct):8.3f} {p95(direct):8.3f}")
    print(f"  {'sandbox, inference endpoint:':28} {statistics.median(sandbox):8.3f} {p95(sandbox):8.3f}")
    added = statistics.median(sandbox) - statistics.median(direct)
    print(f"  {'added:':28} {added:8.3f} {p95(sandbox) - p95(direct):8.3f}   {verdict(added <= 1.0, target)}")


compare("a small request (POST /v1/chat/completions, JSON answer), whole request", "small", 1,
        "<= 1 ms added at the median")
compare("time to the first byte of a streamed answer (16 chunks)", "stream", 0, "<= 1 ms more at the median")
direct = statistics.median(column("large.direct", 0, 1e-6))
sandbox = statistics.median(column("large.sandbox", 0, 1e-6))
print("\n== throughput of a streamed answer (64 MiB of server-sent events), MB/s (median of 9, alternating)")
print(f"  {'host, direct:':28} {direct:8.1f}")
print(f"  {'sandbox, inference endpoint:':28} {sandbox:8.1f}")
print(f"  {'ratio sandbox/direct:':28} {sandbox / direct:8.2f}   {verdict(sandbox / direct >= 0.9, '>= 0.9')}")
print(f"\n{sum(verdicts)} of {len(verdicts)} targets met")
EOF
