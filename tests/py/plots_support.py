"""What the tests of plots/*.py share: the package's modules, a fake tlbsim, script runs.

The report (plots/validation/, run as plots/validate.py) writes plots/results/, docs/ and
README.md of the source tree unless VALIDATE_OUTPUT_ROOT names another directory.  It is
set to a scratch directory before the import (so a test that forgets to redirect a path
still cannot touch the tree) and to each test's own directory for script runs.  No
bytecode is written either: no __pycache__ is left in plots/ (run the tests with -B).
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
TESTS_PY = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(TESTS_PY))
PLOTS = os.path.join(ROOT, "plots")
PACKAGE = os.path.join(PLOTS, "validation")
FAKE_TLBSIM = os.path.join(TESTS_PY, "fake_tlbsim.py")

_SCRATCH = tempfile.mkdtemp(prefix="tlbsim-plots-test-")
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
os.environ["VALIDATE_OUTPUT_ROOT"] = _SCRATCH
sys.path.insert(0, PLOTS)
from validation import (calibration, common, exp1, exp2, exp3, exp4, exp5, exp6,  # noqa: E402
                        exp7, runner)

__all__ = ["calibration", "common", "exp1", "exp2", "exp3", "exp4", "exp5", "exp6", "exp7",
           "runner", "PACKAGE", "ScriptTestCase", "make_fake_tlbsim", "real_tlbsim"]


def real_tlbsim():
    """The build's tlbsim (ctest passes it in TLBSIM), or None when there is none."""
    path = os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim"))
    return path if os.access(path, os.X_OK) else None


def make_fake_tlbsim(directory):
    """An executable DIRECTORY/tlbsim running fake_tlbsim.py (the scripts want an executable);
    -S: it needs no site packages, which only slow each start."""
    path = os.path.join(directory, "tlbsim")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" -S -B "{FAKE_TLBSIM}" "$@"\n')
    os.chmod(path, 0o755)
    return path


class ScriptTestCase(unittest.TestCase):
    """A test with its own temporary directory self.tmp, which also takes the scripts'
    outputs, and a fake tlbsim, self.fake_tlbsim, outside it."""

    def setUp(self):
        self.tmp = self.temporary_directory()
        self.fake_tlbsim = make_fake_tlbsim(self.temporary_directory())

    def temporary_directory(self):
        """A new directory, removed after the test."""
        tmp = tempfile.TemporaryDirectory(prefix="tlbsim-plots-test-")
        self.addCleanup(tmp.cleanup)
        return tmp.name

    def run_script(self, script, *args, env=None):
        """Runs plots/SCRIPT (validate.py or calibrate.py) as a program, its outputs
        redirected to self.tmp."""
        full_env = dict(os.environ, VALIDATE_OUTPUT_ROOT=self.tmp, PYTHONDONTWRITEBYTECODE="1")
        full_env.update(env or {})
        return subprocess.run([sys.executable, os.path.join(PLOTS, script), *args],
                              env=full_env, capture_output=True, text=True, timeout=120)

    def assertFailsCleanly(self, proc, message, code=1):
        """Exit code CODE, MESSAGE on stderr, and no Python traceback."""
        self.assertEqual(proc.returncode, code, proc.stderr)
        self.assertIn(message, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def written_files(self):
        """Every file under self.tmp, relative to it (directories alone do not count)."""
        return sorted(os.path.relpath(os.path.join(d, f), self.tmp)
                      for d, _, files in os.walk(self.tmp) for f in files)
