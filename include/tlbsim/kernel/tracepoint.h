#ifndef TLBSIM_TRACEPOINT_H
#define TLBSIM_TRACEPOINT_H
/*
 * The simulated kernel's tracepoints: where its mechanisms say what they do,
 * for an observer in a layer above (observe/trace.c draws a timeline from
 * them).  As in Linux, the kernel calls trace_<event>() at the point of
 * interest and knows nothing of what, if anything, records it: an observer
 * registers a table of probes (struct tracepoint_ops) and its data in the
 * kernel (k->tp, k->tp_data), and with none registered every tracepoint
 * costs one predictable branch.
 *
 * Probes take CPU ids and times in cycles.  The hooks of one CPU come with
 * non-decreasing times, except what a kernel step computes ahead of the
 * engine's clock (a syscall's local flush, its cross-call's sends and
 * acknowledgements), which is reported whole when it is computed.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/machine/counters.h"

/*
 * The reasons of the kernel's tlb:tlb_flush tracepoint (enum
 * tlb_flush_reason, include/linux/mm_types.h), in the kernel's order, plus
 * one the kernel lacks: broadcast invalidations (arm64 TLBI ...IS, x86
 * INVLPGB), which the kernel does not trace.  riscv has no tracepoint either;
 * its flushes are named as x86 would name them, like its nr_tlb_* counters.
 */
enum tlb_flush_reason {
	TLB_FLUSH_ON_TASK_SWITCH,
	TLB_REMOTE_SHOOTDOWN,
	TLB_LOCAL_SHOOTDOWN,
	TLB_LOCAL_MM_SHOOTDOWN,
	TLB_REMOTE_SEND_IPI,
	TLB_REMOTE_WRONG_CPU,
	TLB_BROADCAST,
	NR_TLB_FLUSH_REASONS,
};

/* The reason's kernel name, e.g. "TLB_REMOTE_SHOOTDOWN". */
const char *tlb_flush_reason_name(enum tlb_flush_reason reason);
/* What ftrace prints for it (TLB_FLUSH_REASON in include/trace/events/tlb.h),
 * e.g. "remote shootdown"; TLB_BROADCAST, tlbsim's own: "broadcast". */
const char *tlb_flush_reason_ftrace(enum tlb_flush_reason reason);
/* @reason's counter in @c (counters.h COUNTERS_FLUSH_REASONS): its events,
 * or with @full those of them that flushed everything. */
uint64_t *tlb_flush_reason_counter(struct counters *c, enum tlb_flush_reason reason, bool full);

/*
 * What the kernel calls, on a given machine, the interrupt that carries a
 * cross-call, the flush function that runs in it and the initiator's own
 * flush (the policy's arch says: flush_arch_ops.names); a timeline names its
 * slices so.
 */
struct flush_names {
	const char *irq;
	const char *handler;
	const char *local;
};

/* trace_tlb_flush()'s @at: the start of the CPU's current kernel step. */
#define TRACE_CURSOR UINT64_MAX

struct vma;

struct tracepoint_ops {
	/* Scheduler (sched.c).  context_switch() starts on @cpu at @now, to
	 * task @next (-1: idle), and ends at @end, after its mm switch; the
	 * current task (re)starts its user work at @now. */
	void (*sched_switch)(void *data, unsigned cpu, int next, uint64_t now);
	void (*sched_switch_done)(void *data, unsigned cpu, uint64_t end);
	void (*sched_run)(void *data, unsigned cpu, uint64_t now);

	/* Interrupts and cross-calls (smp.c).  smp_call_function_many() from
	 * @caller to @nr_targets CPUs starts at @now; the IPI to @target, the
	 * call's @slot-th, leaves @caller at @sent; @cpu's handler runs that
	 * request from @now, finishes it at @done, and @caller sees the
	 * acknowledgement at @seen. */
	void (*irq_enter)(void *data, unsigned cpu, uint64_t now);
	void (*irq_exit)(void *data, unsigned cpu, uint64_t now);
	void (*call_begin)(void *data, unsigned caller, unsigned nr_targets, uint64_t now);
	void (*ipi_send)(void *data, unsigned caller, unsigned target, unsigned slot,
			 uint64_t sent);
	void (*csd_begin)(void *data, unsigned cpu, unsigned caller, unsigned slot, uint64_t now);
	void (*csd_ack)(void *data, unsigned cpu, unsigned caller, unsigned slot, uint64_t done,
			uint64_t seen);

