#ifndef TLBSIM_RMAP_H
#define TLBSIM_RMAP_H
/*
 * Reclaim's unmapping of pages and its deferred TLB flush (mm/rmap.c:
 * try_to_unmap_one, set_tlb_ubc_flush_pending, try_to_unmap_flush;
 * references.md, 'Linux: batched reclaim flushes (4.3+)'), as MADV_PAGEOUT drives it.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

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
