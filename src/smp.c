/*
 * Cross-CPU calls, after kernel/smp.c of the 4.x era.
 *
 * Models: the caller queues one request (csd) per target on the target's
 * call_single_queue (an RMW on a line the target wrote last), then writes the
 * ICR once per target; each target takes the interrupt, runs every queued
 * request in one handler (llist_del_all), unlocks each csd right after its
 * function (the acknowledgement the caller spins on, visible after a line
 * transfer back), and returns.  Interrupts arriving during a handler are held
 * pending like an IRR bit and cause one more handler pass.
 * Simplifies: one handler pass applies all its requests' TLB effects at the
 * pass's start time while charging their costs in sequence; the caller's spin
 * over the csds costs the latest acknowledgement, not one transfer per csd.
 * Invariant: every request queued is run exactly once and acknowledged once.
 */
#include <glib.h>
#include "tlbsim/sched.h"
#include "tlbsim/smp.h"
#include "tlbsim/trace.h"

/*
 * The caller's wait for every acknowledgement.  Interrupt arrivals and
 * handlers are local events (their effects stay on their core until the
 * acknowledgement), so other cores' run-ahead is bounded instead by tracked
 * sentinels kept at or before the event that will complete the wait: the
 * completion is the last pending target's handler, no earlier than the next
 * event in any pending target's lane.  A target also acknowledges from a
 * handler it runs for another caller (it takes every queued request), so an
 * interrupt sent to a pending target later arms one more sentinel at its
 * arrival.  See machine.h, "Lookahead".
 */
struct call_wait {
	unsigned pending;
	uint64_t done_at;
	struct kcont done;
	unsigned caller;
	bool completed;
	/* Times of the armed sentinels not yet fired (kernel_alloc()ed, so that
	 * a run that ends mid-wait frees them with everything in flight). */
	uint64_t *sentinels;
	unsigned nr_sentinels, max_sentinels;
	unsigned nr_targets;
	unsigned *targets;
	bool *acked;
};

struct csd {
	smp_call_fn fn;
	void *info;
	unsigned caller;
	unsigned slot; /* index in wait->targets */
	struct call_wait *wait;
};

struct smp_cpu {
	GQueue queue;          /* struct csd *, call_single_queue */
	struct cacheline queue_line;
	bool in_handler;
	bool irq_pending;      /* an interrupt arrived during the handler */
	uint64_t handler_start;
};

struct smp {
	struct kernel *k;
	struct smp_cpu *cpus;
	GPtrArray *waits; /* struct call_wait *, not yet completed */
};

struct smp *smp_new(struct kernel *k)
{
	struct smp *smp = g_new0(struct smp, 1);
	smp->k = k;
	smp->cpus = g_new0(struct smp_cpu, k->machine->nr_cpus);
	smp->waits = g_ptr_array_new();
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		g_queue_init(&smp->cpus[c].queue);
		smp->cpus[c].queue_line = CACHELINE_INIT;
		smp->cpus[c].queue_line.writer = (int)c;
	}
	k->smp = smp;
	return smp;
}

void smp_free(struct smp *smp)
{
	if (!smp)
		return;
	/* Queued csds belong to kernel_alloc(); only the queues go here. */
	for (unsigned c = 0; c < smp->k->machine->nr_cpus; c++)
		g_queue_clear(&smp->cpus[c].queue);
	g_free(smp->cpus);
	g_ptr_array_free(smp->waits, TRUE);
	g_free(smp);
}

static void smp_handler_body(void *target, uint64_t cpu_id);
static void smp_handler_exit(void *target, uint64_t cpu_id);

static void smp_wait_free(struct kernel *k, struct call_wait *wait)
{
	kernel_release(k, wait->sentinels);
	kernel_release(k, wait->targets);
	kernel_release(k, wait->acked);
	kernel_release(k, wait);
}

static void smp_wait_sentinel(void *target, uint64_t arg);

static void smp_arm_sentinel(struct kernel *k, struct call_wait *wait, uint64_t at)
{
	if (wait->nr_sentinels == wait->max_sentinels) {
		unsigned max = wait->max_sentinels ? 2 * wait->max_sentinels : 4;
		uint64_t *grown = kernel_alloc(k, max * sizeof(*grown));
		for (unsigned i = 0; i < wait->nr_sentinels; i++)
			grown[i] = wait->sentinels[i];
		if (wait->sentinels)
			kernel_release(k, wait->sentinels);
		wait->sentinels = grown;
		wait->max_sentinels = max;
	}
	wait->sentinels[wait->nr_sentinels++] = at;
	/* After every other event of its time, so re-arming always progresses. */
	/* In a lane of its own: in a CPU's lane it would look like that CPU's
	 * pending work to another caller's sentinel, and two waits that target
	 * each other would re-arm each other forever at the same time. */
	engine_schedule_last(k->engine, at, LANE_SENTINELS(k->machine->nr_cpus),
			     k->machine->nr_cpus, smp_wait_sentinel, wait, (uint64_t)(uintptr_t)k);
}

