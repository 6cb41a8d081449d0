#!/usr/bin/env bash
# Install what is missing, then build and run every test twice: in the normal
# build (RelWithDebInfo) and in the ASan+UBSan build (Sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
tlbsim_install_deps
jobs="$(nproc)"
for type in RelWithDebInfo Sanitize; do
	dir="build-test-$type"
	echo "== $type build" >&2
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" >/dev/null
	cmake --build "$dir" -j"$jobs"
	(cd "$dir" && ctest --output-on-failure -j"$jobs")
done
