#ifndef TLBSIM_STAT_H
#define TLBSIM_STAT_H
/*
 * --stat: a run's counters as `perf stat` prints a command's, for stderr.
 * Totals over CPUs, each with a "#" comment: a rate per second of simulated
 * time, or a share (of accesses, of CPU time, of tlb:tlb_flush).  Names are
 * the run CSV's columns, except perf's own events (page-faults,
 * context-switches) and the tlb:tlb_flush tracepoint, whose reasons are
 * spelled as ftrace prints them ("remote shootdown", ...).  Rates are
 * printed from doubles: the block is for reading, the CSV for comparing.
 */
#include <glib.h>
#include "tlbsim/cli/report.h"

/**
 * stat_block() - Append @r's perf-stat-like block to @out.
 * @out: appended to: a blank line, the title line
 *       " Performance counter stats for 'tlbsim -T X -w Y -p Z' (simulated):"
 *       (the inputs' names), a blank line, one line per counter, a blank
 *       line and the simulated seconds elapsed.
 * @meta: the run's inputs (names, clock), as for its CSV row.
 * @r: the run.
 */
void stat_block(GString *out, const struct report_meta *meta, const struct sim_result *r);

#endif
