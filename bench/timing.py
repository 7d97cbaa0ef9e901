"""Interleaved timing of shell-free commands: each round runs every command once, in turn, so load
on the machine hits all of them alike. Prints median, p10 and p90 per command, and ratios.

usage: timing.py ROUNDS NAME=JSON_ARGV [NAME=JSON_ARGV ...] [--before NAME=JSON_ARGV] [--ratio A/B ...]
A command given with --before NAME runs (untimed) before each timed run of NAME.
"""
import json
import statistics
import subprocess
import sys
import time


def parse(argv):
    rounds = int(argv[0])
    commands, before, ratios = {}, {}, []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("--before", "--ratio"):
            i += 1
            if arg == "--ratio":
                ratios.append(argv[i].split("/"))
            else:
                name, cmd = argv[i].split("=", 1)
                before[name] = json.loads(cmd)
        else:
            name, cmd = arg.split("=", 1)
            commands[name] = json.loads(cmd)
        i += 1
    return rounds, commands, before, ratios


def run_once(argv):
    began = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - began) * 1000
    if result.returncode != 0:
        sys.exit(f"timing: {' '.join(argv)} exited {result.returncode}")
    return elapsed


def main():
    rounds, commands, before, ratios = parse(sys.argv[1:])
    times = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            if name in before:
                subprocess.run(before[name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(run_once(argv))
    medians = {}
    print(f"{'command':<28} {'median ms':>10} {'p10':>8} {'p90':>8}   ({rounds} interleaved runs)")
    for name, samples in times.items():
        samples.sort()
        medians[name] = statistics.median(samples)
        p10 = samples[len(samples) // 10]
        p90 = samples[(len(samples) * 9) // 10]
        print(f"{name:<28} {medians[name]:>10.2f} {p10:>8.2f} {p90:>8.2f}")
    for a, b in ratios:
        print(f"ratio {a} / {b} = {medians[a] / medians[b]:.2f}")


if __name__ == "__main__":
    main()
