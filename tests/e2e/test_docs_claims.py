"""The security docs against the tree (security review L10): no statement the review found stale comes
back, and every test the docs name as evidence exists. Pure Python over the repository's files: no
tnk binary, no sandbox, so it runs in the root pass of scripts/test.sh without anything to skip on."""
import ast
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "e2e"
GTEST_DIRS = (REPO / "tests" / "unit", REPO / "tests" / "integration")
TABLE_HEADING = "## What we test, and how"
NO_GTEST = "no such test in tests/unit, tests/integration or tests/CMakeLists.txt"


def security_docs():
    """SECURITY.md, README.md and docs/*.md: every page that states what tnk protects."""
    return [REPO / "SECURITY.md", REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


# What L10 listed as stale, as the docs said it (or said it since), with the finding it breaks. Matched
# case-insensitively, with backticks and emphasis dropped and whitespace (line breaks too) collapsed.
# L10's "Normal sessions run as agent with no_new_privs, so sudo does nothing" is not here: it held on
# ns only, and now holds on vm too (tnk-agent sets no_new_privs for every session but provisioning);
# SECURITY.md says both backends and names the tests of each.
STALE = [
    ("allowlist and open do not fall back to inference on ns", "need the network policy engine"),
    ("allowlist and open do not fall back to inference on ns", "asking for them gets inference"),
    ("vm is not planned: it enforces the network policies (bug #1)", "planned: the vm backend"),
    ("vm is not planned: it forwards only the endpoint (bug #2)", "planned: the same on vm"),
    ("on vm only the agent's files are the owner's", "files the guest writes belong to the project's owner"),
    ("open is ports 80, 443 and network.open_ports, not any port", "plus http and https to any name"),
    ("open is ports 80, 443 and network.open_ports, not any port", "open (internet,"),
    ("TCG is not the same boundary as KVM (H1)", "same isolation"),
    ("TCG is not the same boundary as KVM (H1)", "same behaviour, slower guest cpu"),
    ("backends exist and write the state directory", "no sandbox backend is built yet"),
    ("backends exist and write the state directory", "nothing writes sandboxes/<id>/"),
    ("backends exist and write the state directory", "no backend can be opened"),
    ("backends exist and write the state directory", "no backend is built yet"),
    ("audit logs are written", "nothing writes audit logs yet"),
    ("audit logs are written", "audit writer (not wired yet)"),
]


def normalised(text):
    """`text` lower-cased without backticks or asterisks, every whitespace run one space, and for each
    character of the result the line of `text` it came from."""
    chars, lines, line, space = [], [], 1, False
    for ch in text:
        if ch == "\n":
            line += 1
        if ch in "`*":
            continue
        if ch.isspace():
            space = True
            continue
        if space and chars:
            chars.append(" ")
            lines.append(line)
        space = False
        chars.append(ch.lower())
        lines.append(line)
    return "".join(chars), lines


def shown(path):
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def stale_statements(paths):
    found = []
    for path in paths:
        text, lines = normalised(path.read_text())
        for why, phrase in STALE:
            for match in re.finditer(re.escape(phrase), text):
                found.append(f"{shown(path)}:{lines[match.start()]}: '{phrase}' is stale ({why})")
    return found


@cache
def e2e_tests(file_name):
    """The test functions of tests/e2e/`file_name` (module level and in classes), or None without it."""
    path = E2E / file_name
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@cache
def gtest_cases():
    """Every `Suite.Name` of a TEST, TEST_F or TEST_P in tests/unit and tests/integration, and the
    ctest names tests/CMakeLists.txt gives its own tests (Layering.*)."""
    pattern = re.compile(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)")
    cases = set()
    for root in GTEST_DIRS:
        for path in root.rglob("*.cc"):
            cases.update(f"{suite}.{name}" for suite, name in pattern.findall(path.read_text()))
    ctest = re.compile(r"(?:add_test\(NAME|tnk_layering_test\()\s*([A-Z]\w*\.[A-Z]\w*)")
    cases.update(ctest.findall((REPO / "tests" / "CMakeLists.txt").read_text()))
    return cases


def missing_e2e_test(file_name, test):
    """Why `file_name`::`test` names nothing, or None. `test` may end with `*` (a prefix) or be None."""
    tests = e2e_tests(file_name)
    if tests is None:
        return f"tests/e2e/{file_name} does not exist"
    if test is None:
        return None
    if test.endswith("*"):
        return None if any(t.startswith(test[:-1]) for t in tests) else f"no test in {file_name} starts {test[:-1]}"
    return None if test in tests else f"{file_name} has no test {test}"


E2E_REF = re.compile(r"(?<![\w/])(?:tests/e2e/)?(test_\w+\.py)(?:::(test_\w+\*?))?")
GTEST_REF = re.compile(r"`([A-Z]\w*\.[A-Z]\w*)`")


def missing_references(path):
    """Every test `path` names (`test_x.py`, `test_x.py::test_y`, `Suite.Name` in backticks) that does not
    exist, as 'file:line: why'."""
    missing = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for match in E2E_REF.finditer(line):
            why = missing_e2e_test(match.group(1), match.group(2))
            if why:
                missing.append(f"{shown(path)}:{number}: {match.group(0)}: {why}")
        for case in GTEST_REF.findall(line):
            if case not in gtest_cases():
                missing.append(f"{shown(path)}:{number}: {case}: {NO_GTEST}")
    return missing


def table_rows(text):
    """The data rows of SECURITY.md's table under TABLE_HEADING, as (line number, cells)."""
    lines = text.splitlines()
    start = lines.index(TABLE_HEADING)
    rows = []
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        if line.startswith("|") and not re.fullmatch(r"\|[-| ]+\|", line):
            rows.append((number, [cell.strip() for cell in line.strip().strip("|").split("|")]))
    return rows[1:]  # the first is the header


def table_problems(text):
    problems = []
    rows = table_rows(text)
    if len(rows) < 10:
        problems.append(f"SECURITY.md: the table under '{TABLE_HEADING}' has {len(rows)} rows")
    for number, cells in rows:
        if len(cells) != 4:
            problems.append(f"SECURITY.md:{number}: {len(cells)} cells, expected boundary | probe | backends | control")
            continue
        boundary, probe, backends, control = cells
        named = [m for cell in (probe, control) for m in re.findall(r"`([^`]+)`", cell)]
        e2e = [m for m in named if m.startswith("tests/e2e/")]
        gtest = [m for m in named if GTEST_REF.fullmatch(f"`{m}`")]
        if "no test yet" in probe:
            continue
        if not e2e and not gtest:
            problems.append(f"SECURITY.md:{number}: '{boundary}' names no test (write 'no test yet')")
        if not backends:
            problems.append(f"SECURITY.md:{number}: '{boundary}' says no backend")
        for ref in e2e:
            match = re.fullmatch(r"tests/e2e/(test_\w+\.py)::(test_\w+)(?:\[\w+\])?", ref)
            why = "write tests/e2e/FILE.py::test_name" if match is None else missing_e2e_test(*match.groups())
            if why:
                problems.append(f"SECURITY.md:{number}: {ref}: {why}")
        problems += [f"SECURITY.md:{number}: {case}: {NO_GTEST}" for case in gtest if case not in gtest_cases()]
    return problems


def test_l10_no_stale_security_statement_comes_back(tmp_path):
    assert stale_statements(security_docs()) == []
    # Control: each phrase is found, across a line break and with markup, in a page that has it.
    page = tmp_path / "page.md"
    page.write_text("".join(f"line\n*`{phrase.replace(' ', chr(10), 1).upper()}`*\n" for _, phrase in STALE))
    assert len(stale_statements([page])) == len(STALE)


def test_the_security_table_names_only_tests_that_exist():
    assert table_problems((REPO / "SECURITY.md").read_text()) == []


def test_every_test_the_docs_name_exists():
    missing = [problem for path in security_docs() for problem in missing_references(path)]
    assert missing == []
    # Control: the index sees this very file and a known gtest case.
    assert "test_every_test_the_docs_name_exists" in e2e_tests("test_docs_claims.py")
    assert "NsSeccompTest.FilterRefusesWhatItShouldAndOnlyThat" in gtest_cases()
