#!/usr/bin/env python3
"""The mechanisms beyond Linux side by side: writes docs/beyond.md's tables and docs/img/beyond.{png,svg}.

Runs every mechanism preset (and the Linux baselines it is measured against) on four machines and
the papers' workloads, shrunk to a few seconds each (the hardware mechanisms on what-if machines
that add them to skylake-sp-2s-48), then the published comparisons of docs/beyond.md: LATR's
munmap change on a 2-socket machine, the concurrent-flush RFC's MADV_DONTNEED table on Haswell,
the deferred-PTI RFC's local madvise on Skylake, and Barrelfish's multicast as readers grow.  The rows go to plots/results/beyond.csv; the generated parts of
docs/beyond.md sit between "<!-- beyond:NAME -->" and "<!-- /beyond:NAME -->" markers, so the prose
around them stays as written.  tests/py/test_beyond.py re-runs a sample of the rows.

Usage: plots/beyond.py [--tlbsim PATH] [--jobs N] [--reuse] [--no-plot]
  --reuse    take the runs from plots/results/beyond.csv instead of running them
  --no-plot  write the tables and the data, not the figure (no gnuplot needed)
"""
import argparse
import concurrent.futures
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS = os.path.join(ROOT, "plots", "results", "beyond.csv")
DOC = os.path.join(ROOT, "docs", "beyond.md")
IMG = os.path.join(ROOT, "docs", "img", "beyond")

# The Linux era LATR patched (4.10: linux-4.5's choices), a current kernel, and the mechanisms.
MECHANISMS = ["linux-4.5", "linux-6.8", "latr", "latr-released", "abis", "numapte",
              "early-ack", "intel-rar", "unitd", "didi", "barrelfish-multicast",
              "linux-5.2-pti", "deferred-pti"]
# Mechanisms that need the machine's support, and the machines that have it.
NEEDS = {"intel-rar": {"skylake-sp-2s-48-rar"}, "unitd": {"skylake-sp-2s-48-unitd"},
         "didi": {"skylake-sp-2s-48-didi"}}
# Those machines are skylake-sp-2s-48 plus the hardware: only the baselines run there besides.
WHAT_IF = set().union(*NEEDS.values())
BASELINES = {"linux-4.5", "linux-6.8"}

# Machine -> the --set values that place the workloads' pinned threads on it (their machine_cores
# param is the machine's cores per socket; one socket where it has one).
MACHINES = {
    "haswell-i7": ["workload.machine_cores=4", "workload.sockets=1"],
    "amd-milan-36c": ["workload.machine_cores=36", "workload.sockets=1"],
    "skylake-sp-2s-48": [],
    "ivybridge-ex-8s": ["workload.machine_cores=15", "workload.sockets=8"],
    "skylake-sp-2s-48-rar": [],
    "skylake-sp-2s-48-unitd": [],
    "skylake-sp-2s-48-didi": [],
}
# Which machine_cores/sockets keys each workload has.
PLACED = {"latr-micro": ("machine_cores", "sockets"), "numa-migrate": ("machine_cores",)}

WORKLOADS = {
    "latr-micro": ["workload.iterations=200"],
    "madv-dontneed-touch": ["workload.iterations=200", "workload.threads=4"],
    "apache-churn": ["workload.requests=20"],
    "numa-migrate": ["workload.scans=20"],
    "munmap16": ["workload.file_size=8M", "workload.tail_ms=1"],
}

COLUMNS = ["op", "op_count", "op_ns_mean", "phase_ns", "ipis_sent", "irq_ns", "access_ns",
           "stale_hits", "stale_reuse", "stale_pwc", "latr_states_saved", "latr_fallback_ipis",
           "latr_sweep_ns", "nr_tlb_remote_flush", "rar_requests", "invlpg", "tlb_flush_all",
           "abis_flush_skipped", "abis_local_only", "didi_invalidations", "multicast_messages",
           "pti_user_flushes_deferred"]


def applies(machine, mechanism):
    if mechanism in NEEDS:
        return machine in NEEDS[mechanism]
    return machine not in WHAT_IF or mechanism in BASELINES


# [E5]: cycles of a local madvise(DONTNEED), before -> after deferring the user-PCID flush.
PTI_PUBLISHED = {1: (2119, 1986), 10: (6791, 5417)}
MULTICAST_READERS = {"skylake-sp-2s-48": (16, 47), "ivybridge-ex-8s": (16, 64, 239)}


