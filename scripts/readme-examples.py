#!/usr/bin/env python3
"""Runs every shell example of README.md, so that none can drift from the binary.

Each ```sh block of README.md runs with bash (-e, pipefail) in a temporary directory where
`tlbsim` is the binary under test and `plots/`, `scripts/` are the source tree's. A block passes
when bash exits 0. An HTML comment on the line before a block's fence says how to run it:

  <!-- example: skip (REASON) -->         not run here (REASON says who runs it)
  <!-- example: shrink [K=V ...] -->      every tlbsim command (a line's, or the one after a
                                          wrapper's "--") gets --set K=V for each key it does
                                          not already set or vary (small and fast); the
                                          default keys make munmap and munmap16 short
  <!-- example: drop REGEX -->            lines matching REGEX are left out (they need hosts
                                          this machine does not have); repeatable in one comment
                                          as drop REGEX1 | drop REGEX2

`sbatch --array=1-N --wrap CMD` is emulated: the array's tasks run one after another with
SLURM_ARRAY_TASK_ID set, in a shuffled order as a cluster would finish them.

Usage: readme-examples.py TLBSIM [README]
       readme-examples.py --summary [README]   (print the summary line README's quick start shows)
"""
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Small files and short CFS slices: readers that crowd the CPUs then wait a
# fraction of a millisecond for their turn instead of 6 ms.
SHRINK = ["workload.file_size=8M", "workload.tail_ms=1", "policy.sched.latency_ns=200000",
          "policy.sched.min_granularity_ns=50000"]

SBATCH = r"""#!/usr/bin/env bash
# sbatch --array=1-N --wrap CMD, emulated: every array task, shuffled, one at a time.
set -euo pipefail
array="" wrap=""
while [ $# -gt 0 ]; do
	case "$1" in
	--array=*) array="${1#--array=}" ;;
	--wrap) wrap="$2"; shift ;;
	*) echo "sbatch (emulated): unsupported option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$array" ] && [ -n "$wrap" ] || { echo "sbatch (emulated): needs --array and --wrap" >&2; exit 2; }
for i in $(seq "${array%-*}" "${array#*-}" | shuf --random-source=<(yes)); do
	SLURM_ARRAY_TASK_ID=$i bash -c "$wrap"
done
"""


def blocks(readme):
    """(line, language, directive or '', text) of every fenced block."""
    text = open(readme).read()
    out = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        d = re.fullmatch(r"<!-- example: (.*) -->", before.strip())
        out.append((line, m.group(1), d.group(1) if d else "", m.group(2)))
    return out


def set_keys(command):
    """Keys a tlbsim command sets or varies already (workload.params.X counts as workload.X)."""
    keys = set()
    for m in re.finditer(r"--(?:set|vary)[ =]+'?([a-z_]+\.[A-Za-z0-9_.\[\]$]+)=", command):
        keys.add(m.group(1).replace("workload.params.", "workload."))
    return keys


def shrink(script, sets):
    """--set K=V appended to every tlbsim command (joined with its continuation lines)."""
    lines = script.replace("\\\n", " ").split("\n")
    out = []
    for line in lines:
        m = re.match(r"(\s*(?:\S.*?\s--\s+)?)(tlbsim\b.*?)(\s*(?:>|#|$).*)$", line)
        if m and not line.lstrip().startswith("#"):
            have = set_keys(m.group(2))
            extra = [f"--set {shlex.quote(s)}" for s in sets if s.split("=")[0] not in have]
            line = m.group(1) + m.group(2) + "".join(" " + e for e in extra) + m.group(3)
        out.append(line)
    return "\n".join(out)


def prepare(directive, script):
    """The script to run, or None to skip, from the block's directive."""
    if directive.startswith("skip"):
        return None
    for part in [p.strip() for p in directive.split("|") if p.strip()]:
        word, _, rest = part.partition(" ")
        if word == "shrink":
            script = shrink(script, rest.split() or SHRINK)
        elif word == "drop":
            script = "\n".join(l for l in script.split("\n") if not re.search(rest, l))
        else:
            raise SystemExit(f"readme-examples: unknown directive {part!r}")
    return script


def run_all(tlbsim, readme):
    failed = 0
    ran = 0
    for line, lang, directive, text in blocks(readme):
        if lang != "sh":
            continue
        script = prepare(directive, text)
        if script is None:
            print(f"README.md:{line}: skipped ({directive})")
            continue
        with tempfile.TemporaryDirectory(prefix="readme-example.") as d:
            bindir = os.path.join(d, ".bin")
            os.mkdir(bindir)
            os.symlink(os.path.abspath(tlbsim), os.path.join(bindir, "tlbsim"))
            with open(os.path.join(bindir, "sbatch"), "w") as f:
                f.write(SBATCH)
            os.chmod(os.path.join(bindir, "sbatch"), 0o755)
            for name in ("plots", "scripts"):
                os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
            p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=d, env=env,
                               capture_output=True, text=True)
            ran += 1
            if p.returncode != 0:
                failed += 1
                print(f"README.md:{line}: FAILED (exit {p.returncode})\n--- script:\n{script}\n"
                      f"--- stderr:\n{p.stderr[-3000:]}")
            else:
                print(f"README.md:{line}: ok")
    print(f"readme-examples: {ran} blocks run, {failed} failed")
    return 1 if failed or ran == 0 else 0


def summary(readme):
    """The line of the untagged block right after the quick start: munmap16's summary."""
    for _, lang, _, text in blocks(readme):
        if lang == "" and text.startswith("munmap use "):
            return text.strip()
    raise SystemExit("readme-examples: README has no quick-start summary block")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--summary":
        print(summary(args[1] if len(args) > 1 else os.path.join(ROOT, "README.md")))
        return 0
    if len(args) not in (1, 2):
        raise SystemExit(__doc__)
    return run_all(args[0], args[1] if len(args) > 1 else os.path.join(ROOT, "README.md"))


if __name__ == "__main__":
    sys.exit(main())
