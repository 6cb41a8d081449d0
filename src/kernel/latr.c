/*
 * The "latr" transport: LATR, lazy translation coherence (Kumar et al.,
 * ASPLOS'18), as its released patch to Linux 4.10 does it
 * (sslab-gatech/latr, CONFIG_LAZY_TLB_SHOOTDOWN; ../shared/spec/beyond.md §1).
 *
 * Models: while a munmap() or madvise(MADV_DONTNEED) of the mm is in
 * progress, native_flush_tlb_others() flushes locally as usual, then
 * native_flush_save_state() writes the request and a copy of its target mask
 * into the next slot of the initiator's own ring and returns: no IPI, no
 * wait.  Every CPU runs native_flush_saved_states() at each scheduler tick
 * and each __schedule(): it walks every CPU's ring, runs the ordinary
 * flush_tlb_func() for each state whose mask has it, clears its bit, and
 * invalidates a state whose mask is empty.  A full ring sends the request as
 * IPIs (fallback_ipi).  Other flushes (mprotect, reclaim) stay synchronous.
 * Frames the call freed go back at once (the code's default, LAZY_MEM_FREE
 * off: release_gate "after_completion"), or stay held until the state's
 * mask is empty (the paper's lazy list: release_gate "lazy_epoch").
 * Costs: a slot write and a counter update per post (line RMWs); per sweep,
 * one line read per ring changed since this CPU last looked, and per state
 * applied its flush and an RMW on the state's line.  The tick itself is not
 * charged (every policy takes it; tlbsim models none), only the sweep.
 * Simplifies: no reaper kthread (the 1 s fallback to IPIs for states still
 * pending after two passes): runs are far shorter.  An idle CPU does not tick
 * (NOHZ idle): it sweeps when it next schedules.
 */
#include <string.h>
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"
#include "tlbsim/machine/frame.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/sched.h"

struct latr_state {
	struct flush_tlb_info info; /* the request, as flush_tlb_func() reads it */
	uint64_t *mask;             /* CPUs that have not swept it yet */
	unsigned pending;           /* bits set in @mask */
	bool valid;
	struct cacheline line;
	GArray *held[NR_PAGE_SIZES]; /* uint32_t pfns the lazy epoch holds back */
};

struct latr_ring {
	struct latr_state *states;
	unsigned start, end;   /* slots [start, end) (mod the size) may be valid */
	uint32_t version;      /* moves with every write to the ring */
	struct cacheline line; /* the ring's counters */
};

struct latr {
	struct kernel *k;
	unsigned nr_cpus, size, words;
	struct latr_ring *rings;
	uint32_t *seen; /* [cpu * nr_cpus + ring]: the ring's version it last read */
	bool *tick_armed;
	uint64_t tick_cycles;
	struct latr_state **last_posted; /* per CPU: its latest state */
};

static struct latr_state *ring_slot(const struct latr *l, struct latr_ring *ring, unsigned i)
{
	return &ring->states[i % l->size];
}

static void latr_boot(struct kernel *k)
{
	struct latr *l = g_new0(struct latr, 1);
	unsigned n = k->machine->nr_cpus;
	*l = (struct latr){.k = k, .nr_cpus = n, .size = k->policy->latr_states,
			   .words = (n + 63) / 64};
	l->rings = g_new0(struct latr_ring, n);
	for (unsigned c = 0; c < n; c++) {
		struct latr_ring *ring = &l->rings[c];
		ring->states = g_new0(struct latr_state, l->size);
		ring->line = CACHELINE_INIT;
		ring->line.writer = (int)c;
		for (unsigned i = 0; i < l->size; i++) {
			struct latr_state *state = &ring->states[i];
			state->mask = g_new0(uint64_t, l->words);
			state->line = CACHELINE_INIT;
			for (unsigned ps = 0; ps < NR_PAGE_SIZES; ps++)
				state->held[ps] = g_array_new(false, false, sizeof(uint32_t));
		}
	}
	l->seen = g_new0(uint32_t, (size_t)n * n);
	l->tick_armed = g_new0(bool, n);
	l->last_posted = g_new0(struct latr_state *, n);
	l->tick_cycles = topology_ns_to_cycles(k->machine->topology,
					       UINT64_C(1000000000) / k->policy->tick_hz);
	k->latr = l;
}

