"""Tests of the kernel oracle (scripts/oracle/) that need no QEMU: the initramfs
archive is the newc format the kernel reads (checked against busybox cpio when
there is one), the guest's framed data port is split back into files, the
agreement rule, per-CPU counts compared by rank, and a full comparison of
recorded kernel output (tests/data/oracle/kernel/: three boots of pingpong,
munmap64p-r3 and madv-local) against this build's tlbsim, which must agree on
every counter and at every per-CPU rank.

Run: TLBSIM=build/tlbsim python3 -B tests/py/test_kernel_oracle.py (ctest passes the build's).
"""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "oracle"))
import compare  # noqa: E402
import guest  # noqa: E402
import kernel_oracle  # noqa: E402

TLBSIM = os.path.abspath(os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim")))
RECORDED = os.path.join(ROOT, "tests", "data", "oracle")


class CpioTest(unittest.TestCase):
    def test_newc_layout(self):
        c = guest.Cpio()
        c.dir("bin")
        c.file("bin/hello", b"hi\n")
        c.symlink("bin/sh", "busybox")
        data = gzip.decompress(c.finish())
        self.assertTrue(data.startswith(b"070701"))
        # Every header and body starts on a 4-byte boundary; the trailer ends it.
        self.assertIn(b"TRAILER!!!\0", data)
        self.assertEqual(len(data) % 4, 0)
        name_at = data.index(b"bin/hello\0")
        self.assertEqual((name_at - 110) % 4, 0)
        body_at = data.index(b"hi\n")
        self.assertEqual(body_at % 4, 0)

    @unittest.skipUnless(shutil.which("busybox"), "no busybox to read the archive back")
    def test_busybox_reads_it(self):
        c = guest.Cpio()
        c.dir("d")
        c.file("d/f", b"content\n", 0o644)
        with tempfile.TemporaryDirectory() as tmp:
            arc = os.path.join(tmp, "a.cpio")
            with open(arc, "wb") as f:
                f.write(gzip.decompress(c.finish()))
            out = subprocess.run(["busybox", "cpio", "-i", "-d", "-F", arc], cwd=tmp,
                                 capture_output=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            with open(os.path.join(tmp, "d", "f")) as f:
                self.assertEqual(f.read(), "content\n")


class DataPortTest(unittest.TestCase):
    def test_split(self):
        text = (f"noise\r\n{guest.BEGIN} s1 csv\r\na,b\r\n1,2\r\n{guest.END}\r\n"
                f"{guest.BEGIN} s1 status\n0\n{guest.END}\n{guest.BEGIN} s2 stderr\n{guest.END}\n")
        parts = guest.split_data(text)
        self.assertEqual(parts[("s1", "csv")], "a,b\n1,2\n")
        self.assertEqual(parts[("s1", "status")], "0\n")
        self.assertEqual(parts[("s2", "stderr")], "")

    def test_a_boot_counts_only_with_every_file_whole(self):
        scenarios = [{"name": "s1"}, {"name": "s2"}]
        whole = {("_", "uname"): "6.1\n", ("s1", "status"): "0\n",
                 ("s1", "csv"): "a,b\n1,2\n", ("s1", "percpu"): "cpu,x\n0,1\n1,2\n",
                 ("s2", "status"): "2\n"}
        self.assertTrue(kernel_oracle.complete(whole, scenarios))
        cut = dict(whole)
        cut[("s1", "percpu")] = "cpu,x\n0,1\n1"
        self.assertFalse(kernel_oracle.complete(cut, scenarios), "a row cut short")
        unfinished = dict(whole)
        del unfinished[("_", "uname")]
        self.assertFalse(kernel_oracle.complete(unfinished, scenarios), "no last file")
        missing = dict(whole)
        del missing[("s2", "status")]
        self.assertFalse(kernel_oracle.complete(missing, scenarios), "a scenario never ran")

    def test_unterminated_section_is_dropped(self):
        parts = guest.split_data(f"{guest.BEGIN} s1 csv\na,b\n")
        self.assertNotIn(("s1", "csv"), parts)


class ToleranceTest(unittest.TestCase):
    def test_rule(self):
        # Spread wider than 5%: the spread.
        self.assertEqual(compare.tolerance([250, 290, 270]), 40)
        # 5% of the median when the spread is narrower.
        self.assertAlmostEqual(compare.tolerance([1793, 1808, 1800]), 90.0)
        # Under 60: 3 counts.
        self.assertEqual(compare.tolerance([10, 10, 11]), 3)
        agrees, diff, _ = compare.verdict([256, 256, 256], [270, 270, 270])
        self.assertFalse(agrees)
        self.assertEqual(diff, 14)
        self.assertAlmostEqual(compare.tolerance([258, 266, 262]), 13.1)
        self.assertTrue(compare.verdict([256, 256, 256], [265, 262, 270])[0])

    def test_empty_column_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "tlb_remote_shootdown"):
            compare.count({"tlb_remote_shootdown": ""}, "tlb_remote_shootdown")


def per_cpu_rows(counts):
    """A run's per-CPU CSV rows, CPU i with counts[i] remote shootdowns."""
    return [{"cpu": str(cpu), compare.PER_CPU: str(n)} for cpu, n in enumerate(counts)]


class PerCpuRankTest(unittest.TestCase):
    def test_numbering_differs_but_ranks_agree(self):
        # The busy readers land on other CPUs each boot; sorted, the boots and
        # tlbsim's seeds are the same vector.
        kernel = compare.ranked([per_cpu_rows([0, 256, 256, 255]),
                                 per_cpu_rows([256, 255, 0, 256]),
                                 per_cpu_rows([256, 256, 255, 1])])
        sim = compare.ranked([per_cpu_rows([256, 0, 256, 256]),
                              per_cpu_rows([256, 256, 256, 0])])
        self.assertEqual(kernel[1], [256, 256, 255, 0])
        ranks = compare.rank_verdicts(kernel, sim)
        self.assertEqual([r["rank"] for r in ranks], [1, 2, 3, 4])
        self.assertEqual(compare.ranks_agreeing(ranks), (4, 4))
        # Sorted, the idle CPU's rank is tight (0, 0, 1: tolerance 3), where CPU 0
        # by number would span 0-256 and agree with anything.
        self.assertEqual(ranks[3]["kernel"], [0, 0, 1])
        self.assertEqual(ranks[3]["tolerance"], 3)

    def test_a_rank_that_differs(self):
        # The kernel spreads the work over every CPU; tlbsim leaves one idle.
        kernel = compare.ranked([per_cpu_rows([200, 200, 200, 200])] * 3)
        sim = compare.ranked([per_cpu_rows([0, 260, 270, 270])] * 3)
        ranks = compare.rank_verdicts(kernel, sim)
        self.assertEqual([r["agrees"] for r in ranks], [False, False, False, False])
        near = compare.ranked([per_cpu_rows([205, 0, 195, 200])] * 3)
        ranks = compare.rank_verdicts(kernel, near)
        self.assertEqual([r["agrees"] for r in ranks], [True, True, True, False])
        self.assertEqual(ranks[3]["diff"], -200)
        self.assertEqual(compare.ranks_agreeing(ranks), (3, 4))
        table = compare.per_cpu_table({0: 200, 1: 200, 2: 200, 3: 200},
                                      {0: 205, 1: 0, 2: 195, 3: 200}, ranks)
        self.assertIn("| verdict | agrees | agrees | agrees | **differs** |", table)

    def test_the_kernels_spread_at_a_rank_is_its_tolerance(self):
        # Rank 2 over boots: 100, 200, 150 (median 150, spread 100); tlbsim's
        # 240 is 60% off the median but within the spread.
        kernel = compare.ranked([per_cpu_rows([300, 100]), per_cpu_rows([200, 300]),
                                 per_cpu_rows([150, 300])])
        ranks = compare.rank_verdicts(kernel, compare.ranked([per_cpu_rows([240, 300])]))
        self.assertEqual(ranks[1]["kernel"], [100, 200, 150])
        self.assertEqual(ranks[1]["tolerance"], 100)
        self.assertTrue(ranks[1]["agrees"])
        ranks = compare.rank_verdicts(kernel, compare.ranked([per_cpu_rows([251, 300])]))
        self.assertFalse(ranks[1]["agrees"])

    def test_a_run_with_fewer_cpus_counts_zero_at_the_ranks_it_lacks(self):
        ranks = compare.rank_verdicts([[9, 8, 7]], [[9, 8]])
        self.assertEqual(ranks[2]["tlbsim"], [0])
        self.assertFalse(ranks[2]["agrees"])

    def test_ranks_stay_out_of_the_counter_total(self):
        line = {"agrees": True}
        results = [{"lines": [line, line], "ranks": [{"agrees": False}]},
                   {"lines": [line], "ranks": [{"agrees": True}, {"agrees": True}]}]
        self.assertEqual(compare.summary_counts(results), (3, 3))
        self.assertEqual(compare.summary_ranks(results), (1, 2))


@unittest.skipUnless(os.path.isdir(os.path.join(RECORDED, "kernel")), "no recorded kernel output")
class RecordedTest(unittest.TestCase):
    def test_report_from_recorded_kernel_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run")
            shutil.copytree(os.path.join(RECORDED, "kernel"), os.path.join(out, "kernel"))
            report = os.path.join(tmp, "report.md")
            names = sorted(f[:-4] for f in os.listdir(os.path.join(out, "kernel", "boot-1"))
                           if f.endswith(".csv") and not f.endswith(".percpu.csv"))
            boots = len([d for d in os.listdir(os.path.join(out, "kernel")) if d.startswith("boot-")])
            rc = kernel_oracle.main(["--recorded", "--tlbsim", TLBSIM, "--out", out,
                                     "--boots", str(boots), "--report", report, "--check",
                                     *names])
            # The recorded scenarios are ones tlbsim agrees on, count by count: a
            # change to the model that breaks that agreement fails here.
            self.assertEqual(rc, 0, "a counter no longer agrees with the recorded kernel")
            with open(report) as f:
                text = f.read()
            for name in names:
                self.assertIn(f"## {name}", text)
            for counter in compare.COUNTERS:
                self.assertIn(f"| {counter} |", text)
            n = len(names) * len(compare.COUNTERS)
            self.assertIn(f"**{n} of {n} counters agree.**", text)
            # And CPU by CPU, by rank: ranks are a line of their own, not counters.
            self.assertIn(f"**Per-CPU remote shootdowns, by rank: {len(names)} of {len(names)} "
                          "scenarios agree at every rank.**", text)
            self.assertIn("| per-CPU ranks agreeing |", text)
            self.assertIn("Per CPU, by rank: 8 of 8 ranks agree.", text)
            # tlbsim ran once per boot, on the qemu topology, with linux-6.1.
            rows = compare.read_rows(open(os.path.join(out, "tlbsim", "seed-1",
                                                       names[0] + ".csv")).read())
            self.assertEqual(rows[0]["policy"], "linux-6.1")
            self.assertTrue(rows[0]["topology"].startswith("qemu-x86-"))


if __name__ == "__main__":
    unittest.main()