	/* Syscalls and faults (vm.c): @name ("munmap", ...) of [start, end) in
	 * @vma (NULL for a fault at @start) enters at @now; a task that slept
	 * inside it runs it again at @now; it returns at @now. */
	void (*syscall_enter)(void *data, unsigned cpu, const char *name, const struct vma *vma,
			      uint64_t start, uint64_t end, uint64_t now);
	void (*syscall_resume)(void *data, unsigned cpu, uint64_t now);
	void (*syscall_exit)(void *data, unsigned cpu, uint64_t now);

	/* Flushes (tlbflush.c, arch/).  A kernel step that may hit
	 * tlb:tlb_flush starts at @now (its cursor); the initiator's own flush
	 * takes [start, start + cycles), or, late, runs after the IPIs of the
	 * cross-call that follows are sent (x86 5.13+, riscv); tlb:tlb_flush
	 * with the tracepoint's "pages" (-1: everything) at @at or the cursor. */
	void (*kernel_step)(void *data, unsigned cpu, uint64_t now);
	void (*local_flush)(void *data, unsigned cpu, uint64_t start, uint64_t cycles);
	void (*local_flush_late)(void *data, unsigned cpu, uint64_t start, uint64_t cycles);
	void (*tlb_flush)(void *data, unsigned cpu, enum tlb_flush_reason reason, int64_t pages,
			  uint64_t at);
};

#define TRACEPOINT(call)                                                                           \
	do {                                                                                       \
		if (k->tp)                                                                         \
			k->tp->call;                                                               \
	} while (0)

static inline void trace_switch(const struct kernel *k, unsigned cpu, int next, uint64_t now)
{
	TRACEPOINT(sched_switch(k->tp_data, cpu, next, now));
}

static inline void trace_switch_done(const struct kernel *k, unsigned cpu, uint64_t end)
{
	TRACEPOINT(sched_switch_done(k->tp_data, cpu, end));
}

static inline void trace_run(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(sched_run(k->tp_data, cpu, now));
}

static inline void trace_irq_enter(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(irq_enter(k->tp_data, cpu, now));
}

static inline void trace_irq_exit(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(irq_exit(k->tp_data, cpu, now));
}

static inline void trace_call_begin(const struct kernel *k, unsigned caller, unsigned nr_targets,
				    uint64_t now)
{
	TRACEPOINT(call_begin(k->tp_data, caller, nr_targets, now));
}

static inline void trace_ipi_send(const struct kernel *k, unsigned caller, unsigned target,
				  unsigned slot, uint64_t sent)
{
	TRACEPOINT(ipi_send(k->tp_data, caller, target, slot, sent));
}

static inline void trace_csd_begin(const struct kernel *k, unsigned cpu, unsigned caller,
				   unsigned slot, uint64_t now)
{
	TRACEPOINT(csd_begin(k->tp_data, cpu, caller, slot, now));
}

static inline void trace_csd_ack(const struct kernel *k, unsigned cpu, unsigned caller,
				 unsigned slot, uint64_t done, uint64_t seen)
{
	TRACEPOINT(csd_ack(k->tp_data, cpu, caller, slot, done, seen));
}

static inline void trace_syscall_enter(const struct kernel *k, unsigned cpu, const char *name,
				       const struct vma *vma, uint64_t start, uint64_t end,
				       uint64_t now)
{
	TRACEPOINT(syscall_enter(k->tp_data, cpu, name, vma, start, end, now));
}

static inline void trace_syscall_resume(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(syscall_resume(k->tp_data, cpu, now));
}

static inline void trace_syscall_exit(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(syscall_exit(k->tp_data, cpu, now));
}

static inline void trace_kernel_step(const struct kernel *k, unsigned cpu, uint64_t now)
{
	TRACEPOINT(kernel_step(k->tp_data, cpu, now));
}

static inline void trace_local_flush(const struct kernel *k, unsigned cpu, uint64_t start,
				     uint64_t cycles)
{
	TRACEPOINT(local_flush(k->tp_data, cpu, start, cycles));
}

static inline void trace_local_flush_late(const struct kernel *k, unsigned cpu, uint64_t start,
					  uint64_t cycles)
{
	TRACEPOINT(local_flush_late(k->tp_data, cpu, start, cycles));
}

static inline void trace_tlb_flush(const struct kernel *k, unsigned cpu,
				   enum tlb_flush_reason reason, int64_t pages, uint64_t at)
{
	TRACEPOINT(tlb_flush(k->tp_data, cpu, reason, pages, at));
}

#undef TRACEPOINT

#endif
