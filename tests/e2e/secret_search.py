"""The whole-sandbox search for a secret (probes/find_secret.c), shared by the tests that show a
credential never enters a sandbox (test_routes.py, test_gateway.py)."""
import os
import subprocess

PROBE = os.path.join(os.path.dirname(__file__), "probes", "find_secret.c")


def compile_secret_search(box):
    """The probe, built on the host into the project, where the sandbox sees it as /workspace/find_secret."""
    subprocess.run(["cc", "-O1", "-o", str(box.project / "find_secret"), PROBE], check=True)


def find_in_sandbox(box, control, strings):
    """The hits of the find_secret probe (run as the sandbox's root) for `control` (index 0, planted first
    in a file, and in the environment and arguments of a process that runs during the search) and for
    each of `strings`, and the probe's summary line."""
    hexes = " ".join(s.encode().hex() for s in (control, *strings))
    script = (f"echo {control} > /tmp/planted; PLANTED={control} sh -c 'sleep 600; :' {control} & sleep 0.5;"
              f" /workspace/find_secret {hexes}; kill $!")
    out = box.exec("sh", "-c", script, root=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines and lines[-1].startswith("searched "), out.stdout
    hits = {i: [] for i in range(len(strings) + 1)}
    for line in lines[:-1]:
        index, where = line.split(" ", 1)
        hits[int(index)].append(where)
    return hits, lines[-1]
