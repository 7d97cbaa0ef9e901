#!/bin/bash
# The step runner the suites share (sourced by suites/*.sh; the runner copies it into the work share):
#   step NAME NOTE CHECK -- CMD...   runs CMD, then CHECK (a shell function given the exit status and
#                                    the log file) decides; NOTE is "" or what the step shows
#   finish                           writes $R/result.json, prints "host-suite: N passed, N failed",
#                                    returns non-zero when a step failed
# Needs $pass (root or alice) and $R (the results directory). Each step's command and output go to
# $R/steps/NN-name.log and to the console, its result to $R/steps.tsv.
mkdir -p "$R/steps"
n=0 passed=0 failed=0
: >"$R/steps.tsv"

step() {
  local name=$1 note=$2 check=$3; shift 4
  n=$((n + 1))
  local log; log=$R/steps/$(printf %02d "$n")-$name.log
  local t0=$SECONDS rc
  echo "--- [$pass] step $n $name: $*${note:+ ($note)}"
  { echo "\$ $*"; "$@"; } >"$log" 2>&1; rc=$?
  sed 's/^/    /' "$log"
  local result=FAIL
  if "$check" "$rc" "$log"; then result=PASS; passed=$((passed + 1)); else failed=$((failed + 1)); fi
  echo "--- [$pass] step $n $name: $result (exit $rc, $((SECONDS - t0)) s)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$name" "$result" "$rc" "$note" >>"$R/steps.tsv"
}
ok() { [ "$1" -eq 0 ]; }
ran() { [ "$1" -lt 126 ]; }  # informational: it ran and did not crash

finish() {
  python3 - "$R" "$pass" <<'PY'
import json, sys
R, who = sys.argv[1], sys.argv[2]
steps = []
for line in open(f"{R}/steps.tsv"):
    num, name, result, rc, note = line.rstrip("\n").split("\t")
    steps.append({"n": int(num), "name": name, "result": result, "exit": int(rc), "note": note})
out = {"pass": who, "passed": sum(s["result"] == "PASS" for s in steps),
       "failed": sum(s["result"] == "FAIL" for s in steps), "steps": steps}
json.dump(out, open(f"{R}/result.json", "w"), indent=1)
PY
  echo "host-suite: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
