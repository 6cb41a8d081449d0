#!/usr/bin/env bash
# Install what is missing, build tlbsim (Release) and run the main job: Alex
# Shi's munmap -t 16 -n 64 on a Haswell i7 under Linux 4.5's flush policy.
# Only the tlbsim binary is built, into build/ (a second run reuses it); the
# build's own output goes to stderr, so stdout holds exactly the CSV.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
tlbsim_install_deps >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build -j"$(nproc)" --target tlbsim >&2
exec ./build/tlbsim --topology haswell-i7.json --workload munmap16.json "$@"
