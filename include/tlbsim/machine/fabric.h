#ifndef TLBSIM_FABRIC_H
#define TLBSIM_FABRIC_H
/*
 * The interconnect: interrupt delivery between logical CPUs and the cost of
 * moving a cache line between them, both by topological distance.  Like an
 * APIC it carries a bare interrupt: what the target must do is queued by the
 * layer above (smp.c) before it sends, as kernel/smp.c queues a csd before
 * the ICR write.  The fabric knows no TLBs.
 */
#include <stdint.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/machine/topology.h"

struct fabric;

/*
 * Engine lanes: lane 0 carries events that concern every CPU (page-table
 * changes, commits, flag stores); lane cpu + 1 those of one CPU (its resume,
 * timers, interrupt arrivals).  See machine.h, "Lookahead".
 */
#define LANE_GLOBAL 0u
#define NR_LANES(nr_cpus) ((nr_cpus) + 1u)

static inline unsigned fabric_cpu_lane(unsigned cpu)
{
	return cpu + 1;
}

/*
 * A contended cache line (an mm_cpumask word, a queue head): who wrote it last
 * and until when the last read-modify-write keeps it busy.  Concurrent RMWs
 * queue behind each other, which is what makes a hot cpumask expensive.
 */
struct cacheline {
	int writer; /* CPU that wrote it last; -1 = nobody yet */
	uint64_t busy_until;
};

#define CACHELINE_INIT ((struct cacheline){.writer = -1, .busy_until = 0})

/* Called at a signal's arrival time on @cpu, with the @kind its sender gave
 * (fabric_send_signal(); 0 for fabric_send_ipi()). */
typedef void (*fabric_deliver_fn)(void *ctx, unsigned cpu, unsigned kind);

/* Keeps @engine and @topology (borrowed; they must outlive the fabric). */
struct fabric *fabric_new(struct engine *engine, const struct topology *topology,
			  fabric_deliver_fn deliver, void *ctx);
void fabric_free(struct fabric *fabric);

/**
 * fabric_send_ipi() - interrupt @to, sent by @from at @when (>= now).
 * Returns the arrival time, when the deliver callback runs.  Sending to
 * oneself is a bug.  The arrival is a tracked event of the target's lane, so
 * it bounds the other cores' run-ahead.
 */
uint64_t fabric_send_ipi(struct fabric *fabric, unsigned from, unsigned to, uint64_t when);
/* The same for a signal of @kind (what it carries is the receiver's
 * business: an IPI, an Intel RAR signal), handed to the deliver callback. */
uint64_t fabric_send_signal(struct fabric *fabric, unsigned from, unsigned to, uint64_t when,
			    unsigned kind);
/* The same, with the arrival a local event of the target's lane
 * (engine_schedule_local()): for a sender that bounds its effects on other
 * cores itself (machine.h, "Lookahead"). */
uint64_t fabric_send_signal_local(struct fabric *fabric, unsigned from, unsigned to,
				  uint64_t when, unsigned kind);

/* Cycles to pull a line last written by @from into @to's cache for an RMW. */
uint64_t fabric_line_transfer(const struct fabric *fabric, unsigned from, unsigned to);
/*
 * Atomic RMW by @cpu on @line starting no earlier than @now; returns the time it
 * completes (after waiting for earlier RMWs and pulling the line over).
 */
uint64_t fabric_line_rmw(const struct fabric *fabric, struct cacheline *line, unsigned cpu,
			 uint64_t now);
/*
 * A load of @line by @cpu from @now: after any RMW in flight, pulled from its
 * last writer as for an RMW (free if @cpu wrote it last), but the line stays
 * that writer's (the load takes a shared copy) and nothing waits for the
 * load.  No sharers are tracked: a second load by the same CPU pulls it again.
 */
uint64_t fabric_line_read(const struct fabric *fabric, const struct cacheline *line, unsigned cpu,
			  uint64_t now);
uint64_t fabric_ipi_latency(const struct fabric *fabric, unsigned from, unsigned to);

/*
 * Broadcast invalidation (arm64 TLBI ...IS + DSB ISH, AMD INVLPGB + TLBSYNC):
 * the interconnect carries the invalidations issued up to @issued to every
 * TLB, and the issuer's barrier completes when all have done them: after
 * broadcast_sync cycles, and never before @not_before (the caller's
 * lookahead bound).  @fn(@target, time) runs then, in the global lane, to
 * apply the invalidations; the return value is that time, when the issuer
 * goes on.
 */
uint64_t fabric_broadcast(struct fabric *fabric, uint64_t issued, uint64_t not_before,
			  engine_fn fn, void *target);

#endif
