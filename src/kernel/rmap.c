/*
 * Reclaim of a range of pages with the deferred TLB flush of
 * CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH (Mel Gorman, 72b252aed506, 4.3),
 * and the flush a later page-table walk owes a batch still pending
 * (flush_tlb_batched_pending(), 3ea277194daa, 4.12).
 *
 * Models: shrink_folio_list() taking the pages one after the other (page_fault
 * cycles of work per page: isolation, rmap walk, freeing; an estimate of the
 * same order as allocating one): try_to_unmap_one() clears the PTE and either
 * defers the flush (should_defer_flush(), asked for each page, so a CPU that
 * left mm_cpumask meanwhile stops it: set_tlb_ubc_flush_pending ->
 * arch_tlbbatch_add_pending, marking the mm's tlb_flush_batched) or flushes at
 * once (ptep_clear_flush -> flush_tlb_range of one page); a page whose PTE was
 * dirty is then written out, and before that try_to_unmap_flush_dirty()
 * flushes the batch if it holds a dirty entry (a CPU could otherwise still
 * write the page during the I/O).  try_to_unmap_flush() before the pages are
 * freed flushes what is left.
 * Simplifies: the PTEs are all cleared when the call starts (their changes
 * commit when it returns); the flushes follow in the kernel's order from
 * there.  The batch lives for one call, as the kernel's (in the task) is
 * always empty again when reclaim_pages() returns; what outlives it is the
 * mm's tlb_flush_batched.  Writing a page out costs no cycles and takes no
 * time (no swap device).
 * The frames whose last reference the unmaps dropped are freed at the end,
 * after try_to_unmap_flush(), as shrink_folio_list() frees its folios.
 * Invariant: every page unmapped is covered by a completed flush before @done.
 */
#include <glib.h>
#include "tlbsim/kernel/frame_release.h"
#include "tlbsim/kernel/rmap.h"
#include "tlbsim/kernel/tlbbatch.h"
#include "tlbsim/kernel/tlbflush.h"

#define PAGE_4K (UINT64_C(1) << 12)

/* A page shrink_folio_list() takes: the cycles spent reaching it (the PTE
 * walk since the previous one, and its own work), and whether its PTE was
 * dirty (it is written out). */
struct reclaim_page {
	uint64_t addr;
	uint64_t work;
	bool dirty;
};

/* Where the page at @next stands. */
enum reclaim_phase {
	RECLAIM_UNMAP,     /* try_to_unmap() next */
	RECLAIM_WRITEBACK, /* unmapped: try_to_unmap_flush_dirty() + pageout() next */
};

/* One reclaim call in flight. */
struct reclaim {
	struct kernel *k;
	struct cpu *cpu;
	struct mm *mm;
	struct vma *vma;
	struct reclaim_page *pages; /* the pages unmapped, in order */
	unsigned nr_pages, next;
	enum reclaim_phase phase;
	uint64_t tail_work; /* the PTE walk after the last page */
	struct tlbflush_unmap_batch batch;
	struct held_frames held; /* the frames freed once the pages are done */
	struct kcont done;
};

static void reclaim_free(struct kernel *k, struct reclaim *r)
{
	tlbbatch_free(k, &r->batch);
	kernel_release(k, r->pages);
	kernel_release(k, r);
}

static void reclaim_run(struct reclaim *r, uint64_t t);

/* The next step starts from an event at its own time. */
static void reclaim_event(void *target, uint64_t time)
{
	struct reclaim *r = target;
	reclaim_run(r, time);
}

/*
 * A flush completed at @time (the last ack), maybe less than a lookahead after
 * the event that computed it: go on from an event at that time or the
 * lookahead bound.
 */
static void reclaim_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct reclaim *r = ctx;
	if (time == engine_now(k->engine)) {
		reclaim_run(r, time);
		return;
	}
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, reclaim_event, r, at);
}

static void reclaim_batch_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct reclaim *r = ctx;
	tlbbatch_clear(&r->batch); /* the arch read the batch when it started */
	reclaim_flushed(k, r, time);
}

/* try_to_unmap_flush(): the batch's flush if one is owed, then @r goes on;
 * false (nothing started) if none is. */
static bool try_to_unmap_flush(struct reclaim *r, uint64_t t)
{
	if (!r->batch.flush_required)
		return false;
	struct kcont flushed = {.fn = reclaim_batch_flushed, .ctx = r};
	r->k->policy->arch->batch_flush(r->k, r->cpu, &r->batch, t, &flushed);
	return true;
}

/* try_to_unmap_flush_dirty(): flush only if a dirty entry is deferred. */
static bool try_to_unmap_flush_dirty(struct reclaim *r, uint64_t t)
{
	return r->batch.writable && try_to_unmap_flush(r, t);
}

/* set_tlb_ubc_flush_pending(): defer @page's flush into the batch; returns
 * the cycles. */
