"""Experiment 5: lazy TLB 'even lazier' (Rik van Riel, 2018; published figures in
docs/references.md#published-measurements-lazy-tlb-rik-van-riel-2018).

skylake-sp-2s-48, netperf-lazy under linux-4.19 against linux-4.20: switch_mm's share of
CPU time, the cpumask atomics in it, and the context-switch time the series saves.
"""
import math

from .common import Run, Section, ape, dat, fmt, mdape, num, pct, plot, table, topology_value

NAME = "exp5-lazy-tlb"

SKX_GHZ = topology_value("skylake-sp-2s-48", "clock_ghz")
SKX_FLUSH_ALL = topology_value("skylake-sp-2s-48", "costs", "flush_all")  # one CR3 write
SKX_CONTEXT_SWITCH = topology_value("skylake-sp-2s-48", "costs", "context_switch")


def runs():
    return [Run(5, p, "skylake-sp-2s-48", "netperf-lazy", p)
            for p in ("linux-4.19", "linux-4.20")]


def measure(r):
    """One run's figures: shares in %, counts, rates per second, times in ns."""
    cpu_ns = 48 * num(r, "phase_ns")
    sw = num(r, "switch_mm_ns")
    cyc = sw * SKX_GHZ
    cr3 = int(r["switch_mm"]) * SKX_FLUSH_ALL
    return {"share": sw / cpu_ns * 100, "atomics": int(r["cpumask_atomics"]),
            "switch_mm": int(r["switch_mm"]), "cs": int(r["context_switches"]),
            "cs_rate": int(r["context_switches"]) / (num(r, "phase_ns") / 1e9),
            "atomic_share": (cyc - cr3) / cyc * 100 if cyc else 0.0,
            "ipis": int(r["ipis_sent"]), "phase_ms": num(r, "phase_ns") / 1e6,
            "flush_rate": int(r["op_count"]) / (num(r, "phase_ns") / 1e9),
            # Context-switch CPU time: every switch's own cost plus switch_mm's.
            "cs_ns": int(r["context_switches"]) * SKX_CONTEXT_SWITCH / SKX_GHZ + sw}


def section(rows):
    s = Section(5, "Lazy TLB 'even lazier' (Rik van Riel, 2018)",
                "lazy TLB 4.19 vs 4.20, skylake-sp-2s-48, netperf-lazy")
    s.add("Published figures: [references.md](references.md#published-measurements-lazy-tlb-"
          "rik-van-riel-2018). "
          "`skylake-sp-2s-48` (2 x 12 x 2 = 48 CPUs), workload `netperf-lazy` (defaults: 48 "
          "pinned workers, 400 requests of 20 us work and 20 us idle, a one-page "
          "MADV_DONTNEED every 8th request of worker 0), `linux-4.19` (4.14-4.18 lazy TLB: "
          "with PCIDs a CPU going idle switches to init_mm at once) against `linux-4.20` (the "
          "series). Context-switch CPU share = `switch_mm_ns` / (48 x `phase_ns`).")
    m = {p: measure(rows[p]) for p in ("linux-4.19", "linux-4.20")}
    cs_ratio = m["linux-4.20"]["cs_ns"] / m["linux-4.19"]["cs_ns"] * 100
    sw419 = num(rows["linux-4.19"], "switch_mm_ns")
    rest_over_mm = (m["linux-4.19"]["cs_ns"] - sw419) / sw419 if sw419 else math.inf
    pub = [("switch_mm share of CPU, 4.19", 1.9, m["linux-4.19"]["share"]),
           ("share of it in cpumask atomics, 4.19", 50.0, m["linux-4.19"]["atomic_share"]),
           ("context-switch CPU time, 4.20 over 4.19 ('roughly halved')", 50.0, cs_ratio)]
    comparison(s, pub)
    counters(s, m)
    red = (1 - m["linux-4.20"]["share"] / m["linux-4.19"]["share"]) * 100
    s.verdict = (f"direction agrees: 4.20 cuts context-switch CPU time by {100 - cs_ratio:.0f}% "
                 "(published: 'roughly halved'), switch_mm time by "
                 f"{red:.0f}% and cpumask atomics from {m['linux-4.19']['atomics']} to "
                 f"{m['linux-4.20']['atomics']}")
    s.add(f"Verdict: {s.verdict}.")
    s.add(analysis_text(cs_ratio, rest_over_mm))
    draw(s, pub)
    return s


