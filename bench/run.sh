#!/usr/bin/env bash
# Runs every benchmark and prints one Markdown report on stdout:
#   1. event queue: the hold benchmark (bench_engine)
#   2. translation path: machine_translate() against a bare loop (bench_translate)
#   3. end to end: tlbsim -T haswell-i7 -w munmap16
#   4. scale: the munmap harness, one accessor per CPU, on 8..1024 CPUs
#   5. locks: tlbsim -T amd-milan-36c -w tlb_flush2 -p linux-6.15 (36 tasks)
#   6. sweeps: four runs with --jobs 1, then with --jobs 2
#   7. host threads: munmap16 and the 1024-CPU scale row with --threads 1 and 2
# Sections 3-6 run each simulation on one host thread (--threads 1), so that
# they measure the work of a run; section 7 measures what more threads save.
# Each figure is the median (min–max) of several runs.  It configures a
# Release build of this source tree in a temporary directory (removed at the
# end), so it measures the working tree as it is.
#
# With --write it also puts one summary table (one row per figure, with the
# date, commit, machine and load averages) into docs/performance.md, between
# the markers BEGIN_MARK and END_MARK below; the text outside them is kept.
#
# Usage: bench/run.sh [--quick] [--reps N] [--keep-build] [--write]
#   --quick       fewer and shorter runs (a smoke test, not a measurement)
#   --reps N      repetitions of each benchmark (default 5)
#   --keep-build  leave the build directory and say where
#   --write       also write the summary table into docs/performance.md
#                 (not with --quick: that is no measurement)
# Needs cmake, a C compiler, GNU time (/usr/bin/time), awk.  Never runs more
# than one benchmark at a time (the build and the sweep with --jobs 2 use at
# most 2 jobs).
set -euo pipefail

reps=5
quick=0
keep=0
write=0
usage="usage: $0 [--quick] [--reps N] [--keep-build] [--write]"
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--reps)
		[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
		reps="$2"
		shift
		;;
	--keep-build) keep=1 ;;
	--write) write=1 ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
	shift
done
case "$reps" in
'' | *[!0-9]* | 0) echo "$0: --reps takes a positive integer" >&2; exit 2 ;;
esac

src="$(cd "$(dirname "$0")/.." && pwd)"
[ -x /usr/bin/time ] || { echo "$0: needs GNU time (/usr/bin/time; Debian: apt-get install time)" >&2; exit 2; }

# The summary table goes between these two lines of docs/performance.md.
BEGIN_MARK="<!-- bench results: written by bench/run.sh --write -->"
END_MARK="<!-- end of bench results -->"
doc="$src/docs/performance.md"
if [ "$write" = 1 ]; then
	[ "$quick" = 0 ] || { echo "$0: --write records a measurement; --quick is none" >&2; exit 2; }
	# Checked before the benchmarks run, not minutes later.
	[ -f "$doc" ] && [ "$(grep -cxF "$BEGIN_MARK" "$doc")" = 1 ] &&
		[ "$(grep -cxF "$END_MARK" "$doc")" = 1 ] ||
		{ echo "$0: $doc needs the lines '$BEGIN_MARK' and '$END_MARK', once each" >&2; exit 2; }
fi
build="$(mktemp -d "${TMPDIR:-/tmp}/tlbsim-bench.XXXXXX")"
work="$build/runs"
mkdir -p "$work"
cleanup() { if [ "$keep" = 1 ]; then echo "build kept in $build" >&2; else rm -rf "$build"; fi; }
trap cleanup EXIT

echo "building (Release) in $build ..." >&2
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTLBSIM_BUILD_TESTS=OFF >"$work/cmake.log"
cmake --build "$build" -j2 --target tlbsim bench_engine bench_translate >>"$work/cmake.log"
tlbsim="$build/tlbsim"

# stats FILE COLUMN DIGITS: "median (min–max)" of one whitespace-separated column
stats() {
	sort -g -k"$2","$2" "$1" | awk -v c="$2" -v d="$3" '
		{ v[NR] = $c }
		END { fmt = "%." d "f (%." d "f–%." d "f)"; printf fmt, v[int((NR + 1) / 2)], v[1], v[NR] }'
}