/*
 * No earlier than this can the wait complete: every pending target still has
 * to acknowledge, which it does in an event of its lane (the interrupt on its
 * way, its handler, or a handler for another caller that finds our request
 * queued already).
 */
static uint64_t smp_wait_bound(struct kernel *k, const struct call_wait *wait)
{
	uint64_t bound = engine_now(k->engine);
	for (unsigned i = 0; i < wait->nr_targets; i++) {
		if (wait->acked[i])
			continue;
		uint64_t next = engine_lane_next_time(k->engine, fabric_cpu_lane(wait->targets[i]));
		g_assert(next != ENGINE_NEVER);
		bound = next > bound ? next : bound;
	}
	return bound;
}

/* The earliest armed sentinel not yet fired; UINT64_MAX if none. */
static uint64_t smp_first_sentinel(const struct call_wait *wait, unsigned *index)
{
	uint64_t first = UINT64_MAX;
	for (unsigned i = 0; i < wait->nr_sentinels; i++) {
		uint64_t at = wait->sentinels[i];
		if (at < first) {
			first = at;
			*index = i;
		}
	}
	return first;
}

static void smp_wait_sentinel(void *target, uint64_t arg)
{
	struct call_wait *wait = target;
	struct kernel *k = (struct kernel *)(uintptr_t)arg;
	/* Sentinels fire in time order: this one is the earliest armed. */
	unsigned index = 0;
	smp_first_sentinel(wait, &index);
	wait->sentinels[index] = wait->sentinels[--wait->nr_sentinels];
	if (wait->completed) {
		if (wait->nr_sentinels == 0)
			smp_wait_free(k, wait);
		return;
	}
	uint64_t bound = smp_wait_bound(k, wait);
	if (smp_first_sentinel(wait, &index) > bound)
		smp_arm_sentinel(k, wait, bound);
}

/*
 * An interrupt for @target arrives at @arrival: any other wait still pending
 * on @target may be acknowledged by that handler, so none may have its first
 * sentinel later.
 */
static void smp_bound_waits_on(struct kernel *k, struct call_wait *self, unsigned target,
			       uint64_t arrival)
{
	GPtrArray *waits = k->smp->waits;
	for (unsigned w = 0; w < waits->len; w++) {
		struct call_wait *wait = g_ptr_array_index(waits, w);
		if (wait == self)
			continue;
		for (unsigned i = 0; i < wait->nr_targets; i++) {
			unsigned index;
			if (wait->targets[i] == target && !wait->acked[i]) {
				if (smp_first_sentinel(wait, &index) > arrival)
					smp_arm_sentinel(k, wait, arrival);
				break;
			}
		}
	}
}

static void smp_start_handler(struct smp *smp, unsigned cpu_id, uint64_t now)
{
	struct kernel *k = smp->k;
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	sc->in_handler = true;
	sc->handler_start = now;
	if (k->trace)
		trace_irq_enter(k->trace, cpu_id, now);
	sched_irq_enter(k, &k->machine->cpus[cpu_id], now);
	engine_schedule_local(k->engine, now + k->machine->topology->costs.irq_entry,
			      fabric_cpu_lane(cpu_id), smp_handler_body, smp, cpu_id);
}

void smp_deliver_ipi(void *kernel, unsigned cpu_id)
{
	struct kernel *k = kernel;
	struct smp *smp = k->smp;
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	k->machine->cpus[cpu_id].counters.ipis_received++;
	if (sc->in_handler) {
		sc->irq_pending = true;
		return;
	}
	smp_start_handler(smp, cpu_id, engine_now(k->engine));
}

static void smp_ack(struct kernel *k, struct csd *csd, unsigned cpu_id, uint64_t at)
{
	struct call_wait *wait = csd->wait;
	uint64_t seen = at + fabric_line_transfer(k->machine->fabric, cpu_id, csd->caller);
	if (k->trace)
		trace_ack(k->trace, cpu_id, csd->caller, csd->slot, at, seen);
	if (seen > wait->done_at)
		wait->done_at = seen;
	g_assert(wait->pending > 0 && !wait->acked[csd->slot]);
	wait->acked[csd->slot] = true;
	if (--wait->pending == 0) {
		struct kcont done = wait->done;
		uint64_t done_at = wait->done_at;
		wait->completed = true;
		g_ptr_array_remove(k->smp->waits, wait);
		if (wait->nr_sentinels == 0)
			smp_wait_free(k, wait);
		kcont_call(k, done, done_at);
	}
}

