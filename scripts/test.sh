#!/usr/bin/env bash
# Install what is missing, then build and run every test twice: in the normal
# build (RelWithDebInfo) and in the ASan+UBSan build (Sanitize), where the
# heaviest cases run smaller (TLBSIM_TEST_LONG=1 runs them full size); then
# the runs on several host threads under ThreadSanitizer (Tsan).
# Prints the wall time of each stage on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
tlbsim_install_deps
jobs="$(nproc)"
stage() { # NAME COMMAND...
	local start=$SECONDS
	echo "== $1" >&2
	shift
	"$@"
	echo "== took $((SECONDS - start)) s" >&2
}
for type in RelWithDebInfo Sanitize; do
	dir="build-test-$type"
	# Ninja: the Makefiles' per-target dependency scans cost a third of the
	# build's CPU time.  A folder made with another generator is made anew.
	if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
		rm -rf "$dir"
	fi
	cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" >/dev/null
	stage "$type build" cmake --build "$dir" -j"$jobs"
	stage "$type tests" ctest --test-dir "$dir" --output-on-failure -j"$jobs"
done
# ThreadSanitizer on runs over several host threads (--threads).  Criterion
# cannot run under it, so the binary alone is built and checked by
# scripts/threads-check.sh: race-free, and the same bytes as one thread.
dir=build-test-Tsan
if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
	rm -rf "$dir"
fi
cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=Tsan >/dev/null
stage "Tsan build" cmake --build "$dir" -j"$jobs" --target tlbsim
stage "Tsan runs" scripts/threads-check.sh "$dir/tlbsim" build-test-RelWithDebInfo/tlbsim
