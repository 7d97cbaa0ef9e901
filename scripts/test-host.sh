#!/usr/bin/env bash
# Runs test-host suites: tnk on a stock Debian host booted under QEMU (tests/hosts/README.md).
#   sudo bash scripts/test-host.sh RELEASE [SUITE[,SUITE...]] [--timeout S] [other flags of tests/hosts/run.py]
# RELEASE: bookworm (Debian 12) or trixie (Debian 13); SUITE: a file in tests/hosts/suites/ (default
# ns-smoke.sh); several, separated by commas, run in one boot. Uses build/tnk when it exists, else builds
# tnk and tnk-agent into build/ (quickstart.sh: builds every target, as the README's first command does);
# installs them into a temporary prefix; builds this host's sandbox image if missing (it is handed to the
# guest); then boots the host.
# Exit status: run.py's (0 passed, 1 a step failed, 2 the guest never reported).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 bookworm|trixie [SUITE[,SUITE...]] [--timeout S] [--results DIR] [--boot-log]" >&2; exit 64; }
[ $# -ge 1 ] || usage
release=$1; shift
suite=ns-smoke.sh
if [ $# -gt 0 ] && [[ $1 != -* ]]; then suite=$1; shift; fi
# root: mmdebstrap's root mode and chroot build the host disk, and the image handed in must be root's
# (the guest gives alice a copy shifted onto her range, tests/hosts/guest/shift_ids.py).
[ "$(id -u)" -eq 0 ] || { echo "test-host: run as root (sudo)" >&2; exit 77; }

t0=$SECONDS
# A suite that needs the repository (quickstart.sh) gets build/ as the quick start leaves it: every
# target, the quick start's configuration. The guest then finds nothing to compile.
IFS=, read -ra suite_files <<<"$suite"
if (cd tests/hosts/suites && grep -Eq '^# test-host-needs:.* repo( |$)' "${suite_files[@]}" 2>/dev/null); then
  echo "test-host: building build/ as scripts/quickstart.sh does (the suite hands it in)"
  bash scripts/build.sh build
fi
if [ ! -x build/tnk ] || [ ! -x build/tnk-agent ]; then
  echo "test-host: building tnk and tnk-agent into build/"
  TNK_BUILD_TARGETS="tnk tnk-agent" bash scripts/build.sh build -DTNK_BUILD_TESTS=OFF
fi
prefix=$(mktemp -d /tmp/tnk-host-prefix-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install build --prefix "$prefix" >/dev/null
chmod 0755 "$prefix"  # the guest's alice runs it
echo "test-host: tnk $("$prefix/bin/tnk" version | head -1) installed into $prefix ($((SECONDS - t0)) s)"

t1=$SECONDS
image_json=$(nice -n 10 "$prefix/bin/tnk" -o json image build)
image_dir=$(printf '%s' "$image_json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
echo "test-host: sandbox image $image_dir ($((SECONDS - t1)) s)"

/usr/bin/python3 tests/hosts/run.py "$release" "$suite" --prefix "$prefix" --image-dir "$image_dir" "$@"
