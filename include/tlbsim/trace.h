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
 * The kernel owns the trace (struct kernel's @trace, NULL when tracing is
 * off) and its mechanisms call the hooks below, always as
 * `if (k->trace) trace_x(k->trace, ...)`, so a run without a trace pays one
 * predictable branch per hook.  Hooks take CPU ids and times in cycles; the
 * file is written in microseconds with three decimals (integer arithmetic:
 * the same run writes the same bytes).
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

struct machine;
struct vma;

/* What to keep of the timeline. */
struct trace_options {
	uint64_t window_start_ns; /* simulated time; events outside are dropped */
	uint64_t window_end_ns;   /* UINT64_MAX: until the end of the run */
	uint64_t max_events;      /* stop recording after about this many; 0: no limit */
};

/*
 * The reasons of the kernel's tlb:tlb_flush tracepoint (enum
 * tlb_flush_reason, include/linux/mm_types.h), in the kernel's order, plus
 * one the kernel lacks: the simulator counts broadcast invalidations (arm64
 * TLBI ...IS, x86 INVLPGB) in tlb_flush_events, where the kernel has no
 * tracepoint.  riscv has no tracepoint either; its flushes are named as x86
 * would name them, like its nr_tlb_* counters.
 */
enum trace_flush_reason {
	TRACE_TLB_FLUSH_ON_TASK_SWITCH,
	TRACE_TLB_REMOTE_SHOOTDOWN,
	TRACE_TLB_LOCAL_SHOOTDOWN,
	TRACE_TLB_LOCAL_MM_SHOOTDOWN,
	TRACE_TLB_REMOTE_SEND_IPI,
	TRACE_TLB_REMOTE_WRONG_CPU,
	TRACE_TLB_BROADCAST,
	TRACE_NR_FLUSH_REASONS,
};

/* trace_tlb_flush()'s @at: the start of the CPU's current kernel step. */
#define TRACE_CURSOR UINT64_MAX

/* What the file calls the run and its tasks; copied by trace_new(). */
struct trace_labels {
	const char *workload;
	const char *policy;
	uint64_t seed;
	const char *const *tasks; /* by task id, NULL-terminated ("accessor 3") */
};

/* @m is borrowed and must outlive the trace; its CPUs are sampled for the
 * counter tracks. */
struct trace *trace_new(const struct trace_options *options, const struct machine *m,
			const struct trace_labels *labels);
void trace_free(struct trace *t);

/**
 * trace_write() - close what is still open at @end (cycles) and write the
 * file to @out.  Call once, after the run.  Errors: a failed write.
 */
bool trace_write(struct trace *t, uint64_t end, FILE *out, GError **error);

/* Events recorded so far, and whether --trace-max-events cut the trace. */
uint64_t trace_nr_events(const struct trace *t);
bool trace_truncated(const struct trace *t);

/* ---- hooks: scheduler (sched.c) ---------------------------------------- */

/* context_switch() starts on @cpu at @now, to task @next (-1: idle). */
void trace_switch(struct trace *t, unsigned cpu, int next, uint64_t now);
/* ... and ends at @end, after its mm switch, when @next's work starts. */
void trace_switch_done(struct trace *t, unsigned cpu, uint64_t end);
/* The current task resumes on @cpu at @now. */
void trace_run(struct trace *t, unsigned cpu, uint64_t now);

/* ---- hooks: interrupts and cross-calls (smp.c) -------------------------- */

void trace_irq_enter(struct trace *t, unsigned cpu, uint64_t now);
void trace_irq_exit(struct trace *t, unsigned cpu, uint64_t now);
/* smp_call_function_many() from @caller to @nr_targets CPUs starts at @now. */
void trace_call_begin(struct trace *t, unsigned caller, unsigned nr_targets, uint64_t now);
/* The IPI to @target (the call's @slot-th) leaves @caller at @sent. */
void trace_ipi_send(struct trace *t, unsigned caller, unsigned target, unsigned slot,
		    uint64_t sent);
/* @cpu's handler runs the request from @caller's @slot at @now ... */
void trace_csd_begin(struct trace *t, unsigned cpu, unsigned caller, unsigned slot,
		     uint64_t now);
/* ... finishes it at @done, and @caller sees the acknowledgement at @seen. */
void trace_ack(struct trace *t, unsigned cpu, unsigned caller, unsigned slot, uint64_t done,
	       uint64_t seen);

/* ---- hooks: syscalls and faults (vm.c) ---------------------------------- */

/* @name ("munmap", ...) of [start, end) in @vma (NULL for a fault at @start). */
void trace_syscall_enter(struct trace *t, unsigned cpu, const char *name,
			 const struct vma *vma, uint64_t start, uint64_t end, uint64_t now);
/* The task that slept inside its syscall or fault runs it again at @now. */
void trace_syscall_resume(struct trace *t, unsigned cpu, uint64_t now);
/* The syscall or fault returns at @now; the task's user work goes on. */
void trace_syscall_exit(struct trace *t, unsigned cpu, uint64_t now);

/* ---- hooks: flushes (tlbflush*.c, lazytlb.c) ---------------------------- */

/* A kernel step that may hit tracepoints starts on @cpu at @now. */
void trace_cursor(struct trace *t, unsigned cpu, uint64_t now);
/* The initiator's own flush took [start, start + cycles) (no slice if 0). */
void trace_local_flush(struct trace *t, unsigned cpu, uint64_t start, uint64_t cycles);
/*
 * The same for a flush that runs after the IPIs of the cross-call that
 * follows are sent (x86 5.13+, riscv).  The model dates it from the sends'
 * ICR writes alone; it is drawn inside that call, after its last send (the
 * part of it that overlaps the queueing is not drawn).  With no call after
 * it, at [start, start + cycles).
 */
void trace_local_flush_late(struct trace *t, unsigned cpu, uint64_t start, uint64_t cycles);
/*
 * tlb:tlb_flush on @cpu at @at (or TRACE_CURSOR) for [start, end): its
 * "pages" argument is the 4 KiB pages of the range, -1 when @end is
 * FLUSH_ALL, 0 for an empty range (start == end: nothing to flush).  An
 * explicit @at also moves the cursor.  TRACE_TLB_LOCAL_MM_SHOOTDOWN inside an
 * interrupt handler is recorded as TRACE_TLB_REMOTE_SHOOTDOWN: riscv flushes
 * through one helper on both sides.
 */
void trace_tlb_flush(struct trace *t, unsigned cpu, enum trace_flush_reason reason,
		     uint64_t start, uint64_t end, uint64_t at);

/* The reason's kernel name, e.g. "TLB_REMOTE_SHOOTDOWN". */
const char *trace_flush_reason_name(enum trace_flush_reason reason);

#endif
