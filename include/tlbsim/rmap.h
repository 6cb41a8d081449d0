#ifndef TLBSIM_RMAP_H
#define TLBSIM_RMAP_H
/*
 * Reclaim's unmapping of pages and its deferred TLB flush (mm/rmap.c:
 * try_to_unmap_one, set_tlb_ubc_flush_pending, try_to_unmap_flush;
 * mechanisms.md 4), as MADV_PAGEOUT drives it.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel.h"

/*
 * struct tlbflush_unmap_batch: the CPUs that may cache any page unmapped so
 * far (x86/riscv arch_tlbflush_unmap_batch.cpumask; unused on arm64), and
 * whether a flush is owed.  The mask is kept in a bare mm used only for its
 * cpumask, so the policy's target selection works on it unchanged.
 */
struct tlbflush_unmap_batch {
	struct mm *mask;
	bool flush_required;
	unsigned nr_pages;        /* deferred invalidations (arm64 TLBIs issued) */
	uint64_t *pages;          /* their addresses */
	const struct mm *mm;      /* arm64: whose ASID they were issued for */
	uint64_t pages_capacity;
};

void rmap_batch_add_mask(struct tlbflush_unmap_batch *batch, const struct mm *mm);
bool rmap_batch_test(const struct tlbflush_unmap_batch *batch, unsigned cpu);
/* Any CPU but @cpu in the batch's mask. */
bool rmap_batch_others(const struct tlbflush_unmap_batch *batch, unsigned cpu);
const struct mm *rmap_batch_mask_mm(const struct tlbflush_unmap_batch *batch);
void rmap_batch_add_page(struct kernel *k, struct tlbflush_unmap_batch *batch,
			 const struct mm *mm, uint64_t addr);

/**
 * reclaim_pages() - reclaim every present page of [start, end) in @vma, from
 * @cpu at @now: try_to_unmap() each (deferring the flush if the policy batches
 * and the arch wants it, else ptep_clear_flush()), then try_to_unmap_flush()
 * before the pages are freed.  Calls @done with the time it finished.  The
 * PTE changes are made at @now; the caller commits them when it returns.
 */
void reclaim_pages(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		   uint64_t start, uint64_t end, uint64_t now, struct kcont done);

#endif
