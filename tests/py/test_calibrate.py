"""Tests of the fit (plots/validation/calibration.py, run as plots/calibrate.py): the
least-squares solve, the Gauss-Newton fit on a model whose answer is known, the rewrite of a
topology's fitted costs, and its failures on bad input, run as a program.

The real fit takes about 10 minutes of tlbsim runs; here tlbsim is replaced by a model
(in-process) or by tests/py/fake_tlbsim.py (as a program, for a few runs), both linear in
the three costs and exact at fake_tlbsim.TRUE_COSTS.  Run: python3 -B tests/py/test_calibrate.py
"""
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import unittest
from unittest import mock

import fake_tlbsim
from plots_support import ROOT, ScriptTestCase, calibration

MACHINE = "ivybridge-ep-2s"
CELLS = calibration.FITS[MACHINE]["cells"]


def linear_model(cells, values):
    """ns/call of each cell as fake_tlbsim gives it, without running it."""
    return [fake_tlbsim.ns_per_call(dict(
        {"policy.tlb_flushall_shift": shift, "workload.threads": t,
         "workload.pages_per_munmap": n},
        **{f"topology.costs.{k}": round(v) for k, v in values.items()}))
        for shift, t, n in cells]


class CellsTest(unittest.TestCase):
    def test_fitted_cells_are_the_14_shift_minus_1_cells(self):
        self.assertEqual(calibration.fitted_cells(MACHINE),
                         {(-1, t, n) for t in (12, 24) for n in calibration.NS})
        self.assertEqual(len(CELLS), 14)
        self.assertEqual(calibration.fitted_cells("haswell-i7"), set())

    def test_published_ns_call_reads_part_2_b(self):
        self.assertEqual(calibration.published_ns_call((-1, 12, 8)), 14815)
        self.assertEqual(calibration.published_ns_call((-1, 24, 512)), 49228)
        self.assertEqual(calibration.published_ns_call((2, 12, 128)), 44421)


class SolveTest(unittest.TestCase):
    def test_square_system(self):
        a = [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]
        x = [1.0, -2.0, 3.0]
        b = [sum(r * v for r, v in zip(row, x)) for row in a]
        for got, want in zip(calibration.solve(a, b), x):
            self.assertAlmostEqual(got, want)

    def test_overdetermined_system_is_least_squares(self):
        xs, ys = [0.0, 1.0, 2.0, 3.0, 4.0], [1.0, 2.9, 5.2, 7.1, 8.8]
        # the regression line: slope = Sxy / Sxx = 19.8 / 10, through (mean x, mean y) = (2, 5)
        got = calibration.solve([[1.0, x] for x in xs], ys)
        self.assertAlmostEqual(got[0], 5.0 - 1.98 * 2)
        self.assertAlmostEqual(got[1], 1.98)


