#!/usr/bin/env bash
# Builds each libFuzzer target in tests/fuzz/ (clang, with ASan and UBSan) and runs it.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 30 s; TARGET = file name without _fuzz.cc)
#        scripts/fuzz.sh --long [TARGET...]      (each target until it has run 10,000,000 inputs)
# A target's sources are on its `// fuzz-sources:` lines (one or more, each short enough for
# clang-format); extra compiler and linker flags (defines, libraries) on optional `// fuzz-flags:` lines.
# Each run starts from the seeds kept in the repo (tests/fuzz/corpus/<target>) and the working corpus
# in build-fuzz/corpus/<target>; new inputs go to the working corpus only (libFuzzer writes to the first
# directory it is given), so later runs start where earlier ones stopped and the repo is never written.
# Prints "fuzz: <target> ok (<runs> runs in <seconds> s)" per target, or in --long mode
# "fuzz-long: <target> ok|CRASHED runs=<n> seconds=<s> cov=<edges> ft=<features> corpus=<units>";
# exits 1 when one crashed or did not build.
set -uo pipefail
cd "$(dirname "$0")/.."
long_runs=10000000
long=0
if [ "${1:-}" = "--long" ]; then
  long=1
  shift
else
  seconds=${1:-30}
  shift || true
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" _fuzz.cc)"); done
fi
mkdir -p build-fuzz
status=0
for t in "${targets[@]}"; do
  src=tests/fuzz/${t}_fuzz.cc
  read -r -a sources <<<"$(sed -n 's|^// fuzz-sources: ||p' "$src" | tr '\n' ' ')"
  read -r -a flags <<<"$(sed -n 's|^// fuzz-flags: ||p' "$src" | tr '\n' ' ')"
  if ! clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc "$src" "${sources[@]}" "${flags[@]}" \
      -o "build-fuzz/$t" 2>"build-fuzz/$t.build.log"; then
    echo "fuzz: $t FAILED to build (build-fuzz/$t.build.log)"; head -20 "build-fuzz/$t.build.log"
    status=1; continue
  fi
  corpora=("build-fuzz/corpus/$t")
  mkdir -p "${corpora[0]}"
  [ -d "tests/fuzz/corpus/$t" ] && corpora+=("tests/fuzz/corpus/$t")
  if [ $long -eq 0 ]; then
    if "build-fuzz/$t" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/$t-" \
        "${corpora[@]}" >"build-fuzz/$t.log" 2>&1; then
      echo "fuzz: $t ok ($(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/$t.log") runs in $seconds s)"
    else
      echo "fuzz: $t FAILED (build-fuzz/$t.log)"; grep -m5 -E "ERROR|SUMMARY|crash-" "build-fuzz/$t.log"
      status=1
    fi
    continue
  fi
  log=build-fuzz/$t.long.log
  start=$(date +%s)
  verdict=ok
  "build-fuzz/$t" -runs=$long_runs -max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/$t-" \
    "${corpora[@]}" >"$log" 2>&1 || verdict=CRASHED
  elapsed=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  # The last status line: "#N  DONE  cov: C ft: F corp: U/..." (or the last pulse before a crash).
  last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  echo "fuzz-long: $t $verdict runs=${runs:-?} seconds=$elapsed cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?}"
  if [ $verdict != ok ]; then
    grep -m5 -E "ERROR|SUMMARY|Test unit written" "$log"
    status=1
  fi
done
exit $status
