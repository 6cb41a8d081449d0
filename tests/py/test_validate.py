"""Tests of the report package plots/validation/ (plots/validate.py): its arithmetic, tables
and verdicts on rows whose answer is known, its handling of tlbsim's CSV, and its failures
on bad input, run as a program.

docs/validation.md is only as right as these functions: a wrong MdAPE, knee or verdict
would be published without any C test noticing.  Run: python3 -B tests/py/test_validate.py
(ctest's test_plots_validate passes the build's tlbsim in TLBSIM).
"""
import math
import os
import shutil
import statistics
import unittest
from unittest import mock

from plots_support import (PACKAGE, ScriptTestCase, calibration, common, exp1, exp2, exp3,
                           exp4, exp5, exp7, real_tlbsim, runner)

HAS_GNUPLOT = shutil.which("gnuplot") is not None
# The fitted costs of experiment 2's machine, as its topology has them.
FIT_COSTS = calibration.fitted_costs(exp2.MACHINE)


def without_figures(cls):
    """No gnuplot, no files: only the text is checked (every experiment's plot() replaced)."""
    for module in runner.EXPERIMENTS:
        cls = mock.patch.object(module, "plot", lambda *args, **kwargs: None)(cls)
    return cls


def harness_row(ns_call, acc, ns_acc, op_count=64, **more):
    """A tlbsim row (strings, as csv gives them) whose harness figures are these."""
    row = {"phase_ns": str(ns_call * op_count), "op_count": str(op_count),
           "accesses_per_thread_ms": str(acc), "access_ns": str(ns_acc)}
    row.update({k: str(v) for k, v in more.items()})
    return row


def exp2_rows(invlpg_up_to=128):
    """Experiment 2's rows reproducing the published tables exactly; shift 2 INVLPGs
    ranges of up to INVLPG_UP_TO pages (the knee), shift -1 none."""
    rows = {}
    for run in exp2.runs(False):
        shift, t, n = run.key[-3:]  # ("1G", ...) and ("loop", ...) keys: the same cell
        _, ns_call, acc, ns_acc = exp2.PUB_B[(shift, t)][exp2.NS.index(n)]
        invlpg = shift >= 0 and n <= invlpg_up_to
        rows[common.keystr(run.key)] = harness_row(
            ns_call, acc, ns_acc, nr_tlb_local_flush_all=0 if invlpg else 64,
            nr_tlb_local_flush_one=64 * n if invlpg else 0)
    return rows


def published_spread():
    """The published shift 2 over shift -1 access rates above the knee (same code), in %,
    and the cells below the knee whose published change exceeds their largest size."""
    def change(t, i):
        p2, p1 = exp2.PUB_B[(2, t)][i][2], exp2.PUB_B[(-1, t)][i][2]
        return (p2 - p1) / p1 * 100
    cells = [(t, i) for t in (12, 24) for i, n in enumerate(exp2.NS)]
    noise = max(abs(change(t, i)) for t, i in cells if exp2.NS[i] > 128)
    clear = [(t, exp2.NS[i]) for t, i in cells
             if exp2.NS[i] <= 128 and abs(change(t, i)) > noise]
    return noise, clear


def published_helps():
    """Cells below the knee where the published shift 2 has the higher access rate."""
    return sum(exp2.PUB_B[(2, t)][i][2] > exp2.PUB_B[(-1, t)][i][2]
               for t in (12, 24) for i, n in enumerate(exp2.NS) if n <= 128)


class NumbersTest(unittest.TestCase):
    def test_ape_is_relative_to_the_published_value(self):
        self.assertEqual(common.ape(200, 150), 25.0)
        self.assertEqual(common.ape(200, 250), 25.0)
        self.assertEqual(common.ape(-200, -150), 25.0)
        self.assertEqual(common.ape(7, 7), 0.0)

    def test_mdape_is_the_median_and_nan_when_empty(self):
        self.assertEqual(common.mdape([1.0, 50.0, 3.0]), 3.0)
        self.assertEqual(common.mdape([1.0, 2.0, 3.0, 10.0]), 2.5)
        self.assertTrue(math.isnan(common.mdape([])))

    def test_harness_uses_alex_shis_integer_formulas(self):
        row = harness_row(0, 98765.4, 9.99, op_count=100)
        row["phase_ns"] = "12345678.9"
        self.assertEqual(common.harness(row), (12, 123456, 98765, 9))

    def test_fmt_groups_thousands_with_thin_spaces(self):
        self.assertEqual(common.fmt(1234567), "1\u2009234\u2009567")
        self.assertEqual(common.fmt(1234.567, 2), "1\u2009234.57")
        self.assertEqual(common.fmt(99.6), "100")
        self.assertEqual(common.fmt("as is"), "as is")
        self.assertEqual(common.fmt(None), "n/a")
        self.assertEqual(common.fmt(float("nan")), "n/a")

    def test_pct_and_signed(self):
        self.assertEqual(common.pct(12.345), "12.3%")
        self.assertEqual(common.pct(5, 0), "5%")
        self.assertEqual(common.pct(None), "n/a")
        self.assertEqual(common.pct(float("nan")), "n/a")
        self.assertEqual(common.signed(-3.21), "-3.2%")
        self.assertEqual(common.signed(4, 0), "+4%")

    def test_keystr_joins_tuple_keys_with_slashes(self):
        self.assertEqual(common.keystr((2, 12, 8)), "2/12/8")
        self.assertEqual(common.keystr(("1G", -1, 24, 512)), "1G/-1/24/512")
        self.assertEqual(common.keystr(64), "64")
        self.assertEqual(common.keystr("linux-4.19"), "linux-4.19")


