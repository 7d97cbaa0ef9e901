#!/bin/bash
# quickstart: the README's first command, `bash scripts/quickstart.sh`, on a stock Debian host (issue
# 31: "the quick start, run inside the Debian 12 test host as a user with sudo, works as the README
# says"). alice's pass is the README's case: a user with sudo, in a login session, whose demo runs as
# herself. Root's pass is its other case: the script creates the account tnk-demo and runs the demo as
# that account, which has no login session.
#   quickstart.sh PASS RESULTS_DIR
# What is handed in rather than done under emulation, where it would take hours: the packages
# install-deps.sh installs are in the host's disk (`build-deps`), so it finds them present; the
# repository comes with its build tree at its own path (`repo`), so the build finds nothing to compile
# (the step "build-was-current" says so); the sandbox image is in each demo user's cache.
# test-host-needs: build-deps repo
set -u
pass=$1 R=$2
. "$(dirname "$0")/steps.sh"
. "$(dirname "$0")/run.env"  # REPO_PATH, IMAGE_ID
# -cpu max shows an emulated /dev/kvm, and the vm backend's kernel would compile for half an hour.
export TNK_BACKEND=ns
if [ "$pass" = root ]; then export HOME=/root USER=root LOGNAME=root; fi  # a service has no HOME
cd "$REPO_PATH" || exit 1

# Root's pass: the account the quick start makes for its demo gets the sandbox image in its cache
# before the script runs, with the ids its own rootless build would leave (guest/shift_ids.py), which
# needs its subordinate range: so the account and `tnk setup` come first, and the script finds both done.
demo_user=tnk-demo
hand_in_image() {
  useradd --create-home --shell /bin/bash "$demo_user" && build/tnk setup --user "$demo_user" || return 1
  local cache; cache=$(getent passwd "$demo_user" | cut -d: -f6)/.cache/tnk/images
  install -d -m 0700 -o "$demo_user" -g "$demo_user" "$(dirname "$(dirname "$cache")")" "$(dirname "$cache")" "$cache"
  cp -a "/root/.cache/tnk/images/$IMAGE_ID" "$cache/$IMAGE_ID" &&
    python3 "$(dirname "$0")/shift_ids.py" "$cache/$IMAGE_ID" "$demo_user"
}
[ "$pass" = root ] && step demo-account-and-image "" ok -- hand_in_image

# The demo ends with `tnk sandbox exec` printing id, /workspace and the TNK_ variables.
demo_ran() {
  local who; who=$([ "$pass" = root ] && echo "$demo_user" || echo alice)
  ok "$1" && grep -q "^uid=1000(agent)" "$2" && grep -q ' README.md$' "$2" && grep -q '^TNK_INFERENCE_URL=' "$2" &&
    grep -q "^demo: user $who," "$2"
}
step quickstart "" demo_ran -- bash scripts/quickstart.sh
build_current() { grep -q 'ninja: no work to do' "$2"; }
step build-was-current "the build tree was handed in: nothing compiled under emulation" build_current -- \
  cat "$(ls "$R"/steps/*-quickstart.log)"
finish
