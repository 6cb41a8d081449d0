#!/usr/bin/env python3
"""The shipped validation results, the report and the figures agree with the binary.

plots/results/ holds the raw CSVs of every run of docs/validation.md and the data
(.dat) of every figure in docs/img/validation/.  This test fails when

  - a sample of those runs (the cheapest of each experiment) no longer gives, with this
    build's tlbsim, the row the results hold: the model changed and the report was not
    regenerated (plots/report.sh, or plots/report.sh --only N);
  - the report redrawn from the shipped results (--reuse) differs from docs/validation.md,
    README's summary table or the figures' data: they were edited or drawn from other runs.

The same for the figures of README (plots/figures.sh): the time series behind
docs/img/munmap16-timeseries.png and the trace behind docs/img/munmap16-speedscope.png are
shipped in docs/img/data/, and a fresh run must give them again; the replicate figure's
20 runs are shipped too: the first seed of each preset is re-run, and the rest of its data
must follow from the shipped runs.

Usage: TLBSIM=build/tlbsim python3 -B tests/py/test_results.py
"""
import csv
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "plots"))

from validation import common, runner  # noqa: E402

TLBSIM = os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim"))
RESULTS = os.path.join(ROOT, "plots", "results")
# Runs per experiment re-run by the sample (the cheapest by their own counts).
SAMPLE = 2


def shipped_rows(module):
    with open(os.path.join(RESULTS, module.NAME + ".csv"), newline="") as f:
        return {row["key"]: row for row in csv.DictReader(f)}


def cost(row):
    """What a run costs, roughly: its accesses and events."""
    return int(row["accesses"]) + 100 * int(row["events"])


def sample():
    """(module, run, shipped row) for the cheapest SAMPLE runs of every experiment."""
    out = []
    for module in runner.EXPERIMENTS:
        rows = shipped_rows(module)
        runs = [r for r in runner.experiment_runs(module, False)
                if common.keystr(r.key) in rows and not r.per_cpu]
        runs.sort(key=lambda r: cost(rows[common.keystr(r.key)]))
        out += [(module, r, rows[common.keystr(r.key)]) for r in runs[:SAMPLE]]
    return out


def expect_shipped_row(test, argv, shipped, what, regenerate):
    """Runs argv (one tlbsim run) and checks its row is the shipped one, column by column."""
    p = subprocess.run(argv, capture_output=True, text=True)
    test.assertEqual(p.returncode, 0, p.stderr)
    got = next(csv.DictReader(p.stdout.splitlines()))
    for col, value in got.items():
        if col == "tlbsim_version":  # names the commit: changes with every one
            continue
        test.assertTrue(col in shipped, f"{what}: column {col} is new, the shipped file has "
                      f"none: regenerate with {regenerate}")
        test.assertEqual(value, shipped[col], f"{what}: column {col} is {value}, the shipped "
                         f"row says {shipped[col]}: regenerate with {regenerate}")


class Results(unittest.TestCase):
    def test_every_run_has_its_row(self):
        for module in runner.EXPERIMENTS:
            rows = shipped_rows(module)
            keys = {common.keystr(r.key) for r in runner.experiment_runs(module, False)}
            self.assertEqual(keys, set(rows), f"{module.NAME}: the runs and the shipped rows")

    def test_sampled_runs_give_the_shipped_rows(self):
        picked = sample()
        self.assertEqual(len(picked), SAMPLE * len(runner.EXPERIMENTS))
        for module, run, shipped in picked:
            expect_shipped_row(self, run.argv(TLBSIM), shipped,
                               f"{module.NAME} {run.command()}", "plots/report.sh")

    def test_report_redrawn_from_results_is_the_shipped_one(self):
        if not shutil.which("gnuplot"):
            self.skipTest("gnuplot is not installed")
        with tempfile.TemporaryDirectory(prefix="test_results.") as d:
            shutil.copytree(RESULTS, os.path.join(d, "plots", "results"))
            shutil.copy(os.path.join(ROOT, "README.md"), os.path.join(d, "README.md"))
            env = dict(os.environ, VALIDATE_OUTPUT_ROOT=d)
            p = subprocess.run([sys.executable, "-B", os.path.join(ROOT, "plots", "validate.py"),
                                "--reuse"], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            for rel in ["docs/validation.md", "README.md"]:
                self.assertTrue(filecmp.cmp(os.path.join(d, rel), os.path.join(ROOT, rel),
                                            shallow=False), f"{rel} differs from the redrawn one")
            for name in sorted(os.listdir(RESULTS)):
                self.assertTrue(filecmp.cmp(os.path.join(d, "plots", "results", name),
                                            os.path.join(RESULTS, name), shallow=False),
                                f"plots/results/{name} differs from the redrawn one")


REPLICATE_RUNS = os.path.join(ROOT, "docs", "img", "data", "munmap16-replicates-runs.csv")


class Figures(unittest.TestCase):
    def test_replicate_runs_come_from_the_binary(self):
        with open(REPLICATE_RUNS, newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 20)
        firsts = {}
        for row in rows:
            firsts.setdefault(row["policy"], row)
        self.assertEqual(sorted(firsts), ["linux-4.5", "linux-4.5-smt-dedup"])
        for policy, shipped in sorted(firsts.items()):
            argv = [TLBSIM, "-T", "haswell-i7", "-w", "munmap16", "-p", policy,
                    "--seed", shipped["seed"], "-q"]
            expect_shipped_row(self, argv, shipped, " ".join(argv[1:]), "plots/figures.sh")

    def test_timeline_figures_data_come_from_the_binary(self):
        with tempfile.TemporaryDirectory(prefix="test_figures.") as d:
            env = dict(os.environ, TLBSIM=TLBSIM, FIGURES_DATA_ONLY="1", FIGURES_OUT=d,
                       REPLICATES_RUNS=REPLICATE_RUNS)
            p = subprocess.run([os.path.join(ROOT, "plots", "figures.sh")], capture_output=True,
                               text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            shipped = os.path.join(ROOT, "docs", "img", "data")
            names = sorted(os.listdir(shipped))
            self.assertTrue(names)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "data"))), names)
            for name in names:
                self.assertTrue(filecmp.cmp(os.path.join(d, "data", name),
                                            os.path.join(shipped, name), shallow=False),
                                f"docs/img/data/{name} is not what the binary gives now: "
                                f"rerun plots/figures.sh")


if __name__ == "__main__":
    unittest.main()
