/*
 * Cross-CPU calls, after kernel/smp.c of the 4.x era.
 *
 * Models: the caller queues one request (csd) per target on the target's
 * call_single_queue (an RMW on a line the target wrote last), then writes the
 * ICR once per target; each target takes the interrupt, runs every queued
 * request in one handler (llist_del_all), unlocks each csd right after its
 * function (the acknowledgement the caller spins on, visible after a line
 * transfer back), and returns.  Interrupts arriving during a handler are held
 * pending like an IRR bit and cause one more handler pass.  The caller waits
 * for the csds in turn (csd_lock_wait() in target order): each unlock reaches
 * it a line transfer after both the unlock and the previous csd's.
 * Simplifies: one handler pass applies all its requests' TLB effects at the
 * pass's start time while charging their costs in sequence.
 * Invariant: every request queued is run exactly once and acknowledged once.
 */
#include <string.h>
#include <glib.h>
#include "tlbsim/kernel/pti.h"
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/tracepoint.h"

/*
 * Per-destination lookahead (machine.h, "Lookahead").  The target side of a
 * call (the interrupt's arrival, the handler's entry, body and exit, an
 * irqs-on retry) is made of local events of the target's lane: they bound its
 * own core's run-ahead, not the others'.  What they can change elsewhere is
 * bounded instead:
 * - the acknowledgements, through the caller's continuation, which runs in
 *   the acknowledging handler's event but at the completion time, no sooner
 *   than the highest outstanding slot's unlock plus its line transfer back
 *   (smp_wait_done_at()): an SMP_ACK_AFTER_LOCAL call registers the bound
 *   (that target's lane, that transfer) while it waits;
 * - anything else the handler leads to: nothing, while the CPU is clean.  A
 *   clean CPU's queue holds only SMP_ACK_AFTER_LOCAL requests, whose
 *   functions change only its own state (and its SMT siblings' shared TLBs,
 *   whose core lanes hold these events anyway), and its interrupt only
 *   delays quiet work (sched_irq_quiet()).  Anything else taints the CPU
 *   (smp_taint(): another kind of request queued, an interrupt taken over
 *   other work, the scheduler changing its state inside the interrupt), and
 *   a tainted CPU registers the bound (its lane, the lookahead), which is
 *   what tracked events would give, until its last handler pass ends.
 * Times only move later (a held interrupt, a handler taking another caller's
 * request early moves an ack earlier but never before the lane's next event),
 * so the bounds stay lower bounds.
 */
struct call_wait {
	unsigned caller;
	unsigned nr_targets;
	unsigned pending;
	uint64_t sent_at; /* the last ICR write: the spin starts there */
	bool ack_on_entry; /* each target unlocks its csd before running it */
	bool local;        /* SMP_ACK_AFTER_LOCAL: @bound is registered */
	unsigned hi;       /* the highest slot not yet acknowledged (if @local) */
	unsigned bound;    /* machine_bound_add() handle */
	struct kcont done;
	uint64_t *unlocked_at; /* per target slot; UINT64_MAX until acknowledged */
	unsigned *targets; /* a copy: the caller's array may not outlive the call */
};

struct csd {
	smp_call_fn fn;
	void *info;
	unsigned caller;
	unsigned slot; /* index of the target in the caller's list */
	struct call_wait *wait; /* NULL: a local interrupt's work (smp_local_irq()) */
	bool microcode;         /* an Intel RAR action: no handler, no entry or exit */
	bool local;             /* of an SMP_ACK_AFTER_LOCAL call */
};

struct smp_cpu {
	GQueue queue;          /* struct csd *, call_single_queue */
	struct cacheline queue_line;
	bool in_handler;
	bool irq_pending;      /* an interrupt arrived during the handler */
	bool irq_deferred;     /* one arrived with interrupts off: smp_irqs_on() is due */
	bool pass_uncharged;   /* this handler pass runs only local work: no entry/exit cost */
	bool from_user;        /* the interrupt came from user space (PTI switches CR3) */
	uint64_t handler_start;
	/* The latest section with interrupts off (smp_irqs_off()): interrupts
	 * that arrive in [irqs_off_from, irqs_off_until) wait for its end. */
	uint64_t irqs_off_from, irqs_off_until;
};

struct smp {
	struct kernel *k;
	struct smp_cpu *cpus;
};

