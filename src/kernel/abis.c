/*
 * ABIS, access-based TLB shootdown avoidance (Nadav Amit, USENIX ATC'17;
 * docs/beyond.md, ../shared/spec/beyond.md section 2): the target set of a
 * flush whose mmu_gather read the Accessed bit and the single accessor of
 * every PTE it changed (struct pte, vm.c's zap and protection loops):
 *
 *   no such PTE accessed          -> no flush at all: no TLB can hold them;
 *   every accessed one's accessor
 *   is the initiator              -> a local flush, no IPI;
 *   otherwise                     -> Linux's path, mm_cpumask.
 *
 * Flushes that gathered nothing (reclaim, fork, the reclaim batch, nested
 * gathers, MADV_PAGEOUT's aging) take Linux's path, with mm_cpumask's
 * targets.
 * Simplifies: the accessor is kept in the PTE (ABIS keeps it per page);
 * its software cost is one number per page fault (policy abis_track_cycles,
 * charged in vm.c), since the paper gives only the total ("up to 9%").
 * Invariant (the safety argument): the walker sets A whenever it fills a TLB
 * from a PTE, and A is cleared only together with a change whose flush
 * reads it, so a clear A proves no TLB holds the PTE's current translation,
 * and an accessor proves no other CPU's walk loaded it.  A freed page table
 * may sit in a paging-structure cache with no PTE's A bit set: such a flush
 * is never narrowed.
 */
#include "tlbsim/kernel/kernel.h"

/* The Linux path for whatever is not narrowed: every other CPU of the mask. */
static unsigned select_abis(const struct kernel *k, const struct cpu *self, const struct mm *mm,
			    uint64_t nodes, unsigned *targets)
{
	return flush_targets_mm_cpumask.select(k, self, mm, nodes, targets);
}

static enum flush_reach reach_abis(const struct kernel *k, struct cpu *self,
				   const struct tlb_access *seen, bool freed_tables)
{
	(void)k;
	if (freed_tables || seen->foreign)
		return FLUSH_REACH_MM;
	if (!seen->accessed) {
		self->counters.abis_flush_skipped++;
		return FLUSH_REACH_NONE;
	}
	self->counters.abis_local_only++;
	return FLUSH_REACH_LOCAL;
}

const struct flush_targets_ops flush_targets_abis = {
	.name = "abis",
	.imitates = "ABIS (Amit, ATC'17): access-bit-based shootdown avoidance",
	.select = select_abis,
	.reach = reach_abis,
};
