#!/usr/bin/env bash
# Builds each libFuzzer target in tests/fuzz/ (clang, with ASan and UBSan) and runs it for SECONDS.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 30 s; TARGET = file name without _fuzz.cc)
# A target's sources are on its `// fuzz-sources:` line. The corpus of each target is kept in
# build-fuzz/corpus/<target>, so that later runs start where earlier ones stopped.
# Prints "fuzz: <target> ok (<runs> runs)" per target; exits 1 when one crashed or did not build.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" _fuzz.cc)"); done
fi
mkdir -p build-fuzz
status=0
for t in "${targets[@]}"; do
  src=tests/fuzz/${t}_fuzz.cc
  read -r -a sources <<<"$(sed -n 's|^// fuzz-sources: ||p' "$src")"
  if ! clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc "$src" "${sources[@]}" \
      -o "build-fuzz/$t" 2>"build-fuzz/$t.build.log"; then
    echo "fuzz: $t FAILED to build (build-fuzz/$t.build.log)"; head -20 "build-fuzz/$t.build.log"
    status=1; continue
  fi
  mkdir -p "build-fuzz/corpus/$t"
  if "build-fuzz/$t" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 "build-fuzz/corpus/$t" \
      >"build-fuzz/$t.log" 2>&1; then
    echo "fuzz: $t ok ($(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/$t.log") runs in $seconds s)"
  else
    echo "fuzz: $t FAILED (build-fuzz/$t.log)"; grep -m5 -E "ERROR|SUMMARY|crash-" "build-fuzz/$t.log"
    status=1
  fi
done
exit $status
