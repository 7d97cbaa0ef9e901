#!/usr/bin/env bash
# The whole test suite, as the README's second command and CI run it:
#   install dependencies, build (normal and ASan/UBSan), unit tests under the sanitizers,
#   end-to-end tests through the built binary, format check. Prints one closing line
#   "tests: N passed, N failed, N skipped".
# TNK_TEST_MUST_WORK=1 turns every skip into a failure (.ci/run sets it).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/install-deps.sh || exit 1

passed=0 failed=0 skipped=0
step() { echo; echo "=== $* (at ${SECONDS} s)"; }
count_ctest() {  # parses "100% tests passed, 0 tests failed out of 57" and the "***Skipped" lines
  local log=$1 total fails skips
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fails=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  skips=$(grep -c '\*\*\*Skipped' "$log" || true)
  passed=$((passed + ${total:-0} - ${fails:-0} - skips)); failed=$((failed + ${fails:-1}))
  skipped=$((skipped + skips))
}
count_pytest() {  # parses "12 passed, 1 skipped in 3.2s" (with or without pytest's === frame)
  local log=$1 line n
  line=$(grep -E '[0-9]+ (passed|failed|skipped|errors?)\b.* in [0-9.]+s' "$log" | tail -1)
  for kind in passed failed skipped error errors; do
    n=$(echo "$line" | grep -oE "[0-9]+ $kind\b" | grep -oE '^[0-9]+' || true)
    case $kind in
      passed) passed=$((passed + ${n:-0})) ;;
      skipped) skipped=$((skipped + ${n:-0})) ;;
      *) failed=$((failed + ${n:-0})) ;;
    esac
  done
  [ -n "$line" ] || failed=$((failed + 1))
}
# Every failing test's name, so that the closing lines (all a CI summary may keep) say what failed.
failures() {  # pytest's "FAILED file::test - why" / "ERROR ..." lines and ctest's "  12 - name (Failed)"
  grep -hE '^test-host: +FAIL |^(\[[a-z]+ +[0-9.]+\] )?(FAILED|ERROR) |^ +[0-9]+ - .+ \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$@" 2>/dev/null || true
}

logs=$(mktemp -d)
# Three trees, each with only what it is used for: build/ holds the binaries the end-to-end tests run
# (tnk, tnk-agent and tnk-disk: the package's tree), build-asan/ the unit and integration tests and the
# fuzz targets under ASan/UBSan (scripts/build-sanitized.sh), build-nolinux/ the stand-in for macOS. The
# end-to-end tests spend much of their time waiting (on npm, on a booting guest), so each pass runs beside
# a build (docs/architecture.md has the figures): its output is printed when it ends.
step "build tnk, tnk-agent and tnk-disk as the Debian package ships them (Release, prefix /usr) into build/"
# The end-to-end tests run what users install, and test_package.py packs this same tree
# (TNK_PACKAGE_TREE below): one compile of the product instead of two (a -O1 tree for the tests and
# scripts/package.sh's Release tree beside them). In unity batches, as users build it: nothing runs beside
# this step, and file by file took twice as long (308 s against 147 s here). -DTNK_UNITY_BUILD=OFF is the
# way to check that each file includes what it uses.
if ! bash scripts/build.sh build -DTNK_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr; then
  echo "tests: 0 passed, 1 failed"; exit 1
fi
export TNK_PACKAGE_TREE="$root/build"

