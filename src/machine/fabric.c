/*
 * Interrupt and cache-line transport between logical CPUs.
 *
 * Models: a point-to-point interrupt whose latency depends only on the
 * distance class (SMT sibling, same socket, other socket), and the cost of an
 * RMW on a line last written by another CPU, by the same classes.
 * Simplifies: no contention on the interconnect, no x2APIC cluster multicast
 * (one ICR write per target is charged by the sender, see smp.c), no
 * reordering: two interrupts from one sender to one target arrive in order
 * because their latencies are equal and the engine is FIFO on ties.
 * Broadcast invalidations reach every TLB at once, broadcast_sync cycles after
 * the last was issued; concurrent broadcasts do not slow each other (their
 * contention on the interconnect is real but unquantified; references.md,
 * 'Costs: broadcast invalidation').
 * Invariant: every interrupt sent is delivered exactly once.
 */
#include <glib.h>
#include "tlbsim/machine/fabric.h"

struct fabric {
	struct engine *engine;
	const struct topology *topology;
	fabric_deliver_fn deliver;
	void *ctx;
};

struct fabric *fabric_new(struct engine *engine, const struct topology *topology,
			  fabric_deliver_fn deliver, void *ctx)
{
	struct fabric *fabric = g_new0(struct fabric, 1);
	fabric->engine = engine;
	fabric->topology = topology;
	fabric->deliver = deliver;
	fabric->ctx = ctx;
	return fabric;
}

void fabric_free(struct fabric *fabric)
{
	g_free(fabric);
}

/* The event's argument: the target CPU in the low half, the kind above. */
static void fabric_arrive(void *target, uint64_t arg)
{
	struct fabric *fabric = target;
	fabric->deliver(fabric->ctx, (unsigned)(arg & UINT32_MAX), (unsigned)(arg >> 32));
}

uint64_t fabric_ipi_latency(const struct fabric *fabric, unsigned from, unsigned to)
{
	enum topology_distance d = topology_distance(fabric->topology, from, to);
	return fabric->topology->costs.ipi_latency[d];
}

uint64_t fabric_send_ipi(struct fabric *fabric, unsigned from, unsigned to, uint64_t when)
{
	return fabric_send_signal(fabric, from, to, when, 0);
}

static uint64_t fabric_send(struct fabric *fabric, unsigned from, unsigned to, uint64_t when,
			    unsigned kind, bool local)
{
	g_assert(from != to);
	uint64_t arrival = when + fabric_ipi_latency(fabric, from, to);
	uint64_t arg = (uint64_t)kind << 32 | to;
	if (local)
		engine_schedule_local(fabric->engine, arrival, fabric_cpu_lane(to), fabric_arrive,
				      fabric, arg);
	else
		engine_schedule(fabric->engine, arrival, fabric_cpu_lane(to), fabric_arrive, fabric,
				arg);
	return arrival;
}

uint64_t fabric_send_signal(struct fabric *fabric, unsigned from, unsigned to, uint64_t when,
			    unsigned kind)
{
	/* Tracked: the target's handler may answer other senders' requests
	 * too, and the task it interrupts resumes after it, so the arrival
	 * bounds the other cores' run-ahead (smp.c). */
	return fabric_send(fabric, from, to, when, kind, false);
}

uint64_t fabric_send_signal_local(struct fabric *fabric, unsigned from, unsigned to,
				  uint64_t when, unsigned kind)
{
	return fabric_send(fabric, from, to, when, kind, true);
}

uint64_t fabric_line_transfer(const struct fabric *fabric, unsigned from, unsigned to)
{
	enum topology_distance d = topology_distance(fabric->topology, from, to);
	return fabric->topology->costs.line_transfer[d];
}

/* Where an access of @line from @now can start: after any RMW in flight. */
static uint64_t line_start(const struct cacheline *line, uint64_t now)
{
	return line->busy_until > now ? line->busy_until : now;
}

/* Bringing @line to @cpu: from its last writer, or memory's self cost if none. */
static uint64_t line_pull(const struct fabric *fabric, const struct cacheline *line, unsigned cpu)
{
	return line->writer < 0 ? fabric->topology->costs.line_transfer[DIST_SELF]
				: fabric_line_transfer(fabric, (unsigned)line->writer, cpu);
}

uint64_t fabric_line_rmw(const struct fabric *fabric, struct cacheline *line, unsigned cpu,
			 uint64_t now)
{
	line->busy_until = line_start(line, now) + line_pull(fabric, line, cpu);
	line->writer = (int)cpu;
	return line->busy_until;
}

uint64_t fabric_line_read(const struct fabric *fabric, const struct cacheline *line, unsigned cpu,
			  uint64_t now)
{
	uint64_t start = line_start(line, now);
	if (line->writer == (int)cpu)
		return start; /* an L1 hit, below the model's resolution */
	return start + line_pull(fabric, line, cpu);
}

uint64_t fabric_broadcast(struct fabric *fabric, uint64_t issued, uint64_t not_before,
			  engine_fn fn, void *target)
{
	uint64_t at = MAX(issued + fabric->topology->costs.broadcast_sync, not_before);
	engine_schedule(fabric->engine, at, LANE_GLOBAL, fn, target, at);
	return at;
}
