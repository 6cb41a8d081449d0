/*
 * The reclaim batch's state (tlbbatch.h).
 *
 * Invariant: @pages holds @nr_pages addresses in the order they were added;
 * the mask only grows until the batch is cleared (after each flush) or freed.
 */
#include <string.h>
#include <glib.h>
#include "tlbsim/kernel/tlbbatch.h"

void tlbbatch_init(struct kernel *k, struct tlbflush_unmap_batch *batch, unsigned nr_cpus)
{
	*batch = (struct tlbflush_unmap_batch){0};
	batch->mask = kernel_alloc(k, sizeof(*batch->mask));
	batch->mask->nr_cpus = nr_cpus;
	batch->mask->cpumask = kernel_alloc(k, (nr_cpus + 63) / 64 * sizeof(uint64_t));
}

void tlbbatch_free(struct kernel *k, struct tlbflush_unmap_batch *batch)
{
	kernel_release(k, batch->mask->cpumask);
	kernel_release(k, batch->mask);
	if (batch->pages)
		kernel_release(k, batch->pages);
	*batch = (struct tlbflush_unmap_batch){0};
}

void tlbbatch_clear(struct tlbflush_unmap_batch *batch)
{
	const struct mm *m = batch->mask;
	memset(m->cpumask, 0, (m->nr_cpus + 63) / 64 * sizeof(uint64_t));
	batch->flush_required = false;
	batch->writable = false;
	batch->nr_pages = 0;
}

void tlbbatch_add_mask(struct tlbflush_unmap_batch *batch, const struct mm *mm)
{
	for (unsigned c = mm_cpumask_next(mm, 0); c < mm->nr_cpus; c = mm_cpumask_next(mm, c + 1))
		mm_cpumask_set(batch->mask, c);
}

bool tlbbatch_test(const struct tlbflush_unmap_batch *batch, unsigned cpu)
{
	return mm_cpumask_test(batch->mask, cpu);
}

bool tlbbatch_others(const struct tlbflush_unmap_batch *batch, unsigned cpu)
{
	const struct mm *m = batch->mask;
	unsigned first = mm_cpumask_next(m, 0);
	return first < m->nr_cpus && (first != cpu || mm_cpumask_next(m, cpu + 1) < m->nr_cpus);
}

const struct mm *tlbbatch_mask(const struct tlbflush_unmap_batch *batch)
{
	return batch->mask;
}

void tlbbatch_add_page(struct kernel *k, struct tlbflush_unmap_batch *batch, const struct mm *mm,
		       uint64_t addr)
{
	if (batch->nr_pages == batch->pages_capacity) {
		batch->pages_capacity = batch->pages_capacity ? 2 * batch->pages_capacity : 64;
		uint64_t *pages = kernel_alloc(k, batch->pages_capacity * sizeof(uint64_t));
		if (batch->pages) {
			memcpy(pages, batch->pages, batch->nr_pages * sizeof(uint64_t));
			kernel_release(k, batch->pages);
		}
		batch->pages = pages;
	}
	batch->pages[batch->nr_pages++] = addr;
	batch->mm = mm;
}
