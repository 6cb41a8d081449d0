"""Tests of scripts/tlbsim-completion.bash: sourced into bash, _tlbsim is called with COMP_WORDS
and COMP_CWORD as bash sets them (split at '=' like readline), and its COMPREPLY is checked:
options from --help, bundled names, --set and --vary keys from --list-keys, files.

Run: TLBSIM=build/tlbsim python3 -B tests/py/test_completion.py (ctest passes the build's).
"""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "tlbsim-completion.bash")
TLBSIM = os.environ.get("TLBSIM", os.path.join(ROOT, "build", "tlbsim"))

# Prints COMPREPLY one a line after _tlbsim; words come as arguments, the cursor on the last.
DRIVER = r"""
source "$SCRIPT"
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_tlbsim
printf '%s\n' "${COMPREPLY[@]}"
"""


def complete(*words, prog=TLBSIM, cwd=None, breaks=None):
    """COMPREPLY for the line PROG WORDS... (the last word under the cursor)."""
    env = dict(os.environ, SCRIPT=SCRIPT)
    env.pop("TLBSIM_DATADIR", None)
    driver = DRIVER if breaks is None else f"COMP_WORDBREAKS='{breaks}'\n" + DRIVER
    out = subprocess.run(["bash", "-c", driver, "bash", prog, *words], env=env, cwd=cwd,
                         check=True, capture_output=True, text=True).stdout
    return [line for line in out.split("\n") if line]


class Options(unittest.TestCase):
    def test_single_run_options(self):
        self.assertEqual(complete("--to"), ["--topology"])
        self.assertEqual(complete("--list-k"), ["--list-keys"])
        self.assertEqual(complete("--em"), [], "--emit-commands is the sweep's")

    def test_sweep_options(self):
        self.assertEqual(complete("sweep", "--em"), ["--emit-commands"])
        self.assertIn("--vary", complete("sweep", "--"))
        self.assertNotIn("--trace", complete("sweep", "--"))

    def test_subcommand(self):
        self.assertEqual(complete("sw"), ["sweep"])

    def test_on_the_path(self):
        with tempfile.TemporaryDirectory() as bin_dir:
            os.symlink(os.path.abspath(TLBSIM), os.path.join(bin_dir, "tlbsim"))
            path = bin_dir + os.pathsep + os.environ["PATH"]
            env = dict(os.environ, PATH=path)
            out = subprocess.run(["bash", "-c", DRIVER, "bash", "tlbsim", "-T", "haswell-i7-"],
                                 env=dict(env, SCRIPT=SCRIPT), check=True,
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(out, ["haswell-i7-smt-thread"])


class Names(unittest.TestCase):
    def test_topologies(self):
        got = complete("-T", "has")
        self.assertIn("haswell-i7", got)
        self.assertIn("haswell-i7-smt-thread", got)
        self.assertTrue(all(g.startswith("has") for g in got), got)

    def test_workloads_and_policies(self):
        self.assertEqual(complete("-w", "munmap1"), ["munmap16"])
        self.assertEqual(complete("--policy", "linux-4.5-"), ["linux-4.5-smt-dedup"])

    def test_after_equals(self):
        """--topology=has: bash splits at '=' and replaces only "has"."""
        self.assertIn("haswell-i7", complete("--topology", "=", "has"))
        self.assertIn("--topology=haswell-i7", complete("--topology=has", breaks=" \t\n"))

    def test_vary_names_after_a_comma(self):
        got = complete("sweep", "--vary", "topology", "=", "haswell-i7,haswell-i7-")
        self.assertEqual(got, ["haswell-i7,haswell-i7-smt-thread"])


class Keys(unittest.TestCase):
    def test_set_keys_of_the_inputs_on_the_line(self):
        self.assertEqual(complete("-T", "haswell-i7", "-w", "munmap16", "--set", "workload.thr"),
                         ["workload.threads="])
        got = complete("-T", "haswell-i7", "--set", "policy.single")
        self.assertEqual(got, ["policy.single_page_flush_ceiling="], "the default policy")

    def test_set_without_inputs_offers_the_kinds(self):
        self.assertEqual(complete("--set", "work"), ["workload."])

    def test_no_values(self):
        self.assertEqual(complete("-w", "munmap16", "--set", "workload.threads", "=", ""), [])

    def test_vary_keys(self):
        self.assertEqual(complete("sweep", "-w", "munmap16", "--vary", "workload.pag"),
                         ["workload.pages_per_munmap="])
        self.assertEqual(complete("sweep", "--vary", "pol"), ["policy.", "policy="])


class Files(unittest.TestCase):
    def test_output_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, "out.csv"), "w").close()
            self.assertEqual(complete("-o", "ou", cwd=tmp), ["out.csv"])
            self.assertEqual(complete("--trace", "o", cwd=tmp), ["out.csv"])
            self.assertEqual(complete("--seed", "o", cwd=tmp), [], "a number, not a file")


if __name__ == "__main__":
    unittest.main()
