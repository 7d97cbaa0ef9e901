#!/usr/bin/env bash
# The end-to-end files marked rootless_suite, run as an ordinary user (tnk's normal way), by root (or
# a user with sudo):
# makes the user with useradd (which gives a new user a subordinate id range), stages what the tests
# read where that user can read it (the build tree may sit under /root), seeds the user's cache with
# the guest kernel root built (a compile of minutes; the image and base disk are built as the user),
# and runs pytest as the user through runuser. Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
user=${TNK_TEST_USER:-tnk-ci}
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)  # a user with sudo may run the suite too
id "$user" >/dev/null 2>&1 || "${sudo[@]}" useradd --create-home --shell /bin/sh "$user"
# tnk setup, every time: it adds the subordinate range useradd may not have given (useradd gives one only
# where /etc/subuid exists already) and the cgroup subtree useradd never gives, without which the user's
# ns sandboxes are refused (security review M5); what is there already it leaves as it is.
"${sudo[@]}" "$root/build/tnk" setup --user "$user"
home=$(getent passwd "$user" | cut -d: -f6)

stage=$(mktemp -d /tmp/tnk-rootless-XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/share/tnk"
cp "$root/build/tnk" "$root/build/tnk-agent" "$stage/"
cp -a "$root/tests" "$root/docs" "$root/specs" "$stage/"
cp -a "$root/specs" "$stage/share/tnk/specs"  # the bundled specs and the kernel fragment, found next to the binary
cp -a "$root/kernel" "$stage/share/tnk/kernel"
chmod -R a+rX "$stage"
chmod 755 "$stage"

cache="$home/.cache"
kernels="${TNK_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}}/tnk/kernels"
# Each kernel root has finished (its vmlinux is there) and the user lacks: a copy made while root's build
# still ran (its .build-* directory) is not one, and must not keep the user's from being seeded later.
for built in "$kernels"/*/vmlinux; do
  [ -e "$built" ] || continue
  name=$(basename "$(dirname "$built")")
  [ -e "$cache/tnk/kernels/$name/vmlinux" ] && continue
  "${sudo[@]}" mkdir -p "$cache/tnk/kernels"
  "${sudo[@]}" cp -a "$(dirname "$built")" "$cache/tnk/kernels/"
  "${sudo[@]}" chown -R "$user:" "$cache"
done

cd "$stage"
exec "${sudo[@]}" runuser -u "$user" -- env -i HOME="$home" PATH=/usr/bin:/bin LANG=C.UTF-8 TNK_BIN="$stage/tnk" \
  TNK_TEST_CACHE="$cache" TNK_TEST_MUST_WORK="${TNK_TEST_MUST_WORK:-0}" \
  /usr/bin/python3 -m pytest -q -rfEs --durations=25 -p no:cacheprovider -m "rootless_suite and not needs_root" tests/e2e "$@"
