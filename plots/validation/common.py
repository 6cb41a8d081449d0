"""What every experiment of docs/validation.md shares: runs, CSVs, numbers, tables, figures.

A Run is one tlbsim invocation; execute() runs a list of them through the binary, JOBS at a
time, and returns tlbsim's CSV row of each.  write_csv() and read_csv() keep those rows in
plots/results/ so that --reuse can redraw without running.  The number and text helpers (ape,
mdape, harness, fmt, pct, signed, table) are what the report is written with, and a Section
is one experiment's part of it.  plot() draws a figure with gnuplot.

Outputs go under VALIDATE_OUTPUT_ROOT (default: this tree); inputs (topologies, workloads)
are always read from this tree.  This module imports no other module of the package.
"""
import csv
import io
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Outputs go into this tree unless VALIDATE_OUTPUT_ROOT names another (the tests' temporary one).
OUTPUT_ROOT = os.environ.get("VALIDATE_OUTPUT_ROOT", ROOT)
OUT = os.path.join(OUTPUT_ROOT, "plots", "results")
IMG = os.path.join(OUTPUT_ROOT, "docs", "img", "validation")
WORKLOADS = os.path.join(ROOT, "workloads")
TOPOLOGIES = os.path.join(ROOT, "topologies")


# --------------------------------------------------------------------------
# Running tlbsim
# --------------------------------------------------------------------------

class Run:
    """One tlbsim invocation; key identifies it inside its experiment."""

    def __init__(self, exp, key, topology, workload, policy, sets=(), per_cpu=False,
                 seed=None):
        self.exp, self.key = exp, key
        self.topology, self.workload, self.policy = topology, workload, policy
        self.sets = list(sets)
        self.per_cpu = per_cpu
        self.seed = seed  # None: tlbsim's default, 1

    def argv(self, tlbsim):
        a = [tlbsim, "-T", self.topology, "-w", self.workload, "-p", self.policy]
        for s in self.sets:
            a += ["--set", s]
        if self.seed is not None:
            a += ["--seed", str(self.seed)]
        if self.per_cpu:
            a += [f"--per-cpu={per_cpu_path(self.exp, self.key)}"]
        return a

    def command(self):
        s = "".join(f" --set {x}" for x in self.sets)
        if self.seed is not None:
            s += f" --seed {self.seed}"
        return f"tlbsim -T {self.topology} -w {self.workload} -p {self.policy}{s}"


def per_cpu_path(exp, key):
    """plots/results/expN-KEY-cpus.csv: a run's per-CPU counters (--per-cpu)."""
    return os.path.join(OUT, f"exp{exp}-{keystr(key).replace('/', '-')}-cpus.csv")


def execute(runs, tlbsim, jobs, progress=True):
    """Runs them, JOBS at a time; returns {key: row} with 'summary' added."""

    done = [0]
    lock = threading.Lock()
    started = time.monotonic()

    failed = []

    def one(run):
        p = subprocess.run(run.argv(tlbsim), capture_output=True, text=True)
        if p.returncode != 0:
            with lock:
                failed.append(f"{run.command()}: exit {p.returncode}\n{p.stderr}")
            return None
        with lock:
            done[0] += 1
            if progress:
                # Runs start longest first, so the estimate only shrinks.
                spent = time.monotonic() - started
                left = spent / done[0] * (len(runs) - done[0])
                print(f"[{done[0]}/{len(runs)}, {spent:.0f} s, about {left:.0f} s left] "
                      f"{run.command()}", file=sys.stderr, flush=True)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        row = rows[0]
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        row["summary"] = lines[-1] if lines else ""
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, runs))
    if failed:
        raise SystemExit("validate: runs failed:\n" + "\n".join(failed))
    return {(r.exp, keystr(r.key)): row for r, row in zip(runs, results)}


