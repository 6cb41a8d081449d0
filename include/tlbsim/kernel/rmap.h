#ifndef TLBSIM_RMAP_H
#define TLBSIM_RMAP_H
/*
 * Reclaim's unmapping of pages and its deferred TLB flush (mm/rmap.c:
 * try_to_unmap_one, set_tlb_ubc_flush_pending, try_to_unmap_flush,
 * try_to_unmap_flush_dirty, flush_tlb_batched_pending;
 * references.md, 'Linux: batched reclaim flushes (4.3+)'), as MADV_PAGEOUT drives it.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/**
 * reclaim_pages() - reclaim every present page of [start, end) in @vma, from
 * @cpu at @now: try_to_unmap() each (deferring the flush if the policy batches
 * and the arch wants it for this page, else ptep_clear_flush()), flush the
 * batch before a page whose PTE was dirty is written out if it holds a dirty
 * entry (try_to_unmap_flush_dirty()), and try_to_unmap_flush() before the
 * pages are freed.  A deferred flush marks @mm's tlb_flush_batched.  Calls
 * @done with the time it finished.  The PTE changes are made at @now; the
 * caller commits them when it returns.
 */
void reclaim_pages(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		   uint64_t start, uint64_t end, uint64_t now, struct kcont done);

/**
 * flush_tlb_batched_pending() - what a page-table walk of @mm (zap,
 * change_pte_range(), the MADV_COLD/PAGEOUT walk) does first when reclaim
 * deferred a flush of @mm (@mm->tlb_flush_batched, which it clears): the
 * arch's arch_flush_tlb_batched_pending(), from @cpu at @now.  x86 and riscv:
 * flush_tlb_mm(), a full flush with freed_tables set, which reaches lazy CPUs
 * too; arm64: a DSB, no flush.  Calls @done with the time the walk goes on.
 */
void flush_tlb_batched_pending(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t now,
			       struct kcont done);

#endif