static uint64_t set_tlb_ubc_flush_pending(struct reclaim *r, const struct reclaim_page *page,
					  uint64_t t)
{
	struct kernel *k = r->k;
	uint64_t cycles =
	    k->policy->arch->batch_add_pending(k, r->cpu, &r->batch, r->mm, page->addr, t);
	r->batch.flush_required = true;
	r->batch.writable |= page->dirty;
	if (k->policy->flush_batched_pending)
		r->mm->tlb_flush_batched = true;
	return cycles;
}

/*
 * try_to_unmap_one()'s flush for the page at @next: deferred if the policy
 * batches and the arch wants it now, else ptep_clear_flush().  Returns
 * whether a flush was started (@r goes on when it completes).
 */
static bool try_to_unmap_one(struct reclaim *r, uint64_t *t)
{
	struct kernel *k = r->k;
	const struct reclaim_page *page = &r->pages[r->next];
	if (k->policy->reclaim_flush == RECLAIM_FLUSH_BATCHED &&
	    k->policy->arch->should_defer(k, r->cpu, r->mm)) {
		*t += set_tlb_ubc_flush_pending(r, page, *t);
		return false;
	}
	struct kcont flushed = {.fn = reclaim_flushed, .ctx = r};
	flush_tlb_mm_range(k, r->cpu, r->mm, r->vma, page->addr, page->addr + PAGE_4K,
			   PAGE_SHIFT_4K, false, *t, flushed);
	return true;
}

/* shrink_folio_list() from page @next at @t, until a flush has to complete
 * or the pages are done (then try_to_unmap_flush() and @done). */
static void reclaim_run(struct reclaim *r, uint64_t t)
{
	struct kernel *k = r->k;
	while (r->next < r->nr_pages) {
		const struct reclaim_page *page = &r->pages[r->next];
		if (r->phase == RECLAIM_UNMAP) {
			t += page->work;
			r->phase = RECLAIM_WRITEBACK;
			if (try_to_unmap_one(r, &t))
				return;
			continue;
		}
		r->phase = RECLAIM_UNMAP;
		r->next++;
		/* pageout() of a dirty page: flush first if the batch holds a
		 * writable entry; the write itself is free (see above). */
		if (page->dirty && try_to_unmap_flush_dirty(r, t))
			return;
	}
	if (r->tail_work) {
		t += r->tail_work;
		r->tail_work = 0;
	}
	if (try_to_unmap_flush(r, t))
		return;
	/* free_unref_folios(): the pages go only now, every flush done. */
	held_frames_release(k, r->cpu, r->mm, &r->held, t);
	struct kcont done = r->done;
	reclaim_free(k, r);
	kcont_call(k, done, t);
}

void reclaim_pages(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		   uint64_t start, uint64_t end, uint64_t now, struct kcont done)
{
	struct reclaim *r = kernel_alloc(k, sizeof(*r));
	*r = (struct reclaim){.k = k, .cpu = cpu, .mm = mm, .vma = vma, .done = done};
	tlbbatch_init(k, &r->batch, mm->nr_cpus);
	const struct topology_costs *costs = &k->machine->topology->costs;
	uint64_t size = page_size_bytes(vma->page_size);
	uint64_t work = 0;
	r->pages = kernel_alloc(k, (end - start) / size * sizeof(*r->pages));
	for (uint64_t addr = start; addr < end; addr += size) {
		work += costs->pte_op;
		const struct pte *pte = vma_pte(vma, addr);
		bool dirty = pte->dirty; /* ptep_get_and_clear()'s pte_dirty() */
		uint32_t held;
		/* The zero page is on no LRU: folio isolation skips it. */
		if (pte->zero_page || !mm_zap_pte_frame(mm, vma, addr, &held))
			continue;
		held_frames_add(k, &r->held, vma->page_size, held);
		cpu->counters.pages_reclaimed++;
		r->pages[r->nr_pages++] = (struct reclaim_page){
		    .addr = addr, .work = work + costs->page_fault, .dirty = dirty};
		work = 0;
	}
	r->tail_work = work;
	reclaim_run(r, now);
}

void flush_tlb_batched_pending(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t now,
			       struct kcont done)
{
	g_assert(mm->tlb_flush_batched);
	mm->tlb_flush_batched = false;
	if (k->policy->arch->batched_pending_flushes_mm) {
		/* flush_tlb_mm(): everything, freed_tables set (x86), so the
		 * IPIs reach lazy CPUs too, which leave mm_cpumask. */
		flush_tlb_mm_range(k, cpu, mm, NULL, 0, FLUSH_ALL, PAGE_SHIFT_4K, true, now, done);
		return;
	}
	/* arm64's dsb(ish) for the TLBIs add_pending issued: this model's batch
	 * waited for them before its call returned, so nothing is left to do. */
	kcont_call(k, done, now);
}
