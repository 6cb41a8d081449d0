#!/bin/sh
# Regenerates the validation report: runs every experiment of
# docs/validation.md through tlbsim (two at a time), writes the raw CSVs to
# plots/results/, the figures to docs/img/validation/ (PNG and SVG), and
# docs/validation.md, and refreshes the summary table in README.md.
# The work is done by the package plots/validation/ (plots/validate.py is its
# command line: runner.py has the options and the pool, one module per experiment).
#
# Usage: plots/report.sh [--reuse] [--full] [--only 2,3] [--jobs N]
#   TLBSIM=path   the binary (default: build/tlbsim of this tree)
#   JOBS=N        simulations in parallel (default 2)
#   --reuse       redraw and rewrite from the CSVs already in plots/results/
#   --full        experiment 2 at the published 1 GiB in every cell (slower)
#   --only 2,3    rerun only these experiments, reuse the others' CSVs
# Needs: POSIX sh, python3 (standard library), gnuplot (gnuplot-nox).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
TLBSIM=${TLBSIM:-$here/../build/tlbsim}
export TLBSIM
command -v python3 >/dev/null || { echo "report.sh: python3 not found" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "report.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
start=$(date +%s)
# -B: no __pycache__ left in plots/validation/.
python3 -B "$here/validate.py" "$@"
echo "report.sh: done in $(( $(date +%s) - start )) s; see docs/validation.md" >&2
