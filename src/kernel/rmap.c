/*
 * Reclaim of a range of pages with the deferred TLB flush of
 * CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH (Mel Gorman, 72b252aed506, 4.3).
 *
 * Models: shrink_folio_list() visiting each page (page_fault cycles of work
 * per page: isolation, rmap walk, freeing; an estimate of the same order as
 * allocating one), try_to_unmap_one() clearing the PTE and either deferring
 * the flush (set_tlb_ubc_flush_pending -> arch_tlbbatch_add_pending) or
 * flushing it at once (ptep_clear_flush -> flush_tlb_range of one page), and
 * try_to_unmap_flush() before the pages are freed.
 * Simplifies: the PTEs are all cleared when the call starts and the per-page
 * flushes follow one after the other; the batch lives for one call (the
 * kernel's lives in the task and flush_tlb_batched_pending() handles a batch
 * left pending across calls, which cannot happen here); no dirty-page
 * writeback (try_to_unmap_flush_dirty).
 * Invariant: every page unmapped is covered by a completed flush before @done.
 */
#include <glib.h>
#include "tlbsim/kernel/rmap.h"
#include "tlbsim/kernel/tlbbatch.h"
#include "tlbsim/kernel/tlbflush.h"

#define PAGE_4K (UINT64_C(1) << 12)

/* One reclaim call in flight. */
struct reclaim {
	struct kernel *k;
	struct cpu *cpu;
	struct mm *mm;
	struct vma *vma;
	uint64_t *flush_pages; /* pages owed an immediate flush, in order */
	unsigned nr_flush, next_flush;
	struct tlbflush_unmap_batch batch;
	struct kcont done;
};

static void reclaim_free(struct kernel *k, struct reclaim *r)
{
	tlbbatch_free(k, &r->batch);
	kernel_release(k, r->flush_pages);
	kernel_release(k, r);
}

static void reclaim_finish(struct kernel *k, void *ctx, uint64_t time)
{
	struct reclaim *r = ctx;
	struct kcont done = r->done;
	reclaim_free(k, r);
	kcont_call(k, done, time);
}

static void reclaim_next_flush(struct kernel *k, void *ctx, uint64_t time);

/* The next ptep_clear_flush() starts from an event at its own time. */
static void reclaim_next_event(void *target, uint64_t time)
{
	struct reclaim *r = target;
	reclaim_next_flush(r->k, r, time);
}

/* ptep_clear_flush() one page after another, then try_to_unmap_flush(). */
static void reclaim_next_flush(struct kernel *k, void *ctx, uint64_t time)
{
	struct reclaim *r = ctx;
	if (r->next_flush > 0 && time != engine_now(k->engine)) {
		/* A flush completes at a time of its own (the last ack), maybe
		 * less than a lookahead after the event that computed it: go on
		 * from an event at that time or the lookahead bound. */
		uint64_t at = MAX(time, engine_now(k->engine) + k->machine->lookahead);
		engine_schedule(k->engine, at, LANE_GLOBAL, reclaim_next_event, r, at);
		return;
	}
	if (r->next_flush < r->nr_flush) {
		uint64_t addr = r->flush_pages[r->next_flush++];
		struct kcont next = {.fn = reclaim_next_flush, .ctx = r};
		flush_tlb_mm_range(k, r->cpu, r->mm, r->vma, addr, addr + PAGE_4K, PAGE_SHIFT_4K,
				   false, time, next);
		return;
	}
	struct kcont finish = {.fn = reclaim_finish, .ctx = r};
	if (!r->batch.flush_required) {
		reclaim_finish(k, r, time);
		return;
	}
	k->policy->arch->batch_flush(k, r->cpu, &r->batch, time, &finish);
}

void reclaim_pages(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		   uint64_t start, uint64_t end, uint64_t now, struct kcont done)
{
	struct reclaim *r = kernel_alloc(k, sizeof(*r));
	*r = (struct reclaim){.k = k, .cpu = cpu, .mm = mm, .vma = vma, .done = done};
	tlbbatch_init(k, &r->batch, mm->nr_cpus);
	const struct topology_costs *costs = &k->machine->topology->costs;
	const struct flush_arch_ops *arch = k->policy->arch;
	bool batching = k->policy->reclaim_flush == RECLAIM_FLUSH_BATCHED &&
			arch->should_defer(k, cpu, mm);
	uint64_t size = page_size_bytes(vma->page_size);
	uint64_t t = now;
	r->flush_pages = kernel_alloc(k, (end - start) / size * sizeof(uint64_t));
	for (uint64_t addr = start; addr < end; addr += size) {
		t += costs->pte_op;
		/* The zero page is on no LRU: folio isolation skips it. */
		if (vma_pte(vma, addr)->zero_page || !mm_zap_pte(mm, vma, addr))
			continue;
		t += costs->page_fault; /* shrink_folio_list() work for this page */
		cpu->counters.pages_reclaimed++;
		if (batching) {
			r->batch.flush_required = true;
			t += arch->batch_add_pending(k, cpu, &r->batch, mm, addr, t);
		} else {
			r->flush_pages[r->nr_flush++] = addr;
		}
	}
	reclaim_next_flush(k, r, t);
}
