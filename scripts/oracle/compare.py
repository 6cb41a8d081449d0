"""Kernel against tlbsim, reason by reason: the verdicts and the report.

Pure functions over parsed CSV rows, so tests can run them on recorded
kernel output without QEMU.
"""

import csv
import io
import statistics

# The tlb:tlb_flush reasons of 6.1's trace event, as tlbsim's CSV names them.
REASONS = ["tlb_flush_task_switch", "tlb_remote_shootdown", "tlb_local_shootdown",
           "tlb_local_mm_shootdown", "tlb_remote_send_ipi"]
COUNTERS = [c for r in REASONS for c in (r, r + "_full")] + ["tlb_flush_events"]
# Per CPU: what a kernel engineer reads in /proc/interrupts' TLB row.
PER_CPU = "tlb_remote_shootdown"


def read_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def count(row, column):
    value = row.get(column, "")
    if value == "":
        raise ValueError(f"column {column} is empty")
    return int(value)


def tolerance(kernel_counts):
    """What counts as agreement with the kernel: its own run-to-run spread,
    or 5% of its median (3 when the median is under 60), whichever is wider."""
    median = statistics.median(kernel_counts)
    spread = max(kernel_counts) - min(kernel_counts)
    floor = 3 if median < 60 else 0.05 * median
    return max(spread, floor)


def verdict(kernel_counts, sim_counts):
    """(agrees, difference of the medians, tolerance)."""
    k, s = statistics.median(kernel_counts), statistics.median(sim_counts)
    tol = tolerance(kernel_counts)
    return abs(s - k) <= tol, s - k, tol


def compare_scenario(kernel_rows, sim_rows):
    """One line per counter: kernel runs, tlbsim runs, verdict."""
    lines = []
    for column in COUNTERS:
        kc = [count(r, column) for r in kernel_rows]
        sc = [count(r, column) for r in sim_rows]
        agrees, diff, tol = verdict(kc, sc)
        lines.append({"counter": column, "kernel": kc, "tlbsim": sc, "agrees": agrees,
                      "diff": diff, "tolerance": tol})
    return lines


def per_cpu_counts(per_cpu_rows_by_run, column=PER_CPU):
    """Per CPU, the median over runs of @column."""
    by_cpu = {}
    for rows in per_cpu_rows_by_run:
        for row in rows:
            by_cpu.setdefault(int(row["cpu"]), []).append(count(row, column))
    return {cpu: statistics.median(v) for cpu, v in sorted(by_cpu.items())}


def ranked(per_cpu_rows_by_run, column=PER_CPU):
    """Per run, its per-CPU counts of @column sorted highest first: which CPU
    a task lands on is the scheduler's choice and differs per boot, so CPUs
    are compared by rank, not by number."""
    return [sorted((count(row, column) for row in rows), reverse=True)
            for rows in per_cpu_rows_by_run]


def at_rank(vectors, i):
    """Each run's count at rank @i (0-based); 0 for a run with fewer CPUs."""
    return [v[i] if i < len(v) else 0 for v in vectors]


def rank_verdicts(kernel_vectors, sim_vectors):
    """Rank by rank (1 = the busiest CPU), the kernel's counts at that rank
    over boots against tlbsim's over seeds, by verdict()'s rule."""
    lines = []
    for i in range(max(len(v) for v in kernel_vectors + sim_vectors)):
        kc, sc = at_rank(kernel_vectors, i), at_rank(sim_vectors, i)
        agrees, diff, tol = verdict(kc, sc)
        lines.append({"rank": i + 1, "kernel": kc, "tlbsim": sc, "agrees": agrees,
                      "diff": diff, "tolerance": tol})
    return lines


def ranks_agreeing(ranks):
    """(ranks that agree, ranks)."""
    return sum(1 for r in ranks if r["agrees"]), len(ranks)


def fmt_num(x):
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def fmt_range(values):
    lo, hi = min(values), max(values)
    med = statistics.median(values)
    return fmt_num(med) if lo == hi else f"{fmt_num(med)} ({lo}-{hi})"


def fmt_pct(diff, base):
    if base == 0:
        return "" if diff == 0 else "new"
    return f"{100.0 * diff / base:+.0f}%"


def scenario_table(lines):
    out = ["| counter | kernel | tlbsim | difference | tolerance | verdict |",
           "|---|---:|---:|---:|---:|---|"]
    for line in lines:
        kmed = statistics.median(line["kernel"])
        out.append(f"| {line['counter']} | {fmt_range(line['kernel'])} | "
                   f"{fmt_range(line['tlbsim'])} | {fmt_num(line['diff'])} "
                   f"{fmt_pct(line['diff'], kmed)} | {fmt_num(line['tolerance'])} | "
                   f"{'agrees' if line['agrees'] else '**differs**'} |")
    return out


def per_cpu_table(kernel, sim, ranks):
    """Per CPU, the median over runs; then rank by rank (busiest CPU first,
    each run sorted on its own) with a verdict per rank: the scheduler numbers
    CPUs its own way, so only the ranks are compared."""
    cpus = sorted(set(kernel) | set(sim))
    head = "| " + PER_CPU + " per CPU | " + " | ".join(str(c) for c in cpus) + " |"
    rule = "|---|" + "---:|" * len(cpus)
    rows = [head, rule]
    for who, counts in (("kernel", kernel), ("tlbsim", sim)):
        values = [counts.get(c, 0) for c in cpus]
        rows.append(f"| {who} | " + " | ".join(fmt_num(v) for v in values) + " |")
    rows.append("| **by rank**, busiest first | " + " | ".join(
        f"**{r['rank']}**" for r in ranks) + " |")
    rows.append("| kernel | " + " | ".join(fmt_range(r["kernel"]) for r in ranks) + " |")
    rows.append("| tlbsim | " + " | ".join(
        fmt_num(statistics.median(r["tlbsim"])) for r in ranks) + " |")
    rows.append("| verdict | " + " | ".join(
        "agrees" if r["agrees"] else "**differs**" for r in ranks) + " |")
    return rows


def summary_counts(results):
    """(agreeing counters, counters) over every scenario."""
    total = sum(len(r["lines"]) for r in results)
    agree = sum(1 for r in results for line in r["lines"] if line["agrees"])
    return agree, total


def summary_ranks(results):
    """(scenarios whose every per-CPU rank agrees, scenarios)."""
    every = sum(1 for r in results if all(rank["agrees"] for rank in r["ranks"]))
    return every, len(results)
