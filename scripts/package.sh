#!/usr/bin/env bash
# Builds the Debian package the way a packager would: a Release tree with the system compiler, warnings
# not errors, the prefix /usr, then `cpack -G DEB`. Prints the package's path on the last line.
# Usage: scripts/package.sh [DIR]   (default build-package/)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-package}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DTNK_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "${TNK_BUILD_JOBS:-2}"
rm -f "$dir"/tnk_*.deb
(cd "$dir" && cpack -G DEB >cpack.log 2>&1) || { tail -20 "$dir/cpack.log"; exit 1; }
ls "$(cd "$dir" && pwd)"/tnk_*.deb
