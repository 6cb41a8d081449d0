#!/bin/sh
# Regenerates the timeline figures that README and docs/timelines.md show, and
# the data behind them, from this build's tlbsim:
#   docs/img/munmap16-timeseries.png, .svg     munmap16's IPIs and TLB misses
#       per second per CPU, 200 us intervals (plots/timeseries.sh)
#   docs/img/data/munmap16-timeseries-ipis.dat, -misses.dat   the tables drawn
#   docs/img/data/munmap16-speedscope-trace.json   the trace window that
#       docs/img/munmap16-speedscope.png shows (the screenshot itself needs
#       Chromium: plots/trace-screenshot.sh)
#   docs/img/munmap16-replicates.png, .svg     munmap16 over 10 seeds under
#       linux-4.5 and linux-4.5-smt-dedup, means with 95% intervals
#       (plots/replicates.sh: 20 runs, the longest part)
#   docs/img/data/munmap16-replicates-runs.csv, .csv, -runs.dat   its runs,
#       their tlbsim summarize table and the columns drawn
# tests/py/test_results.py checks that the shipped data are what the binary
# gives; the validation figures are plots/report.sh's.
#
#   TLBSIM=path           the binary (default build/tlbsim of this tree)
#   FIGURES_DATA_ONLY=1   only the data, no drawing (no gnuplot needed)
#   FIGURES_OUT=DIR       write into DIR (DIR/data/...) instead of docs/img
#   REPLICATES_RUNS=FILE  the replicate runs from FILE instead of 20 new ones
#                         (tests/py/test_results.py re-runs a sample of them)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tlbsim=${TLBSIM:-$root/build/tlbsim}
out=${FIGURES_OUT:-$root/docs/img}
[ -x "$tlbsim" ] || { echo "figures: no tlbsim at $tlbsim (build it, or set TLBSIM)" >&2; exit 2; }
mkdir -p "$out/data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run for both figures: tracing changes no result.
"$tlbsim" -T haswell-i7 -w munmap16 -q --timeseries "$tmp/munmap16.csv" --interval 200000 \
	--trace "$out/data/munmap16-speedscope-trace.json" --trace-window 2000000:2012000 >/dev/null
export TIMESERIES_TABLES="$out/data/munmap16-timeseries"
if [ "${FIGURES_DATA_ONLY:-}" = 1 ]; then
	TIMESERIES_NO_PLOT=1 "$here/timeseries.sh" "$tmp/munmap16.csv" 200000 >/dev/null
else
	"$here/timeseries.sh" "$tmp/munmap16.csv" 200000 "$out/munmap16-timeseries" >/dev/null
fi
if [ "${FIGURES_DATA_ONLY:-}" = 1 ]; then export REPLICATES_NO_PLOT=1; fi
TLBSIM=$tlbsim "$here/replicates.sh" "$out/munmap16-replicates" "$out/data/munmap16-replicates" \
	>/dev/null
echo "figures: written to $out" >&2
