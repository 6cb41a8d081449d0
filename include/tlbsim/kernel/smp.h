#ifndef TLBSIM_SMP_H
#define TLBSIM_SMP_H
/*
 * Cross-CPU function calls (kernel/smp.c): smp_call_function_many() queues a
 * request per target, interrupts each target through the fabric and lets the
 * caller wait for every target's acknowledgement.  Targets run the queued
 * functions in their interrupt handler, preempting whatever they were doing.
 */
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/*
 * Runs on @cpu in interrupt context at @now; returns the cycles it took.  Its
 * effects on TLBs happen at @now.
 */
typedef uint64_t (*smp_call_fn)(struct kernel *k, struct cpu *cpu, uint64_t now, void *info);

struct smp *smp_new(struct kernel *k);
void smp_free(struct smp *smp);

/*
 * A spin_lock_irqsave() section on @cpu from @from to @until (the LRU lock,
 * swap.c): an interrupt that arrives in it waits for its end.  A section that
 * starts inside or right at the end of the previous one extends it.
 */
void smp_irqs_off(struct kernel *k, const struct cpu *cpu, uint64_t from, uint64_t until);

/* What a fabric signal carries: an IPI, or an Intel RAR signal (served by
 * microcode, not counted as an interrupt). */
enum smp_signal { SMP_SIGNAL_IPI, SMP_SIGNAL_RAR };

/* The fabric's delivery callback; ctx is the kernel, @kind an enum smp_signal. */
void smp_deliver_ipi(void *kernel, unsigned cpu, unsigned kind);

/**
 * smp_call_function_many() - run @fn(@info) on each of @targets and wait.
 * @self: the calling CPU, never among @targets.
 * @now: when the caller starts queueing.
 * @done: called once every target has acknowledged, with the time the caller's
 *        csd_lock_wait() loop over the targets, in order, ends.  @info must stay
 *        valid until then; @targets need not.
 * With no targets @done is called at once with @now.  Returns when the last
 * interrupt is sent (the caller's spin starts there).
 */
uint64_t smp_call_function_many(struct kernel *k, struct cpu *self, const unsigned *targets,
				unsigned nr_targets, smp_call_fn fn, void *info, uint64_t now,
				struct kcont done);

enum smp_call_kind {
	SMP_ACK_AFTER,    /* an IPI; the target unlocks its csd after @fn (Linux) */
	SMP_ACK_AFTER_LOCAL, /* the same, for an @fn that changes only the target's
			      * own state (its TLBs, its tlbflush state, its
			      * counters, its trace): the target side then bounds
			      * other cores' run-ahead only through the caller's
			      * wait (smp.c, "Per-destination lookahead") */
	SMP_ACK_ON_ENTRY, /* an IPI; the csd is unlocked when the handler takes it,
			   * before @fn (the early acknowledgement of Nadav Amit's
			   * 2019 RFC): @info must outlive @done, until every @fn */
	SMP_RAR,          /* an Intel RAR action: the START byte written per target,
			   * one multicast send, @fn run by the target's microcode
			   * (no entry or exit, even with interrupts off), the byte
			   * set to OK after it; counted as no IPI */
};

/* smp_call_function_many() of a given kind. */
uint64_t smp_call_function_many_ack(struct kernel *k, struct cpu *self, const unsigned *targets,
				    unsigned nr_targets, smp_call_fn fn, void *info, uint64_t now,
				    struct kcont done, enum smp_call_kind kind);

/*
 * Run @fn(@info) on @cpu now, in interrupt context, as work an interrupt the
 * model does not otherwise charge for (the timer tick, which every policy
 * takes alike): no entry or exit cost and no IPI counted, only @fn's cycles;
 * it waits while @cpu's interrupts are off or a handler runs, and shares a
 * handler pass with IPIs queued meanwhile.
 */
void smp_local_irq(struct kernel *k, struct cpu *cpu, smp_call_fn fn, void *info);


#endif
