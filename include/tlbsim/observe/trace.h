#ifndef TLBSIM_TRACE_H
#define TLBSIM_TRACE_H
/*
 * A timeline of one run as a Chrome Trace Event JSON file (the object form,
 * {"traceEvents": [...], ...}) that ui.perfetto.dev and chrome://tracing open:
 * one track per simulated CPU with what it does (the task's user work,
 * syscalls, context switches, interrupt handlers, idle), the initiator's
 * cross-call with one slice per IPI sent and one per acknowledgement seen,
 * flow arrows from each send through the handler it caused back to the
 * acknowledgement, the kernel's tlb:tlb_flush tracepoints as instants, and
 * TLB occupancy and page walks as counters.
 *
 * It records what the kernel's tracepoints report (kernel/tracepoint.h):
 * whoever assembles a run registers trace_probes with the trace as their
 * data.  Probes take CPU ids and times in cycles; the file is written in
 * microseconds with three decimals (integer arithmetic: the same run writes
 * the same bytes).
 *
 * Slices on a track nest strictly.  An interrupt ends whatever slices the
 * CPU had open and they restart, under the same names, when the handler
 * returns ("end and restart", not nesting the handler inside): user work is
 * pushed back by the handler in the model too, and a syscall whose kernel
 * work the model computed ahead keeps its times but loses the part the
 * handler covered.  README, "Timelines", says what each slice means.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>
#include "tlbsim/kernel/tracepoint.h"

struct machine;
struct trace;

/* What to keep of the timeline. */
struct trace_options {
	uint64_t window_start_ns; /* simulated time; events outside are dropped */
	uint64_t window_end_ns;   /* UINT64_MAX: until the end of the run */
	uint64_t max_events;      /* stop recording after about this many; 0: no limit */
};

/* What the file calls the run, its tasks and its flush slices; copied by
 * trace_new(). */
struct trace_labels {
	const char *workload;
	const char *policy;
	uint64_t seed;
	const char *const *tasks; /* by task id, NULL-terminated ("accessor 3") */
	struct flush_names flush_names; /* the policy's arch, on this machine */
};

/*
 * @m is borrowed and must outlive the trace; its CPUs are sampled for the
 * counter tracks.  The file is written to @out (borrowed) while the run goes
 * on, in memory bounded by what the run has in flight (trace.c's notes), not
 * by the trace's size; @out must be seekable for that (a regular or
 * temporary file, open_memstream()), else the trace is written to a
 * temporary file and copied to @out at the end.  A failed run discards @out.
 */
struct trace *trace_new(const struct trace_options *options, const struct machine *m,
			const struct trace_labels *labels, FILE *out);
void trace_free(struct trace *t);

/* The probes that record into a trace: register them with it as their data. */
extern const struct tracepoint_ops trace_probes;

/**
 * trace_finish() - close what is still open at @end (cycles) and write the
 * rest of the file.  Call once, after the run.  Errors: a failed write.
 */
bool trace_finish(struct trace *t, uint64_t end, GError **error);

/* Events recorded so far (written, after trace_finish()), and whether
 * --trace-max-events cut the trace. */
uint64_t trace_nr_events(const struct trace *t);
bool trace_truncated(const struct trace *t);

#endif
