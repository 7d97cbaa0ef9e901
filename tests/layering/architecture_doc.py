#!/usr/bin/env python3
"""docs/architecture.md against the tree: each folder's "uses" column is the set of layers its files
really include (scripts/include_graph.py), and every source file and folder the page names in backticks
exists. Prints each difference and exits 1 when there is one, so that the page cannot drift again."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import report  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "scripts"))
from include_graph import include_graph  # noqa: E402

DOC = os.path.join(REPO, "docs", "architecture.md")
SRC = os.path.join(REPO, "src")
NOTHING = {"nothing", "(none)", "none"}


def table_rows(text):
    """(folder, uses) of each row of the folder table: | `folder/` | owns | uses |."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"`([a-z/_]+)/`", cells[0]) if len(cells) == 3 else None
        if found:
            yield found.group(1), cells[2]


def layers_named(uses):
    """The layer names of a "uses" cell: comma-separated, each possibly followed by a remark in parentheses."""
    uses = re.sub(r"\([^)]*\)", "", uses).strip()
    if uses.lower() in NOTHING or not uses:
        return set()
    return {word.strip().strip("`") for word in uses.split(",") if word.strip()}


def source_files():
    names, paths = set(), set()
    for root, dirs, files in os.walk(SRC):
        rel = os.path.relpath(root, SRC)
        paths.add("src/" + rel if rel != "." else "src")
        for name in files:
            names.add(name)
            paths.add(os.path.normpath(os.path.join("src", rel, name)))
    return names, paths


def main():
    text = open(DOC, encoding="utf-8").read()
    graph = include_graph()
    problems = []
    for folder, uses in table_rows(text):
        if folder not in graph:
            problems.append(f"{folder}/: no such folder of src/")
            continue
        named, actual = layers_named(uses), graph[folder]
        if named != actual:
            extra, missing = sorted(named - actual), sorted(actual - named)
            problems.append(f"{folder}/ uses: the page says {sorted(named)}, the includes say {sorted(actual)}"
                            + (f"; not used: {extra}" if extra else "") + (f"; not named: {missing}" if missing else ""))
    names, paths = source_files()
    for ref in sorted(set(re.findall(r"`([A-Za-z0-9_./-]+\.(?:cc|h))`", text))):
        if ref.startswith("src/") and os.path.normpath(ref) not in paths:
            problems.append(f"`{ref}`: no such file")
        elif not ref.startswith("src/") and os.path.basename(ref) not in names and \
                not os.path.exists(os.path.join(REPO, ref)):
            problems.append(f"`{ref}`: no such file in src/")
    for ref in sorted(set(re.findall(r"`(src/[A-Za-z0-9_/]+)/?`", text))):
        if os.path.normpath(ref) not in paths:
            problems.append(f"`{ref}`: no such folder")
    return report(problems, "statement(s) of docs/architecture.md the tree does not match")


if __name__ == "__main__":
    sys.exit(main())