/* flush_smp_call_function_queue(): run everything queued, acknowledging each. */
static void smp_handler_body(void *target, uint64_t cpu_id)
{
	struct smp *smp = target;
	struct kernel *k = smp->k;
	struct cpu *cpu = &k->machine->cpus[cpu_id];
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	uint64_t t = engine_now(k->engine);
	GQueue batch = sc->queue;
	g_queue_init(&sc->queue);
	sc->queue_line.writer = (int)cpu_id;

	struct csd *csd;
	while ((csd = g_queue_pop_head(&batch))) {
		if (k->trace)
			trace_csd_begin(k->trace, (unsigned)cpu_id, csd->caller, csd->slot, t);
		t += csd->fn(k, cpu, t, csd->info);
		smp_ack(k, csd, (unsigned)cpu_id, t);
		kernel_release(k, csd);
	}
	engine_schedule_local(k->engine, t + k->machine->topology->costs.irq_exit,
			      fabric_cpu_lane((unsigned)cpu_id), smp_handler_exit, smp, cpu_id);
}

static void smp_handler_exit(void *target, uint64_t cpu_id)
{
	struct smp *smp = target;
	struct kernel *k = smp->k;
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	struct cpu *cpu = &k->machine->cpus[cpu_id];
	uint64_t now = engine_now(k->engine);
	if (sc->irq_pending) {
		/* The pending interrupt fires as soon as we iret: enter again. */
		sc->irq_pending = false;
		engine_schedule_local(k->engine, now + k->machine->topology->costs.irq_entry,
				      fabric_cpu_lane((unsigned)cpu_id), smp_handler_body, smp, cpu_id);
		return;
	}
	sc->in_handler = false;
	cpu->counters.irq_cycles += now - sc->handler_start;
	if (k->trace)
		trace_irq_exit(k->trace, (unsigned)cpu_id, now);
	sched_irq_exit(k, cpu, now);
}

void smp_call_function_many(struct kernel *k, struct cpu *self, const unsigned *targets,
			    unsigned nr_targets, smp_call_fn fn, void *info, uint64_t now,
			    struct kcont done)
{
	struct smp *smp = k->smp;
	const struct topology_costs *costs = &k->machine->topology->costs;
	if (nr_targets == 0) {
		kcont_call(k, done, now);
		return;
	}
	if (k->trace)
		trace_call_begin(k->trace, self->id, nr_targets, now);
	struct call_wait *wait = kernel_alloc(k, sizeof(*wait));
	wait->pending = nr_targets;
	wait->done = done;
	wait->caller = self->id;
	wait->nr_targets = nr_targets;
	wait->targets = kernel_alloc(k, nr_targets * sizeof(*wait->targets));
	wait->acked = kernel_alloc(k, nr_targets * sizeof(*wait->acked));

	uint64_t t = now;
	for (unsigned i = 0; i < nr_targets; i++) {
		unsigned target = targets[i];
		g_assert(target != self->id);
		struct csd *csd = kernel_alloc(k, sizeof(*csd));
		*csd = (struct csd){
			.fn = fn, .info = info, .caller = self->id, .slot = i, .wait = wait,
		};
		wait->targets[i] = target;
		/* csd_lock + llist_add onto the target's queue head. */
		t = fabric_line_rmw(k->machine->fabric, &smp->cpus[target].queue_line, self->id, t);
		g_queue_push_tail(&smp->cpus[target].queue, csd);
	}
	for (unsigned i = 0; i < nr_targets; i++) {
		t += costs->ipi_send;
		if (k->trace)
			trace_ipi_send(k->trace, self->id, targets[i], i, t);
		uint64_t arrival = fabric_send_ipi(k->machine->fabric, self->id, targets[i], t);
		smp_bound_waits_on(k, wait, targets[i], arrival);
		self->counters.ipis_sent++;
	}
	wait->done_at = t;
	/* Not at the last interrupt's arrival: a target may find our request
	 * in a handler it runs for another caller and acknowledge long before
	 * (bug 8 of tests/test_property.c). */
	smp_arm_sentinel(k, wait, smp_wait_bound(k, wait));
	g_ptr_array_add(smp->waits, wait);
}