struct smp *smp_new(struct kernel *k)
{
	struct smp *smp = g_new0(struct smp, 1);
	smp->k = k;
	smp->cpus = g_new0(struct smp_cpu, k->machine->nr_cpus);
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
	g_free(smp);
}

static void smp_handler_body(void *target, uint64_t cpu_id);
static void smp_handler_exit(void *target, uint64_t cpu_id);

/* From now until its last handler pass ends, @cpu_id's target-side events
 * bound every core as tracked events would. */
static void smp_taint(struct smp *smp, unsigned cpu_id)
{
	machine_cpu_taint(smp->k->machine, &smp->k->machine->cpus[cpu_id]);
}

/* A handler pass is over and nothing but clean requests is queued. */
static void smp_untaint(struct smp *smp, unsigned cpu_id)
{
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	for (const GList *l = sc->queue.head; l; l = l->next)
		if (!((const struct csd *)l->data)->local)
			return;
	machine_cpu_untaint(smp->k->machine, &smp->k->machine->cpus[cpu_id]);
}

/* A target-side event of @cpu_id: local to its lane (see above), or tracked
 * if the machine wants no local events. */
static void smp_schedule(struct smp *smp, uint64_t time, unsigned cpu_id, engine_fn fn)
{
	if (smp->k->machine->per_destination)
		engine_schedule_local(smp->k->engine, time, fabric_cpu_lane(cpu_id), fn, smp,
				      cpu_id);
	else
		engine_schedule(smp->k->engine, time, fabric_cpu_lane(cpu_id), fn, smp, cpu_id);
}

static void smp_wait_free(struct kernel *k, struct call_wait *wait)
{
	kernel_release(k, wait->unlocked_at);
	kernel_release(k, wait->targets);
	kernel_release(k, wait);
}

/* Only local interrupts' work or RAR actions are queued (smp_local_irq(),
 * smp_call_function_many_ack()).  An IPI can find the queue empty (an earlier
 * pass took its request): it is charged. */
static bool smp_queue_local_only(const struct smp_cpu *sc)
{
	for (const GList *l = sc->queue.head; l; l = l->next) {
		const struct csd *csd = l->data;
		if (csd->wait && !csd->microcode)
			return false;
	}
	return sc->queue.head != NULL;
}

static void smp_start_handler(struct smp *smp, unsigned cpu_id, uint64_t now)
{
	struct kernel *k = smp->k;
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	sc->in_handler = true;
	sc->handler_start = now;
	sc->pass_uncharged = smp_queue_local_only(sc);
	trace_irq_enter(k, cpu_id, now);
	sched_irq_enter(k, &k->machine->cpus[cpu_id], now);
	if (!sched_irq_quiet(k, &k->machine->cpus[cpu_id]))
		smp_taint(smp, cpu_id); /* the work it interrupts may reach other cores */
	sc->from_user = sched_irq_from_user(k, &k->machine->cpus[cpu_id]);
	uint64_t entry = sc->pass_uncharged ? 0 : k->machine->topology->costs.irq_entry;
	entry += sc->pass_uncharged || !sc->from_user ? 0 : pti_enter_kernel(k);
	smp_schedule(smp, now + entry, cpu_id, smp_handler_body);
}

/*
 * Interrupts are on again (the spin_unlock_irqrestore() of a section that
 * held back an IPI): the handler runs now, unless the CPU went into another
 * such section meanwhile.
 */
static void smp_irqs_on(void *target, uint64_t cpu_id)
{
	struct smp *smp = target;
	struct kernel *k = smp->k;
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	uint64_t now = engine_now(k->engine);
	if (now < sc->irqs_off_until && now >= sc->irqs_off_from) {
		smp_schedule(smp, sc->irqs_off_until, (unsigned)cpu_id, smp_irqs_on);
		return;
	}
	/* No handler started meanwhile: an IPI that arrived found irq_deferred. */
	g_assert(!sc->in_handler);
	sc->irq_deferred = false;
	smp_start_handler(smp, (unsigned)cpu_id, now);
}

void smp_irqs_off(struct kernel *k, const struct cpu *cpu, uint64_t from, uint64_t until)
{
	struct smp_cpu *sc = &k->smp->cpus[cpu->id];
	if (!(sc->irqs_off_from <= from && from <= sc->irqs_off_until))
		sc->irqs_off_from = from;
	sc->irqs_off_until = until;
}

