"""The ending the layering checks share: each problem on a line, a count, exit status 1 when any."""


def report(problems, what):
    """Prints `problems` and "<count> <what>"; returns the exit status."""
    for p in problems:
        print(p)
    print(f"{len(problems)} {what}")
    return 1 if problems else 0