class FitTest(unittest.TestCase):
    """fit() with simulate() replaced by a model: no tlbsim, no topology file read."""

    START = {"vma_op": 23418.0, "ipi_send": 805.0, "pte_op": 41.0}

    def fit(self, model, steps=3):
        calls = []

        def simulate(machine, cells, values, tlbsim, jobs):
            calls.append(dict(values))
            return model(cells, values)
        with mock.patch.object(calibration, "simulate", simulate), \
                mock.patch.object(calibration, "current_values", lambda m, p: dict(self.START)):
            return calibration.fit(MACHINE, "unused", 1, steps), calls

    def test_linear_model_is_solved_in_one_step(self):
        (values, mdape, cells), calls = self.fit(linear_model)
        self.assertEqual(values, fake_tlbsim.TRUE_COSTS)
        self.assertEqual(mdape, 0.0)
        self.assertEqual(cells, [(c, calibration.published_ns_call(c),
                                  calibration.published_ns_call(c)) for c in CELLS])
        # step 1 jumps there, step 2 stays: its base run is the result, no final run
        self.assertEqual(len(calls), 2 * (1 + len(self.START)))
        self.assertEqual(calls[4], fake_tlbsim.TRUE_COSTS)

    def test_probes_move_one_cost_at_a_time(self):
        _, calls = self.fit(linear_model)
        probes = calibration.FITS[MACHINE]["params"]
        for call, (k, delta) in zip(calls[1:4], probes.items()):
            self.assertEqual(call, dict(self.START, **{k: self.START[k] + delta}))

    def test_unconverged_fit_reports_its_final_run(self):
        def curved(cells, values):  # not linear: one step cannot land on the answer
            return [s * (1 + ((values["vma_op"] - 30000) / 30000) ** 2)
                    for s in linear_model(cells, values)]
        (values, mdape, cells), calls = self.fit(curved, steps=1)
        self.assertEqual(len(calls), 1 + len(self.START) + 1)  # one step, then the final run
        self.assertEqual(calls[-1], values)
        self.assertEqual([sim for _, _, sim in cells], curved(CELLS, values))
        self.assertAlmostEqual(mdape, statistics.median(
            abs(sim - pub) / pub * 100 for _, pub, sim in cells))
        start_error = statistics.median(abs(s - p) / p * 100 for s, p in zip(
            curved(CELLS, self.START), (calibration.published_ns_call(c) for c in CELLS)))
        self.assertLess(mdape, start_error)


class SimulateTest(ScriptTestCase):
    def test_simulate_runs_each_cell_with_the_rounded_costs(self):
        values = {"vma_op": 30000.4, "ipi_send": 699.6, "pte_op": 51.0}
        cells = [(-1, 24, 512), (-1, 12, 8)]
        got = calibration.simulate(MACHINE, cells, values, self.fake_tlbsim, 2)
        self.assertEqual(got, [49228 + 512, 14815 + 8])  # pte_op 51: one cycle more per page


class TopologyFileTest(ScriptTestCase):
    """current_values() and write() on a copy of the machine's topology."""

    def setUp(self):
        super().setUp()
        shutil.copy(os.path.join(ROOT, "topologies", MACHINE + ".json"), self.tmp)
        patch = mock.patch.object(calibration, "TOPOLOGIES", self.tmp)
        patch.start()
        self.addCleanup(patch.stop)
        self.path = os.path.join(self.tmp, MACHINE + ".json")

    def costs(self):
        with open(self.path) as f:
            return json.load(f)["costs"]

    def test_current_values_reads_the_costs(self):
        costs = self.costs()
        self.assertEqual(calibration.current_values(MACHINE, ["pte_op", "vma_op"]),
                         {"pte_op": float(costs["pte_op"]["value"]),
                          "vma_op": float(costs["vma_op"]["value"])})

    def test_fitted_costs_are_the_topologys_values_in_whole_cycles(self):
        costs = self.costs()
        self.assertEqual(calibration.fitted_costs(MACHINE),
                         {k: int(costs[k]["value"]) for k in calibration.FITS[MACHINE]["params"]})
        with open(self.path) as f:
            text = f.read()
        with open(self.path, "w") as f:
            f.write(text.replace('"pte_op": {"value": ', '"pte_op": {"value": 1', 1))
        self.assertEqual(calibration.fitted_costs(MACHINE)["pte_op"],
                         int("1" + str(costs["pte_op"]["value"])))

    def test_write_replaces_values_and_keeps_the_original_source_once(self):
        before = self.costs()
        with open(self.path) as f:
            lines_before = f.read().splitlines()
        values = {"vma_op": 30000.0, "ipi_send": 700.0, "pte_op": 50.0}
        for _ in range(2):  # a second fit must not nest "it was fitted ..., it was ..."
            calibration.write(MACHINE, values, 1.25)
        after = self.costs()
        for k, v in values.items():
            self.assertEqual(after[k]["value"], v)
            source = after[k]["source"]
            self.assertTrue(source.startswith("fitted by plots/calibrate.py to references.md, "
                                              "'Published measurements: tlb_flushall_shift "
                                              "tables (Alex Shi, 2013)', shift -1"))
            self.assertIn("(MdAPE 1.2% on those cells)", source)
            self.assertEqual(source.count("fitted by"), 1)
            original = before[k]["source"].split("; it was ", 1)[-1]
            self.assertTrue(source.endswith("; it was " + original))
        self.assertEqual({k: v for k, v in after.items() if k not in values},
                         {k: v for k, v in before.items() if k not in values})
        with open(self.path) as f:
            lines_after = f.read().splitlines()
        changed = [i for i, (a, b) in enumerate(zip(lines_before, lines_after)) if a != b]
        self.assertEqual((len(lines_after), len(changed)), (len(lines_before), len(values)))

    def test_write_refuses_a_cost_that_is_not_on_one_line(self):
        with open(self.path, "w") as f:
            json.dump({"costs": {"vma_op": {"value": 1, "source": "s"}}}, f, indent=4)
        with self.assertRaises(SystemExit) as cm:
            calibration.write(MACHINE, {"vma_op": 2.0}, 1.0)
        self.assertEqual(str(cm.exception.code),
                         f"calibrate: no one-line cost vma_op in {self.path}")


