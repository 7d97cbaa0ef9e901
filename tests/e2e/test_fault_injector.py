"""CI's subset of the fault injector (tests/faults/inject.py): seeds from 1 until 20 faults were injected, per
backend. The whole run is `tests/faults/inject.py --backend ns|vm --faults 200` (docs/reliability.md)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, TNK_BIN
from sandbox_harness import any_tnk  # noqa: F401 (fixture)

pytestmark = pytest.mark.rootless_suite  # scripts/test.sh runs this file as an ordinary user

CI_FAULTS = 20


def test_twenty_seeded_faults_lose_nothing_and_leave_nothing(any_tnk):
    # The injector makes its own HOME per run; it shares the suite's image cache, so nothing is built.
    env = dict(os.environ, TNK_BIN=TNK_BIN, XDG_CACHE_HOME=any_tnk.env["XDG_CACHE_HOME"])
    done = subprocess.run([sys.executable, str(REPO / "tests/faults/inject.py"), "--backend", any_tnk.backend,
                           "--faults", str(CI_FAULTS)], env=env, capture_output=True, text=True, timeout=1800)
    print(done.stdout[-6000:])
    summary = re.search(r"^faults: \w+ (\d+) seeds, (\d+) faults injected, (\d+) failed, (\d+) bytes lost$",
                        done.stdout, re.M)
    assert summary, done.stdout[-3000:] + done.stderr[-3000:]
    seeds, injected, failed, lost = map(int, summary.groups())
    assert (failed, lost) == (0, 0), done.stdout[-6000:]
    assert injected == CI_FAULTS and done.returncode == 0, done.stdout[-3000:]
    # Each line says what was killed: the kills reached the supervisor and more than one kind of process.
    killed = set(re.findall(r": killed (\S+) ", done.stdout))
    assert len(killed) >= 3, killed