def comparison(s, pub):
    """PUB: (figure, published, tlbsim) of the three compared figures."""
    errs = [ape(p, v) for _, p, v in pub]
    s.add(table(["figure", "published", "tlbsim", "error"],
                [[a, pct(p, 2), pct(v, 2), pct(ape(p, v))] for a, p, v in pub]))
    s.mdape = mdape(errs)
    s.mdape_of = "3 figures (two of them read from words: 'about half', 'roughly halved')"
    s.add(f"**MdAPE {pct(s.mdape)}**. The two 50% are the cover letter's words ('about "
          "half', 'roughly halved') turned into numbers. The atomics' share in tlbsim is "
          f"`switch_mm_cycles` less one CR3 write (`flush_all`, {SKX_FLUSH_ALL} cycles) per "
          "`switch_mm`: under 4.19 a switch is exactly atomics plus one CR3 write. What the "
          "series roughly halved is context-switch CPU time (the cover letter's 'netbench' "
          "figure, [references.md](references.md#published-measurements-lazy-tlb-rik-van-"
          "riel-2018)), not switch_mm_irqs_off()'s "
          "share, which the cover letter gives for 4.19 only; in tlbsim that time is every "
          f"switch's `context_switch` ({SKX_CONTEXT_SWITCH} cycles, an estimate) plus "
          "`switch_mm_ns`. (Comparing switch_mm's own share under 4.20 with half of 1.9% "
          "would misread the cover letter and put the error at 98%.)")


def counters(s, m):
    """tlbsim's counters under both kernels."""
    s.add(table(["tlbsim", "4.19", "4.20"], [
        ["context switches", fmt(m["linux-4.19"]["cs"]), fmt(m["linux-4.20"]["cs"])],
        ["context switches per second", fmt(m["linux-4.19"]["cs_rate"]),
         fmt(m["linux-4.20"]["cs_rate"])],
        ["mm switches (`switch_mm`)", fmt(m["linux-4.19"]["switch_mm"]),
         fmt(m["linux-4.20"]["switch_mm"])],
        ["`cpumask_atomics`", fmt(m["linux-4.19"]["atomics"]), fmt(m["linux-4.20"]["atomics"])],
        ["flushes (MADV_DONTNEED) per second", fmt(m["linux-4.19"]["flush_rate"]),
         fmt(m["linux-4.20"]["flush_rate"])],
        ["IPIs", fmt(m["linux-4.19"]["ipis"]), fmt(m["linux-4.20"]["ipis"])],
        ["switch_mm share of CPU", pct(m["linux-4.19"]["share"], 3),
         pct(m["linux-4.20"]["share"], 3)],
        ["context-switch CPU time (ms, all CPUs)", fmt(m["linux-4.19"]["cs_ns"] / 1e6, 2),
         fmt(m["linux-4.20"]["cs_ns"] / 1e6, 2)]]))


def analysis_text(cs_ratio, rest_over_mm):
    """Why tlbsim's switch is cheaper than published, and what the series saves in it."""
    return ("Analysis. Under 4.19 every idle entry switches to init_mm and every wake-up "
            "back, each with two contended cpumask atomics (the mm's and init_mm's masks, "
            "across two sockets) and a CR3 write; tlbsim puts most of that time in the atomics "
            "because line transfers on a 48-CPU, 2-socket mask are priced at 120-350 cycles "
            "and queue behind each other. The workload switches at the cover letter's rate "
            "(about 300k switches/s over 48 CPUs: 160 us of work and 160 us of idle per "
            "request), and at that rate tlbsim's share is several times below the published "
            "1.9%: a switch costs it well under a microsecond, while the published share "
            "implies several microseconds of switch_mm_irqs_off() per switch. What the model "
            "leaves out there is the rest of that function (barriers, speculation mitigations "
            "such as IBPB checks, the loaded_mm bookkeeping) and cache misses on the per-CPU "
            "TLB state, none of which has a measured cost in any source we found. With the series, "
            "tlbsim's workers flip between one process and idle, so a lazy CPU returns to the "
            "mm it still has loaded and does no switch at all: the only switch_mm time left is "
            "the catch-up CR3 writes after flushes it skipped, and context-switch CPU time "
            f"falls by what switch_mm cost under 4.19 ({100 - cs_ratio:.0f}%). For it to "
            "halve, as published, switch_mm_irqs_off() must have cost about as much as the "
            "rest of a context switch; in tlbsim the rest (`context_switch`, "
            f"{SKX_CONTEXT_SWITCH} cycles, an estimate) is {rest_over_mm:.1f} times the 4.19 "
            "switch_mm time, which is the first row's error again: the published 1.9% needs a "
            "switch_mm several times dearer than tlbsim's. The real netperf run also switches "
            "between processes (netperf, netserver, softirq and other kernel threads), which "
            "both kernels pay in full; the workload has one process and no such switches, so "
            "the share of switching that the series can remove is larger in tlbsim than it "
            "was on the real machine, which works against the error above.")


def draw(s, pub):
    """The figure: each compared figure of PUB over its published value."""
    labels = ["switch_mm share, 4.19", "atomics in it, 4.19", "context-switch time, 4.20/4.19"]
    plot("exp5-lazy-tlb", """
set title 'skylake-sp-2s-48, netperf-lazy: tlbsim / published'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'tlbsim / published'
set yrange [0:*]
set grid ytics
set key top right
plot dat('d') using 2:xtic(1) title 'published' lc rgb '#d73027', \
     '' using 3 title 'tlbsim' lc rgb '#4575b4'
""", {"d": dat([[f'"{label}"', 1.0, v / p] for label, (_, p, v) in zip(labels, pub)])})
    s.figure("exp5-lazy-tlb", "Each compared figure over its published value (the two 50% "
             "are 'about half' and 'roughly halved')")
