# munmap16 over seeds under the two SMT presets, from plots/replicates.sh:
# per preset the mean with its 95% confidence interval (tlbsim summarize,
# Student t) as an error bar, and each seed's run as a point beside it.
# Variables (gnuplot -e): summary (the summarize CSV: policy and
# <column>_mean/_ci95_lo/_ci95_hi columns), runs (CSV with a header:
# preset index, seed, op_ns_mean, accesses_per_thread_ms,
# nr_tlb_local_flush_all per run), out
# (output path without the extension).  Writes out.png (pngcairo, or png
# without cairo) and out.svg.
set datafile separator comma
# Both files' first line names their columns.
set datafile columnheaders
set grid ytics
set xrange [-0.5:1.5]
set key top left
set offsets 0, 0, graph 0.1, graph 0.1
# Each seed's point right of its preset's bar, spread by seed.
jitter(seed) = 0.12 + 0.015 * seed

do for [fmt in "png svg"] {
	if (fmt eq "png") {
		if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
			set terminal pngcairo size 1200,600 noenhanced font ",10"
		} else {
			set terminal png size 1200,600 noenhanced
		}
	} else {
		set terminal svg size 1200,600 noenhanced dynamic font ",10"
	}
	set output out . "." . fmt
	set multiplot layout 1,2 title "munmap16 on haswell-i7 over seeds (mean, 95% CI, and each seed's run)"
	set ylabel "munmap latency, op_ns_mean (ns)"
	plot summary using 0:"op_ns_mean_mean":"op_ns_mean_ci95_lo":"op_ns_mean_ci95_hi":xtic(stringcolumn("policy")) \
		with yerrorbars pt 7 ps 1.2 lw 2 title "mean, 95% CI", \
	     runs using ($1 + jitter($2)):3 with points pt 6 title "one seed"
	set ylabel "memory accesses per thread per ms"
	plot summary using 0:"accesses_per_thread_ms_mean":"accesses_per_thread_ms_ci95_lo":"accesses_per_thread_ms_ci95_hi":xtic(stringcolumn("policy")) \
		with yerrorbars pt 7 ps 1.2 lw 2 title "mean, 95% CI", \
	     runs using ($1 + jitter($2)):4 with points pt 6 title "one seed"
	unset multiplot
	set output
}
