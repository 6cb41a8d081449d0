#!/usr/bin/env python3
"""Sampled mode against the exact path on every run of docs/validation.md.

Runs each run of the validation report (plots/validation/) twice, exactly and with
--sample (and --sample-plan PLAN if given), and compares the figures the report and
the CSV give: each must be within 1% of the exact run's, or inside the 95% interval
the sampled row states for it (an estimated counter's own *_rel_ci95; a figure
derived from accesses, that of accesses). Prints a Markdown report: a line per
experiment, the figures outside both, and the CPU time of the two modes.

Usage: bench/sample_check.py [--tlbsim BIN] [--jobs N] [--plan P:W:M] [--only 1,3]
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plots"))
from validation.common import keystr  # noqa: E402  (plots/ is not on the path)
from validation.runner import EXPERIMENTS, experiment_runs  # noqa: E402

# Figure -> the column of the sampled row holding its relative 95% half-width,
# or None: simulated in full, judged by the 1% rule alone.
FIGURES = {
    "sim_ns": None,
    "phase_ns": None,
    "op_ns_mean": None,
    "op_ns_p50": None,
    "op_ns_p99": None,
    "accesses": "accesses_rel_ci95",
    "access_ns": "accesses_rel_ci95",
    "accesses_per_thread_ms": "accesses_rel_ci95",
    "tlb_misses": "tlb_misses_rel_ci95",
    "page_walks": "page_walks_rel_ci95",
    "walk_wait_ns": "walk_wait_ns_rel_ci95",
    "nr_tlb_remote_flush": None,
    "nr_tlb_remote_flush_received": None,
    "tlb_entries_invalidated": None,
    "ipis_sent": None,
    "context_switches": None,
}
TOLERANCE = 0.01


def run_one(argv):
    """(row, CPU seconds) of one tlbsim run on one host thread; the CPU time is
    the child's own (wait4(), not RUSAGE_CHILDREN, which with --jobs also
    counts the runs that ended meanwhile)."""
    p = subprocess.Popen(argv + ["-q", "--threads", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"sample_check: {' '.join(argv)}: exit {p.returncode}\n{err}")
    row = next(csv.DictReader(io.StringIO(out)))
    return row, usage.ru_utime + usage.ru_stime


def judge(exact, sampled):
    """[(figure, exact, sampled, relative difference, bound, verdict)] of one run."""
    out = []
    for figure, ci in FIGURES.items():
        if figure not in exact or exact[figure] in ("", None):
            continue
        e, s = float(exact[figure]), float(sampled[figure])
        diff = (s - e) / e if e else (0.0 if s == e else float("inf"))
        bound = TOLERANCE
        stated = sampled.get(ci, "") if ci else ""
        if stated:
            bound = max(bound, float(stated))
        verdict = "within 1%" if abs(diff) <= TOLERANCE else (
            "inside its interval" if abs(diff) <= bound else "outside")
        out.append((figure, e, s, diff, bound, verdict))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tlbsim", default=os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--plan", default=None, help="--sample-plan PERIOD:WARM:WINDOW (default: tlbsim's)")
    ap.add_argument("--only", default="", help="comma-separated experiment numbers")
    args = ap.parse_args()
    only = {int(x) for x in args.only.split(",") if x}
    runs = [r for n, m in enumerate(EXPERIMENTS, 1) if not only or n in only
            for r in experiment_runs(m, False)]
    sample_args = ["--sample"] + (["--sample-plan", args.plan] if args.plan else [])

    def both(run):
        argv = [a for a in run.argv(args.tlbsim) if not a.startswith("--per-cpu")]
        exact, t_exact = run_one(argv)
        sampled, t_sampled = run_one(argv + sample_args)
        return run, exact, sampled, t_exact, t_sampled

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(both, runs))
    wall = time.monotonic() - started

    plan = args.plan or "the default, 200000:20000:5000"
    print(f"`bench/sample_check.py --jobs {args.jobs}`: {len(runs)} runs of docs/validation.md, "
          f"each exactly and with `--sample` ({plan}); {wall:.0f} s wall.\n")
    print("| experiment | runs | runs that skipped | figures | within 1% | inside their interval "
          "| outside | CPU s exact | CPU s sampled | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    outside = []
    totals = [0] * 8
    for exp in sorted({r.exp for r, *_ in results}):
        mine = [x for x in results if x[0].exp == exp]
        verdicts = [v for _, e, s, _, _ in mine for v in judge(e, s)]
        skipped = sum(1 for _, _, s, _, _ in mine if int(s.get("sample_windows") or 0) > 0)
        counts = [sum(1 for v in verdicts if v[5] == k)
                  for k in ("within 1%", "inside its interval", "outside")]
        te = sum(x[3] for x in mine)
        ts = sum(x[4] for x in mine)
        row = [len(mine), skipped, len(verdicts)] + counts + [te, ts]
        totals = [a + b for a, b in zip(totals, row)]
        print(f"| {exp} | {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]} | {row[5]} "
              f"| {te:.1f} | {ts:.1f} | {te / ts if ts else 0:.1f}× |")
        for run, e, s, _, _ in mine:
            for v in judge(e, s):
                if v[5] == "outside":
                    outside.append((exp, keystr(run.key), v))
    te, ts = totals[6], totals[7]
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | {totals[4]} "
          f"| {totals[5]} | {te:.1f} | {ts:.1f} | {te / ts if ts else 0:.1f}× |")
    if outside:
        print("\nOutside both (experiment, run, figure: exact → sampled, difference, stated bound):\n")
        for exp, key, (figure, e, s, diff, bound, _) in outside:
            print(f"- {exp} `{key}` {figure}: {e:g} → {s:g}, {100 * diff:+.2f}%, bound ±{100 * bound:.2f}%")


if __name__ == "__main__":
    main()
