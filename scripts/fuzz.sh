#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/) with clang in build-fuzz/ and run each
# for SECONDS_PER_TARGET seconds (default 60) on a temporary copy of its seed
# corpus, so the corpus in the repository is never modified.  Prints, per
# target, the executions and whether it found anything; exits 1 if any
# target crashed, leaked, ran out of memory or timed out.  What it found is
# kept in build-fuzz/findings/<target>/ (reproduce with
# build-fuzz/fuzz/<target> FILE).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS_PER_TARGET]" >&2
	exit 2
	;;
esac

. scripts/deps.sh
# What the fuzz build needs besides what every build does: clang and its
# runtime libraries (libFuzzer, ASan, UBSan).
tlbsim_packages="$tlbsim_packages clang libclang-rt-14-dev"
tlbsim_install_deps

targets="fuzz_topology fuzz_workload fuzz_policy fuzz_set"
build="build-fuzz"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DTLBSIM_FUZZ=ON -DCMAKE_BUILD_TYPE=Sanitize \
	-DTLBSIM_BUILD_TESTS=OFF -DTLBSIM_BUILD_BENCH=OFF >/dev/null
# shellcheck disable=SC2086 # the target names are words
cmake --build "$build" -j"$(nproc)" --target $targets

work="$(mktemp -d "${TMPDIR:-/tmp}/tlbsim-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rm -rf "$build/findings"
failed=0
printf '%-14s %10s %8s %8s  %s\n' target executions exec/s corpus result
for t in $targets; do
	cp -r "fuzz/corpus/$t" "$work/$t"
	mkdir -p "$work/$t-findings"
	set +e
	# -error_exitcode: a crash; -timeout_exitcode: a hang; both non-zero.
	"$build/fuzz/$t" "$work/$t" -dict="fuzz/$t.dict" -max_total_time="$seconds" \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$work/$t-findings/" >"$work/$t.log" 2>&1
	rc=$?
	set -e
	execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")"
	rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log")"
	corpus="$(find "$work/$t" -type f | wc -l)"
	found="$(find "$work/$t-findings" -type f | wc -l)"
	if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
		result="nothing found"
	else
		failed=1
		mkdir -p "$build/findings"
		cp -r "$work/$t-findings" "$build/findings/$t"
		cp "$work/$t.log" "$build/findings/$t.log"
		kind="$(grep -m1 -o 'ERROR: [A-Za-z]*Sanitizer: [a-z-]*\|ERROR: libFuzzer: [a-z-]*' \
			"$work/$t.log" || true)"
		result="FOUND (exit $rc, ${kind:-see the log}): $build/findings/$t/"
	fi
	printf '%-14s %10s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
exit "$failed"
