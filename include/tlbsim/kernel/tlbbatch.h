#ifndef TLBSIM_TLBBATCH_H
#define TLBSIM_TLBBATCH_H
/*
 * The reclaim batch's state (the arch's struct arch_tlbflush_unmap_batch,
 * arch/x86/include/asm/tlbbatch.h, inside mm's struct tlbflush_unmap_batch):
 * what reclaim (rmap.c) owes a flush for, filled by the arch's
 * arch_tlbbatch_add_pending() and emptied by its arch_tlbbatch_flush()
 * (flush_arch_ops, policy.h).  Its storage is the kernel's in-flight objects
 * (kernel_alloc()), so a run stopped early frees it too.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/*
 * The CPUs that may cache any page unmapped so far (x86/riscv: the union of
 * the mms' cpumasks, kept in a bare mm used only for its cpumask, so that the
 * policy's target selection works on it unchanged), whether a flush is owed,
 * whether an entry deferred was dirty (@writable: a CPU may still write the
 * page through its TLB, so it must be flushed before the page is written
 * out, try_to_unmap_flush_dirty()), and the deferred invalidations (arm64:
 * the TLBIs issued, and for which mm).
 */
struct tlbflush_unmap_batch {
	struct mm *mask;
	bool flush_required;
	bool writable;
	unsigned nr_pages;
	uint64_t *pages;
	const struct mm *mm;
	uint64_t pages_capacity;
};

/* An empty batch for a machine of @nr_cpus CPUs; tlbbatch_free() undoes it. */
void tlbbatch_init(struct kernel *k, struct tlbflush_unmap_batch *batch, unsigned nr_cpus);
void tlbbatch_free(struct kernel *k, struct tlbflush_unmap_batch *batch);

/* Empty again after arch_tlbbatch_flush() (cpumask_clear(), the TLBIs
 * waited for), the storage kept; flush_required and writable cleared too. */
void tlbbatch_clear(struct tlbflush_unmap_batch *batch);

/* OR @mm's cpumask into the batch's (x86 and riscv arch_tlbbatch_add_pending()). */
void tlbbatch_add_mask(struct tlbflush_unmap_batch *batch, const struct mm *mm);
bool tlbbatch_test(const struct tlbflush_unmap_batch *batch, unsigned cpu);
/* Any CPU but @cpu in the batch's mask. */
bool tlbbatch_others(const struct tlbflush_unmap_batch *batch, unsigned cpu);
/* The batch's mask as an mm, for target selection. */
const struct mm *tlbbatch_mask(const struct tlbflush_unmap_batch *batch);
/* Record a deferred invalidation of @addr in @mm (arm64). */
void tlbbatch_add_page(struct kernel *k, struct tlbflush_unmap_batch *batch, const struct mm *mm,
		       uint64_t addr);

#endif
