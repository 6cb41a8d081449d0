"""Tests of the kernel oracle (scripts/oracle/) that need no QEMU: the initramfs
archive is the newc format the kernel reads (checked against busybox cpio when
there is one), the guest's framed data port is split back into files, the
agreement rule, and a full comparison of recorded kernel output
(tests/data/oracle/kernel/: three boots of pingpong, munmap64p-r3 and
madv-local) against this build's tlbsim, which must agree on every counter.

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
            # tlbsim ran once per boot, on the qemu topology, with linux-6.1.
            rows = compare.read_rows(open(os.path.join(out, "tlbsim", "seed-1",
                                                       names[0] + ".csv")).read())
            self.assertEqual(rows[0]["policy"], "linux-6.1")
            self.assertTrue(rows[0]["topology"].startswith("qemu-x86-"))


if __name__ == "__main__":
    unittest.main()
