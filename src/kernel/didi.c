/*
 * DiDi, a shared TLB directory (Villavieja et al., PACT'11; beyond.md
 * section 4, [D1], [D2]): the target set "directory" and the transport
 * "directory".  The directory beside the last-level cache knows which CPUs'
 * TLBs hold a translation; the initiator sends its invalidation to the
 * directory, which forwards it only to those sharers; each sharer drops the
 * entries, checks its load/store queue for accesses still in flight with the
 * old translation, and acks.  No IPI, no handler, no interrupt.
 *
 * Models: the sharers are exactly the other CPUs whose TLBs hold a
 * translation of the request's range under any tag (a lazy CPU included:
 * hardware does not know laziness), or, for a flush that freed page tables,
 * any paging-structure-cache entry of the mm.  The initiator waits one
 * directory_lookup per stride of the range (one for a full flush), then the
 * farthest sharer's round trip: its line_transfer (the three-hop request,
 * forward and reply of a coherence transaction: initiator to the home slice,
 * home to sharer, ack back) plus its lsq_drain.  At that time every sharer
 * drops the range as hardware invalidation does (tlbflush_hw_invalidate_cpu())
 * and every other CPU counts as current (it held nothing of the range).
 * Simplifies: the directory is exact and unbounded (docs/decisions.md: the
 * sharers are found by probing the TLBs at the flush, which is what an
 * inclusive directory's state would say; its capacity, the fill/eviction
 * traffic and back-invalidations are not modelled); the sharer's LSQ check
 * costs it nothing (flush_disturbance "none"); one message per sharer per
 * request, whatever the range's length; the initiator still executes its own
 * local flush, as under Linux.
 * Invariant: when the initiator goes on, no other CPU holds a translation of
 * the range (the stale-translation checker's promise, flush_completion
 * "remote_flush_done").
 */
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"

/* Every other CPU whose TLBs (or, for freed tables, page-walk caches) hold
 * some of the range: the directory's sharer set for the request. */
static unsigned directory_sharers(const struct kernel *k, const struct cpu *self,
				  const struct flush_tlb_info *info, unsigned *targets)
{
	unsigned n = 0;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		const struct cpu *cpu = &k->machine->cpus[c];
		if (c != self->id && tlbflush_hw_holds(k, cpu, info->mm, info->start, info->end,
						       info->stride_shift, info->freed_tables))
			targets[n++] = c;
	}
	return n;
}

/* Outside native_flush_tlb_others() (none on x86 today): mm_cpumask's. */
static unsigned directory_select(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, uint64_t nodes, unsigned *targets)
{
	return flush_targets_mm_cpumask.select(k, self, mm, nodes, targets);
}

const struct flush_targets_ops flush_targets_directory = {
    .name = "directory",
    .imitates = "DiDi (PACT'11): the TLB directory's exact sharers of the range",
    .select = directory_select,
    .sharers = directory_sharers,
};

struct directory_flush {
	struct kernel *k;
	struct flush_tlb_info *info;
	bool *sharer; /* per CPU */
};

/* Every sharer has dropped the range and acked. */
static void directory_acked(void *target, uint64_t arg)
{
	(void)arg;
	struct directory_flush *f = target;
	struct kernel *k = f->k;
	struct flush_tlb_info *info = f->info;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu *cpu = &k->machine->cpus[c];
		if (f->sharer[c])
			tlbflush_hw_invalidate_cpu(k, cpu, info->mm, info->start, info->end,
						   info->stride_shift, info->new_tlb_gen);
		else if (c != info->initiator)
			tlbflush_hw_catch_up_cpu(k, cpu, info->mm, info->new_tlb_gen);
	}
	g_free(f->sharer);
	kernel_release(k, f);
	shootdown_complete(k, info, engine_now(k->engine));
}

static void directory_send(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
			   struct flush_tlb_info *info, uint64_t now)
{
	const struct topology_costs *costs = &k->machine->topology->costs;
	uint64_t lookups =
	    info->end == FLUSH_ALL ? 1 : (info->end - info->start) >> info->stride_shift;
	cpu->counters.didi_lookups += lookups;
	struct directory_flush *f = kernel_alloc(k, sizeof(*f));
	*f = (struct directory_flush){
	    .k = k, .info = info, .sharer = g_new0(bool, k->machine->nr_cpus)};
	uint64_t round_trip = 0;
	for (unsigned i = 0; i < nr; i++) {
		f->sharer[targets[i]] = true;
		k->machine->cpus[targets[i]].counters.didi_invalidations++;
		uint64_t t = fabric_line_transfer(k->machine->fabric, cpu->id, targets[i]);
		round_trip = MAX(round_trip, t + costs->lsq_drain);
	}
	uint64_t acked = now + lookups * costs->directory_lookup + round_trip;
	engine_schedule(k->engine, kernel_global_time(k, acked), LANE_GLOBAL, directory_acked, f,
			0);
}

const struct flush_transport_ops flush_transport_directory = {
    .name = "directory",
    .imitates = "DiDi (PACT'11): one request to the TLB directory, forwarded to the sharers, "
		"acked after their LSQ check",
    .local_flush_start = LOCAL_FLUSH_AT_ONCE,
    .send = directory_send,
};