/* An interrupt for @cpu_id's queue arrives at @now; a RAR signal is served
 * with interrupts off too (IGNORE_IF). */
static void smp_interrupt(struct smp *smp, unsigned cpu_id, uint64_t now, bool rar)
{
	struct smp_cpu *sc = &smp->cpus[cpu_id];
	if (sc->in_handler) {
		sc->irq_pending = true;
		return;
	}
	if (sc->irq_deferred) /* its handler pass will take this one's request too */
		return;
	if (!rar && now >= sc->irqs_off_from && now < sc->irqs_off_until) {
		sc->irq_deferred = true;
		smp_schedule(smp, sc->irqs_off_until, cpu_id, smp_irqs_on);
		return;
	}
	smp_start_handler(smp, cpu_id, now);
}

void smp_deliver_ipi(void *kernel, unsigned cpu_id, unsigned kind)
{
	struct kernel *k = kernel;
	bool rar = kind == SMP_SIGNAL_RAR;
	if (!rar)
		k->machine->cpus[cpu_id].counters.ipis_received++;
	smp_interrupt(k->smp, cpu_id, engine_now(k->engine), rar);
}

void smp_local_irq(struct kernel *k, struct cpu *cpu, smp_call_fn fn, void *info)
{
	struct smp *smp = k->smp;
	struct csd *csd = kernel_alloc(k, sizeof(*csd));
	*csd = (struct csd){.fn = fn, .info = info, .caller = cpu->id};
	smp_taint(smp, cpu->id);
	g_queue_push_tail(&smp->cpus[cpu->id].queue, csd);
	smp_interrupt(smp, cpu->id, engine_now(k->engine), false);
}

/* When the caller's csd_lock_wait() loop, over the slots in order, is done. */
static uint64_t smp_wait_done_at(struct kernel *k, const struct call_wait *wait)
{
	uint64_t t = wait->sent_at;
	for (unsigned i = 0; i < wait->nr_targets; i++) {
		uint64_t from = MAX(t, wait->unlocked_at[i]);
		t = from + fabric_line_transfer(k->machine->fabric, wait->targets[i], wait->caller);
	}
	return t;
}

static void smp_ack(struct kernel *k, struct csd *csd, unsigned cpu_id, uint64_t at)
{
	struct call_wait *wait = csd->wait;
	g_assert(wait->pending > 0 && wait->unlocked_at[csd->slot] == UINT64_MAX);
	wait->unlocked_at[csd->slot] = at;
	bool last = --wait->pending == 0;
	if (wait->local && last) {
		machine_bound_remove(k->machine, wait->bound);
	} else if (wait->local && csd->slot == wait->hi) {
		while (wait->unlocked_at[wait->hi] != UINT64_MAX)
			wait->hi--;
		unsigned x = wait->targets[wait->hi];
		machine_bound_set(k->machine, wait->bound, fabric_cpu_lane(x),
				  fabric_line_transfer(k->machine->fabric, x, wait->caller));
	}
	/* The caller sees an unlock a line transfer later at the earliest; the
	 * last one it sees when its loop is done. */
	uint64_t seen = last ? smp_wait_done_at(k, wait)
			     : at + fabric_line_transfer(k->machine->fabric, cpu_id, csd->caller);
	trace_csd_ack(k, cpu_id, csd->caller, csd->slot, at, seen);
	if (last) {
		struct kcont done = wait->done;
		smp_wait_free(k, wait);
		kcont_call(k, done, seen);
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
		/* The ack may complete the wait, which then goes: read it first. */
		bool early = csd->wait && csd->wait->ack_on_entry;
		if (csd->wait)
			trace_csd_begin(k, (unsigned)cpu_id, csd->caller, csd->slot, t);
		if (early)
			smp_ack(k, csd, (unsigned)cpu_id, t);
		t += csd->fn(k, cpu, t, csd->info);
		if (csd->wait && !early)
			smp_ack(k, csd, (unsigned)cpu_id, t);
		kernel_release(k, csd);
	}
	uint64_t exit = sc->pass_uncharged ? 0 : k->machine->topology->costs.irq_exit;
	/* Flushes the handler left pending are done on the way out. */
	exit += pti_return_to_user(k, cpu, sc->from_user && !sc->pass_uncharged);
	smp_schedule(smp, t + exit, (unsigned)cpu_id, smp_handler_exit);
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
		sc->pass_uncharged = smp_queue_local_only(sc);
		uint64_t entry = sc->pass_uncharged ? 0 : k->machine->topology->costs.irq_entry;
		smp_schedule(smp, now + entry, (unsigned)cpu_id, smp_handler_body);
		return;
	}
	sc->in_handler = false;
	cpu->counters.irq_cycles += now - sc->handler_start;
	trace_irq_exit(k, (unsigned)cpu_id, now);
	/* Clean: the exit leaves only a quiet resume (see above). */
	g_assert(cpu->tainted || sched_irq_quiet(k, cpu));
	sched_irq_exit(k, cpu, now);
	smp_untaint(smp, (unsigned)cpu_id);
}

