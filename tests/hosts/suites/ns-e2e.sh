#!/bin/bash
# ns-e2e: end-to-end files of tests/e2e, run by pytest inside the test host with the installed tnk
# (/opt/tnk/bin/tnk) on the ns backend: the isolation probes (test_ns_isolation.py, test_isolation.py)
# and the network policies (test_network.py), as on the build machine (issue 31: "the isolation probes
# and network-policy tests pass inside the test hosts as they do here"). Run by entry.sh, once as root
# and once as alice in a login session:   ns-e2e.sh PASS RESULTS_DIR
# RESULTS_DIR gets pytest.log, junit.xml and result.json (one step per test); the last line is
# "host-suite: N passed, N failed", N from pytest's summary (failed: failed + errors + skipped, since
# TNK_TEST_MUST_WORK=1 is set and nothing may pass by skipping).
# The runner copies the tests into the work share (repo/) and gives the guest a NIC on QEMU's user
# network (run.py reads the next line):
# test-host-needs: e2e network
set -u
pass=$1 R=$2
mkdir -p "$R"
W=/mnt/work
if [ "$pass" = root ]; then export HOME=/root USER=root LOGNAME=root; fi  # a service has no HOME
# Every skip is a failure (conftest.require), and the count below adds pytest's own skips to the failed.
export TNK_TEST_MUST_WORK=1
cd "$HOME" || exit 1

if [ "$pass" = root ]; then
  # The guest's side of QEMU's user network, by hand (the disk has no DHCP client): QEMU's fixed
  # addresses (10.0.2.15, gateway 10.0.2.2, DNS 10.0.2.3). Three tests reach the sandbox image's
  # Debian mirror (apt-get update under `allowlist`, a Release file under `open`, the mirror's name
  # resolved and denied under `inference`). alice's pass finds it configured.
  nic=$(ip -o link show | awk -F': ' '$2 != "lo" { print $2; exit }')
  ip link set "$nic" up && ip addr add 10.0.2.15/24 dev "$nic" && ip route add default via 10.0.2.2
  rm -f /etc/resolv.conf; echo "nameserver 10.0.2.3" >/etc/resolv.conf
  # The mirror the build machine's apt uses (entry.sh copied its sources in).
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
  echo "network: $nic $(ip -br addr show "$nic" | awk '{ print $3 }'), mirror $mirror:" \
    "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 20 "${mirror%/}/dists/bookworm/Release")"
  # As scripts/e2e-as-user.sh does before its run: the user's subordinate range and what else her
  # rootless sandboxes need (on this cgroup v2 host under systemd, nothing else: see ns-smoke.sh).
  /opt/tnk/bin/tnk setup --user alice
fi

# What to run. -k "not vm": test_network.py and test_isolation.py run each test on ns and on vm
# (ids [ns] and [vm]); the vm backend's guest kernel takes half an hour to compile under this
# emulation, and this suite is about ns (TNK_BACKEND=ns). Each test runs once, as the one its markers
# name, as scripts/test.sh splits them on the build machine: alice the files' tests (rootless_suite), as
# scripts/e2e-as-user.sh does, and root only their needs_root ones (network namespaces for the test
# host, a host setting, another user's project, tnk-disk). Root's pass used to repeat alice's 28 tests,
# 400 to 1,000 s of the emulated CPU that CI cannot spare (root's own lifecycle and limits stay in
# ns-smoke.sh).
# test_provision.py: the two phases of provisioning (the root phase is a root session, here in a systemd
# scope); not pi's and not the mirror's, which need the internet.
# test_ns_own_disk.py: tnk-disk's refusals and its mount of a disk on this stock kernel (root's pass); not
# the test whose sandbox another user starts, which would build that user's image under this emulation.
files=(tests/e2e/test_ns_isolation.py tests/e2e/test_network.py tests/e2e/test_isolation.py tests/e2e/test_provision.py
  tests/e2e/test_ns_own_disk.py)
select=(-k "not vm and not pi_profile and not mirror and not the_sandbox_goes_on")
if [ "$pass" = alice ]; then select+=(-m "rootless_suite and not needs_root"); else select+=(-m "not rootless_suite or needs_root"); fi

cd "$W/repo" || exit 1
# PYTHONDONTWRITEBYTECODE and no cacheprovider: the share is root's (host side), alice cannot write
# in it. TNK_TEST_CACHE: where the tests' tnk finds the sandbox image entry.sh handed in (~/.cache/tnk/images).
echo "--- [$pass] pytest ${files[*]} ${select[*]}"
env TNK_BIN=/opt/tnk/bin/tnk TNK_BACKEND=ns TNK_TEST_CACHE="$HOME/.cache" \
  PYTHONDONTWRITEBYTECODE=1 PATH=/opt/tnk/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  python3 -m pytest -v -rfEs --durations=15 -p no:cacheprovider --junitxml="$R/junit.xml" \
  "${select[@]}" "${files[@]}" 2>&1 | tee "$R/pytest.log"
echo "--- [$pass] pytest ended"

# Counts from pytest's summary line ("3 failed, 20 passed, 1 skipped, 2 deselected in 300.00s"); the
# per-test list (for run.py's report of failures) from junit.xml.
python3 - "$R" "$pass" <<'EOF'
import json, os, re, sys
import xml.etree.ElementTree as ET
R, who = sys.argv[1], sys.argv[2]
line = ""
for l in open(f"{R}/pytest.log"):
    if re.search(r"\d+ (passed|failed|skipped|errors?)\b.* in [0-9.]+s", l):
        line = l
count = lambda kind: sum(int(n) for n in re.findall(rf"(\d+) {kind}\b", line))
must_work = os.environ.get("TNK_TEST_MUST_WORK") == "1"
passed, bad = count("passed"), count("failed") + count("errors?") + (count("skipped") if must_work else 0)
steps = []
try:
    for i, case in enumerate(ET.parse(f"{R}/junit.xml").getroot().iter("testcase"), 1):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        message = ((outcome.get("message") or "").strip().splitlines() or [""])[0] if outcome is not None else ""
        note = "" if outcome is None else f"{outcome.tag}: {message[:300]}"
        ok = outcome is None or (outcome.tag == "skipped" and not must_work)
        steps.append({"n": i, "name": name, "result": "PASS" if ok else "FAIL",
                      "exit": 0 if ok else 1, "note": note})
except (OSError, ET.ParseError) as e:
    steps.append({"n": 0, "name": "junit.xml", "result": "FAIL", "exit": 1, "note": str(e)})
if not line:  # pytest never summed up (it crashed or was killed): one failure
    bad += 1
json.dump({"pass": who, "passed": passed, "failed": bad, "steps": steps}, open(f"{R}/result.json", "w"), indent=1)
print(f"host-suite: {passed} passed, {bad} failed")
sys.exit(1 if bad else 0)
EOF
