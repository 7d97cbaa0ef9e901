#!/usr/bin/env bash
# Configures and builds the sanitizer tree, build-asan/ (or $TNK_ASAN_TREE): clang with ASan, UBSan and
# libFuzzer's coverage (TNK_FUZZ=ON) at -O1 with line tables only (what the sanitizers' reports need),
# in which the unit tests, the integration tests and the fuzz targets are linked from the same objects.
# Arguments are the targets to build (default: all three kinds). scripts/test.sh and scripts/fuzz.sh use it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TNK_ASAN_TREE:-build-asan}
targets=${*:-tnk_unit_tests tnk_integration_tests tnk_fuzz}
CC=clang CXX=clang++ TNK_BUILD_TARGETS="$targets" bash scripts/build.sh "$dir" -DTNK_SANITIZE=ON -DTNK_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only"