class TablesTest(ScriptTestCase):
    def test_table_is_a_markdown_table(self):
        self.assertEqual(common.table(["a", "b"], [[1, 2], ["x", "y"]]),
                         "| a | b |\n|---|---|\n| 1 | 2 |\n| x | y |")

    def test_anchor_matches_githubs_heading_ids(self):
        s = common.Section(2, "`tlb_flushall_shift` 2 vs -1 on IvyBridge-EP (Alex Shi, 2013; "
                              "v3.11)", "")
        self.assertEqual(runner.anchor(s), "2-tlb_flushall_shift-2-vs--1-on-ivybridge-ep-"
                                           "alex-shi-2013-v311")
        s = common.Section(5, "Lazy TLB 'even lazier' (Rik van Riel, 2018)", "")
        self.assertEqual(runner.anchor(s), "5-lazy-tlb-even-lazier-rik-van-riel-2018")

    def test_section_markdown_and_figure(self):
        s = common.Section(3, "Title", "short")
        s.add("\nfirst\n")
        s.figure("exp3-x", "A caption")
        text = s.markdown()
        self.assertTrue(text.startswith("## 3. Title\n\nfirst\n\n![A caption]"
                                        "(img/validation/exp3-x.png)"))
        self.assertIn("([SVG](img/validation/exp3-x.svg))", text)
        self.assertEqual(s.figures, ["exp3-x"])

    @staticmethod
    def sections():
        plain = common.Section(1, "One", "first")
        plain.mdape, plain.verdict = 11.25, "agrees"
        custom = common.Section(2, "Two", "second")
        custom.mdape, custom.mdape_text, custom.verdict = 3.0, "7.0% ns/call", "knee"
        claim = common.Section(3, "Three", "third")
        claim.mdape_of, claim.verdict = "a claim, no cells", "best shift"
        return [plain, custom, claim]

    def test_summary_table_prefers_the_text_and_dashes_a_claim(self):
        lines = runner.summary_table(self.sections()).splitlines()
        self.assertEqual(lines[2], "| [1](docs/validation.md#1-one) | first | 11.2% | agrees |")
        self.assertEqual(lines[3], "| [2](docs/validation.md#2-two) | second | 7.0% ns/call | "
                                   "knee |")
        self.assertEqual(lines[4], "| [3](docs/validation.md#3-three) | third | "
                                   "\u2014 (a claim, no cells) | best shift |")

    def test_update_readme_replaces_only_between_the_markers(self):
        with mock.patch.object(runner, "README", os.path.join(self.tmp, "README.md")):
            before = f"# x\n\n{runner.README_BEGIN}\n| old |\n{runner.README_END}\n\nafter\n"
            with open(runner.README, "w") as f:
                f.write(before)
            runner.update_readme(self.sections())
            with open(runner.README) as f:
                text = f.read()
        self.assertEqual(text, f"# x\n\n{runner.README_BEGIN}\n"
                               f"{runner.summary_table(self.sections())}\n"
                               f"{runner.README_END}\n\nafter\n")

    def test_update_readme_leaves_a_readme_without_markers_or_none(self):
        readme = os.path.join(self.tmp, "README.md")
        with mock.patch.object(runner, "README", readme):
            runner.update_readme(self.sections())
            self.assertFalse(os.path.exists(readme))
            with open(readme, "w") as f:
                f.write("no markers\n")
            runner.update_readme(self.sections())
            with open(readme) as f:
                self.assertEqual(f.read(), "no markers\n")

    def test_write_doc_links_the_summary_to_its_own_sections(self):
        doc = os.path.join(self.tmp, "validation.md")
        sections = self.sections()
        with mock.patch.object(runner, "DOC", doc):
            runner.write_doc(sections, 42.4, 340, False)
        with open(doc) as f:
            text = f.read()
        self.assertIn("340 tlbsim runs", text)
        self.assertIn("\n42 s wall", text)
        self.assertIn("| [1](#1-one) | first |", text)
        self.assertNotIn("docs/validation.md#", text)
        self.assertTrue(text.endswith("\n".join(s.markdown() for s in sections)))


class RunsTest(unittest.TestCase):
    def test_argv_and_command(self):
        run = common.Run(1, "haswell-i7/linux-4.5", "haswell-i7", "munmap16", "linux-4.5",
                         ["workload.threads=4", "workload.tail_ms=1"], per_cpu=True)
        self.assertEqual(run.argv("/bin/tlbsim"), [
            "/bin/tlbsim", "-T", "haswell-i7", "-w", "munmap16", "-p", "linux-4.5",
            "--set", "workload.threads=4", "--set", "workload.tail_ms=1",
            "--per-cpu=" + os.path.join(common.OUT, "exp1-haswell-i7-linux-4.5-cpus.csv")])
        self.assertEqual(run.command(), "tlbsim -T haswell-i7 -w munmap16 -p linux-4.5 "
                                        "--set workload.threads=4 --set workload.tail_ms=1")

    def test_exp2_quarters_the_file_unless_full(self):
        sets = ["workload.threads=12", "workload.pages_per_munmap=64",
                "policy.tlb_flushall_shift=-1"]
        self.assertEqual(exp2.cell_sets(-1, 12, 64, True), sets)
        self.assertEqual(exp2.cell_sets(-1, 12, 64, False), sets + exp2.GRID)

    def test_exp2_runs_the_grid_the_checks_and_the_loop_what_if(self):
        runs = exp2.runs(False)
        keys = [common.keystr(r.key) for r in runs]
        self.assertEqual(len(keys), len(set(keys)))
        self.assertEqual(len(runs), 28 + len(exp2.CHECK_CELLS) + 1 + 10)
        loops = [r for r in runs if r.key[0] == "loop"]
        self.assertTrue(all(f"topology.costs.invlpg={exp2.LOOP_INVLPG}" in r.sets
                            for r in loops))
        # The what-if (ns/call only) runs at 128 MiB, beside one plain cell there to check it.
        self.assertTrue(all(r.sets[-3:-1] == exp2.EIGHTH for r in loops))
        eighth = [r for r in runs if r.key[0] == "128M"]
        self.assertEqual([r.key[1:] for r in eighth], [exp2.EIGHTH_CHECK])
        self.assertEqual(eighth[0].sets[-2:], exp2.EIGHTH)
        full = exp2.runs(True)
        self.assertEqual(len(full), 28 + 10)
        self.assertFalse(any("workload.file_size=128M" in r.sets for r in full))

    def test_cost_rank_starts_the_longest_munmap_runs_first(self):
        def munmap(n, t, size=None):
            sets = [f"workload.pages_per_munmap={n}", f"workload.threads={t}"]
            return common.Run(2, (n, t, size), "m", "munmap", "p",
                              sets + ([f"workload.file_size={size}"] if size else []))
        runs = [munmap(512, 12, "512M"), common.Run(5, "x", "m", "netperf-lazy", "p"),
                munmap(8, 12, "512M"), munmap(8, 24, "512M"), munmap(8, 24)]
        order = [r.key for r in sorted(runs, key=runner.cost_rank)]
        self.assertEqual(order, [(8, 24, None), (8, 24, "512M"), (8, 12, "512M"),
                                 (512, 12, "512M"), "x"])

    def test_i5_invlpg_is_the_3x_rule(self):
        self.assertFalse(exp3.i5_invlpg(-1, 8))
        self.assertTrue(exp3.i5_invlpg(0, 1024))
        self.assertFalse(exp3.i5_invlpg(0, 1025))
        self.assertTrue(exp3.i5_invlpg(2, 256))
        self.assertFalse(exp3.i5_invlpg(2, 257))

    def test_only_takes_known_experiment_numbers(self):
        self.assertEqual(runner.experiment_numbers("2,3"), {2, 3})
        self.assertEqual(runner.experiment_numbers(""), set())
        for bad in ("8", "0", "x", "2,three"):
            with self.assertRaises(runner.argparse.ArgumentTypeError):
                runner.experiment_numbers(bad)