def grid():
    """(key, argv tail) for every run: the comparison grid, then the published comparisons."""
    runs = []
    for m, placement in MACHINES.items():
        for w, shrink in WORKLOADS.items():
            keys = PLACED.get(w, ())
            sets = shrink + [s for s in placement if s.split("=")[0].split(".")[1] in keys]
            for p in MECHANISMS:
                if applies(m, p):
                    runs.append((("grid", m, w, p), ["-T", m, "-w", w, "-p", p] + sum(
                        (["--set", s] for s in sets), [])))
    # LATR [L1]: munmap -70.8% on a 2-socket machine; its microbenchmark's default shape there.
    for p in ["linux-4.5", "latr", "latr-released"]:
        runs.append((("latr-2s", "ivybridge-ep-2s", "latr-micro", p),
                     ["-T", "ivybridge-ep-2s", "-w", "latr-micro", "-p", p,
                      "--set", "workload.iterations=500"]))
    # RFC v1 [E2]: MADV_DONTNEED + touch of one page on Haswell, 1, 2, 4 threads, without and
    # with the concurrent local flush, on the kernel it was posted against (5.2: linux-4.20's
    # lazier TLB).
    # RFC v2 [E3] (concurrent flush and early ack; its figures are withheld): the early-ack
    # preset on the same runs.
    for t in (1, 2, 4):
        for conc in ("false", "true", "early-ack"):
            policy = ["-p", "early-ack"] if conc == "early-ack" else [
                "-p", "linux-4.20", "--set", f"policy.concurrent_local_flush={conc}"]
            runs.append((("rfc-v1", "haswell-i7", f"threads={t}", conc),
                         ["-T", "haswell-i7", "-w", "madv-dontneed-touch"] + policy +
                         ["--set", f"workload.threads={t}", "--set", "workload.iterations=500"]))
    # Deferred PTI [E5]: cycles of a local madvise(DONTNEED) of 1 and 10 pages on Skylake.
    for pages in PTI_PUBLISHED:
        for p in ("linux-5.2-pti", "deferred-pti"):
            runs.append((("pti", "skylake-sp-2s-48", f"pages={pages}", p),
                         ["-T", "skylake-sp-2s-48", "-w", "madv-local-flush", "-p", p,
                          "--set", f"workload.pages={pages}", "--set", "workload.iterations=200"]))
    # Barrelfish's multicast against IPIs as the readers, and so the sockets reached, grow.
    for m, readers in MULTICAST_READERS.items():
        for n in readers:
            for p in ("linux-6.8", "barrelfish-multicast"):
                runs.append((("multicast", m, f"threads={n}", p),
                             ["-T", m, "-w", "munmap16", "-p", p, "--set", f"workload.threads={n}"]
                             + sum((["--set", s] for s in WORKLOADS["munmap16"]), [])))
    return runs


def run_one(tlbsim, argv):
    proc = subprocess.run([tlbsim, "-q"] + argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"beyond: {' '.join(argv)}: exit {proc.returncode}: {proc.stderr}")
    return next(csv.DictReader(io.StringIO(proc.stdout)))


def run_all(tlbsim, jobs):
    runs = grid()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda r: run_one(tlbsim, r[1]), runs))
    return [(key, row) for (key, _), row in zip(runs, rows)]


