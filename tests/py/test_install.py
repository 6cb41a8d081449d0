"""Test of `cmake --install`: the build installed into a temporary prefix, the installed tlbsim
runs from / on its installed data (not the source tree's, which stays where it is), and the man
page and the bash completion are installed and work.

Run: python3 -B tests/py/test_install.py BUILD_DIR   (ctest passes its build directory)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD = None
# A small run: munmap16 with 1 MiB instead of 1 GiB of file, a 1 ms tail and short CFS slices
# (the readers that crowd the CPUs wait a fraction of a millisecond for their turn): 0.2 s of
# CPU instead of 4 s.
SMALL = ["-w", "munmap16", "--set", "workload.file_size=1M", "--set", "workload.tail_ms=1",
         "--set", "policy.sched.latency_ns=200000",
         "--set", "policy.sched.min_granularity_ns=50000", "-q"]


def env():
    e = dict(os.environ, LC_ALL="C")
    e.pop("TLBSIM_DATADIR", None)
    return e


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tlbsim-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix], check=True,
                       capture_output=True)
        cls.tlbsim = os.path.join(cls.prefix, "bin", "tlbsim")
        cls.data = os.path.join(cls.prefix, "share", "tlbsim")
        # A topology only the installed data have: found by bare name, it proves they are used.
        with open(os.path.join(cls.data, "topologies", "haswell-i7.json")) as f:
            topology = json.load(f)
        topology["name"] = "install-only"
        with open(os.path.join(cls.data, "topologies", "install-only.json"), "w") as f:
            json.dump(topology, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_tlbsim(self, *args):
        return subprocess.run([self.tlbsim, *args], cwd="/", env=env(), capture_output=True,
                              text=True)

    def test_runs_from_root(self):
        r = self.run_tlbsim("-T", "haswell-i7", *SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertTrue(lines[0].startswith("topology,"), lines[0])
        self.assertTrue(lines[1].startswith("haswell-i7,munmap16,linux-4.5,"), lines[1])

    def test_installed_data_are_used(self):
        r = self.run_tlbsim("-T", "install-only", *SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.splitlines()[1].startswith("install-only,"), r.stdout)
        listing = self.run_tlbsim("--list-topologies")
        self.assertIn("install-only", listing.stdout.split())
        # A bundled name resolves to the installed file, as its error message shows.
        bad = self.run_tlbsim("-T", "haswell-i7", *SMALL, "--set", "topology.sockets=0")
        self.assertEqual(bad.returncode, 2)
        self.assertIn(os.path.join(self.data, "topologies", "haswell-i7.json"), bad.stderr)

    def test_version_names_the_commit(self):
        built = subprocess.run([os.path.join(BUILD, "tlbsim"), "--version"], check=True,
                               capture_output=True, text=True).stdout
        self.assertEqual(self.run_tlbsim("--version").stdout, built)
        self.assertRegex(built, r"^tlbsim \d+\.\d+\.\d+ \(([0-9a-f]{7}(-dirty)?|unknown)\)\n$")

    def test_man_page(self):
        page = os.path.join(self.prefix, "share", "man", "man1", "tlbsim.1")
        with open(page) as f:
            text = f.read()
        for section in ("NAME", "SYNOPSIS", "OPTIONS", "SWEEP", "EXIT STATUS", "ENVIRONMENT",
                        "FILES", "EXAMPLES"):
            self.assertIn(f"\n.SH {section}\n", text)
        self.assertIn("\\-\\-list\\-keys", text, "the options come from --help")
        if shutil.which("groff"):
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                               capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_completion(self):
        script = os.path.join(self.prefix, "share", "bash-completion", "completions", "tlbsim")
        driver = ('source "$1"; COMP_WORDS=("$2" -T install-o); COMP_CWORD=2; _tlbsim; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        out = subprocess.run(["bash", "-c", driver, "bash", script, self.tlbsim], cwd="/",
                             env=env(), check=True, capture_output=True, text=True).stdout
        self.assertEqual(out.split(), ["install-only"])


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
