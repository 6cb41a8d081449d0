"""Tests of scripts/slurm-sweep.sh without Slurm: a small grid's array tasks run through GNU
parallel (--local) and merged must be the in-process `tlbsim sweep -o` CSV byte for byte; the
array ranges of big grids (--dry-run with a stand-in tlbsim that only emits N commands) respect
Slurm's MaxArraySize; bad arguments leave no job directory.

Run: TLBSIM=build/tlbsim python3 -B tests/py/test_slurm_sweep.py (ctest passes the build's).
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "slurm-sweep.sh")
TLBSIM = os.path.abspath(os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim")))

# 8 short munmap runs (1 MiB of file, a 1 ms tail, short CFS slices).
GRID = ["-T", "haswell-i7", "-w", "munmap",
        "--set", "workload.file_size=1M", "--set", "workload.tail_ms=1",
        "--set", "policy.sched.latency_ns=200000", "--set", "policy.sched.min_granularity_ns=50000",
        "--vary", "workload.threads=1,2", "--vary", "workload.pages_per_munmap=8,64,16,1"]

# A tlbsim that only emits $FAKE_RUNS commands (as --emit-commands would), for big grids.
FAKE = """#!/bin/sh
seq "$FAKE_RUNS" | sed 's/^/echo run /'
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tlbsim-slurm-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def slurm_sweep(self, *args, env=None):
        e = dict(os.environ, **(env or {}))
        e.pop("TLBSIM_DATADIR", None)
        return subprocess.run([SCRIPT, *args], cwd=self.tmp, env=e, capture_output=True,
                              text=True)

    def read(self, *path):
        with open(os.path.join(self.tmp, *path), "rb") as f:
            return f.read()


@unittest.skipUnless(shutil.which("parallel"), "GNU parallel is not installed")
class Local(Base):
    def test_merged_is_the_in_process_sweep(self):
        r = self.slurm_sweep("-k", "3", "-j", "2", "-d", "job", "-o", "merged.csv", "--local",
                             "--", TLBSIM, "sweep", *GRID)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("8 runs, 3 per task, 3 array tasks", r.stderr)
        subprocess.run([TLBSIM, "sweep", *GRID, "-q", "-j", "2", "-o", "ref.csv"], cwd=self.tmp,
                       check=True)
        merged, ref = self.read("merged.csv"), self.read("ref.csv")
        self.assertEqual(len(ref.splitlines()), 9, "a header and 8 rows")
        self.assertEqual(merged, ref)
        # Tasks of 3, 3 and 2 runs; task 0 has the header.
        rows = [len(self.read("job", "out", f"task-{i}.csv").splitlines()) for i in range(3)]
        self.assertEqual(rows, [4, 3, 2])
        self.assertIn(b"#SBATCH --array=0-2\n", self.read("job", "array.sbatch"))

        # A task without its CSV (failed, not run): the merge refuses and names it.
        os.remove(os.path.join(self.tmp, "job", "out", "task-1.csv"))
        m = subprocess.run(["sh", os.path.join(self.tmp, "job", "merge.sh")],
                           capture_output=True, text=True)
        self.assertEqual(m.returncode, 1)
        self.assertIn("tasks 1 have no CSV", m.stderr)
        self.assertEqual(self.read("merged.csv"), ref, "left as it was")
        # Run again (as Slurm would), it completes the merge.
        subprocess.run(["sh", os.path.join(self.tmp, "job", "task.sh"), "1"], check=True)
        subprocess.run(["sh", os.path.join(self.tmp, "job", "merge.sh")], check=True)
        self.assertEqual(self.read("merged.csv"), ref)

    def test_a_failing_run_fails_its_task(self):
        grid = [a.replace("8,64,16,1", "8,512") for a in GRID]  # 512 pages: over 1 MiB
        r = self.slurm_sweep("-k", "2", "-d", "job", "--local", "--", TLBSIM, "sweep", *grid)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"task 0: run 2 failed \(exit 2\)")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "job", "out", "task-0.csv")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "job", "sweep.csv")))


class DryRun(Base):
    def array(self, runs, k):
        """(--array range, stderr) of a dry run of RUNS commands at -k K."""
        fake = os.path.join(self.tmp, "fake-tlbsim")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, 0o755)
        job = f"job-{runs}-{k}"
        r = self.slurm_sweep("-k", str(k), "-d", job, "--dry-run", "--", fake, "sweep",
                             env={"FAKE_RUNS": str(runs), "PATH": "/nonexistent:/usr/bin:/bin"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.read(job, "commands.txt").splitlines()), runs)
        m = re.search(rb"^#SBATCH --array=(\S+)$", self.read(job, "array.sbatch"), re.M)
        return m.group(1).decode(), r.stderr

    def test_grid_of_100000_at_100_per_task(self):
        got, err = self.array(100000, 100)
        self.assertEqual(got, "0-999")
        self.assertNotIn("MaxArraySize", err)

    def test_k_raised_to_fit_max_array_size(self):
        got, err = self.array(100000, 1)
        self.assertEqual(got, "0-999")
        self.assertIn("-k 100, 1000 tasks", err)
        self.assertEqual(self.array(1001, 1)[0], "0-1000", "1001 tasks fit")
        self.assertEqual(self.array(1002, 1)[0], "0-500", "1002 need -k 2")

    def test_task_bodies(self):
        """Task 1 of 10 runs at -k 4 runs lines 5 to 8."""
        self.array(10, 4)
        subprocess.run(["sh", os.path.join(self.tmp, "job-10-4", "task.sh"), "1"], check=True)
        self.assertEqual(self.read("job-10-4", "out", "task-1.csv"), b"run 5\nrun 6\nrun 7\nrun 8\n")
        env = dict(os.environ, SLURM_ARRAY_TASK_ID="2")
        subprocess.run(["sh", os.path.join(self.tmp, "job-10-4", "task.sh")], env=env,
                       check=True)
        self.assertEqual(self.read("job-10-4", "out", "task-2.csv"), b"run 9\nrun 10\n")


class Refused(Base):
    def test_output_belongs_to_the_merge(self):
        r = self.slurm_sweep("--dry-run", "--", TLBSIM, "sweep", *GRID, "-o", "x.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("give it as slurm-sweep.sh -o", r.stderr)

    def test_bad_sweep_leaves_no_job_directory(self):
        r = self.slurm_sweep("--dry-run", "--", TLBSIM, "sweep", "-T", "haswell-i8", "-w",
                             "munmap", "--vary", "workload.threads=1,2")
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean", r.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_usage(self):
        for args in (["--", TLBSIM, "-T", "x"], ["-k", "0", "--", TLBSIM, "sweep"],
                     ["--bogus", "--", TLBSIM, "sweep"]):
            r = self.slurm_sweep(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr, args)


if __name__ == "__main__":
    unittest.main()
