#!/bin/bash
# Runs in the test host as root (from tnk-host-boot), copied into the work share by the runner for each
# run. Mounts tnk and the host's sandbox image, one for root and one for alice, then runs each
# suite twice: as root, and as alice in a real login session (root's passes first). Lines
# "tnk-host: ..." are the runner's protocol; everything else is shown to the user as it comes.
set -u
W=/mnt/work
# SUITES (file names, in order), IMAGE_ID (empty: no image handed in), REPO_PATH (empty: no repository)
# shellcheck source=/dev/null
. "$W/run.env"
uptime_s() { cut -d' ' -f1 /proc/uptime; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

mkdir -p /opt/tnk "$W/results"
# This unit's TasksMax (15% of pid_max, ~4900) would bound root's fork test instead of tnk: lift it.
systemctl set-property --runtime tnk-host-test.service TasksMax=infinity
# cache=loose on the read-only shares: with 9p's default cache=none each tnk command was 1-3 s slower.
mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,msize=1048576,ro tnk /opt/tnk ||
  echo "tnk-host: cannot mount the tnk share"

echo "== host facts"
. /etc/os-release; echo "os: $PRETTY_NAME, kernel $(uname -r), $(systemctl --version | head -1)"
echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup); root controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "apparmor: $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null || echo absent)"
echo "kvm: $(ls -l /dev/kvm 2>&1)"

# The sandbox image. Its id hashes the apt sources and the local CA files, so the guest gets the build
# host's (its own sources may name another release); then one per user, ids as each would build it.
if [ -n "${IMAGE_ID:-}" ]; then
  t=$(now)
  rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*
  cp "$W"/host-etc/apt/* /etc/apt/sources.list.d/ 2>/dev/null
  [ -f "$W/host-etc/sources.list" ] && cp "$W/host-etc/sources.list" /etc/apt/sources.list
  mkdir -p /usr/local/share/ca-certificates
  cp "$W"/host-etc/ca/*.crt /usr/local/share/ca-certificates/ 2>/dev/null
  # Each user's image directory is a mount of its own overlay of the runner's ext4 copy (run.py's
  # image_drives: root's /dev/vdb, alice's /dev/vdc), as a copy would be, without copying its data.
  # root: the tree as root's own build leaves it (the build host's root built it).
  own_image() {  # $1: the device, $2: the image directory, $3: its owner
    install -d -m 0700 -o "$3" -g "$3" "$(dirname "$(dirname "$2")")" "$(dirname "$2")"
    install -d -m 0755 -o "$3" -g "$3" "$2"
    mount "$1" "$2" && rmdir "$2/lost+found" && chmod 0755 "$2"
  }
  install -d -m 0700 /root/.cache
  own_image /dev/vdb "/root/.cache/tnk/images/$IMAGE_ID" root
  echo "tnk-host: image hand-in for root took $(took "$t") s ($(du -sm "/root/.cache/tnk/images/$IMAGE_ID" | cut -f1) MB)"
  t=$(now)
  # alice: ids shifted onto her range in her overlay (shift_ids.py says how and why).
  install -d -m 0700 -o alice -g alice /home/alice/.cache
  own_image /dev/vdc "/home/alice/.cache/tnk/images/$IMAGE_ID" alice
  python3 "$W/shift_ids.py" "/home/alice/.cache/tnk/images/$IMAGE_ID" alice
  echo "tnk-host: image hand-in for alice took $(took "$t") s"
fi

# The repository with its build tree (a suite that needs `repo`), at the path it has on the build
# machine: the disk run.py made. Each pass gets it as its own, as a clone of theirs would be.
if [ -n "${REPO_PATH:-}" ]; then
  mkdir -p "$REPO_PATH"
  mount /dev/disk/by-label/tnk-repo "$REPO_PATH" || echo "tnk-host: cannot mount the repository disk"
fi

run_pass() {  # $1: root or alice, $2: the suite's file name
  local t rc results="$W/results/${2%.sh}/$1"; t=$(now)
  [ -z "${REPO_PATH:-}" ] || chown -R "$1:" "$REPO_PATH"
  echo "tnk-host: pass $1 of $2 begins at $(uptime_s) s"
  mkdir -p "$(dirname "$results")"
  if [ "$1" = root ]; then
    bash "$W/$2" root "$results"; rc=$?
  else
    # su - opens a login session through PAM (pam_systemd): session-N.scope, as ssh or a tty would.
    # The suite writes to alice's home (the share's files are the host's root's); copied out after.
    rm -rf /home/alice/host-results
    su - alice -c "bash $W/$2 alice /home/alice/host-results"; rc=$?
    cp -r /home/alice/host-results "$results"
  fi
  echo "tnk-host: pass $1 of $2 ended (exit $rc) after $(took "$t") s"
}
for suite in $SUITES; do run_pass root "$suite"; done
for suite in $SUITES; do run_pass alice "$suite"; done
sync
echo "tnk-host: done at $(uptime_s) s"