class CsvTest(ScriptTestCase):
    """execute() on a fake tlbsim: how tlbsim's stdout and stderr become rows."""

    RUNS = [common.Run(2, (-1, 24, 512), "ivybridge-ep-2s", "munmap", "linux-3.11",
                       exp2.cell_sets(-1, 24, 512, True)),
            common.Run(2, "other", "haswell-i7", "munmap16", "linux-4.5")]

    def test_execute_parses_the_csv_and_keeps_the_last_summary_line(self):
        rows = common.execute(self.RUNS, self.fake_tlbsim, 2, progress=False)
        self.assertEqual(sorted(rows), [(2, "-1/24/512"), (2, "other")])
        cell = rows[(2, "-1/24/512")]
        self.assertEqual(cell["topology"], "ivybridge-ep-2s")
        self.assertEqual(cell["sets"], ";".join(exp2.cell_sets(-1, 24, 512, True)))
        self.assertEqual(float(cell["phase_ns"]) / int(cell["op_count"]), 49228)  # published
        self.assertEqual(cell["summary"], "fake summary ivybridge-ep-2s")
        self.assertEqual(rows[(2, "other")]["summary"], "fake summary haswell-i7")

    def test_execute_reports_every_failed_run_and_exits(self):
        with mock.patch.dict(os.environ, {"FAKE_TLBSIM_FAIL": "1"}):
            with self.assertRaises(SystemExit) as cm:
                common.execute(self.RUNS, self.fake_tlbsim, 2, progress=False)
        message = str(cm.exception.code)
        self.assertTrue(message.startswith("validate: runs failed:\n"))
        self.assertIn(self.RUNS[0].command() + ": exit 2\n"
                      "tlbsim: ivybridge-ep-2s.json: fake failure", message)
        self.assertIn(self.RUNS[1].command() + ": exit 2", message)

    def test_write_csv_and_read_csv_round_trip(self):
        rows = common.execute(self.RUNS, self.fake_tlbsim, 1, progress=False)
        with mock.patch.object(common, "OUT", self.tmp):
            common.write_csv("exp2-test", self.RUNS, rows)
            back = common.read_csv("exp2-test")
        with open(os.path.join(self.tmp, "exp2-test.csv")) as f:
            header = f.readline().rstrip("\r\n").split(",")
        self.assertEqual(header, ["key", "command", "topology", "workload", "policy", "sets",
                                  "phase_ns", "op_count", "summary"])
        self.assertEqual(sorted(back), ["-1/24/512", "other"])
        self.assertEqual(back["other"]["command"], self.RUNS[1].command())
        for run in self.RUNS:
            original = rows[(2, common.keystr(run.key))]
            self.assertEqual({k: v for k, v in back[common.keystr(run.key)].items()
                              if k not in ("key", "command")}, original)


