#!/usr/bin/env bash
# Install what is missing, build tlbsim (Release), and run the main job:
# Alex Shi's munmap -t 16 -n 64 on a Haswell i7 under Linux 4.5's flush policy.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
tlbsim_install_deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
./build/tlbsim --topology haswell-i7.json --workload munmap16.json "$@"