static void latr_shutdown(struct kernel *k)
{
	struct latr *l = k->latr;
	if (!l)
		return;
	for (unsigned c = 0; c < l->nr_cpus; c++) {
		for (unsigned i = 0; i < l->size; i++) {
			g_free(l->rings[c].states[i].mask);
			for (unsigned ps = 0; ps < NR_PAGE_SIZES; ps++)
				g_array_free(l->rings[c].states[i].held[ps], true);
		}
		g_free(l->rings[c].states);
	}
	g_free(l->rings);
	g_free(l->seen);
	g_free(l->tick_armed);
	g_free(l->last_posted);
	g_free(l);
	k->latr = NULL;
}

/* native_flush_save_state(): post @info for @targets in @cpu's ring; false
 * if the ring is full. */
static bool native_flush_save_state(struct latr *l, struct cpu *cpu, const unsigned *targets,
				    unsigned nr, const struct flush_tlb_info *info, uint64_t *t)
{
	struct kernel *k = l->k;
	struct latr_ring *ring = &l->rings[cpu->id];
	if (ring->end - ring->start == l->size)
		return false;
	struct latr_state *state = ring_slot(l, ring, ring->end);
	*t = fabric_line_rmw(k->machine->fabric, &state->line, cpu->id, *t);
	state->info = *info;
	memset(state->mask, 0, l->words * sizeof(uint64_t));
	for (unsigned i = 0; i < nr; i++)
		state->mask[targets[i] / 64] |= UINT64_C(1) << (targets[i] % 64);
	state->pending = nr;
	state->valid = true; /* after the write barrier */
	*t = fabric_line_rmw(k->machine->fabric, &ring->line, cpu->id, *t);
	ring->end++;
	ring->version++;
	l->last_posted[cpu->id] = state;
	cpu->counters.latr_states_saved++;
	return true;
}

/* The frames a lazy epoch held come back once the last CPU has swept the
 * state (the paper's lazy list, freed when every mask bit is clear). */
static void latr_release_held(struct latr_state *state)
{
	struct frames *frames = state->info.mm->frames;
	for (unsigned ps = 0; ps < NR_PAGE_SIZES; ps++) {
		GArray *held = state->held[ps];
		for (unsigned i = 0; i < held->len; i++)
			frame_release(frames, (enum page_size)ps, g_array_index(held, uint32_t, i));
		g_array_set_size(held, 0);
	}
}

/* The last CPU swept @state at @t: invalidate it and move the ring's start
 * past the invalid slots. */
static uint64_t latr_retire(struct latr *l, struct cpu *cpu, struct latr_ring *ring,
			    struct latr_state *state, uint64_t t)
{
	state->valid = false;
	latr_release_held(state);
	if (ring_slot(l, ring, ring->start) != state)
		return t;
	while (ring->start != ring->end && !ring_slot(l, ring, ring->start)->valid)
		ring->start++;
	ring->version++;
	return fabric_line_rmw(l->k->machine->fabric, &ring->line, cpu->id, t);
}

static bool state_has(const struct latr_state *state, unsigned cpu)
{
	return state->valid && (state->mask[cpu / 64] >> (cpu % 64)) & 1;
}

