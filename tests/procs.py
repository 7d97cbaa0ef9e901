"""The process table as /proc shows it here, for the checks of what a sandbox left running: the e2e
tests (tests/e2e), the fault injector (tests/faults/inject.py) and the soak run (tests/load/soak.py).
Each caller puts this directory on sys.path; it is plain Python with no other dependency."""
import os
from typing import NamedTuple


class Proc(NamedTuple):
    comm: str
    ppid: int
    state: str  # R, S, D, Z, ...
    starttime: int  # clock ticks after boot: with the pid, names a process even after its pid is reused
    cmdline: str  # its words joined by spaces; "" unless process_table was asked for them


def process_table(cmdlines=False):
    """pid -> Proc of every process visible here (one that ends while it is read is left out)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                raw = f.read()
            cmdline = ""
            if cmdlines:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # comm is between the first "(" and the last ")": it may hold both.
        fields = raw[raw.rindex(")") + 2:].split()
        table[int(entry)] = Proc(raw[raw.index("(") + 1:raw.rindex(")")], int(fields[1]), fields[0],
                                 int(fields[19]), cmdline)
    return table


def children_named(parent, comm, table=None):
    """The pids of `parent`'s children whose command name is `comm`."""
    table = table if table is not None else process_table()
    return [pid for pid, p in table.items() if p.ppid == parent and p.comm == comm]


def descendants(pid, table=None):
    """Every process below `pid`, children first."""
    table = table if table is not None else process_table()
    children = {}
    for child, p in table.items():
        children.setdefault(p.ppid, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