def save(results):
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    fields = ["set", "machine", "workload", "variant"] + COLUMNS
    with open(RESULTS + ".tmp", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        for key, row in results:
            w.writerow(list(key) + [row[c] for c in COLUMNS])
    os.replace(RESULTS + ".tmp", RESULTS)


def load():
    with open(RESULTS, newline="") as f:
        return [((r["set"], r["machine"], r["workload"], r["variant"]), r)
                for r in csv.DictReader(f)]


def num(row, col):
    return float(row[col])


def pct(new, old):
    return 100.0 * (new - old) / old


def grid_table(results):
    by = {k: r for k, r in results if k[0] == "grid"}
    lines = ["| machine | workload (op) | mechanism | initiator ns/op | IPIs (RAR, directory or "
             "multicast messages) | remote irq µs "
             "| reader ns/access | stale hits | stale on reused frames | posted (ring full) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in MACHINES:
        for w in WORKLOADS:
            for p in MECHANISMS:
                if not applies(m, p):
                    continue
                r = by[("grid", m, w, p)]
                sent = {"intel-rar": "rar_requests", "didi": "didi_invalidations",
                        "barrelfish-multicast": "multicast_messages"}.get(p)
                posted = (f"{r['latr_states_saved']} ({r['latr_fallback_ipis']})"
                          if p.startswith("latr") else "")
                lines.append(
                    f"| {m} | {w} ({r['op']}) | {p} | {num(r, 'op_ns_mean'):,.0f} "
                    f"| {r['ipis_sent']}{' (' + r[sent] + ')' if sent else ''} "
                    f"| {num(r, 'irq_ns') / 1000:,.1f} "
                    f"| {num(r, 'access_ns'):,.1f} | {r['stale_hits']} | {r['stale_reuse']} "
                    f"| {posted} |")
    return "\n".join(lines)


def latr_table(results):
    by = {k[3]: r for k, r in results if k[0] == "latr-2s"}
    base = num(by["linux-4.5"], "op_ns_mean")
    lines = ["| kernel | munmap ns (tlbsim) | change vs linux-4.5 | published change [L1] | IPIs "
             "| stale hits | on reused frames |", "|---|---:|---:|---:|---:|---:|---:|"]
    for p in ["linux-4.5", "latr", "latr-released"]:
        r = by[p]
        change = "" if p == "linux-4.5" else f"{pct(num(r, 'op_ns_mean'), base):+.1f}%"
        published = "" if p == "linux-4.5" else "−70.8%"
        lines.append(f"| {p} | {num(r, 'op_ns_mean'):,.0f} | {change} | {published} "
                     f"| {r['ipis_sent']} | {r['stale_hits']} | {r['stale_reuse']} |")
    return "\n".join(lines)


def abis_table(results):
    """ABIS [A1]: invalidations -98% on average (its own benchmarks); these workloads' change."""
    by = {k: r for k, r in results if k[0] == "grid"}
    lines = ["| machine | workload | remote flushes (linux-4.5 → abis) | IPIs | invalidations "
             "executed (INVLPG + full) | skipped, local-only flushes |",
             "|---|---|---:|---:|---:|---:|"]
    for m in MACHINES:
        if not applies(m, "abis"):
            continue
        for w in WORKLOADS:
            a, b = by[("grid", m, w, "linux-4.5")], by[("grid", m, w, "abis")]

            def change(col, f=lambda r, c: num(r, c)):
                old, new = f(a, col), f(b, col)
                ch = f" ({pct(new, old):+.0f}%)" if old else ""
                return f"{old:,.0f} → {new:,.0f}{ch}"
            inval = lambda r, c: num(r, "invlpg") + num(r, "tlb_flush_all")  # noqa: E731
            lines.append(f"| {m} | {w} | {change('nr_tlb_remote_flush')} | {change('ipis_sent')} "
                         f"| {change('', inval)} | {b['abis_flush_skipped']}, "
                         f"{b['abis_local_only']} |")
    return "\n".join(lines)


# RFC v1 [E2]: ns per iteration on the initiator, before and after.
RFC_V1 = {1: (661, 663), 2: (1436, 1225), 4: (1571, 1421)}


def rfc_table(results):
    by = {(k[2], k[3]): r for k, r in results if k[0] == "rfc-v1"}
    lines = ["| threads | published ns/iteration (before → after) | tlbsim (before → after) "
             "| level error (before, after) | published change | tlbsim change "
             "| RFC v2, early ack (withheld): tlbsim |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for t, (pub_b, pub_a) in RFC_V1.items():
        # The benchmark's iteration is one madvise and one touch: the phase per call.
        it = {c: num(by[(f"threads={t}", c)], "phase_ns") /
              num(by[(f"threads={t}", c)], "op_count") for c in ("false", "true", "early-ack")}
        b, a, v2 = it["false"], it["true"], it["early-ack"]
        lines.append(f"| {t} | {pub_b} → {pub_a} | {b:,.0f} → {a:,.0f} "
                     f"| {pct(b, pub_b):+.0f}%, {pct(a, pub_a):+.0f}% "
                     f"| {pct(pub_a, pub_b):+.1f}% | {pct(a, b):+.1f}% "
                     f"| {v2:,.0f} ({pct(v2, b):+.1f}%) |")
    return "\n".join(lines)


def clock_ghz(machine):
    import json
    with open(os.path.join(ROOT, "topologies", machine + ".json")) as f:
        return json.load(f)["clock_ghz"]["value"]


def pti_table(results):
    by = {(k[2], k[3]): r for k, r in results if k[0] == "pti"}
    ghz = clock_ghz("skylake-sp-2s-48")
    lines = ["| pages | published cycles (before → after) | tlbsim `linux-5.2-pti` → "
             "`deferred-pti` | published change | tlbsim change | saved per page, "
             "published / tlbsim | user flushes deferred |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for pages, (pub_b, pub_a) in PTI_PUBLISHED.items():
        b = num(by[(f"pages={pages}", "linux-5.2-pti")], "op_ns_mean") * ghz
        a = num(by[(f"pages={pages}", "deferred-pti")], "op_ns_mean") * ghz
        deferred = by[(f"pages={pages}", "deferred-pti")]["pti_user_flushes_deferred"]
        lines.append(f"| {pages} | {pub_b} → {pub_a} | {b:,.0f} → {a:,.0f} "
                     f"| {pct(pub_a, pub_b):+.1f}% | {pct(a, b):+.1f}% "
                     f"| {(pub_b - pub_a) / pages:,.0f} / {(b - a) / pages:,.0f} | {deferred} |")
    return "\n".join(lines)


def multicast_table(results):
    by = {(k[1], k[2], k[3]): r for k, r in results if k[0] == "multicast"}
    lines = ["| machine | readers | `linux-6.8` ns/munmap (IPIs) | `barrelfish-multicast` "
             "ns/munmap (messages) | change | stale hits |", "|---|---:|---:|---:|---:|---:|"]
    for m, readers in MULTICAST_READERS.items():
        for n in readers:
            b, a = by[(m, f"threads={n}", "linux-6.8")], by[(m, f"threads={n}", "barrelfish-multicast")]
            lines.append(f"| {m} | {n} | {num(b, 'op_ns_mean'):,.0f} ({b['ipis_sent']}) "
                         f"| {num(a, 'op_ns_mean'):,.0f} ({a['multicast_messages']}) "
                         f"| {pct(num(a, 'op_ns_mean'), num(b, 'op_ns_mean')):+.0f}% "
                         f"| {a['stale_hits']} |")
    return "\n".join(lines)


def splice(text, name, body):
    begin, end = f"<!-- beyond:{name} -->", f"<!-- /beyond:{name} -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"beyond: {DOC} has no {begin} ... {end} section")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def write_doc(results):
    with open(DOC) as f:
        text = f.read()
    for name, table in (("grid", grid_table), ("latr", latr_table), ("abis", abis_table),
                        ("rfc", rfc_table), ("pti", pti_table),
                        ("multicast", multicast_table)):
        text = splice(text, name, table(results))
    with open(DOC + ".tmp", "w") as f:
        f.write(text)
    os.replace(DOC + ".tmp", DOC)


def plot(results):
    """Initiator ns per op relative to linux-4.5, per machine and workload."""
    if shutil.which("gnuplot") is None:
        raise SystemExit("beyond: gnuplot is not installed (apt-get install gnuplot-nox), "
                         "or use --no-plot")
    by = {k: r for k, r in results if k[0] == "grid"}
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "beyond.dat")
        with open(dat, "w") as f:
            f.write("case " + " ".join(MECHANISMS) + "\n")
            for m in MACHINES:
                for w in WORKLOADS:
                    base = num(by[("grid", m, w, "linux-4.5")], "op_ns_mean")
                    vals = [f"{num(by[('grid', m, w, p)], 'op_ns_mean') / base:.4f}"
                            if applies(m, p) else "NaN" for p in MECHANISMS]
                    f.write(f"{m}/{w} " + " ".join(vals) + "\n")
        subprocess.run(["gnuplot", "-e", f"n={len(MECHANISMS)}; data='{dat}'; out='{IMG}'",
                        os.path.join(ROOT, "plots", "beyond.gp")], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tlbsim", default=os.path.join(ROOT, "build", "tlbsim"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    if args.reuse:
        results = load()
    else:
        if not os.access(args.tlbsim, os.X_OK):
            raise SystemExit(f"beyond: no tlbsim at {args.tlbsim} (build it, or --tlbsim)")
        results = run_all(args.tlbsim, args.jobs)
        save(results)
    write_doc(results)
    if not args.no_plot:
        plot(results)
    print(f"beyond: {len(results)} runs; wrote {os.path.relpath(DOC, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
