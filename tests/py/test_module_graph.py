#!/usr/bin/env python3
"""No two source files of tlbsim call each other, directly or around a circle.

The per-layer libraries prove that no layer calls one above it (src/CMakeLists.txt); this test
proves the finer rule inside the layers: the graph of which object file calls a function of which
other one, read from the build's object files with nm, has no cycle.  A cycle is printed with the
symbols that make each edge.

Usage: test_module_graph.py BUILD_DIR   (a build that is not link-time optimised)
"""
import collections
import os
import subprocess
import sys
import unittest

BUILD = None


def objects(build):
    """{module: object path}, module being the source path under src/ without .c."""
    found = {}
    src = os.path.join(build, "src", "CMakeFiles")
    for root, _, files in os.walk(src):
        for f in files:
            parts = os.path.relpath(os.path.join(root, f), src).split(os.sep)
            if f.endswith(".c.o") and parts[0].startswith("tlbsim_"):
                found["/".join(parts[1:])[:-len(".c.o")]] = os.path.join(root, f)
    return found


def symbols(paths):
    """{path: (defined, undefined)} from one nm call over every object."""
    out = subprocess.run(["nm", "-A"] + sorted(paths), capture_output=True, text=True,
                         check=True).stdout
    syms = {p: (set(), set()) for p in paths}
    for line in out.splitlines():
        path, _, rest = line.rpartition(":")
        fields = rest.split()
        if path not in syms:
            continue
        if len(fields) == 3 and fields[1] in "TDRB":
            syms[path][0].add(fields[2])
        elif len(fields) == 2 and fields[0] == "U":
            syms[path][1].add(fields[1])
    return syms


def call_graph(build):
    objs = objects(build)
    syms = symbols(objs.values())
    defs = {m: syms[p][0] for m, p in objs.items()}
    undefs = {m: syms[p][1] for m, p in objs.items()}
    owner = {sym: m for m, ds in defs.items() for sym in ds}
    graph = collections.defaultdict(dict)
    for module, us in undefs.items():
        for sym in us:
            target = owner.get(sym)
            if target and target != module:
                graph[module].setdefault(target, []).append(sym)
    return objs, graph


def cycles(nodes, graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


class ModuleGraph(unittest.TestCase):
    def test_objects_found(self):
        objs, _ = call_graph(BUILD)
        # A wrong build directory must fail, not pass on an empty graph.
        self.assertIn("kernel/sched", objs)
        self.assertIn("machine/machine", objs)

    def test_no_cycle(self):
        objs, graph = call_graph(BUILD)
        found = cycles(objs, graph)
        text = []
        for comp in found:
            for a in comp:
                for b, syms in sorted(graph[a].items()):
                    if b in comp:
                        text.append(f"  {a} -> {b}: {', '.join(sorted(syms)[:4])}")
        self.assertEqual(found, [], "source files that call each other:\n" + "\n".join(text))

    def test_cycle_is_found(self):
        # The detector itself: a two-file circle and a three-file one.
        graph = {"a": {"b": []}, "b": {"a": []}, "c": {"d": []}, "d": {"e": []},
                 "e": {"c": []}, "f": {"a": []}}
        self.assertEqual(sorted(cycles(graph, graph)), [["a", "b"], ["c", "d", "e"]])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    BUILD = sys.argv.pop(1)
    unittest.main()