@without_figures
class Exp2Test(unittest.TestCase):
    """Experiment 2 on rows that reproduce the published tables (or differ in known ways)."""

    def section(self, rows, fitted=frozenset()):
        s = exp2.section(rows, False, fitted, FIT_COSTS)
        return s, "\n\n".join(s.parts)

    def test_exact_reproduction_scores_zero_and_agrees_everywhere(self):
        s, text = self.section(exp2_rows())
        self.assertEqual(s.mdape, 0.0)
        helps = published_helps()
        noise, clear = published_spread()
        self.assertEqual(s.verdict, f"shift 2 helps the readers in {helps}/10 cells in tlbsim "
                                    f"(published {helps}/10); same sign in 10/10 cells for "
                                    f"acc/thread/ms ({len(clear)}/{len(clear)} where the "
                                    "published change exceeds the tables' own "
                                    f"{noise:.1f}% spread) and 10/10 for munmap ns/call; knee "
                                    "at 128/256 as published")
        self.assertIn("Largest of all 0.00% (within the 2% allowed)", text)

    def test_size_check_covers_every_t_shift_and_flush_and_flags_a_t_beyond_2_percent(self):
        """At each T of the grid: shift 2 INVLPGing, shift 2 and shift -1 flushing whole."""
        cells = {(sh, t) for sh, t, _ in exp2.CHECK_CELLS}
        self.assertEqual(cells, {(sh, t) for sh in (2, -1) for t in (12, 24)})
        for t in (12, 24):
            self.assertTrue(any(sh == 2 and t_ == t and n <= 128
                                for sh, t_, n in exp2.CHECK_CELLS), t)
            self.assertTrue(any(sh == 2 and t_ == t and n > 128
                                for sh, t_, n in exp2.CHECK_CELLS), t)
        rows = exp2_rows()
        sh, t, n = exp2.CHECK_CELLS[-1]  # T = 24: its 1 GiB ns/call 3% dearer
        big = rows[common.keystr(("1G", sh, t, n))]
        big["phase_ns"] = str(float(big["phase_ns"]) * 1.03)
        _, text = self.section(rows)
        self.assertIn("Largest difference per T: T = 12: ns/call 0.00%, acc/thread/ms 0.00%; "
                      "T = 24: ns/call 2.", text)
        self.assertIn("(NOT within the 2% allowed: the grid's cells at those T are not "
                      "trustworthy; run `--full`)", text)
        self.assertIn("| -1 | 24 | 512 | full |", text)

    def test_knee_follows_the_flush_counters(self):
        _, text = self.section(exp2_rows())
        self.assertIn("| 2 | 12 | 128 | 256 |", text)
        self.assertIn("| -1 | 24 | none | 8 |", text)
        s, text = self.section(exp2_rows(invlpg_up_to=32))
        self.assertIn("| 2 | 24 | 32 | 64 |", text)
        self.assertTrue(s.verdict.endswith("knee at 32/64 and 32/64 (published 128/256)"),
                        s.verdict)

    def test_opposite_access_rate_effects_disagree_in_direction(self):
        rows = exp2_rows()
        for t in (12, 24):
            for n in (n for n in exp2.NS if n <= 128):
                a, b = rows[f"2/{t}/{n}"], rows[f"-1/{t}/{n}"]
                a["accesses_per_thread_ms"], b["accesses_per_thread_ms"] = \
                    b["accesses_per_thread_ms"], a["accesses_per_thread_ms"]
        s, text = self.section(rows)
        self.assertIn(f"helps the readers in {10 - published_helps()}/10 cells in tlbsim",
                      s.verdict)
        noise, clear = published_spread()
        self.assertIn(f"same sign in 0/10 cells for acc/thread/ms (0/{len(clear)} where the "
                      f"published change exceeds the tables' own {noise:.1f}% spread) and 10/10",
                      s.verdict)
        t, n = clear[0]
        self.assertIn(f"tlbsim has the published sign in 0 of them (not in T = {t}, N = {n}: ",
                      text)

    def test_the_published_spread_comes_from_the_cells_above_the_knee(self):
        """Above the knee both shifts run the same code; their published difference is the
        yardstick, and only the cells below the knee that exceed it count as clear."""
        noise, clear = published_spread()
        s, text = self.section(exp2_rows())
        self.assertIn(f"differ by up to {noise:.1f}%. {len(clear)} of the 10 cells below", text)
        self.assertIn("| 24 | 512 | -14.2% | -14.2% |", text)
        self.assertEqual(len(clear), 7)
        self.assertIn("cannot be told from the noise: T = 12, N = 32 (+0.5%), T = 12, N = 128 "
                      "(-13.8%), T = 24, N = 16 (-1.9%).", text)

    def test_fitted_cells_are_marked_and_scored_apart(self):
        rows = exp2_rows()
        fitted = calibration.fitted_cells("ivybridge-ep-2s")
        for shift, t, n in fitted:  # the fit is 10% off, the held-out cells exact
            row = rows[common.keystr((shift, t, n))]
            row["phase_ns"] = str(float(row["phase_ns"]) * 1.1)
        s, text = self.section(rows)
        self.assertNotIn("| fitted |", text)
        self.assertNotIn("not fitted", s.mdape_text)
        s, text = self.section(rows, fitted)
        self.assertEqual(text.count("| fitted |"), len(fitted))
        self.assertIn("ns/call (0.0% on the 10 cells not fitted), 0.0% ns/access", s.mdape_text)
        self.assertIn("their MdAPE 10.0% is a fit, not a test", text)


class ReplacementBoundTest(unittest.TestCase):
    """Experiment 1's tree-PLRU paragraph: the figures it quotes come from its runs."""

    @staticmethod
    def rows(lru_acc, plru_acc, dedup_gain_lru, dedup_gain_plru):
        def row(acc, walks):
            return {"accesses": "1000", "page_walks": str(walks),
                    "accesses_per_thread_ms": str(acc)}
        return {
            exp1.key("linux-4.5", 1): row(lru_acc, 400),
            exp1.key("linux-4.5-smt-dedup", 1): row(lru_acc * dedup_gain_lru, 390),
            "haswell-i7/linux-4.5/tree_plru": row(plru_acc, 440),
            "haswell-i7/linux-4.5-smt-dedup/tree_plru": row(plru_acc * dedup_gain_plru, 430),
            "haswell-i7/smt-pair": row(1, 450), "haswell-i7/smt-pair/tree_plru": row(1, 464)}

    def test_quotes_the_runs_and_sets_every_tlb(self):
        text = exp1.replacement_text(self.rows(70000, 63000, 1.04, 1.03))
        n = len(exp1.tree_plru_sets("haswell-i7"))
        self.assertGreater(n, 1)
        self.assertIn(f"all {n} TLB structures", text)
        self.assertIn("walk on 44.0% of their accesses instead of 40.0%", text)
        fmt = common.fmt
        self.assertIn(f"make {fmt(63000)} accesses/thread/ms instead of {fmt(70000)}", text)
        self.assertIn("+3.0% instead of +4.0%", text)
        self.assertIn("walks on 46.4% with it, 45.0% with LRU", text)
        self.assertIn("moves this row by 10% and leaves the de-dup's gain", text)

    def test_says_when_the_policy_changes_the_de_dup_gain(self):
        text = exp1.replacement_text(self.rows(70000, 63000, 1.04, 1.10))
        self.assertIn("changes the de-dup's gain for the readers", text)