step "sandbox image (built once per machine into the cache directory, as a user's would be)"
export TNK_TEST_CACHE="${TNK_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}}"
if image_json=$(XDG_CACHE_HOME="$TNK_TEST_CACHE" build/tnk -o json image build); then
  TNK_TEST_ROOTFS=$(echo "$image_json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')
  export TNK_TEST_ROOTFS  # the ns unit tests run their sandboxes on this tree
else
  echo "the image build failed: the tests that need a sandbox will fail or skip"
fi

step "vm boot files: guest kernel (compiled once per machine, ~6 min) and base disk, into the same cache"
XDG_CACHE_HOME="$TNK_TEST_CACHE" build/tnk image build --vm ||
  echo "the vm boot files did not build: the tests that boot a VM will fail or skip"

step "end-to-end tests as an ordinary user (the normal way to run tnk: isolation, sessions, network, provisioning, faults, vm), beside the next build"
bash scripts/e2e-as-user.sh >"$logs/e2e-user.log" 2>&1 &
e2e_user=$!

step "build the unit and integration tests and the fuzz targets (clang, ASan/UBSan, -O1) into build-asan/"
if ! bash scripts/build-sanitized.sh; then
  wait "$e2e_user"; echo "tests: 0 passed, 1 failed"; exit 1
fi

step "(the end-to-end tests as an ordinary user, started above)"
wait "$e2e_user"
cat "$logs/e2e-user.log"
count_pytest "$logs/e2e-user.log"

step "the Debian 12 test host (tests/hosts: stock Debian with systemd, cgroup v2 and a logged-in user, booted under QEMU; its suites as root and as the user), beside the rest"
# The longest part left (its guest runs under TCG here), so it starts once the user pass is done, and
# at nice 0: at run.py's default nice 10 the unit tests and the OFF build starved it (its boot took 634 s
# instead of 70), and it ended 330 s after the root pass. One boot for both suites: ns-smoke.sh
# (lifecycle and limits) and ns-e2e.sh (tests/e2e's isolation, network and provisioning files by pytest,
# with a NIC for the mirror). Debian 13: `sudo bash scripts/test-host.sh trixie`.
bash scripts/test-host.sh bookworm ns-smoke.sh,ns-e2e.sh --timeout "${TNK_HOST_TIMEOUT:-3000}" --nice 0 >"$logs/host.log" 2>&1 &
host_run=$!

step "unit, integration and layering tests (ASan/UBSan)"
(cd build-asan && ctest --output-on-failure -j2) 2>&1 | tee "$logs/unit.log"
count_ctest "$logs/unit.log"

step "end-to-end tests as root (the rest, the rootless refusals and the tests only root can run), beside the next two steps"
TNK_BIN="$root/build/tnk" /usr/bin/python3 -m pytest -q -rfEs --durations=25 -m "not rootless_suite or needs_root" tests/e2e \
  >"$logs/e2e.log" 2>&1 &
e2e_root=$!

step "build without the Linux backends (TNK_LINUX_BACKENDS=OFF: the stand-in for macOS) and its unit tests"
# -O0 without debug info: this step proves the configuration builds and its tests pass, quickly. With
# clang, the compiler macOS has (Apple's): GCC took 520 s of CPU for this tree, clang 244 s.
grep -qs '^CMAKE_CXX_COMPILER:.*clang' build-nolinux/CMakeCache.txt || rm -rf build-nolinux  # a GCC tree before
if bash scripts/build.sh build-nolinux -DCMAKE_CXX_COMPILER=clang++ -DTNK_LINUX_BACKENDS=OFF -DTNK_BUILD_TESTS=ON \
     -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 >"$logs/nolinux.log" 2>&1 &&
   (cd build-nolinux && ctest --output-on-failure -j2) >>"$logs/nolinux.log" 2>&1; then
  grep -E 'tests passed|tests failed' "$logs/nolinux.log" | tail -1
  passed=$((passed + 1))
else
  tail -30 "$logs/nolinux.log"; echo "the TNK_LINUX_BACKENDS=OFF build or its unit tests failed"
  failed=$((failed + 1))
fi

step "fuzz targets (tests/fuzz, ${TNK_FUZZ_SECONDS:-10} s each, two at a time; scripts/fuzz.sh --long runs each for 10 million)"
bash scripts/fuzz.sh "${TNK_FUZZ_SECONDS:-10}" 2>&1 | tee "$logs/fuzz.log"
passed=$((passed + $(grep -c '^fuzz: .* ok' "$logs/fuzz.log")))
failed=$((failed + $(grep -c '^fuzz: .* FAILED' "$logs/fuzz.log")))

step "(the end-to-end tests as root, started above)"
wait "$e2e_root"
cat "$logs/e2e.log"
count_pytest "$logs/e2e.log"

step "(the Debian 12 test host, started above)"
wait "$host_run"; host_status=$?
cat "$logs/host.log"
# run.py's summary: "test-host:   root: N passed, N failed", one line per pass and suite; none if no
# guest reported (exit 2), which counts as one failure.
host_lines=$(grep -E '^test-host: +(root|alice): [0-9]+ passed, [0-9]+ failed' "$logs/host.log" || true)
if [ -z "$host_lines" ]; then
  failed=$((failed + 1))
else
  passed=$((passed + $(echo "$host_lines" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "passed,") n += $i } END { print n + 0 }')))
  failed=$((failed + $(echo "$host_lines" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "failed") n += $i } END { print n + 0 }')))
  # A suite that passed whose run still failed (a share that did not mount, the results not copied out).
  if [ "$host_status" -ne 0 ] && ! echo "$host_lines" | grep -qv ' 0 failed'; then failed=$((failed + 1)); fi
fi

step "format check (clang-format)"
mapfile -t sources < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 2>/dev/null)
if [ ${#sources[@]} -gt 0 ] && ! clang-format --dry-run --Werror "${sources[@]}" 2>"$logs/format.log"; then
  head -20 "$logs/format.log"; echo "format: run clang-format -i on the files above"
  failed=$((failed + 1))
else
  passed=$((passed + 1))
fi

if [ "${TNK_TEST_MUST_WORK:-0}" = 1 ] && [ "$skipped" -gt 0 ]; then
  echo "TNK_TEST_MUST_WORK=1: $skipped skipped test(s) count as failures"
  failed=$((failed + skipped)); skipped=0
fi
echo
if [ "$failed" -gt 0 ]; then
  echo "what failed:"
  { failures "$logs/e2e-user.log" "$logs/unit.log" "$logs/e2e.log" "$logs/host.log"
    grep -h '^fuzz: .* FAILED' "$logs/fuzz.log" 2>/dev/null; } | cut -c1-200 | sed 's/^/  /'
fi
echo "the whole suite took ${SECONDS} s"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