# summary BENCHMARK CASE FIGURE VALUE [REFERENCE]: one row of the summary table
summary="$work/summary.md"
: >"$summary"
summary() {
	echo "| $1 | $2 | $3 | $4 | ${5:-} |" >>"$summary"
}

# median COLUMN FILE: the median of one whitespace-separated column
median() {
	sort -g -k"$1","$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] + 0 }'
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }

# ---- header ------------------------------------------------------------------
model="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)"
commit="$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
date="$(date -u '+%Y-%m-%d %H:%M UTC')"
load_start="$(loadavg)"
compiler="$(${CC:-cc} --version | head -1)"
echo "# tlbsim benchmarks"
echo
echo "- date: $date; source: $commit"
echo "- machine: $(nproc) CPUs, $model; load average at start: $load_start"
echo "- compiler: $compiler; build: CMake Release (-O3)"
echo "- every figure: median (min–max) of $reps runs$([ "$quick" = 1 ] && echo ', --quick: NOT a measurement')"
echo

q=""
[ "$quick" = 1 ] && q="--quick"

# ---- 1. event queue ---------------------------------------------------------------
echo "## 1. Event queue (hold benchmark)"
echo
"$build/bench/bench_engine" $q --reps "$reps" | tee "$work/engine.md"
echo
# rows "| queue | pending | Mholds/s | ratio |" of the engine (the plain heap is the reference)
awk -F' [|] ' '/^[|] engine/ {
	sub(/ [(]`engine_schedule`[)]/, "", $1); sub(/^[|] /, "", $1); sub(/ [|]$/, "", $4)
	printf "%s\t%s\t%s\t%s\n", $1, $2, $3, $4 }' "$work/engine.md" |
	while IFS=$'\t' read -r queue pending rate ratio; do
		summary "event queue" "$pending pending, $queue" "Mholds/s (CPU time)" "$rate" \
			"$ratio× a plain binary heap"
	done

# ---- 2. translation path -------------------------------------------------------
echo "## 2. Translation path"
echo
"$build/bench/bench_translate" $q --reps "$reps" | tee "$work/translate.md"
echo
# rows "| model | CPUs | L1 / STLB hits / walks % | M accesses/s | ratio |" of tlbsim
awk -F' [|] ' '/^[|] tlbsim/ { sub(/ [|]$/, "", $5); printf "%s\t%s\t%s\t%s\n", $2, $3, $4, $5 }' \
	"$work/translate.md" |
	while IFS=$'\t' read -r cpus hits rate ratio; do
		case "$cpus" in
		1) cpus="1 CPU" ;;
		*) cpus="${cpus/ (/ CPUs (}" ;;
		esac
		summary "translation path" "$cpus; L1 / STLB hits / walks: $hits %" \
			"\`machine_translate\`, M accesses/s (CPU time)" "$rate" \
			"$ratio× a bare array-of-tags loop"
	done

# run_tlbsim OUT ARGS...: one run; appends "wall user+sys maxrss_kib" to OUT.time
# and the CSV row (with host_seconds) to OUT.csv
run_tlbsim() {
	local out="$1"
	shift
	local threads=(--threads 1)
	case " $* " in *" --threads "*) threads=() ;; esac
	/usr/bin/time -o "$out.t" -f "%e %U %S %M" "$tlbsim" "$@" "${threads[@]}" -q --host-time \
		--no-header >>"$out.csv"
	awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$out.t" >>"$out.time"
}

# column NAME: index of a CSV column (from the header tlbsim writes)
header="$("$tlbsim" -T haswell-i7 -w munmap --set workload.munmaps=1 --set workload.tail_ms=0 \
	--set workload.threads=1 -q)"