def write_csv(name, runs, rows):
    """plots/results/NAME.csv: the run's key and command, then tlbsim's columns."""
    path = os.path.join(OUT, name + ".csv")
    first = rows[(runs[0].exp, keystr(runs[0].key))]
    cols = ["key", "command"] + [c for c in first if c != "summary"] + ["summary"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in runs:
            row = rows[(r.exp, keystr(r.key))]
            w.writerow([keystr(r.key), r.command()] + [row[c] for c in cols[2:]])


def read_csv(name):
    path = os.path.join(OUT, name + ".csv")
    with open(path, newline="") as f:
        return {row["key"]: row for row in csv.DictReader(f)}


def keystr(key):
    """A run's key as text: a tuple's parts joined with slashes."""
    return "/".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def topology_value(name, *path, directory=TOPOLOGIES):
    """A number from DIRECTORY/NAME.json: {"value": V, "source": ...} or a bare V."""
    with open(os.path.join(directory, name + ".json")) as f:
        node = json.load(f)
    for key in path:
        node = node[key]
    return node["value"] if isinstance(node, dict) else node


# --------------------------------------------------------------------------
# Numbers and tables
# --------------------------------------------------------------------------

def num(row, col):
    return float(row[col])


def ape(pub, sim):
    return abs(sim - pub) / abs(pub) * 100.0


def mdape(errors):
    return statistics.median(errors) if errors else float("nan")


def harness(row):
    """Alex Shi's integer formulas (docs/references.md#benchmark-munmap-harness-alex-shi-2012):
    ms, ns/call, acc/thread/ms, ns/access."""
    phase = num(row, "phase_ns")
    calls = int(row["op_count"])
    return (int(phase // 1e6), int(phase // calls), int(num(row, "accesses_per_thread_ms")),
            int(num(row, "access_ns")))


def fmt(v, digits=0):
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if digits == 0:
        return f"{int(round(v)):,}".replace(",", "\u2009")
    return f"{v:,.{digits}f}".replace(",", "\u2009")


def pct(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.{digits}f}%"


def signed(v, digits=1):
    return f"{v:+.{digits}f}%"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


class Section:
    def __init__(self, number, title, short):
        self.number, self.title, self.short = number, title, short
        self.mdape_text = None  # the summary's MdAPE cell, when one number is not enough
        self.parts = []
        self.mdape = None      # float, or None when nothing published is compared
        self.mdape_of = ""     # what the MdAPE covers
        self.verdict = ""      # short direction-of-effect verdict
        self.figures = []

    def add(self, text):
        self.parts.append(text.strip("\n"))

    def figure(self, name, caption):
        self.figures.append(name)
        self.parts.append(f"![{caption}](img/validation/{name}.png)\n\n"
                          f"*{caption}* ([SVG](img/validation/{name}.svg))")

    def markdown(self):
        return f"## {self.number}. {self.title}\n\n" + "\n\n".join(self.parts) + "\n"


# --------------------------------------------------------------------------
# gnuplot
# --------------------------------------------------------------------------

_PNG_TERM = None


def png_terminal():
    global _PNG_TERM
    if _PNG_TERM is None:
        p = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        _PNG_TERM = "pngcairo" if "pngcairo" in (p.stdout + p.stderr) else "png"
    return _PNG_TERM


def plot(name, script, datas, size=(900, 560)):
    """Writes the data blocks to plots/results/NAME-*.dat and draws NAME.png/.svg."""
    for suffix, text in datas.items():
        with open(os.path.join(OUT, f"{name}-{suffix}.dat"), "w") as f:
            f.write(text)
    w, h = size
    common = ("set encoding utf8\nset datafile separator whitespace\n"
              "set key noenhanced\nset termoption noenhanced\n")
    for term, ext in ((f"{png_terminal()} size {w},{h} font ',10'", "png"),
                      (f"svg size {w},{h} font 'Helvetica,11'", "svg")):
        out = os.path.join(IMG, f"{name}.{ext}")
        text = (f"set terminal {term}\nset output '{out}'\n{common}"
                f"dat(s) = '{OUT}/{name}-'.s.'.dat'\n{script}\nunset output\n")
        p = subprocess.run(["gnuplot"], input=text, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"gnuplot failed on {name}.{ext}:\n{p.stderr}\n{text}")
    svg = os.path.join(IMG, f"{name}.svg")
    # gnuplot writes the output path into the SVG's title: keep it relative.
    with open(svg) as f:
        s = f.read()
    with open(svg, "w") as f:
        f.write(s.replace(OUT + "/", "").replace(IMG + "/", ""))


def dat(rows):
    return "\n".join(" ".join(str(c) for c in r) for r in rows) + "\n"