class MainTest(unittest.TestCase):
    """main() in-process, tlbsim's runs replaced by the model (SimulateTest runs them): over
    a hundred runs of the fake, one Python start each, took 10-30 s on the shared machine."""

    def test_main_prints_the_fitted_costs_and_every_cell(self):
        argv = ["calibrate.py", "--tlbsim", sys.executable, MACHINE]  # an executable, never run
        out, err = io.StringIO(), io.StringIO()

        def simulate(machine, cells, values, tlbsim, jobs):
            return linear_model(cells, values)
        with mock.patch.object(sys, "argv", argv), \
                mock.patch.object(calibration, "simulate", simulate), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            calibration.main()
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], f"{MACHINE}: vma_op 30000, ipi_send 700, pte_op 50; "
                                   "MdAPE 0.0% on the fitted cells")
        self.assertEqual(len(lines), 1 + len(CELLS))
        self.assertEqual(lines[1], "  shift -1 T 12 N   8: published  14815 tlbsim    14815 "
                                   "(+0.0%)")
        self.assertTrue(all(line.endswith("(+0.0%)") for line in lines[1:]))
        self.assertIn(f"{MACHINE} step 1: MdAPE ", err.getvalue())


class ScriptTest(ScriptTestCase):
    """plots/calibrate.py run as a program (never with --write)."""

    def test_missing_tlbsim(self):
        missing = os.path.join(self.tmp, "no-such-tlbsim")
        proc = self.run_script("calibrate.py", "--tlbsim", missing, MACHINE)
        self.assertFailsCleanly(proc, f"calibrate: no tlbsim at {missing} (build it, or set "
                                      "TLBSIM)")

    def test_unknown_machine_fails_before_any_fit(self):
        proc = self.run_script("calibrate.py", "--tlbsim", self.fake_tlbsim, MACHINE, "haswell-i7")
        self.assertFailsCleanly(proc, "calibrate: no fit for haswell-i7 (have: ivybridge-ep-2s)")
        self.assertNotIn("step", proc.stderr)

    def test_failing_tlbsim_runs_are_reported(self):
        proc = self.run_script("calibrate.py", "--tlbsim", self.fake_tlbsim, MACHINE,
                               env={"FAKE_TLBSIM_FAIL": "1"})
        self.assertFailsCleanly(proc, "validate: runs failed:\ntlbsim -T ivybridge-ep-2s -w "
                                      "munmap -p linux-3.11")
        self.assertIn(": exit 2\ntlbsim: ivybridge-ep-2s.json: fake failure", proc.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
