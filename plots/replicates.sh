#!/bin/sh
# munmap16's spread over seeds under the two SMT presets: 10 seeds each of
# linux-4.5 (an IPI to every CPU of the mm) and linux-4.5-smt-dedup (one IPI
# per fully targeted core), summarized with tlbsim summarize and drawn with
# 95% confidence intervals:
#   OUT.png, OUT.svg    munmap latency and memory accesses per thread per ms,
#       mean with its interval per preset, and every seed's run beside it
#   DATA-runs.csv       the sweep's CSV, without its tlbsim_version column
#       (it names the commit)
#   DATA.csv            the tlbsim summarize table of it (one row per preset)
#   DATA-runs.dat       the runs drawn, a CSV with a header: preset index, seed,
#       op_ns_mean, accesses_per_thread_ms, nr_tlb_local_flush_all
# Seeds matter because munmap16 places its regions as ASLR does (workload's
# "placement": "aslr"): about half the seeds widen 512 of the 4096 flushes
# into full flushes.  20 runs of ~7 s of CPU each (3.5 min on 2 busy cores).
#
#   plots/replicates.sh [OUT [DATA]]  (default docs/img/munmap16-replicates and
#                                      docs/img/data/munmap16-replicates)
#   TLBSIM=path              the binary (default build/tlbsim of this tree)
#   REPLICATES_SEEDS=N       seeds per preset (default 10)
#   REPLICATES_JOBS=N        runs at once (default 2)
#   REPLICATES_NO_PLOT=1     only the data (no gnuplot needed)
#   REPLICATES_RUNS=FILE     take the runs from FILE (a DATA-runs.csv) instead
#                            of running the sweep: the rest is derived from it
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tlbsim=${TLBSIM:-$root/build/tlbsim}
out=${1:-$root/docs/img/munmap16-replicates}
data=${2:-$root/docs/img/data/munmap16-replicates}
seeds=${REPLICATES_SEEDS:-10}
[ -x "$tlbsim" ] || { echo "replicates: no tlbsim at $tlbsim (build it, or set TLBSIM)" >&2; exit 2; }
[ "${REPLICATES_NO_PLOT:-}" = 1 ] || command -v gnuplot >/dev/null || {
	echo "$0: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${REPLICATES_RUNS:-}" ]; then
	cp "$REPLICATES_RUNS" "$tmp/runs.csv"
else
	"$tlbsim" sweep -T haswell-i7 -w munmap16 --vary policy=linux-4.5,linux-4.5-smt-dedup \
		--replicates "$seeds" -j "${REPLICATES_JOBS:-2}" -q -o "$tmp/sweep.csv"
	awk -F, -v OFS=, '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tlbsim_version") drop = i }
	{ line = ""; for (i = 1; i <= NF; i++) if (i != drop) line = line (line == "" ? "" : OFS) $i; print line }
	' "$tmp/sweep.csv" >"$tmp/runs.csv"
fi
"$tlbsim" summarize "$tmp/runs.csv" -o "$tmp/summary.csv"
awk -F, -v OFS=, '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print "preset,seed,op_ns_mean,accesses_per_thread_ms,nr_tlb_local_flush_all"; next }
{
	p = $col["policy"]
	if (!(p in index_of)) index_of[p] = n++
	print index_of[p], $col["seed"], $col["op_ns_mean"], $col["accesses_per_thread_ms"], $col["nr_tlb_local_flush_all"]
}' "$tmp/runs.csv" >"$tmp/runs.dat"
mkdir -p "$(dirname "$data")"
cp "$tmp/runs.csv" "$data-runs.csv"
cp "$tmp/summary.csv" "$data.csv"
cp "$tmp/runs.dat" "$data-runs.dat"
[ "${REPLICATES_NO_PLOT:-}" = 1 ] && exit 0
mkdir -p "$(dirname "$out")"
gnuplot -e "summary='$data.csv'; runs='$data-runs.dat'; out='$out'" "$here/replicates.gp"
echo "$out.png $out.svg"
