#!/usr/bin/env python3
"""Each file's namespace follows its folder: src/<folder>/ is tnk::<folder>, and src/backend/<b>/ is
tnk::<b> (backend/vm/boot: tnk::vm::boot), or a namespace inside that one (tnk::linux::sys). The plain
tnk namespace is for the vocabulary every layer shares (core/, context/, output/, and the types config/,
naming/ and net/ declare there, such as Config, BackendKind, NetworkPolicy). A file whose namespace
names another folder sends a reader to the wrong place. Prints each mismatch; exits 1 when there is one."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import report  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
PLAIN_TNK = {"core", "context", "output", "config", "naming", "net"}


def expected(folder):
    parts = folder.split("/")
    if parts[0] == "backend" and len(parts) > 1:
        parts = parts[1:]
    return "tnk::" + "::".join(parts)


def main():
    problems = []
    for root, _, files in os.walk(SRC):
        folder = os.path.relpath(root, SRC)
        if folder == ".":
            continue
        want = expected(folder)
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            text = open(os.path.join(root, name), encoding="utf-8").read()
            for ns in re.findall(r"^namespace (tnk(?:::\w+)*) \{", text, re.M):
                if ns == want or ns.startswith(want + "::"):
                    continue
                if ns == "tnk" and folder.split("/")[0] in PLAIN_TNK:
                    continue
                problems.append(f"src/{folder}/{name}: namespace {ns}, expected {want}")
    return report(problems, "file(s) whose namespace does not follow their folder")


if __name__ == "__main__":
    sys.exit(main())
