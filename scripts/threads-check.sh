#!/usr/bin/env bash
# The runs on several host threads (--threads), checked on the binary:
#   scripts/threads-check.sh TLBSIM REFERENCE
# runs each case below with TLBSIM on 2 and 4 threads and with REFERENCE on 1,
# and fails unless stdout, stderr, the exit status and the per-CPU CSV are
# the same bytes.  TLBSIM is meant to be a ThreadSanitizer build (CMake build
# type Tsan), which then also fails the run on any data race (exit 66):
# Criterion cannot run under ThreadSanitizer (Snaipe/Criterion#274), so the
# tests of the threaded path run in the normal and ASan builds and this
# script is the TSan check.  Prints one line per case.
set -euo pipefail
cd "$(dirname "$0")/.."
tlbsim="$1"
reference="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
# GLib 2.74's slice allocator hands memory between threads behind
# ThreadSanitizer's back (false reports of races on recycled blocks).
export G_SLICE=always-malloc
cases=(
	"-T bench/topologies/synth-64.json -w munmap --set workload.munmaps=8 --set workload.threads=63 --set workload.tail_ms=0"
	"-T haswell-i7 -w munmap16 --set workload.munmaps=16 --set workload.tail_ms=1"
	"-T haswell-i7-smt-thread -w tests/data/e2e-smt-touch-madvise-write.json -p linux-4.5-smt-dedup --strict"
	"-T skylake-sp-2s-48 -w munmap -p numapte --set workload.munmaps=16 --set workload.tail_ms=0"
	"-T skylake-sp-2s-48 -w munmap -p abis --set workload.munmaps=16 --set workload.tail_ms=0"
	"-T haswell-i7 -w munmap16 --set workload.munmaps=16 --set workload.tail_ms=1 --sample --sample-plan 100000:10000:5000"
	"-T haswell-i7 -w munmap16 --set workload.munmaps=16 --set workload.tail_ms=0 --timeseries $work/series.csv --interval 20000"
	"-T haswell-i7 -w munmap16 --set workload.munmaps=16 --max-events 3000"
	"sweep -T haswell-i7 -w tests/data/e2e-small.json --vary seed=1..4 --jobs 2"
	"sweep -T haswell-i7 -w munmap16 --set workload.munmaps=16 --set workload.tail_ms=0 --vary seed=1..3 --jobs 2"
)
run() { # OUT THREADS BINARY ARGS...
	local out="$1" threads="$2" bin="$3"
	shift 3
	local status=0
	# shellcheck disable=SC2086
	"$bin" "$@" --threads "$threads" >"$out.stdout" 2>"$out.stderr" || status=$?
	# The binaries may be built from different commits: not the version.
	sed -i -E 's/,[0-9.]+ \([0-9a-f]+(-dirty)?\)(,|$)/\2/' "$out.stdout"
	echo "$status" >"$out.status"
	if [ -f "$work/series.csv" ]; then mv "$work/series.csv" "$out.series"; fi
}
failed=0
for args in "${cases[@]}"; do
	per_cpu=(--per-cpu "$work/cpus.csv")
	case "$args" in *--vary*) per_cpu=() ;; esac
	# shellcheck disable=SC2086
	run "$work/ref" 1 "$reference" $args "${per_cpu[@]}"
	[ -f "$work/cpus.csv" ] && mv "$work/cpus.csv" "$work/ref.cpus"
	for threads in 2 4; do
		# shellcheck disable=SC2086
		run "$work/t$threads" "$threads" "$tlbsim" $args "${per_cpu[@]}"
		[ -f "$work/cpus.csv" ] && mv "$work/cpus.csv" "$work/t$threads.cpus"
		for part in status stdout stderr cpus series; do
			if [ -f "$work/ref.$part" ] && ! cmp -s "$work/ref.$part" "$work/t$threads.$part"; then
				echo "threads-check: $args: --threads $threads: $part differs" \
					"(exit $(cat "$work/t$threads.status"))" >&2
				head -c 2000 "$work/t$threads.stderr" >&2
				failed=1
			fi
		done
	done
	echo "threads-check: ok (exit $(cat "$work/ref.status")): tlbsim $args"
	rm -f "$work"/ref.* "$work"/t2.* "$work"/t4.*
done
exit "$failed"
