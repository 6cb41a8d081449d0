#!/bin/sh
# Every shipped workload under the presets that matter for it, on the machine
# its benchmark ran on: one CSV (plots/out/policy-matrix.csv) and a Markdown
# table of the headline counters on stdout.  Usage: plots/policy-matrix.sh [TLBSIM]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tlbsim=${1:-${TLBSIM:-$here/../build/tlbsim}}
out=$here/out
mkdir -p "$out"
csv=$out/policy-matrix.csv
rm -f "$csv"
run() { # topology workload policy [--set ...]
	t=$1 w=$2 p=$3
	shift 3
	"$tlbsim" -T "$t" -w "$w" -p "$p" -q --append -o "$csv" "$@"
}
for p in linux-3.11 linux-4.5 linux-4.5-smt-dedup linux-4.20 linux-6.8; do
	run haswell-i7 munmap16 "$p"
done
run haswell-i7-smt-thread munmap16 linux-4.5-smt-dedup
for p in linux-3.6 linux-4.5 linux-4.19; do
	run nehalem-ep-2s mprotect-thp "$p"
done
for p in riscv-6.7 riscv-6.8; do
	for t in sifive-unmatched th1520 qemu-riscv-virt; do
		run "$t" madv-pageout "$p"
	done
done
run arm64-n1 madv-pageout arm64-6.5 --set policy.reclaim_flush=per_page
run arm64-n1 madv-pageout arm64-6.5
run haswell-i7 madv-pageout linux-3.6
run haswell-i7 madv-pageout linux-4.5
for p in linux-4.5 linux-4.19 linux-4.20 linux-6.14; do
	run skylake-sp-2s-48 netperf-lazy "$p"
done
for w in tlb_flush1 tlb_flush2 tlb_flush3; do
	run haswell-i7 "$w" linux-4.5
done
for p in linux-6.14 linux-6.15; do
	run amd-milan-36c tlb_flush2 "$p"
done
python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = ["workload", "topology", "policy", "op_count", "op_ns_mean", "op_per_sec", "access_ns",
        "nr_tlb_remote_flush", "nr_tlb_remote_flush_received", "tlbi_broadcasts", "sbi_rfences",
        "tlb_flush_all", "tlb_entries_invalidated", "cpumask_atomics", "switch_mm_ns",
        "stale_hits", "stale_pwc"]
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for r in rows:
    print("| " + " | ".join(r[c] for c in cols) + " |")
PY
