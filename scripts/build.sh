#!/usr/bin/env bash
# Configures and builds tnk into build/ (or $1). Extra arguments go to cmake's configure step.
# TNK_BUILD_TARGETS="tnk tnk-agent" builds only those targets (the default is everything, tests
# included); TNK_BUILD_JOBS sets the parallelism (default 2). A build type given as an argument
# (-DCMAKE_BUILD_TYPE=...) wins over the default RelWithDebInfo. Warnings are errors here (TNK_WERROR),
# as in CI; a plain `cmake` configure (users, packagers) leaves them warnings.
# With ccache on PATH (scripts/install-deps.sh), compiles go through it, into its cache under the user's
# cache directory (~/.cache/ccache), keyed by the preprocessed source and the flags: a fresh clone in
# another folder finds what an earlier build of the same code compiled (paths below the clone are made
# relative, and the folder is left out of the key). TNK_CCACHE=0 compiles everything.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
jobs=${TNK_BUILD_JOBS:-2}
launcher=()
if [ "${TNK_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # pch_defines, time_macros: what ccache needs to cache a file compiled with the precompiled headers.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=pch_defines,time_macros
else
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER= -DCMAKE_C_COMPILER_LAUNCHER=)
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTNK_WERROR=ON "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${TNK_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}"
