/*
 * numaPTE / Hydra (arXiv 2401.15558, USENIX ATC'24; docs/beyond.md,
 * ../shared/spec/beyond.md section 7): page tables replicated per NUMA node
 * on demand, and the replicas' whereabouts used as the target set of a
 * flush.  A core walks only its node's replica, so it can cache a
 * translation only if its node holds the replica of that leaf table:
 *
 *   a flush whose mmu_gather read the replica nodes of every PTE it
 *   changed -> the CPUs of mm_cpumask on those nodes;
 *   a flush that freed page tables, gathered nothing, or whose spans no
 *   walk has reached yet (no node known) -> mm_cpumask.
 *
 * The replicas are a per-span node bitmap (struct mm pmd_nodes), set by
 * every page walk (machine.c, mm_pmd_replicate()) and cleared with the PTE
 * page; their costs are a copy per new node (numapte_replica_cycles, charged
 * to the walk) and one more pte_op per extra replica for every PTE the
 * kernel writes (vm.c).
 * Simplifies: a span (2 MiB, one PTE page) is replicated whole at its first
 * walk from a node, whatever level the walk ends at (a 2 MiB leaf too: VMAs
 * are 4K or 2M, so no page spans two PTE-page spans);
 * upper levels are taken as replicated everywhere, for free.
 * Invariant (the safety argument): the bit of a node is set before any of
 * its CPUs can cache a translation of the span and stays set until the
 * table is freed, and a gather reads the bits before it changes each PTE, so
 * a CPU on a node left out holds no entry the flush must remove.  A freed
 * table may sit in any paging-structure cache: such a flush is never
 * narrowed.
 */
#include "tlbsim/kernel/kernel.h"

/* The CPUs of mm_cpumask but @self whose socket is in @nodes. */
static unsigned select_numapte(const struct kernel *k, const struct cpu *self, const struct mm *mm,
			       uint64_t nodes, unsigned *targets)
{
	const struct machine *m = k->machine;
	unsigned n = 0;
	for (unsigned c = mm_cpumask_next(mm, 0); c < mm->nr_cpus; c = mm_cpumask_next(mm, c + 1))
		if (c != self->id && (nodes >> (m->cpus[c].socket % 64) & 1))
			targets[n++] = c;
	return n;
}

static enum flush_reach reach_numapte(const struct kernel *k, struct cpu *self,
				      const struct tlb_access *seen, bool freed_tables)
{
	(void)k;
	(void)self;
	/* Spans no walk has reached (populated before the run) have their
	 * table on a home node the model does not know: every node, as Linux,
	 * rather than none, which would overstate what numaPTE skips. */
	return freed_tables || seen->nodes == 0 ? FLUSH_REACH_MM : FLUSH_REACH_NODES;
}

const struct flush_targets_ops flush_targets_numapte = {
	.name = "numapte",
	.imitates = "numaPTE/Hydra (arXiv 2401.15558, ATC'24): replica-node shootdown targets",
	.select = select_numapte,
	.reach = reach_numapte,
};
