"""A stand-in for tlbsim in the tests of plots/*.py: no simulation, a known answer.

It prints tlbsim's CSV shape (a header, one row) for one run.  Its munmap
ns/call is linear in the three costs plots/calibrate.py fits and equals the
published cell of Alex Shi's 2013 tables (PUB_B) when they are TRUE_COSTS, so a correct
fit must land exactly there.  Like tlbsim it ends stderr with a summary line (then a blank
line, which the scripts must skip).  With FAKE_TLBSIM_FAIL set it fails the
way tlbsim does on bad input: a message on stderr and exit code 2.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "plots"))
from validation.exp2 import NS, PUB_B  # noqa: E402  (needs the path above)

TRUE_COSTS = {"vma_op": 30000, "ipi_send": 700, "pte_op": 50}
OP_COUNT = 64
OTHER_NS_CALL = 1000  # any run that is not a cell of PUB_B


def ns_per_call(sets):
    """The published ns/call of the cell, plus per cycle off TRUE_COSTS: 1 ns of vma_op,
    T ns of ipi_send (one per reader), N ns of pte_op (one per page)."""
    shift = int(sets.get("policy.tlb_flushall_shift", -1))
    threads = int(sets.get("workload.threads", 12))
    pages = int(sets.get("workload.pages_per_munmap", 8))
    if (shift, threads) not in PUB_B or pages not in NS:
        return OTHER_NS_CALL
    weight = {"vma_op": 1, "ipi_send": threads, "pte_op": pages}
    return PUB_B[(shift, threads)][NS.index(pages)][1] + sum(
        w * (int(sets.get(f"topology.costs.{k}", TRUE_COSTS[k])) - TRUE_COSTS[k])
        for k, w in weight.items())


def main(argv):
    options, sets = {}, {}
    args = iter(argv)
    for arg in args:
        if arg == "--set":
            key, value = next(args).split("=", 1)
            sets[key] = value
        elif arg in ("-T", "-w", "-p"):
            options[arg] = next(args)
    if os.environ.get("FAKE_TLBSIM_FAIL"):
        print(f"tlbsim: {options['-T']}.json: fake failure", file=sys.stderr)
        return 2
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["topology", "workload", "policy", "sets", "phase_ns", "op_count"])
    out.writerow([options["-T"], options["-w"], options["-p"],
                  ";".join(f"{k}={v}" for k, v in sets.items()),
                  f"{ns_per_call(sets) * OP_COUNT:.3f}", OP_COUNT])
    print(f"fake tlbsim: ran\n\nfake summary {options['-T']}\n  ", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