/* native_flush_saved_states(): apply every state posted for @cpu. */
static uint64_t native_flush_saved_states(struct latr *l, struct cpu *cpu, uint64_t now)
{
	struct kernel *k = l->k;
	const struct fabric *fabric = k->machine->fabric;
	uint64_t t = now;
	for (unsigned r = 0; r < l->nr_cpus; r++) {
		struct latr_ring *ring = &l->rings[r];
		uint32_t *seen = &l->seen[(size_t)cpu->id * l->nr_cpus + r];
		if (*seen == ring->version)
			continue; /* its line is still in our cache: nothing new */
		t = fabric_line_read(fabric, &ring->line, cpu->id, t);
		*seen = ring->version;
		for (unsigned i = ring->start; i != ring->end; i++) {
			struct latr_state *state = ring_slot(l, ring, i);
			if (!state_has(state, cpu->id))
				continue;
			t = fabric_line_read(fabric, &state->line, cpu->id, t);
			t += k->policy->lazy->flush_tlb_func(k, cpu, &state->info, false, t);
			t = fabric_line_rmw(fabric, &state->line, cpu->id, t);
			state->mask[cpu->id / 64] &= ~(UINT64_C(1) << (cpu->id % 64));
			cpu->counters.latr_states_flushed++;
			if (--state->pending == 0)
				t = latr_retire(l, cpu, ring, state, t);
			*seen = ring->version;
		}
	}
	cpu->counters.latr_sweep_cycles += t - now;
	return t - now;
}

/* Has any ring moved since @cpu last read it? */
static bool latr_news(const struct latr *l, unsigned cpu)
{
	for (unsigned r = 0; r < l->nr_cpus; r++)
		if (l->seen[(size_t)cpu * l->nr_cpus + r] != l->rings[r].version)
			return true;
	return false;
}

static uint64_t latr_tick_sweep(struct kernel *k, struct cpu *cpu, uint64_t now, void *info)
{
	(void)k;
	return native_flush_saved_states(info, cpu, now);
}

static void latr_arm_tick(struct latr *l, unsigned cpu, uint64_t now);

/* scheduler_tick(): sweep, unless the CPU is idle (NOHZ: its tick stops). */
static void latr_tick_event(void *target, uint64_t cpu_id)
{
	struct latr *l = target;
	struct kernel *k = l->k;
	struct cpu *cpu = &k->machine->cpus[cpu_id];
	l->tick_armed[cpu_id] = false;
	if (!sched_cpu_issuing(k, cpu))
		return;
	if (latr_news(l, cpu->id))
		smp_local_irq(k, cpu, latr_tick_sweep, l);
	latr_arm_tick(l, cpu->id, engine_now(k->engine));
}

/* Ticks fall on multiples of the period on every CPU (no skew). */
static void latr_arm_tick(struct latr *l, unsigned cpu, uint64_t now)
{
	if (l->tick_armed[cpu])
		return;
	l->tick_armed[cpu] = true;
	uint64_t next = (now / l->tick_cycles + 1) * l->tick_cycles;
	engine_schedule(l->k->engine, next, fabric_cpu_lane(cpu), latr_tick_event, l, cpu);
}

static uint64_t latr_schedule(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct latr *l = k->latr;
	latr_arm_tick(l, cpu->id, now);
	return latr_news(l, cpu->id) ? native_flush_saved_states(l, cpu, now) : 0;
}

static void latr_send(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		      struct flush_tlb_info *info, uint64_t now)
{
	struct latr *l = k->latr;
	uint64_t t = now;
	bool lazy = info->mm && info->mm->munmap_inprogress > 0 && nr > 0;
	if (lazy && native_flush_save_state(l, cpu, targets, nr, info, &t)) {
		shootdown_complete(k, info, t);
		return;
	}
	if (lazy)
		cpu->counters.latr_fallback_ipis++;
	/* Synchronous, as Linux: the IPIs and the wait for every flush. */
	shootdown_ipis(k, cpu, targets, nr, info, t, true);
}

static bool latr_hold_frames(struct kernel *k, struct cpu *cpu, const struct mm *mm,
			     const uint32_t *pfns, unsigned nr, enum page_size ps)
{
	struct latr_state *state = k->latr->last_posted[cpu->id];
	if (!state || !state->valid || state->info.mm != mm)
		return false;
	g_array_append_vals(state->held[ps], pfns, nr);
	return true;
}

const struct flush_transport_ops flush_transport_latr = {
	.name = "latr",
	.imitates = "LATR (sslab-gatech/latr on 4.10): native_flush_save_state(), "
		    "native_flush_saved_states() at scheduler_tick() and __schedule()",
	.boot = latr_boot,
	.shutdown = latr_shutdown,
	.send = latr_send,
	.schedule = latr_schedule,
	.hold_frames = latr_hold_frames,
};
