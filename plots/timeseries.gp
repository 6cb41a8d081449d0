# IPIs received per second and TLB misses per second over simulated time, one
# line per CPU, from the tables plots/timeseries.sh makes out of a
# --timeseries CSV.  Variables (gnuplot -e): ipis, misses (data files: time in
# ms, then one column per CPU), ncpu, title, out (output path without the
# extension).  Writes out.png (pngcairo, or png without cairo) and out.svg.
if (!exists("title")) title = "tlbsim --timeseries"

set xlabel "simulated time (ms)"
set grid
set key outside right top
set format y "%.1s%c"
set style data steps

plotting(file, label) = sprintf("plot for [c=1:%d] '%s' using 1:(column(c+1)) title sprintf('cpu %%d', c-1)", ncpu, file)

do for [fmt in "png svg"] {
	if (fmt eq "png") {
		if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
			set terminal pngcairo size 1200,800 noenhanced font ",10"
		} else {
			set terminal png size 1200,800 noenhanced
		}
	} else {
		set terminal svg size 1200,800 noenhanced dynamic font ",10"
	}
	set output out . "." . fmt
	set multiplot layout 2,1 title title
	set ylabel "IPIs received / s"
	eval plotting(ipis, "IPIs")
	set ylabel "TLB misses (page walks) / s"
	eval plotting(misses, "misses")
	unset multiplot
	set output
}
