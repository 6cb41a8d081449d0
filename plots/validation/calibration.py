"""Fits a machine's unmeasured costs, once, to published figures open for calibration.

The calibration rule (docs/references.md#calibration-rule) lets a machine be calibrated
from hardware facts and at most the published measurements open for calibration.
FITS lists, per machine, the cost keys that no measurement fixes (their source
says 'estimate') and the published cells that fit them; everything else in the
topology stays as sourced.  Gauss-Newton on the cells' relative errors, with a
numeric Jacobian from tlbsim runs; values are rounded to whole cycles.

Usage: plots/calibrate.py [--tlbsim PATH] [--jobs N] [--write] [MACHINE ...]
  --write  store the fitted values and their source in topologies/MACHINE.json

The fitted cells are marked in docs/validation.md and their error is reported
apart from the cells left out of the fit (the runner asks fitted_cells() and
fitted_costs()).  This module uses experiment 2's grid and the common runs; no
experiment imports it.  Python 3 standard library only.
"""
import argparse
import os
import re
import statistics
import sys

from .common import ROOT, TOPOLOGIES, Run, execute, keystr, topology_value
from .exp2 import NS, PUB_B, cell_sets

# What each fit may move, by how much to probe it, and what it is fitted to.
FITS = {
    "ivybridge-ep-2s": {
        "params": {"vma_op": 2000, "ipi_send": 200, "pte_op": 10},
        "figure": "munmap ns/call",
        "cells": [(-1, t, n) for t in (12, 24) for n in NS],
        "cells_text": "references.md, 'Published measurements: tlb_flushall_shift tables (Alex "
                      "Shi, 2013)', shift -1: munmap ns/call at T 12 and 24, N 8 to 512 (14 cells)",
    },
}


def fitted_cells(machine):
    """The (shift, T, N) cells MACHINE's costs were fitted to; empty if it has no fit."""
    return set(FITS[machine]["cells"]) if machine in FITS else set()


def fitted_costs(machine):
    """The fitted cost values, {name: cycles}, as the topology file has them now."""
    spec = FITS[machine]
    return {k: int(v) for k, v in current_values(machine, spec["params"]).items()}


def published_ns_call(cell):
    shift, t, n = cell
    return PUB_B[(shift, t)][NS.index(n)][1]


def current_values(machine, params):
    return {k: float(topology_value(machine, "costs", k, directory=TOPOLOGIES))
            for k in params}


def simulate(machine, cells, values, tlbsim, jobs):
    """ns/call of each cell (unrounded: phase / calls) at these cost values."""
    sets = [f"topology.costs.{k}={round(v)}" for k, v in values.items()]
    runs = [Run("fit", cell, machine, "munmap", "linux-3.11", cell_sets(*cell, False) + sets)
            for cell in cells]
    rows = execute(runs, tlbsim, jobs, progress=False)
    found = [rows[("fit", keystr(c))] for c in cells]
    return [float(r["phase_ns"]) / int(r["op_count"]) for r in found]


def solve(a, b):
    """Least squares a x = b (normal equations, Gaussian elimination)."""
    n = len(a[0])
    m = [[sum(row[i] * row[j] for row in a) for j in range(n)] for i in range(n)]
    v = [sum(row[i] * y for row, y in zip(a, b)) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            f = m[j][i] / m[i][i]
            m[j] = [x - f * y for x, y in zip(m[j], m[i])]
            v[j] -= f * v[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(m[i][j] * x[j] for j in range(i + 1, n))) / m[i][i]
    return x


def fit(machine, tlbsim, jobs, steps=3):
    spec = FITS[machine]
    cells, probes = spec["cells"], spec["params"]
    pub = [published_ns_call(c) for c in cells]
    values = current_values(machine, probes)
    for step in range(steps):
        base = simulate(machine, cells, values, tlbsim, jobs)
        resid = [(s - p) / p for s, p in zip(base, pub)]
        columns = []
        for k, delta in probes.items():
            probe = simulate(machine, cells, dict(values, **{k: values[k] + delta}), tlbsim, jobs)
            columns.append([(q - s) / delta / p for q, s, p in zip(probe, base, pub)])
        jac = [list(row) for row in zip(*columns)]
        step_x = solve(jac, [-r for r in resid])
        moved = {k: max(0.0, round(v + d)) for (k, v), d in zip(values.items(), step_x)}
        mdape = statistics.median(abs(r) for r in resid) * 100
        print(f"{machine} step {step + 1}: MdAPE {mdape:.1f}% -> "
              + ", ".join(f"{k} {v:.0f}" for k, v in moved.items()), file=sys.stderr)
        if moved == values:  # converged to whole cycles: base is the final run
            return values, statistics.median(abs(r) for r in resid) * 100, \
                list(zip(cells, pub, base))
        values = moved
    final = simulate(machine, cells, values, tlbsim, jobs)
    errors = [abs(s - p) / p * 100 for s, p in zip(final, pub)]
    return values, statistics.median(errors), list(zip(cells, pub, final))


def write(machine, values, mdape):
    path = os.path.join(TOPOLOGIES, machine + ".json")
    with open(path) as f:
        text = f.read()
    spec = FITS[machine]
    for k, v in values.items():
        line = re.compile(r'("%s": \{"value": )(\d+)(, "source": ")((?:[^"\\]|\\.)*)(")' % k)
        match = line.search(text)
        if not match:
            raise SystemExit(f"calibrate: no one-line cost {k} in {path}")
        old = match.group(4)
        was = re.sub(r"^(fitted .*?; it was )?", "", old)
        source = (f"fitted by plots/calibrate.py to {spec['cells_text']}, together with "
                  f"{', '.join(x for x in values if x != k)} (MdAPE {mdape:.1f}% on those "
                  f"cells); it was {was}")
        text = text[:match.start()] + match.group(1) + str(int(v)) + match.group(3) + \
            source.replace('"', '\\"') + match.group(5) + text[match.end():]
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tlbsim", default=os.environ.get("TLBSIM",
                                                       os.path.join(ROOT, "build", "tlbsim")))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("machines", nargs="*", default=sorted(FITS))
    args = ap.parse_args()
    for machine in args.machines:  # all of them before the first fit, which takes minutes
        if machine not in FITS:
            raise SystemExit(f"calibrate: no fit for {machine} (have: {', '.join(FITS)})")
    if not os.access(args.tlbsim, os.X_OK):
        raise SystemExit(f"calibrate: no tlbsim at {args.tlbsim} (build it, or set TLBSIM)")
    for machine in args.machines:
        values, mdape, cells = fit(machine, args.tlbsim, args.jobs)
        print(f"{machine}: {', '.join(f'{k} {v:.0f}' for k, v in values.items())}; "
              f"MdAPE {mdape:.1f}% on the fitted cells")
        for cell, pub, sim in cells:
            print(f"  shift {cell[0]:2d} T {cell[1]:2d} N {cell[2]:3d}: published {pub:6.0f} "
                  f"tlbsim {sim:8.0f} ({(sim - pub) / pub * 100:+.1f}%)")
        if args.write:
            write(machine, values, mdape)
            print(f"calibrate: wrote topologies/{machine}.json", file=sys.stderr)
