# The mechanisms beyond Linux, from plots/beyond.py: per machine and workload,
# each mechanism's initiator ns per op (the workload's op: munmap, madvise,
# mprotect) relative to linux-4.5's, as grouped bars.
# Variables (gnuplot -e): n (the number of mechanisms), data (whitespace-
# separated, a header line: case and one column per mechanism), out (output
# path without the extension).
# Writes out.png (pngcairo, or png without cairo) and out.svg.
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left horizontal
set ylabel "initiator ns per op / linux-4.5's"
set xtics rotate by -45 scale 0 font ",8"
set yrange [0:*]
set rmargin 10
set bmargin 12
set datafile columnheaders
do for [fmt in "png svg"] {
	if (fmt eq "png") {
		if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
			set terminal pngcairo size 1400,600 noenhanced font ",10"
		} else {
			set terminal png size 1400,600 noenhanced
		}
	} else {
		set terminal svg size 1400,600 noenhanced dynamic font ",10"
	}
	set output out . "." . fmt
	plot for [i=2:n+1] data using i:xtic(1) title columnheader(i)
}
