#!/bin/sh
# Plot a tlbsim --timeseries CSV: IPIs received per second and TLB misses per
# second of every CPU over simulated time, as PNG and SVG.
#
#   tlbsim -T haswell-i7 -w munmap16 -q --timeseries series.csv --interval 100000
#   plots/timeseries.sh series.csv 100000 [OUT]
#
# INTERVAL_NS must be the --interval of the run.  Writes OUT.png and OUT.svg
# (default: the CSV's name without .csv).  Rows the CSV leaves out (nothing
# happened) are zeros here.  Needs awk and gnuplot (gnuplot-nox).
# TIMESERIES_TABLES=PREFIX also keeps the two tables it plots, as
# PREFIX-ipis.dat and PREFIX-misses.dat; TIMESERIES_NO_PLOT=1 then skips the
# drawing (and gnuplot).
set -eu
if [ $# -lt 2 ]; then
	echo "usage: $0 SERIES.csv INTERVAL_NS [OUT]" >&2
	exit 2
fi
csv=$1
interval=$2
out=${3:-${csv%.csv}}
here=$(cd "$(dirname "$0")" && pwd)
case $interval in
'' | *[!0-9]* | 0)
	echo "$0: INTERVAL_NS must be a positive integer (the run's --interval)" >&2
	exit 2
	;;
esac
[ "${TIMESERIES_NO_PLOT:-}" = 1 ] || command -v gnuplot >/dev/null || {
	echo "$0: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One table per metric: time in ms, then the per-second rate of each CPU.
table() { # metric file
	awk -F, -v metric="$1" -v interval="$interval" '
	# Columns by name: the run key (labels, topology, ...) comes first.
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; t = col["t_ns"]; c = col["cpu"]; next }
	{ if ($c + 1 > ncpu) ncpu = $c + 1; if ($t > last) last = $t }
	$(col["metric"]) == metric { v[$t "," $c] = $(col["value"]) }
	END {
		if (ncpu == 0) ncpu = 1
		for (t = 0; t <= last; t += interval) {
			printf "%.6f", t / 1e6
			for (c = 0; c < ncpu; c++)
				printf " %.6g", v[t "," c] * 1e9 / interval
			printf "\n"
		}
		print ncpu > "/dev/stderr"
	}' "$csv" >"$2"
}
ncpu=$(table ipis_received "$tmp/ipis.dat" 2>&1 >/dev/null)
table tlb_misses "$tmp/misses.dat" 2>/dev/null
if [ -n "${TIMESERIES_TABLES:-}" ]; then
	cp "$tmp/ipis.dat" "$TIMESERIES_TABLES-ipis.dat"
	cp "$tmp/misses.dat" "$TIMESERIES_TABLES-misses.dat"
fi
[ "${TIMESERIES_NO_PLOT:-}" = 1 ] && exit 0
gnuplot -e "ipis='$tmp/ipis.dat'; misses='$tmp/misses.dat'; ncpu=$ncpu; out='$out'; title='$(basename "$csv")'" \
	"$here/timeseries.gp"
echo "$out.png $out.svg"
