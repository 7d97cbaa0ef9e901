#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (in the sanitizer tree: scripts/build-sanitized.sh) and runs
# them, TNK_FUZZ_JOBS at a time (default 2, this machine's cores).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 30 s; TARGET = file name without _fuzz.cc)
#        scripts/fuzz.sh --long [TARGET...]      (each target until it has run 10,000,000 inputs)
# Each run starts from the seeds kept in the repo (tests/fuzz/corpus/<target>) and the working corpus
# in build-fuzz/corpus/<target>; new inputs go to the working corpus only (libFuzzer writes to the first
# directory it is given), so later runs start where earlier ones stopped and the repo is never written.
# Logs and crash inputs go to build-fuzz/ too.
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
tree=${TNK_ASAN_TREE:-build-asan}
build_targets=()
for t in "${targets[@]}"; do build_targets+=("tnk_fuzz_$t"); done
mkdir -p build-fuzz
if ! bash scripts/build-sanitized.sh "${build_targets[@]}" >build-fuzz/build.log 2>&1; then
  tail -30 build-fuzz/build.log
  for t in "${targets[@]}"; do echo "fuzz: $t FAILED to build (build-fuzz/build.log)"; done
  exit 1
fi

# One target's run; its verdict line is printed when it ends and kept in build-fuzz/<target>.verdict.
run_target() {
  local t=$1 binary="$tree/tests/fuzz/tnk_fuzz_$1" corpora=("build-fuzz/corpus/$1") verdict line
  mkdir -p "${corpora[0]}"
  [ -d "tests/fuzz/corpus/$t" ] && corpora+=("tests/fuzz/corpus/$t")
  local common=(-max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/$t-")
  if [ $long -eq 0 ]; then
    if "$binary" -max_total_time="$seconds" "${common[@]}" "${corpora[@]}" >"build-fuzz/$t.log" 2>&1; then
      line="fuzz: $t ok ($(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/$t.log") runs in $seconds s)"
    else
      line="fuzz: $t FAILED (build-fuzz/$t.log)"$'\n'$(grep -m5 -E "ERROR|SUMMARY|crash-" "build-fuzz/$t.log")
    fi
  else
    local log=build-fuzz/$t.long.log start last
    start=$(date +%s)
    verdict=ok
    "$binary" -runs=$long_runs "${common[@]}" "${corpora[@]}" >"$log" 2>&1 || verdict=CRASHED
    # The last status line: "#N  DONE  cov: C ft: F corp: U/..." (or the last pulse before a crash).
    last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1)
    line="fuzz-long: $t $verdict runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    line+=" seconds=$(($(date +%s) - start)) cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")"
    line+=" ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last") corpus=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")"
    [ $verdict = ok ] || line+=$'\n'$(grep -m5 -E "ERROR|SUMMARY|Test unit written" "$log")
  fi
  echo "$line" | tee "build-fuzz/$t.verdict"
}

jobs_max=${TNK_FUZZ_JOBS:-2}
for t in "${targets[@]}"; do
  rm -f "build-fuzz/$t.verdict"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  run_target "$t" &
done
wait
status=0
for t in "${targets[@]}"; do
  grep -qE "^fuzz(-long)?: $t ok" "build-fuzz/$t.verdict" 2>/dev/null || status=1
done
exit $status