class SourceTest(unittest.TestCase):
    @staticmethod
    def package_files():
        """Every module of plots/validation/."""
        return sorted(os.path.join(PACKAGE, f) for f in os.listdir(PACKAGE) if f.endswith(".py"))

    def test_no_plain_string_holds_a_format_field(self):
        """A piece of report text written as "..." where f"..." was meant prints its
        {name:.0f} as is; docstrings aside, no plain string literal may hold one."""
        import ast
        import re
        field = re.compile(r"\{[A-Za-z_][A-Za-z_0-9]*(\[[^\]]*\])*(\.[A-Za-z_]+)*(:[^}]*)?\}")
        found = []
        for path in self.package_files():
            with open(path) as f:
                tree = ast.parse(f.read())
            docstrings = {id(node.value) for node in ast.walk(tree)
                          if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
            found += [(os.path.basename(path), node.lineno, node.value)
                      for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and id(node) not in docstrings and field.search(node.value)]
        self.assertEqual(found, [])
        self.assertIn(exp2.__file__, self.package_files())

    def test_imports_go_one_way(self):
        """common <- exp1 ... exp7 <- calibration <- runner: no module imports one that
        comes after it (so there is no cycle), and only the runner imports calibration."""
        import ast
        order = ["common"] + [f"exp{i}" for i in range(1, 8)] + ["calibration", "runner"]
        for path in self.package_files():
            name = os.path.basename(path)[:-3]
            if name == "__init__":
                continue
            with open(path) as f:
                tree = ast.parse(f.read())
            imported = {node.module or "" for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom) and node.level == 1}
            imported |= {a.name for node in ast.walk(tree)
                         if isinstance(node, ast.ImportFrom) and node.level == 1
                         and not node.module for a in node.names}
            imported.discard("")
            for other in imported:
                self.assertLess(order.index(other), order.index(name), f"{name} imports {other}")
            self.assertTrue(name == "runner" or "calibration" not in imported, name)


def s_verdict(text):
    """The mmtests verdict line of a section's text."""
    return next(line for line in text.split("\n\n") if line.startswith("Verdict (mmtests)"))


class FlushCostTest(unittest.TestCase):
    """Experiment 1: the time per received flush the readers' de-dup gain asks for."""

    def test_loss_per_flush_inverts_the_rate_model(self):
        # 10 flushes of 1 in a phase of 100 leave 90%, 5 leave 95%: the gain 0.95 / 0.9.
        self.assertAlmostEqual(exp1.loss_per_flush(100, 10, 100, 5, 0.95 / 0.9), 1.0)
        self.assertAlmostEqual(exp1.loss_per_flush(200, 10, 100, 2, 0.96 / 0.9), 2.0)

    def test_least_loss_lets_the_dedup_run_lose_nothing(self):
        # The sibling takes over all its partner loses (g = h): the de-dup run keeps 100%,
        # the 4.5 run 90% with 10 flushes of 1 in 100.
        self.assertAlmostEqual(exp1.least_loss_per_flush(100, 10, 1 / 0.9), 1.0)
        self.assertAlmostEqual(exp1.least_loss_per_flush(200, 10, 1 / 0.8), 4.0)

    def test_published_and_simulated_losses_come_from_their_figures(self):
        base, dedup = exp1.PUB_A["linux-4.5"], exp1.PUB_A["linux-4.5-smt-dedup"]
        def row(pub, scale, irq_ns):
            return {"cpus": "8", "phase_ns": str(pub["ms"] * 1e6),
                    "nr_tlb_remote_flush_received": str(pub["received"] * scale),
                    "accesses_per_thread_ms": str(pub["acc"]), "irq_ns": str(irq_ns),
                    "ipis_received": "1000"}
        rows = {}
        for seed in exp1.SEEDS:  # tlbsim receives half the flushes, as published
            rows[exp1.key("linux-4.5", seed)] = row(base, 0.5, 300000)
            rows[exp1.key("linux-4.5-smt-dedup", seed)] = row(dedup, 0.5, 300000)
        text = exp1.flush_cost_text(rows)
        gain = dedup["acc"] / base["acc"]
        h = (gain - 1) / (gain * base["received"] / 8 / (base["ms"] * 1e6)
                          - dedup["received"] / 8 / (dedup["ms"] * 1e6))
        fmt = common.fmt
        self.assertIn(f"give h = {fmt(h / 1000, 2)} us per received flush, about "
                      f"{fmt(h * 3.4)} cycles at 3.4 GHz", text)
        self.assertIn(f"gives {fmt(2 * h / 1000, 2)} us (median of the seeds: the handler, "
                      "0.30 us, plus", text)
        least = (gain - 1) * base["ms"] * 1e6 / (gain * base["received"] / 8)
        self.assertIn(f"({h * 3.4 / 600:.0f} times the topology's 600 cycles", text)
        self.assertIn(f"the 4.5 run's R and P, {fmt(least / 1000, 2)} us, {fmt(least * 3.4)} "
                      f"cycles, {least * 3.4 / 600:.0f} times", text)
        self.assertIn(f"{2 * h / least:.1f} times the least published h", text)
        self.assertIn(f"cost the interrupted reader {least * 3.4 / 600:.0f} times", text)

    def test_dropped_text_reads_the_published_misses_per_ms(self):
        def row(full, walks, phase_ms, acc, invalidated):
            return {"nr_tlb_local_flush_all": str(full), "page_walks": str(walks),
                    "phase_ns": str(phase_ms * 1e6), "accesses": str(walks * 2),
                    "accesses_per_thread_ms": str(acc), "tlb_entries_invalidated":
                    str(invalidated), "nr_tlb_remote_flush_received": "28672"}
        rows, seeded = {}, {}
        for pol, acc in (("linux-4.5", 1000), ("linux-4.5-smt-dedup", 1100)):
            seeded[pol] = []
            for seed in exp1.SEEDS:  # seeds 1 and 5 flush whole, as shipped
                full = 513 if seed in (1, 5) else 1
                rows[exp1.key(pol, seed)] = row(full, 430000 + seed, 1, acc, 100 * seed)
                seeded[pol].append({"full": full})
        text = exp1.dropped_text(rows, seeded)
        # Invalidated entries: the median of seeds 2, 3, 4, 6, 7 (the 4.5 runs).
        self.assertIn("in the 5 seeds without full flushes the 28\u2009672 received flushes of "
                      "a 4.5 run invalidate 400 TLB entries in all (median; the caller's own included), 0.01 "
                      "per received flush", text)
        self.assertIn("per ms of the measured phase they are 329 and 333 thousand (+1.3%", text)
        self.assertIn("2\u2009755\u2009036 fewer dTLB-load-misses, 169 per skipped flush", text)
        self.assertIn("stay within 0.0% (430-430 thousand) while their access rate varies by "
                      "10%", text)
        self.assertIn("tlbsim's from 50.0% to 50.0%", text)


