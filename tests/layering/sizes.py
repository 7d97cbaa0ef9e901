#!/usr/bin/env python3
"""STYLE.md's "small files, one job each", held: no file of src/ over 400 lines, no function over 80.
A function is found as a brace block whose head (the text since the previous ';', '{' or '}') has a
parameter list and is not a namespace, class, struct, union, enum or an initialiser; lambdas and local
blocks count towards the function around them. Prints each offender and exits 1 when there is one."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import report  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
NOT_A_FUNCTION = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:namespace|class|struct|union|enum)\b|=\s*$|^\s*extern\s+\"C\"")


def code_only(text):
    """`text` with comments, preprocessor lines, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text[i] == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            out.append(" "); i += 1  # a digit separator: 1'000'000
        elif text[i] == "#" and (i == 0 or text[i - 1] == "\n"):
            j = i
            while True:  # a preprocessor line, with its continuations
                j = text.find("\n", j)
                if j < 0 or text[j - 1] != "\\":
                    break
                j += 1
            j = n if j < 0 else j
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + " " * (j - i - 1) + q); i = j + 1
        else:
            out.append(text[i]); i += 1
    return "".join(out)


def long_functions(text):
    """(name, first line, body lines) of each function longer than MAX_FUNCTION_LINES."""
    code = code_only(text)
    stack, head_start = [], 0  # one entry per open brace: (a function's start line or None, in a function)
    for i, ch in enumerate(code):
        if ch == "{":
            head = code[head_start:i]
            in_function = any(inside for _, inside, _ in stack)
            starts = not in_function and ")" in head and not NOT_A_FUNCTION.search(head)
            stack.append((code.count("\n", 0, i) + 1 if starts else None, in_function or starts, head))
            head_start = i + 1
        elif ch == "}":
            if stack:
                start, _, head = stack.pop()
                length = code.count("\n", 0, i) - start if start is not None else 0
                if length > MAX_FUNCTION_LINES:
                    yield re.sub(r"\s+", " ", head.split("(")[0]).strip().split(" ")[-1], start, length
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1


def main():
    problems = []
    for root, _, files in os.walk(SRC):
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.join(SRC, ".."))
            text = open(path, encoding="utf-8").read()
            lines = text.count("\n")
            if lines > MAX_FILE_LINES:
                problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
            for fn, start, length in long_functions(text):
                problems.append(f"{rel}:{start}: {fn}() has {length} lines (at most {MAX_FUNCTION_LINES})")
    return report(problems, "file(s) or function(s) over the bound (sizes)")


if __name__ == "__main__":
    sys.exit(main())
