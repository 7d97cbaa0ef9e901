#!/usr/bin/env python3
"""Prints which folder of src/ includes which (a folder of src/backend/ counts as its own layer),
and exits 1 when the graph has a cycle. The build enforces the declared layers (cmake/Layers.cmake);
this shows the graph the code actually has. Usage: scripts/include_graph.py [--dot]"""
import collections
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def layer_of(path):
    parts = path.split("/")
    if len(parts) == 1:
        return "main"
    if parts[0] == "backend" and len(parts) > 2:
        return "/".join(parts[:-1])  # backend/ns, backend/vm, backend/vm/boot, ...
    return parts[0]


def include_graph():
    graph = collections.defaultdict(set)
    for root, _, files in os.walk(SRC):
        for name in files:
            path = os.path.relpath(os.path.join(root, name), SRC)
            layer = layer_of(path)
            graph[layer]
            with open(os.path.join(SRC, path), encoding="utf-8") as source:
                for line in source:
                    found = re.match(r'#include "([^"]+)"', line)
                    if found and layer_of(found.group(1)) != layer:
                        graph[layer].add(layer_of(found.group(1)))
    return graph


def find_cycle(graph):
    state = {}  # absent: unseen, 1: on the current path, 2: done

    def visit(node, path):
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path + [node, dep]
            if dep not in state:
                cycle = visit(dep, path + [node])
                if cycle:
                    return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle[cycle.index(cycle[-1]):]
    return None


def main():
    graph = include_graph()
    if "--dot" in sys.argv:
        print("digraph tnk {")
        for layer in sorted(graph):
            for dep in sorted(graph[layer]):
                print(f'  "{layer}" -> "{dep}";')
        print("}")
    else:
        for layer in sorted(graph):
            print(f"{layer} -> {' '.join(sorted(graph[layer])) or '(nothing)'}")
    cycle = find_cycle(graph)
    if cycle:
        print("include cycle: " + " -> ".join(cycle), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