uint64_t smp_call_function_many(struct kernel *k, struct cpu *self, const unsigned *targets,
				unsigned nr_targets, smp_call_fn fn, void *info, uint64_t now,
				struct kcont done)
{
	return smp_call_function_many_ack(k, self, targets, nr_targets, fn, info, now, done,
					  SMP_ACK_AFTER);
}

uint64_t smp_call_function_many_ack(struct kernel *k, struct cpu *self, const unsigned *targets,
				    unsigned nr_targets, smp_call_fn fn, void *info, uint64_t now,
				    struct kcont done, enum smp_call_kind kind)
{
	struct smp *smp = k->smp;
	const struct topology_costs *costs = &k->machine->topology->costs;
	if (nr_targets == 0) {
		kcont_call(k, done, now);
		return now;
	}
	trace_call_begin(k, self->id, nr_targets, now);
	struct call_wait *wait = kernel_alloc(k, sizeof(*wait));
	wait->caller = self->id;
	wait->nr_targets = wait->pending = nr_targets;
	wait->done = done;
	wait->ack_on_entry = kind == SMP_ACK_ON_ENTRY;
	wait->local = kind == SMP_ACK_AFTER_LOCAL && k->machine->per_destination;
	bool rar = kind == SMP_RAR;
	wait->targets = kernel_alloc(k, nr_targets * sizeof(*wait->targets));
	memcpy(wait->targets, targets, nr_targets * sizeof(*targets));
	wait->unlocked_at = kernel_alloc(k, nr_targets * sizeof(*wait->unlocked_at));
	for (unsigned i = 0; i < nr_targets; i++)
		wait->unlocked_at[i] = UINT64_MAX;

	uint64_t t = now;
	for (unsigned i = 0; i < nr_targets; i++) {
		unsigned target = targets[i];
		g_assert(target != self->id);
		struct csd *csd = kernel_alloc(k, sizeof(*csd));
		*csd = (struct csd){
			.fn = fn, .info = info, .caller = self->id, .slot = i, .wait = wait,
			.microcode = rar, .local = wait->local,
		};
		if (!wait->local)
			smp_taint(smp, target);
		/* csd_lock + llist_add onto the target's queue head. */
		t = fabric_line_rmw(k->machine->fabric, &smp->cpus[target].queue_line, self->id, t);
		g_queue_push_tail(&smp->cpus[target].queue, csd);
	}
	for (unsigned i = 0; i < nr_targets; i++) {
		/* A RAR signal is one multicast ICR write to the whole mask. */
		if (!rar || i == 0)
			t += costs->ipi_send;
		trace_ipi_send(k, self->id, targets[i], i, t);
		self->counters.ipis_sent += !rar;
		if (wait->local)
			fabric_send_signal_local(k->machine->fabric, self->id, targets[i], t,
						 SMP_SIGNAL_IPI);
		else
			fabric_send_signal(k->machine->fabric, self->id, targets[i], t,
					   rar ? SMP_SIGNAL_RAR : SMP_SIGNAL_IPI);
	}
	wait->sent_at = t;
	if (wait->local) {
		unsigned x = targets[nr_targets - 1];
		wait->hi = nr_targets - 1;
		uint64_t back = fabric_line_transfer(k->machine->fabric, x, self->id);
		wait->bound = machine_bound_add(k->machine, fabric_cpu_lane(x), back);
	}
	return t;
}