header="$(echo "$header" | head -1)"
column() { echo "$header" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
# fields FILE: the CSV's rows as space-separated fields for awk; a space inside a
# field (tlbsim_version is "0.2.0 (commit)") becomes '_' so that it stays one field
fields() { tr ' ,' '_ ' <"$1"; }
c_sim_ns=$(column sim_ns)
c_events=$(column events)
c_acc=$(column accesses)
c_flush=$(column nr_tlb_remote_flush)
c_recv=$(column nr_tlb_remote_flush_received)

# ---- 3. end to end ----------------------------------------------------------------
echo "## 3. End to end: \`tlbsim --topology haswell-i7 --workload munmap16\`"
echo
e2e="$work/e2e"
e2e_args=(-T haswell-i7 -w munmap16)
[ "$quick" = 1 ] && e2e_args+=(--set workload.munmaps=256 --set workload.tail_ms=1)
for _ in $(seq "$reps"); do
	run_tlbsim "$e2e" "${e2e_args[@]}"
done
# per run: wall, cpu, rss_mib, sim ns per wall s, events/s, accesses/s
paste -d' ' "$e2e.time" <(fields "$e2e.csv") | awk -v s=$((c_sim_ns + 3)) \
	-v e=$((c_events + 3)) -v a=$((c_acc + 3)) '
	{ printf "%s %s %.1f %.3f %.4f %.3f\n", $1, $2, $3 / 1024, $s / $1 / 1e6, $e / $1 / 1e6, $a / $1 / 1e6 }' \
	>"$e2e.rows"
row1="$(fields "$e2e.csv" | head -1)"
e2e_run="$(echo "$row1" | awk -v s="$c_sim_ns" -v e="$c_events" -v a="$c_acc" \
	'{ printf "%.1f ms simulated, %d events, %.1f M accesses", $s / 1e6, $e, $a / 1e6 }')"
echo "Per run: $e2e_run (identical in every run)."
echo
echo "| wall s | CPU s (user+sys) | peak RSS MiB | simulated ms per wall s | M events per wall s | M accesses per wall s |"
echo "|---:|---:|---:|---:|---:|---:|"
echo "| $(stats "$e2e.rows" 1 2) | $(stats "$e2e.rows" 2 2) | $(stats "$e2e.rows" 3 1) |" \
	"$(stats "$e2e.rows" 4 2) | $(stats "$e2e.rows" 5 3) | $(stats "$e2e.rows" 6 1) |"
echo
e2e_case="haswell-i7, munmap16"
summary "end to end" "$e2e_case (per run: $e2e_run)" "wall s" "$(stats "$e2e.rows" 1 2)"
summary "end to end" "$e2e_case" "CPU s (user+sys)" "$(stats "$e2e.rows" 2 2)"
summary "end to end" "$e2e_case" "M accesses per wall s" "$(stats "$e2e.rows" 6 1)"
summary "end to end" "$e2e_case" "peak RSS, MiB" "$(stats "$e2e.rows" 3 1)"

# The same run in sampled mode (--sample, its default plan): CPU time, against
# the exact runs' median, and how far its accesses_per_thread_ms lies from the
# exact run's (the same in every exact run).
sampled="$work/e2e-sample"
for _ in $(seq "$reps"); do
	run_tlbsim "$sampled" "${e2e_args[@]}" --sample
done
c_apt=$(column accesses_per_thread_ms)
exact_apt="$(fields "$e2e.csv" | head -1 | awk -v c="$c_apt" '{ print $c }')"
exact_cpu="$(median 2 "$e2e.rows")"
# per run: CPU s, exact CPU s over it, accesses_per_thread_ms against exact in %
paste -d' ' "$sampled.time" <(fields "$sampled.csv") |
	awk -v a=$((c_apt + 3)) -v x="$exact_apt" -v e="$exact_cpu" \
		'{ printf "%s %.2f %.2f\n", $2, e / $2, 100 * ($a - x) / x }' >"$sampled.rows"
echo "With \`--sample\`: CPU s $(stats "$sampled.rows" 1 2), $(stats "$sampled.rows" 2 1)× less" \
	"than the exact runs' median; accesses_per_thread_ms $(stats "$sampled.rows" 3 2)% from" \
	"the exact run's."
echo
summary "end to end" "$e2e_case, \`--sample\`" "CPU s (user+sys)" "$(stats "$sampled.rows" 1 2)" \
	"$(stats "$sampled.rows" 2 1)× less CPU; accesses_per_thread_ms $(stats "$sampled.rows" 3 2)% from exact"

# ---- 4. scale -----------------------------------------------------------------------
echo "## 4. Scale: the munmap harness on 8 to 1024 CPUs"
echo
echo "\`tlbsim -T bench/topologies/synth-N.json -w munmap --set workload.threads=N-1" \
	"--set workload.tail_ms=0 --set workload.munmaps=M\`: the munmap thread and N-1" \
	"accessors, one task per CPU, 8 pages per munmap.  *quiet*: the same with" \
	"\`accessed_pages=1 access_cycles=10000000\`, so that the accessors hardly" \
	"run and what is timed is the shootdown machinery (IPIs, handlers, the" \
	"initiator's wait, the event queue).  Per-shootdown figures are marginal:" \
	"(run with M munmaps − run with M/2) / (M/2 shootdowns), which leaves out starting" \
	"the N tasks and the accessors' last round (a baseline of one munmap does not: its" \
	"start and end overlap, and cost more events than a longer run's); IPIs =" \
	"nr_tlb_remote_flush_received, wall = the run's own \`host_seconds\`; peak RSS of" \
	"the M run."
echo
echo "| CPUs | accessors | M | wall s, M munmaps | wall ms per shootdown | IPIs per shootdown |" \
	"events per IPI | accesses per shootdown | wall µs per IPI | peak RSS MiB |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
scale_reps="$reps"
[ "$scale_reps" -gt 3 ] && scale_reps=3
c_host=$(column host_seconds)
# CPUs, M for the default accessors, M for quiet ones
shapes=("8 2048 16384" "64 256 2048" "256 32 512" "1024 8 128")
[ "$quick" = 1 ] && shapes=("8 64 256" "64 8 64" "256 4 16" "1024 2 4")
for shape in "${shapes[@]}"; do
	set -- $shape
	n=$1
	for variant in default quiet; do
		if [ "$variant" = default ]; then
			m=$2
			extra=()
		else
			m=$3
			extra=(--set workload.accessed_pages=1 --set workload.access_cycles=10000000)
		fi
		out="$work/scale-$n-$variant"
		half=$((m / 2))
		for k in "$half" "$m"; do
			for _ in $(seq "$scale_reps"); do
				run_tlbsim "$out-$k" -T "$src/bench/topologies/synth-$n.json" -w munmap \
					--set workload.threads=$((n - 1)) --set workload.munmaps="$k" \
					--set workload.tail_ms=0 "${extra[@]}"
			done
		done
		# per repetition, from the run with M minus the run with M/2: wall s (M),
		# ms/shootdown, IPIs/shootdown, events/IPI, accesses/shootdown, us/IPI,
		# RSS MiB of the M run, of the M/2 run
		paste -d' ' <(fields "$out-$m.csv") <(fields "$out-$half.csv") "$out-$m.time" \
			"$out-$half.time" |
			awk -v h="$c_host" -v f="$c_flush" -v r="$c_recv" -v e="$c_events" \
				-v a="$c_acc" -v w="$(echo "$header" | tr ',' '\n' | wc -l)" '
			{
				dh = $h - $(w + h); df = $f - $(w + f); dr = $r - $(w + r)
				de = $e - $(w + e); da = $a - $(w + a)
				printf "%.3f %.3f %.1f %.2f %.0f %.2f %.1f %.1f\n", $h, 1000 * dh / df, dr / df,
				       de / dr, da / df, 1e6 * dh / dr, $(2 * w + 3) / 1024, $(2 * w + 6) / 1024
			}' >"$out.rows"
		echo "| $n | $variant | $m | $(stats "$out.rows" 1 2) | $(stats "$out.rows" 2 3) |" \
			"$(stats "$out.rows" 3 0) | $(stats "$out.rows" 4 2) | $(stats "$out.rows" 5 0) |" \
			"$(stats "$out.rows" 6 2) | $(stats "$out.rows" 7 1) |"
		# the marginal counts are the same in every repetition: one figure each
		scale_case="$n CPUs, $variant accessors (per shootdown: $(median 3 "$out.rows") IPIs,"
		scale_case="$scale_case $(median 5 "$out.rows") accesses; $(median 4 "$out.rows") events per IPI)"
		summary "scale" "$scale_case" "wall µs per IPI" "$(stats "$out.rows" 6 2)"
		if [ "$n" = "${shapes[-1]%% *}" ] && [ "$variant" = default ]; then
			summary "scale" "$n CPUs, $variant accessors, $half munmaps" "peak RSS, MiB" \
				"$(stats "$out.rows" 8 1)"
		fi
	done
done
echo

# ---- 5. locks ---------------------------------------------------------------------
echo "## 5. Locks: \`tlbsim -T amd-milan-36c -w tlb_flush2 -p linux-6.15" \
	"--set workload.threads=36\`"
echo
echo "36 tasks fault under one merged VMA's lock, madvise under mmap_lock, and munmap and mmap" \
	"split and merge the VMA once per pass: the lock paths (rwsem.c, vm.c, mm.c), sleeping" \
	"waiters and INVLPGB, with few accesses per event."
echo
locks="$work/locks"
locks_args=(-T amd-milan-36c -w tlb_flush2 -p linux-6.15 --set workload.threads=36)
[ "$quick" = 1 ] && locks_args+=(--set workload.iterations=300 --set workload.warmup=10)
for _ in $(seq "$reps"); do
	run_tlbsim "$locks" "${locks_args[@]}"
done
paste -d' ' "$locks.time" <(fields "$locks.csv") | awk -v s=$((c_sim_ns + 3)) \
	-v e=$((c_events + 3)) '
	{ printf "%s %s %.1f %.3f %.4f\n", $1, $2, $3 / 1024, $s / $1 / 1e6, $e / $1 / 1e6 }' \
	>"$locks.rows"
row1="$(fields "$locks.csv" | head -1)"
locks_run="$(echo "$row1" | awk -v s="$c_sim_ns" -v e="$c_events" \
	'{ printf "%.1f ms simulated, %d events", $s / 1e6, $e }')"
echo "Per run: $locks_run (identical in every run)."
echo
echo "| wall s | CPU s (user+sys) | peak RSS MiB | simulated ms per wall s | M events per wall s |"
echo "|---:|---:|---:|---:|---:|"
echo "| $(stats "$locks.rows" 1 2) | $(stats "$locks.rows" 2 2) | $(stats "$locks.rows" 3 1) |" \
	"$(stats "$locks.rows" 4 2) | $(stats "$locks.rows" 5 3) |"
locks_case="amd-milan-36c, tlb_flush2, linux-6.15, 36 tasks"
summary "locks" "$locks_case (per run: $locks_run)" "wall s" "$(stats "$locks.rows" 1 2)"
summary "locks" "$locks_case" "M events per wall s" "$(stats "$locks.rows" 5 3)"

# ---- 6. sweeps ------------------------------------------------------------------------
echo "## 6. Sweeps: \`tlbsim sweep\` with \`--jobs 1\` and \`--jobs 2\`"
echo
# One sweep both ways, $reps times: --threads is the sweep's, one host thread per run
# while every job has a run; with an odd number of runs the last one gets the idle thread.
sweep_case() {
	local label=$1 seeds=$2 rows="$work/sweeps-$2"
	local args=(sweep -T haswell-i7 -w munmap16 --set workload.munmaps=512 --vary "seed=$seeds" -q)
	[ "$quick" = 1 ] && args=(sweep -T haswell-i7 -w munmap16 --set workload.munmaps=16 \
		--vary "seed=$seeds" -q)
	: >"$rows.rows"
	for _ in $(seq "$reps"); do
		for j in 1 2; do
			/usr/bin/time -o "$rows.t" -f "%e" "$tlbsim" "${args[@]}" --jobs "$j" \
				--threads "$j" -o "$rows.csv"
			printf '%s ' "$(cat "$rows.t")" >>"$rows.rows"
		done
		echo >>"$rows.rows"
	done
	# per repetition: wall s with one job, with two, and their ratio
	awk '{ printf "%s %s %.2f\n", $1, $2, $1 / $2 }' "$rows.rows" >"$rows.r"
	echo "\`tlbsim ${args[*]}\`, each repetition both ways, one after the other."
	echo
	echo "| wall s, --jobs 1 | wall s, --jobs 2 | speed-up |"
	echo "|---:|---:|---:|"
	echo "| $(stats "$rows.r" 1 2) | $(stats "$rows.r" 2 2) | $(stats "$rows.r" 3 2) |"
	echo
	summary "sweeps" "haswell-i7, munmap16 (512 munmaps), $label" "wall s, --jobs 2" \
		"$(stats "$rows.r" 2 2)" "$(stats "$rows.r" 3 2)× faster than --jobs 1"
}
sweep_case "seeds 1-4" 1..4
sweep_case "seeds 1-3 (the last run alone)" 1..3

# ---- 7. host threads ------------------------------------------------------------------
echo "## 7. Host threads: one run with \`--threads 1\` and \`--threads 2\`"
echo
echo "Each repetition runs both, one after the other; the CSVs are the same bytes"
echo "(checked here).  Speed-up: wall time with one thread over wall time with two."
echo
echo "| case | wall s, 1 thread | wall s, 2 threads | speed-up | CPU s, 2 threads |"
echo "|---|---:|---:|---:|---:|"
threads_case() { # NAME REPS ARGS...
	local name="$1" n="$2"
	shift 2
	local out="$work/threads-$name"
	: >"$out.rows"
	for _ in $(seq "$n"); do
		for t in 1 2; do
			rm -f "$out-$t.time" "$out-$t.csv"
			run_tlbsim "$out-$t" "$@" --threads "$t"
		done
		if ! cmp -s <(cut -d, -f1-$((c_host - 1)) "$out-1.csv") \
			<(cut -d, -f1-$((c_host - 1)) "$out-2.csv"); then
			echo "bench: $name: --threads 2 wrote another row than --threads 1" >&2
			exit 1
		fi
		# wall 1, wall 2, speed-up, CPU 2
		paste -d' ' "$out-1.time" "$out-2.time" |
			awk '{ printf "%s %s %.2f %s\n", $1, $4, $1 / $4, $5 }' >>"$out.rows"
	done
	echo "| $name | $(stats "$out.rows" 1 2) | $(stats "$out.rows" 2 2) |" \
		"$(stats "$out.rows" 3 2) | $(stats "$out.rows" 4 2) |"
	summary "host threads" "$name" "wall s, --threads 2" "$(stats "$out.rows" 2 2)" \
		"$(stats "$out.rows" 3 2)× faster than --threads 1"
}
if [ "$quick" = 1 ]; then
	threads_case "haswell-i7, munmap16" "$reps" "${e2e_args[@]}"
	threads_case "1024 CPUs, default accessors, 2 munmaps" 1 \
		-T "$src/bench/topologies/synth-1024.json" -w munmap --set workload.threads=1023 \
		--set workload.munmaps=2 --set workload.tail_ms=0
else
	threads_case "haswell-i7, munmap16" "$reps" "${e2e_args[@]}"
	threads_case "1024 CPUs, default accessors, 4 munmaps" "$scale_reps" \
		-T "$src/bench/topologies/synth-1024.json" -w munmap --set workload.threads=1023 \
		--set workload.munmaps=4 --set workload.tail_ms=0
fi
echo

load_end="$(loadavg)"
echo
echo "Load average at end: $load_end."

# ---- --write: the summary table into docs/performance.md -------------------------------
[ "$write" = 1 ] || exit 0
block="$work/block.md"
{
	echo
	echo "\`bench/run.sh --write --reps $reps\` on $date, source $commit:"
	echo
	echo "- machine: $(nproc) CPUs, $model"
	echo "- load average (1, 5, 15 min): $load_start at start, $load_end at end"
	echo "- compiler: $compiler; CMake Release build (-O3, link-time optimised)"
	echo "- every figure: median (min–max) of $reps runs (at most 3 for the scale rows)"
	echo
	echo "| benchmark | case | figure | median (min–max) | against, in the same runs |"
	echo "|---|---|---|---:|---|"
	cat "$summary"
	echo
} >"$block"
awk -v begin="$BEGIN_MARK" -v end="$END_MARK" -v block="$block" '
	$0 == begin { print; while ((getline line < block) > 0) print line; skip = 1; next }
	$0 == end { skip = 0 }
	!skip { print }' "$doc" >"$doc.tmp"
mv "$doc.tmp" "$doc"
echo "wrote the summary table into $doc" >&2