@without_figures
class OtherSectionsTest(unittest.TestCase):
    """Experiments 3, 4 (mmtests), 5 and 7 on rows whose verdict is known."""

    def test_exp3_finds_the_balance_points_and_best_shifts(self):
        # INVLPG helps the readers up to 64 pages and the munmap below 50.
        rows = {}
        for n in exp2.NS:
            # 100 ns of walk loads over 70 walks at 1.4 GHz: 2.0 cycles a walk.
            walks = dict(irq_ns=1000, tlb_misses=10, page_walks=70, walk_load_ns=100)
            rows[f"0/{n}"] = harness_row(1000 + 10 * n, 1100 if n <= 64 else 900, 5, **walks)
            rows[f"-1/{n}"] = harness_row(1500, 1000, 5, **walks)
        rows["check/3/128"] = dict(rows["0/128"], key="check/3/128")
        rows["check/3/256"] = dict(rows["-1/256"], key="check/3/256")
        s = exp3.section(rows)
        self.assertEqual(s.verdict, "best shift by access rate 4 (excludes the published 1), "
                                    "by munmap time 5; balance point 64 (access rate) / 32 "
                                    "(munmap) vs published 256")
        self.assertIn("identical CSV rows", "\n".join(s.parts))
        self.assertIn("add 2.0 cycles or less to the average walk", "\n".join(s.parts))
        rows["check/3/256"]["irq_ns"] = "1001"
        self.assertIn("DIFFERENT rows", "\n".join(exp3.section(rows).parts))

    def test_mmtests_cost_averages_the_harness_integers_or_the_exact_costs(self):
        costs = [10.5 + i / 10 for i in range(len(exp4.MMTESTS_BANDS))]
        rows = {common.keystr(("mm", "m", "k", 2, n)): harness_row(1000, 1000, c)
                for n, c in zip(exp4.MMTESTS_BANDS, costs)}
        self.assertEqual(exp4.mmtests_cost(rows, "m", "k", 2), statistics.mean(
            int(c) for c in costs))
        self.assertAlmostEqual(exp4.mmtests_cost(rows, "m", "k", 2, exact=True),
                               statistics.mean(costs))

    @staticmethod
    def mmtests_rows():
        """mmtests rows in which each kernel INVLPGs as its rule says, 128 MiB in chunks."""
        rows = {}
        for run in exp4.mmtests_runs():
            _, machine, sim, t, n = run.key
            invlpg = sim != "linux-3.4" and n <= (256 if sim == "linux-3.11" else 128)
            calls = 32768 // n
            rows[common.keystr(run.key)] = harness_row(
                1000, 1000, 6.0, op_count=calls,
                nr_tlb_local_flush_one=calls * n if invlpg else 0, irq_ns=4000, ipis_received=2)
        return rows

    def test_mmtests_flush_bound_prices_the_bands_that_differ_at_the_dearest_costs(self):
        """Where the dearer kernel INVLPGs n pages, a band's cost grows by at most
        F x 350 n cycles / tail (the handlers are waited for); where it flushes whole, by
        F R / (tail - F R), R a refill of the 512-page working set at 45 cycles a walk."""
        rows = self.mmtests_rows()
        def band_rows(kernel, t=1):
            return exp4.band_rows(rows, "ivybridge-i3-3240", kernel, t)
        ghz, tail = 3.4, 10e6
        invlpg = sum(32768 // n * 350 * n / ghz / tail
                     for n in exp4.MMTESTS_BANDS if n <= 256) / 8 * 100
        self.assertAlmostEqual(exp4.mmtests_flush_bound(
            "ivybridge-i3-3240", band_rows("3.13-rc3"), band_rows("3.4.69")), invlpg)
        flush_all = common.topology_value("ivybridge-i3-3240", "costs", "flush_all")
        refill = (512 * 45 + flush_all) / ghz
        full = sum(32768 // n * refill / (tail - 32768 // n * refill)
                   for n in (160, 224)) / 8 * 100
        self.assertAlmostEqual(exp4.mmtests_flush_bound(
            "ivybridge-i3-3240", band_rows("3.13-rc7 shift 2"), band_rows("3.13-rc7")), full)
        # 3.13-rc3 and 3.13-rc7 are the same preset: the same runs.
        self.assertEqual(band_rows("3.13-rc3", 2), band_rows("3.13-rc7", 2))
        # The same kernel twice differs in no band.
        self.assertEqual(exp4.mmtests_flush_bound(
            "ivybridge-i3-3240", band_rows("3.4.69"), band_rows("3.4.69")), 0)

        s = common.Section("4", "t", "d")
        exp4.mmtests_part(s, rows)
        text = "\n\n".join(s.parts)
        self.assertIn(f"| ivybridge-i3-3240 | 3.13-rc3 vs 3.4.69 | 1 | +116.9% | "
                      f"{common.signed(invlpg)} | +0.0% |", text)
        # A published fall is bounded by the other kernel's largest rise, as a fall.
        rise = exp4.mmtests_flush_bound("ivybridge-i3-3240", band_rows("3.13-rc7", 3),
                                        band_rows("3.13-rc7 shift 2", 3))
        self.assertIn(f"| ivybridge-i3-3240 | 3.13-rc7 shift 2 vs 3.13-rc7 | 3 | -5.4% | "
                      f"{common.signed(-rise / (1 + rise / 100))} | +0.0% |", text)
        # Shift 2 is compared with its own 3.13-rc7 baseline only, never with 3.13-rc3.
        self.assertNotIn("shift 2 vs 3.13-rc3", text)
        # A published change of 0.0% has no sign (i3, T = 1: 10.50 and 10.50).
        self.assertIn("| ivybridge-i3-3240 | 3.13-rc7 shift 2 vs 3.13-rc7 | 1 | +0.0% | +0.0% "
                      "| n/a |", text)
        # The i3's regression at T = 2 (+13.6%) is within 16.9%; the i7's shift 2 at T = 2
        # and 5 (+3.5%, +3.8%) beyond a full flush's refills (+3.4%).
        self.assertIn("In 8 of the 14 cells the published change is larger than the flushes "
                      "can make at any sourced cost (ivybridge-i3-3240, 3.13-rc3 vs 3.4.69 at "
                      "T = 1, 3; ivybridge-i7-3770, 3.13-rc3 vs 3.4.69 at T = 1, 2, 3, 5; "
                      "ivybridge-i7-3770, 3.13-rc7 shift 2 vs 3.13-rc7 at T = 2, 5)", text)
        self.assertIn("nine releases apart", text)
        self.assertNotIn("twenty", text)
        self.assertNotIn("| 4 |", text.split("What the flushes can do at most")[1])
        self.assertIn("(in 6 of the 7 cells with a CPU per thread, more than the flushes can "
                      "make at any sourced cost)", s_verdict(text))
        # tlbsim changes nothing here (+0.0%): the published falls count as the same sign.
        self.assertIn("same sign in 9/11 (and 1 unchanged as published), 5 of the 7 with a CPU "
                      "per thread within what the flushes can make", s_verdict(text))
        # The published runs' own spread: 3.13-rc3 twice, and 3.13-rc7.
        self.assertIn("| ivybridge-i7-3770 | 3 | 6.59 | 8.86 | +34.4% | 9.36 | +42.0% |", text)

    def test_exp5_at_the_published_figures_has_no_error(self):
        def row(share, switch_mm, atomics, switches):
            # half of switch_mm time in atomics: the rest is one CR3 write per switch
            switch_ns = switch_mm * exp5.SKX_FLUSH_ALL * 2 / exp5.SKX_GHZ
            return {"phase_ns": str(switch_ns / (48 * share / 100)), "switch_mm_ns": str(switch_ns),
                    "switch_mm": str(switch_mm), "cpumask_atomics": str(atomics),
                    "context_switches": str(switches), "ipis_sent": "80", "op_count": "360"}
        old = row(1.9, 5000, 11712, 5000)
        # half the switches and half the switch_mm time: half the context-switch time
        s = exp5.section({"linux-4.19": old, "linux-4.20": row(0.95, 2500, 102, 2500)})
        self.assertAlmostEqual(s.mdape, 0.0, places=9)
        self.assertIn("| switch_mm share of CPU, 4.19 | 1.90% | 1.90% | 0.0% |\n"
                      "| share of it in cpumask atomics, 4.19 | 50.00% | 50.00% | 0.0% |\n"
                      "| context-switch CPU time, 4.20 over 4.19 ('roughly halved') | 50.00% | "
                      "50.00% | 0.0% |", s.parts[1])
        self.assertEqual(s.verdict, "direction agrees: 4.20 cuts context-switch CPU time by 50% "
                                    "(published: 'roughly halved'), switch_mm time by 50% and "
                                    "cpumask atomics from 11712 to 102")
        # Context switches alone do not halve it: the third row is then off.
        s = exp5.section({"linux-4.19": old, "linux-4.20": row(0.95, 50, 102, 5000)})
        self.assertNotIn("('roughly halved') | 50.00% | 50.00%", s.parts[1])
        self.assertNotIn("by 50% (published", s.verdict)

    def exp7_rows(self, loops):
        """Rows with these loops/s per cell; vanilla leaves 40% of the time to
        invalidation and INVLPGB alone 4%, no time at the locks."""
        rows = {}
        shares = {"linux-6.14": 40.0, "invlpgb": 4.0}
        for key, *_ in exp7.CELLS:
            common = {"ipis_sent": "1", "tlbi_broadcasts": "1", "op_ns_mean": "1000",
                      "lru_lock_acquisitions": "2", "lru_lock_ns": "0",
                      "mmap_lock_wait_ns": "0", "vma_lock_wait_ns": "0",
                      "page_faults": "2000", "vma_lock_abort": "10",
                      "vma_lock_acquisitions": "1990"}
            rows[key] = dict(common, op_per_sec=repr(loops[key]), op_count=str(int(loops[key])),
                             phase_ns="1000000000")
            # two faults per loop, all but 0.5% under the VMA lock
            n = int(loops[key])
            rows[key].update(page_faults=str(2 * n), vma_lock_abort=str(n // 100),
                             vma_lock_acquisitions=str(2 * n - n // 100))
            # one task's loop rate that leaves the share of the 36 tasks' time to invalidation
            share = shares.get(key, 0.0)
            rows[key + "/1"] = dict(common, op_count="1000", op_per_sec=repr(
                loops[key] / (36 * (1 - share / 100))))
        return rows

    def test_exp7_at_the_published_figures_has_no_error(self):
        published = {key: p for key, _, _, _, p in exp7.CELLS}
        s = exp7.section(self.exp7_rows(published))
        self.assertAlmostEqual(s.mdape, 0.0, places=9)
        self.assertEqual(s.parts[1].count("| 0.0% |"), 6)
        self.assertEqual(s.verdict, "4/4 effects as published: INVLPGB changes loops/s by "
                                    "+0% alone and +58% with the LRU fix (published +0%, "
                                    "+58%), the LRU fix by +39% alone (published +39%); "
                                    "loops/s are 1.0x the published")
        self.assertIn(f"Verdict: {s.verdict}.", s.parts)

    def test_exp7_an_invlpgb_gain_without_the_lru_fix_disagrees(self):
        loops = {key: p for key, _, _, _, p in exp7.CELLS}
        loops["invlpgb"] = loops["linux-6.14"] * 1.5  # published: no gain at all
        s = exp7.section(self.exp7_rows(loops))
        self.assertTrue(s.verdict.startswith("3/4 effects as published"), s.verdict)
        self.assertIn("| INVLPGB, without the LRU fix | +0.0% | +50.0% | no |",
                      "\n\n".join(s.parts))


    def test_exp7_states_the_vma_lock_lines_ceiling(self):
        """Two faults' locks per loop are four RMWs on the merged VMA's line: at
        amd-milan-36c's cross-CCD transfer the line serves clock / (4 x transfer)
        loops/s; the cells at 90% of it or more are named with their share."""
        ghz = common.topology_value("amd-milan-36c", "clock_ghz")
        transfer = common.topology_value("amd-milan-36c", "costs", "line_transfer", "socket")
        rmws = 2 * (2 - 0.01)
        ceiling = ghz * 1e9 / (rmws * transfer)
        loops = {key: p for key, _, _, _, p in exp7.CELLS}
        text = "\n\n".join(exp7.section(self.exp7_rows(loops)).parts)
        self.assertIn(f"{common.fmt(rmws, 2)} per loop", text)
        self.assertIn(f"serves at most {common.fmt(ceiling)} loops/s; no cell reaches 90%", text)
        self.assertIn("| faults that fell back to mmap_lock | 0.5% | 0.5% | 0.5% | 0.5% |", text)
        loops["invlpgb"] = loops["linux-6.15"] = 0.95 * ceiling
        text = "\n\n".join(exp7.section(self.exp7_rows(loops)).parts)
        self.assertIn("the INVLPGB only and both (6.15) cells run at 95%, 95% of that", text)


class ScriptTest(ScriptTestCase):
    """plots/validate.py run as a program, its outputs in a temporary directory."""

    def test_no_gnuplot_fails_before_running(self):
        proc = self.run_script("validate.py", "--tlbsim", self.fake_tlbsim,
                               env={"PATH": self.temporary_directory()})
        self.assertFailsCleanly(proc, "gnuplot not found (apt-get install gnuplot-nox)")

    def test_unknown_experiment_is_a_usage_error(self):
        proc = self.run_script("validate.py", "--only", "2,9")
        self.assertFailsCleanly(proc, "argument --only: not experiment numbers 1-7: 2,9", code=2)

    @unittest.skipUnless(HAS_GNUPLOT, "no gnuplot")
    def test_missing_tlbsim_fails_before_writing(self):
        missing = os.path.join(self.tmp, "no-such-tlbsim")
        proc = self.run_script("validate.py", "--tlbsim", missing)
        self.assertFailsCleanly(proc, f"no tlbsim at {missing} (build it, or set TLBSIM)")
        self.assertEqual(self.written_files(), [])

    @unittest.skipUnless(HAS_GNUPLOT, "no gnuplot")
    def test_reuse_without_csvs_does_not_write_an_empty_report(self):
        proc = self.run_script("validate.py", "--reuse")
        self.assertFailsCleanly(proc, "validate: no experiment CSVs in "
                                      f"{os.path.join(self.tmp, 'plots', 'results')}; run without "
                                      "--reuse first")
        self.assertEqual(self.written_files(), [])

    @unittest.skipUnless(HAS_GNUPLOT, "no gnuplot")
    def test_reuse_of_an_old_csv_names_the_missing_column(self):
        out = os.path.join(self.tmp, "plots", "results")
        os.makedirs(out)
        with open(os.path.join(out, "exp5-lazy-tlb.csv"), "w") as f:
            f.write("key,command,phase_ns\nlinux-4.19,tlbsim,1000\nlinux-4.20,tlbsim,1000\n")
        proc = self.run_script("validate.py", "--reuse")
        self.assertFailsCleanly(proc, f"validate: exp5-lazy-tlb.csv in {out} has no "
                                      "'switch_mm_ns' (written by an older tlbsim or "
                                      "validate.py?); rerun with --only 5")
        self.assertEqual(self.written_files(), ["plots/results/exp5-lazy-tlb.csv"])


class EndToEndTest(ScriptTestCase):
    """Short runs of the real tlbsim through validate.py."""

    def setUp(self):
        super().setUp()
        self.tlbsim = real_tlbsim()
        if not self.tlbsim:
            self.skipTest("no tlbsim binary (set TLBSIM)")

    def test_harness_agrees_with_tlbsims_own_summary_line(self):
        run = common.Run(1, "small", "haswell-i7", "munmap", "linux-4.5",
                         ["workload.file_size=2M", "workload.threads=4", "workload.tail_ms=1"])
        row = common.execute([run], self.tlbsim, 1, progress=False)[(1, "small")]
        self.assertEqual((row["topology"], row["workload"], row["policy"]),
                         ("haswell-i7", "munmap", "linux-4.5"))
        ms, ns_call, acc, cost = common.harness(row)
        self.assertEqual(row["summary"], f"munmap use {ms}ms {ns_call}ns/time, memory access "
                                         f"uses {acc} times/thread/ms, cost {cost}ns/time")

    @unittest.skipUnless(HAS_GNUPLOT, "no gnuplot")
    def test_experiment_5_writes_its_report_and_reuse_redraws_it(self):
        readme = os.path.join(self.tmp, "README.md")
        with open(readme, "w") as f:
            f.write(f"{runner.README_BEGIN}\n{runner.README_END}\n")
        proc = self.run_script("validate.py", "--tlbsim", self.tlbsim, "--only", "5")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("validate: no exp1-smt-dedup.csv yet, section left out", proc.stderr)
        self.assertEqual(self.written_files(), [
            "README.md", "docs/img/validation/exp5-lazy-tlb.png",
            "docs/img/validation/exp5-lazy-tlb.svg", "docs/validation.md",
            "plots/results/exp5-lazy-tlb-d.dat", "plots/results/exp5-lazy-tlb.csv"])
        with mock.patch.object(common, "OUT", os.path.join(self.tmp, "plots", "results")):
            rows = common.read_csv("exp5-lazy-tlb")
        self.assertEqual(sorted(rows), ["linux-4.19", "linux-4.20"])
        self.assertEqual(rows["linux-4.20"]["command"],
                         "tlbsim -T skylake-sp-2s-48 -w netperf-lazy -p linux-4.20")
        with open(readme) as f:
            self.assertIn("| [5](docs/validation.md#5-lazy-tlb-even-lazier-rik-van-riel-2018) "
                          "| lazy TLB 4.19 vs 4.20", f.read())
        with open(os.path.join(self.tmp, "docs", "img", "validation", "exp5-lazy-tlb.svg")) as f:
            self.assertNotIn(self.tmp, f.read())  # gnuplot's paths made relative
        report = self.report_body()
        self.assertIn("## 5. Lazy TLB 'even lazier'", report)

        proc = self.run_script("validate.py", "--reuse")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.report_body(), report)

    def report_body(self):
        """docs/validation.md from its summary on (the head has the run's wall time)."""
        with open(os.path.join(self.tmp, "docs", "validation.md")) as f:
            text = f.read()
        return text[text.index("## Summary"):]


if __name__ == "__main__":
    unittest.main(verbosity=2)
