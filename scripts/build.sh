#!/usr/bin/env bash
# Configures and builds tnk into build/ (or $1). Extra arguments go to cmake's configure step.
# TNK_BUILD_TARGETS="tnk tnk-agent" builds only those targets (the default is everything, tests
# included); TNK_BUILD_JOBS sets the parallelism (default 2). A build type given as an argument
# (-DCMAKE_BUILD_TYPE=...) wins over the default RelWithDebInfo. Warnings are errors here (TNK_WERROR),
# as in CI; a plain `cmake` configure (users, packagers) leaves them warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
jobs=${TNK_BUILD_JOBS:-2}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTNK_WERROR=ON "$@" >/dev/null
targets=()
for t in ${TNK_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}"
