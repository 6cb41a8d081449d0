/*
 * Tests of src/machine/mm.c: VMA layout and PTE indexing, the PTE generations (gen
 * moves on every change, pending on every invalidating change, committed only
 * on mm_commit_pte, and only up to pending),
 * epochs, total_vm accounting, page-table-page occupancy as reported by
 * mm_unmap_vma() and taken again by mm_map_vma(), and the mm_cpumask bitmap
 * across 64-bit word boundaries.
 *
 * Occupancy layouts are drawn with 2 MiB spans S0 = [2M, 4M), S1 = [4M, 6M),
 * S2 = [6M, 8M), ... and VMAs that share them; the expected freed ranges are
 * worked out by hand next to each case.
 */
#include <signal.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/mm.h"

#define K4 UINT64_C(0x1000)
#define M2 UINT64_C(0x200000)
/* Start of 2 MiB span Sn. */
#define SPAN(n) ((UINT64_C(1) + (n)) * M2)

/* Comparable snapshot of everything a failed zap/wrprotect must leave alone. */
struct mm_snapshot {
	struct pte pte;
	uint64_t vma_epoch;
	uint64_t mm_epoch;
	uint32_t next_gen;
	uint64_t total_vm;
};

static struct mm_snapshot snapshot(const struct mm *mm, const struct vma *vma, uint64_t addr)
{
	return (struct mm_snapshot){
	    .pte = *vma_pte(vma, addr),
	    .vma_epoch = vma->epoch,
	    .mm_epoch = mm->epoch,
	    .next_gen = mm->next_gen,
	    .total_vm = mm->total_vm,
	};
}

static void expect_unchanged(const struct mm_snapshot *before, const struct mm *mm,
			     const struct vma *vma, uint64_t addr)
{
	struct mm_snapshot now = snapshot(mm, vma, addr);

	cr_expect_eq(now.pte.gen, before->pte.gen);
	cr_expect_eq(now.pte.pending, before->pte.pending);
	cr_expect_eq(now.pte.committed, before->pte.committed);
	cr_expect_eq(now.pte.present, before->pte.present);
	cr_expect_eq(now.pte.writable, before->pte.writable);
	cr_expect_eq(now.pte.dirty, before->pte.dirty);
	cr_expect_eq(now.vma_epoch, before->vma_epoch);
	cr_expect_eq(now.mm_epoch, before->mm_epoch);
	cr_expect_eq(now.next_gen, before->next_gen);
	cr_expect_eq(now.total_vm, before->total_vm);
}

/* ---- construction and layout ------------------------------------------- */

Test(mm, new_is_empty)
{
	struct mm *mm = mm_new(7, 4);

	cr_expect_eq(mm->id, 7);
	cr_expect_eq(mm->nr_cpus, 4);
	cr_expect_eq(mm->nr_vmas, 0);
	cr_expect_eq(mm->total_vm, 0);
	cr_expect_eq(mm->epoch, 0);
	cr_expect_eq(mm_cpumask_weight(mm), 0);
	cr_expect_eq(mm->cpumask_line.writer, -1);
	cr_expect_eq(mm->cpumask_line.busy_until, 0);
	mm_finish_layout(mm); /* no VMAs: nothing to track */
	cr_expect_null(mm->pmd_users);
	cr_expect_eq(mm->nr_pmds, 0);
	mm_free(mm);
}

Test(mm, free_null_is_noop)
{
	mm_free(NULL);
}

Test(mm, add_vma_lays_out_fields)
{
	struct mm *mm = mm_new(1, 2);
	struct vma *a = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 3, 5);

	cr_expect_eq(a->start, SPAN(0));
	cr_expect_eq(a->end, SPAN(0) + 4 * K4);
	cr_expect_eq(a->page_size, PS_4K);
	cr_expect_not(a->hugetlb);
	cr_expect(a->mapped);
	cr_expect(a->writable);
	cr_expect_eq(a->epoch, 0);
	cr_expect_eq(a->region, 3);
	cr_expect_eq(a->chunk, 5);
	cr_expect_eq(vma_pages(a), 4);
	for (uint64_t i = 0; i < vma_pages(a); i++) {
		const struct pte *pte = &a->ptes[i];
		cr_expect_not(pte->present, "page %lu", (unsigned long)i);
		cr_expect_not(pte->writable, "page %lu", (unsigned long)i);
	}

	/* Adjacent VMA: end == next start is allowed. */
	struct vma *b = mm_add_vma(mm, SPAN(0) + 4 * K4, 2 * K4, PS_4K, false, 3, 6);
	/* Adding may move the array: earlier pointers are re-read from it. */
	a = &mm->vmas[0];
	cr_expect_eq(mm->nr_vmas, 2);
	cr_expect_eq(&mm->vmas[1], b);
	cr_expect_eq(b->start, a->end);
	cr_expect_eq(b->chunk, 6);

	/* A 2 MiB VMA indexes its PTEs in 2 MiB pages. */
	struct vma *h = mm_add_vma(mm, SPAN(2), 2 * M2, PS_2M, true, 4, 0);
	cr_expect_eq(mm->nr_vmas, 3);
	cr_expect_eq(&mm->vmas[2], h);
	cr_expect_eq(h->page_size, PS_2M);
	cr_expect(h->hugetlb);
	cr_expect_eq(vma_pages(h), 2);
	mm_free(mm);
}

Test(mm, vma_pte_indexes_by_page)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 8 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(2), 3 * M2, PS_2M, false, 0, 1);
	const struct vma *small = &mm->vmas[0];
	const struct vma *huge = &mm->vmas[1];

	cr_expect_eq(vma_pte(small, SPAN(0)), &small->ptes[0]);
	cr_expect_eq(vma_pte(small, SPAN(0) + K4 - 1), &small->ptes[0]);
	cr_expect_eq(vma_pte(small, SPAN(0) + 3 * K4 + 123), &small->ptes[3]);
	cr_expect_eq(vma_pte(small, SPAN(0) + 8 * K4 - 1), &small->ptes[7]);
	cr_expect_eq(vma_pte(huge, SPAN(2)), &huge->ptes[0]);
	cr_expect_eq(vma_pte(huge, SPAN(2) + M2 - 1), &huge->ptes[0]);
	cr_expect_eq(vma_pte(huge, SPAN(2) + M2 + 5 * K4), &huge->ptes[1]);
	cr_expect_eq(vma_pte(huge, SPAN(2) + 3 * M2 - 1), &huge->ptes[2]);
	mm_free(mm);
}

Test(mm, overlapping_vma_aborts, .signal = SIGABRT)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(0) + 3 * K4, 4 * K4, PS_4K, false, 0, 1);
}

Test(mm, misaligned_huge_vma_aborts, .signal = SIGABRT)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0) + K4, M2, PS_2M, false, 0, 0);
}

/* ---- total_vm ----------------------------------------------------------- */

Test(mm, total_vm_counts_4k_units)
{
	struct mm *mm = mm_new(1, 1);

	mm_add_vma(mm, SPAN(0), 16 * K4, PS_4K, false, 0, 0);
	cr_expect_eq(mm->total_vm, 16);
	mm_add_vma(mm, SPAN(2), 2 * M2, PS_2M, false, 0, 1);
	cr_expect_eq(mm->total_vm, 16 + 1024);
	mm_add_vma(mm, SPAN(4), K4, PS_4K, false, 0, 2);
	cr_expect_eq(mm->total_vm, 16 + 1024 + 1);
	mm_finish_layout(mm);
	cr_expect_eq(mm->total_vm, 1041);

	/* Unmapping leaves total_vm to the caller (lowered after the flush). */
	uint64_t s = 0, e = 0;
	mm_unmap_vma(mm, &mm->vmas[1], &s, &e);
	mm_unmap_vma(mm, &mm->vmas[0], &s, &e);
	cr_expect_eq(mm->total_vm, 1041);
	mm_free(mm);
}

/* ---- PTE generations ---------------------------------------------------- */

Test(mm, populate_bumps_gen_only)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);

	mm_populate(mm, vma, SPAN(0) + K4, true);
	const struct pte *p1 = vma_pte(vma, SPAN(0) + K4);
	cr_expect(p1->present);
	cr_expect(p1->writable);
	cr_expect_gt(p1->gen, 0);
	/* A populate invalidates nothing: no pending change, nothing committed. */
	cr_expect_eq(p1->pending, 0);
	cr_expect_eq(p1->committed, 0);
	cr_expect_eq(vma->epoch, 0);
	cr_expect_eq(mm->epoch, 0);

	mm_populate(mm, vma, SPAN(0) + 2 * K4, false);
	const struct pte *p2 = vma_pte(vma, SPAN(0) + 2 * K4);
	cr_expect(p2->present);
	cr_expect_not(p2->writable);
	cr_expect_gt(p2->gen, p1->gen);
	cr_expect_eq(p2->pending, 0);
	cr_expect_eq(p2->committed, 0);

	/* A read-only VMA never gets a writable PTE. */
	vma->writable = false;
	mm_populate(mm, vma, SPAN(0) + 3 * K4, true);
	cr_expect_not(vma_pte(vma, SPAN(0) + 3 * K4)->writable);
	cr_expect(vma_pte(vma, SPAN(0) + 3 * K4)->present);

	/* Untouched neighbour. */
	cr_expect_not(vma_pte(vma, SPAN(0))->present);
	cr_expect_eq(vma_pte(vma, SPAN(0))->gen, 0);
	mm_free(mm);
}

/*
 * Frames: a populate allocates one (for its generation), the zero page has
 * none, copying it over allocates; fork's copy shares the parent's frame
 * (and its bits), and only the zap of the last mapping holds it, whichever
 * side goes last.  A zapped PTE keeps its last frame.
 */
Test(mm, ptes_map_frames_and_fork_shares_them)
{
	struct frames *frames = frame_table_new();
	struct mm *parent = mm_new(1, 1), *child = mm_new(2, 1);
	parent->frames = child->frames = frames;
	struct vma *pv = mm_add_vma(parent, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	struct vma *cv = mm_add_vma(child, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(parent);
	mm_finish_layout(child);

	mm_populate(parent, pv, SPAN(0), true);
	const struct pte *p0 = vma_pte(pv, SPAN(0));
	cr_assert_eq(p0->pfn, 1, "the first 4K frame");
	cr_expect_not(frame_reused_since(frames, PS_4K, 1, 1, p0->gen));
	mm_map_zero_page(parent, pv, SPAN(0) + K4);
	cr_expect_eq(vma_pte(pv, SPAN(0) + K4)->pfn, 0, "the zero page is no frame of ours");

	vma_pte(pv, SPAN(0))->dirty = true;
	mm_copy_pte(child, cv, SPAN(0), p0);
	mm_copy_pte(child, cv, SPAN(0) + K4, vma_pte(pv, SPAN(0) + K4));
	const struct pte *c0 = vma_pte(cv, SPAN(0));
	cr_expect_eq(c0->pfn, 1);
	cr_expect(c0->present && c0->writable && c0->dirty);
	cr_expect(vma_pte(cv, SPAN(0) + K4)->zero_page);
	cr_expect_eq(frame_refcount(frames, PS_4K, 1), 2);

	uint32_t held;
	cr_assert(mm_zap_pte_frame(parent, pv, SPAN(0), &held));
	cr_expect_eq(held, 0, "the child still maps it");
	cr_expect_eq(p0->pfn, 1, "a zapped PTE keeps its last frame");
	cr_assert(mm_zap_pte_frame(child, cv, SPAN(0) + K4, &held));
	cr_expect_eq(held, 0, "the zero page");
	cr_assert(mm_zap_pte_frame(child, cv, SPAN(0), &held));
	cr_expect_eq(held, 1, "the last mapping went");
	cr_expect_eq(frame_state(frames, PS_4K, 1), FRAME_HELD);
	cr_expect_not(mm_zap_pte_frame(child, cv, SPAN(0), &held));
	cr_expect_eq(held, 0, "a zap of nothing holds nothing");

	/* Copying over the zero page allocates; the held frame is not free. */
	mm_cow_zero_page(parent, pv, SPAN(0) + K4);
	cr_expect_eq(vma_pte(pv, SPAN(0) + K4)->pfn, 2);
	frame_release(frames, PS_4K, 1);
	mm_populate(parent, pv, SPAN(0) + 2 * K4, true);
	cr_expect_eq(vma_pte(pv, SPAN(0) + 2 * K4)->pfn, 1, "freed: the next one handed out");
	mm_free(child);
	mm_free(parent);
	frame_table_free(frames);
}

/* The dirty bit lives with the PTE: a fresh one is clean, a write-protect
 * keeps it (the page still holds the data), a zap takes it away. */
Test(mm, dirty_bit_ends_with_the_pte)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 2 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	struct pte *pte = vma_pte(vma, SPAN(0));
	mm_populate(mm, vma, SPAN(0), true);
	cr_expect_not(pte->dirty);
	pte->dirty = true; /* a write through it */
	cr_expect(mm_wrprotect_pte(mm, vma, SPAN(0)));
	cr_expect(pte->dirty);
	cr_expect(mm_zap_pte(mm, vma, SPAN(0)));
	cr_expect_not(pte->dirty);
	pte->dirty = true; /* stale state a populate must not inherit */
	mm_populate(mm, vma, SPAN(0), true);
	cr_expect_not(pte->dirty);
	mm_free(mm);
}

Test(mm, zap_bumps_gen_and_pending_not_committed)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	uint64_t addr = SPAN(0) + 2 * K4 + 7;

	mm_populate(mm, vma, addr, true);
	struct pte *pte = vma_pte(vma, addr);
	uint32_t populated = pte->gen;

	cr_assert(mm_zap_pte(mm, vma, addr));
	cr_expect_not(pte->present);
	cr_expect_not(pte->writable);
	cr_expect_gt(pte->gen, populated);
	cr_expect_eq(pte->pending, pte->gen);
	cr_expect_eq(pte->committed, 0, "zap alone must not commit");
	cr_expect_eq(vma->epoch, 1);
	cr_expect_eq(mm->epoch, 1);

	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, pte->gen);
	cr_expect_eq(vma->epoch, 1);
	cr_expect_eq(mm->epoch, 1);
	mm_free(mm);
}

/*
 * Commit raises committed to the pending invalidation, never to a later
 * populate (a racing fault's fresh entry is not stale), and never lowers it.
 */
Test(mm, commit_follows_pending_not_populate)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	struct pte *pte = vma_pte(vma, SPAN(0));

	/* Nothing pending: commit is a no-op. */
	mm_populate(mm, vma, SPAN(0), true);
	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, 0);

	cr_assert(mm_zap_pte(mm, vma, SPAN(0)));
	uint32_t zapped = pte->gen;
	mm_populate(mm, vma, SPAN(0), true); /* the racing fault */
	cr_expect_gt(pte->gen, zapped);
	cr_expect_eq(pte->pending, zapped);
	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, zapped);
	cr_expect_lt(pte->committed, pte->gen);

	/* Committing again changes nothing. */
	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, zapped);

	/* A later downgrade moves pending; committed follows only on commit. */
	cr_assert(mm_wrprotect_pte(mm, vma, SPAN(0)));
	uint32_t downgraded = pte->gen;
	cr_expect_eq(pte->pending, downgraded);
	cr_expect_eq(pte->committed, zapped);
	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, downgraded);

	/* committed never goes down, even if pending were behind it. */
	pte->pending = zapped;
	mm_commit_pte(pte);
	cr_expect_eq(pte->committed, downgraded);
	mm_free(mm);
}

Test(mm, zap_of_non_present_changes_nothing)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);

	/* Never populated. */
	struct mm_snapshot before = snapshot(mm, vma, SPAN(0));
	cr_expect_not(mm_zap_pte(mm, vma, SPAN(0)));
	expect_unchanged(&before, mm, vma, SPAN(0));

	/* Populated, zapped, committed: a second zap finds nothing. */
	mm_populate(mm, vma, SPAN(0) + K4, true);
	cr_assert(mm_zap_pte(mm, vma, SPAN(0) + K4));
	mm_commit_pte(vma_pte(vma, SPAN(0) + K4));
	before = snapshot(mm, vma, SPAN(0) + K4);
	cr_expect_not(mm_zap_pte(mm, vma, SPAN(0) + K4));
	expect_unchanged(&before, mm, vma, SPAN(0) + K4);

	/* Zapped but not yet committed: still nothing, and committed stays behind. */
	mm_populate(mm, vma, SPAN(0) + 2 * K4, true);
	cr_assert(mm_zap_pte(mm, vma, SPAN(0) + 2 * K4));
	before = snapshot(mm, vma, SPAN(0) + 2 * K4);
	cr_expect_lt(before.pte.committed, before.pte.pending);
	cr_expect_not(mm_zap_pte(mm, vma, SPAN(0) + 2 * K4));
	expect_unchanged(&before, mm, vma, SPAN(0) + 2 * K4);
	mm_free(mm);
}

Test(mm, wrprotect_only_writable_present)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);

	/* Not present. */
	struct mm_snapshot before = snapshot(mm, vma, SPAN(0));
	cr_expect_not(mm_wrprotect_pte(mm, vma, SPAN(0)));
	expect_unchanged(&before, mm, vma, SPAN(0));

	/* Present read-only. */
	mm_populate(mm, vma, SPAN(0) + K4, false);
	before = snapshot(mm, vma, SPAN(0) + K4);
	cr_expect_not(mm_wrprotect_pte(mm, vma, SPAN(0) + K4));
	expect_unchanged(&before, mm, vma, SPAN(0) + K4);

	/* Present writable: downgraded, still present, committed stays behind. */
	mm_populate(mm, vma, SPAN(0) + 2 * K4, true);
	struct pte *pte = vma_pte(vma, SPAN(0) + 2 * K4);
	uint32_t populated = pte->gen;
	uint64_t vma_epoch = vma->epoch, mm_epoch = mm->epoch;
	cr_assert(mm_wrprotect_pte(mm, vma, SPAN(0) + 2 * K4));
	cr_expect(pte->present);
	cr_expect_not(pte->writable);
	cr_expect_gt(pte->gen, populated);
	cr_expect_eq(pte->pending, pte->gen);
	cr_expect_eq(pte->committed, 0);
	cr_expect_eq(vma->epoch, vma_epoch + 1);
	cr_expect_eq(mm->epoch, mm_epoch + 1);

	/* Twice: already read-only. */
	before = snapshot(mm, vma, SPAN(0) + 2 * K4);
	cr_expect_not(mm_wrprotect_pte(mm, vma, SPAN(0) + 2 * K4));
	expect_unchanged(&before, mm, vma, SPAN(0) + 2 * K4);

	/* A write-protected PTE can still be zapped. */
	cr_expect(mm_zap_pte(mm, vma, SPAN(0) + 2 * K4));
	cr_expect_not(pte->present);
	mm_free(mm);
}

/*
 * One generation source per mm: every change to any PTE of any VMA gets a
 * larger generation than every change before it; committed moves only on
 * commit.
 */
Test(mm, generations_strictly_increase_across_vmas)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(2), 2 * M2, PS_2M, false, 1, 0);
	mm_finish_layout(mm);
	struct vma *small = &mm->vmas[0];
	struct vma *huge = &mm->vmas[1];
	uint32_t last = 0;

	for (unsigned round = 0; round < 3; round++) {
		struct {
			struct vma *vma;
			uint64_t addr;
		} pages[] = {
		    {small, SPAN(0)},
		    {huge, SPAN(2) + M2},
		    {small, SPAN(0) + 3 * K4},
		    {huge, SPAN(2)},
		};
		for (size_t i = 0; i < G_N_ELEMENTS(pages); i++) {
			struct vma *vma = pages[i].vma;
			uint64_t addr = pages[i].addr;
			struct pte *pte = vma_pte(vma, addr);
			uint32_t committed = pte->committed;

			mm_populate(mm, vma, addr, true);
			cr_expect_gt(pte->gen, last);
			cr_expect_eq(pte->committed, committed);
			last = pte->gen;

			cr_assert(mm_wrprotect_pte(mm, vma, addr));
			cr_expect_gt(pte->gen, last);
			cr_expect_eq(pte->committed, committed);
			last = pte->gen;

			cr_assert(mm_zap_pte(mm, vma, addr));
			cr_expect_gt(pte->gen, last);
			cr_expect_eq(pte->committed, committed);
			last = pte->gen;

			/* Commit every other page. */
			if (i % 2 == 0) {
				mm_commit_pte(pte);
				cr_expect_eq(pte->committed, last);
			}
		}
	}
	cr_expect_eq(small->epoch, 3 * 2 * 2);
	cr_expect_eq(huge->epoch, 3 * 2 * 2);
	cr_expect_eq(mm->epoch, 3 * 4 * 2);
	mm_free(mm);
}

Test(mm, unmap_marks_unmapped_and_bumps_epochs)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(0) + 4 * K4, 4 * K4, PS_4K, false, 0, 1);
	mm_finish_layout(mm);
	struct vma *a = &mm->vmas[0], *b = &mm->vmas[1];
	uint64_t s = 0, e = 0;

	mm_unmap_vma(mm, a, &s, &e);
	cr_expect_not(a->mapped);
	cr_expect(b->mapped);
	cr_expect_eq(a->epoch, 1);
	cr_expect_eq(b->epoch, 0);
	cr_expect_eq(mm->epoch, 1);
	/* The VMA stays in the array, in place. */
	cr_expect_eq(mm->nr_vmas, 2);
	cr_expect_eq(&mm->vmas[0], a);
	mm_free(mm);
}

Test(mm, unmap_twice_aborts, .signal = SIGABRT)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	uint64_t s = 0, e = 0;
	mm_unmap_vma(mm, &mm->vmas[0], &s, &e);
	mm_unmap_vma(mm, &mm->vmas[0], &s, &e);
}

/*
 * Mapping again after munmap: a fresh read-write mapping, its pages counted in
 * total_vm again, the epochs bumped (cached "all present" answers are
 * recomputed), and every PTE absent with its generations kept, so that an
 * entry filled before the munmap still compares as older than the zap.
 */
Test(mm, map_again_is_a_fresh_mapping_with_the_old_generations)
{
	struct mm *mm = mm_new(1, 1);
	struct vma *vma = mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	mm_populate(mm, vma, SPAN(0) + K4, true);
	uint32_t filled = vma_pte(vma, SPAN(0) + K4)->gen;
	cr_assert(mm_zap_pte(mm, vma, SPAN(0) + K4));
	mm_commit_pte(vma_pte(vma, SPAN(0) + K4));
	vma->writable = false; /* an mprotect(read) before the munmap */
	uint64_t s = 0, e = 0;
	mm_unmap_vma(mm, vma, &s, &e);
	mm->total_vm -= 4; /* as munmap's return does */
	struct pte before = *vma_pte(vma, SPAN(0) + K4);
	uint64_t vma_epoch = vma->epoch, mm_epoch = mm->epoch;
	uint32_t next_gen = mm->next_gen;

	mm_map_vma(mm, vma);
	cr_expect(vma->mapped);
	cr_expect(vma->writable);
	cr_expect_eq(mm->total_vm, 4);
	cr_expect_gt(vma->epoch, vma_epoch);
	cr_expect_gt(mm->epoch, mm_epoch);
	cr_expect_eq(mm->next_gen, next_gen, "mapping changes no PTE");
	for (uint64_t i = 0; i < 4; i++)
		cr_expect_not(vma->ptes[i].present);
	const struct pte *pte = vma_pte(vma, SPAN(0) + K4);
	cr_expect_eq(pte->gen, before.gen);
	cr_expect_eq(pte->pending, before.pending);
	cr_expect_eq(pte->committed, before.committed);
	cr_expect_lt(filled, pte->committed, "an old entry is still stale");
	/* A fault after the map is newer than everything committed. */
	mm_populate(mm, vma, SPAN(0) + K4, true);
	cr_expect_gt(pte->gen, pte->committed);
	cr_expect(pte->writable);
	mm_free(mm);
}

Test(mm, map_of_a_mapped_vma_aborts, .signal = SIGABRT)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 4 * K4, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	mm_map_vma(mm, &mm->vmas[0]);
}

/* ---- VMA locks: merging and splitting ----------------------------------- */

/*
 * Region 0's chunks 0-3, 16 KiB each, back to back (vmas 0-3: one kernel
 * VMA), then region 1's chunk right after (vma 4: adjacent, but another
 * mapping's flags: a VMA of its own).
 */
static struct mm *merged_chunks(void)
{
	struct mm *mm = mm_new(1, 4);
	for (unsigned c = 0; c < 4; c++)
		mm_add_vma(mm, SPAN(0) + c * 4 * K4, 4 * K4, PS_4K, false, 0, c);
	mm_add_vma(mm, SPAN(0) + 16 * K4, 4 * K4, PS_4K, false, 1, 0);
	mm_finish_layout(mm);
	return mm;
}

static bool write_locked(const struct mm *mm, const struct vma_lock *lock)
{
	return lock->vm_lock_seq == mm->mm_lock_seq;
}

Test(mm_vma_lock, layout_merges_adjacent_chunks_of_a_region)
{
	struct mm *mm = merged_chunks();
	struct vma *v = mm->vmas;
	struct vma_lock *a = v[0].vm_lock;
	cr_assert_not_null(a);
	for (unsigned i = 1; i < 4; i++)
		cr_expect_eq(v[i].vm_lock, a, "chunk %u", i);
	cr_expect_neq(v[4].vm_lock, a, "another region");
	cr_expect_not(write_locked(mm, a));
	cr_expect_not(write_locked(mm, v[4].vm_lock));
	cr_expect_eq(a->sem.count.writer, -1);
	mm_free(mm);
}

/*
 * munmap of chunk 1 splits [0-3]: the shorter part, [0], gets a new lock,
 * written by the unmapping CPU and write-locked as long as its caller holds
 * mmap_lock, [2-3] keep theirs; mapping chunk 1 again merges [0-3] back under
 * the longer run's lock and frees the other, which the next split reuses.
 * Region 1 is never touched.
 */
Test(mm_vma_lock, unmap_splits_and_map_merges_back)
{
	struct mm *mm = merged_chunks();
	struct vma *v = mm->vmas;
	struct vma_lock *a = v[0].vm_lock, *other = v[4].vm_lock;
	uint64_t s = 0, e = 0;

	mm_unmap_vma(mm, &v[1], &s, &e);
	mm_vma_relink(mm, &v[1], 3);
	struct vma_lock *b = v[0].vm_lock;
	cr_assert_not_null(b);
	cr_expect_neq(b, a);
	cr_expect_null(v[1].vm_lock);
	cr_expect_eq(v[2].vm_lock, a);
	cr_expect_eq(v[3].vm_lock, a);
	cr_expect_eq(v[4].vm_lock, other);
	cr_expect_eq(b->sem.count.writer, 3, "vm_area_dup() by the unmapping CPU");
	cr_expect(write_locked(mm, b), "a new VMA under its caller's write lock");
	cr_expect_not(write_locked(mm, a), "the lock's state is the caller's to change");

	mm->mm_lock_seq++; /* mmap_write_unlock() */
	cr_expect_not(write_locked(mm, b));
	mm_map_vma(mm, &v[1]);
	mm_vma_relink(mm, &v[1], 2);
	for (unsigned i = 0; i < 4; i++)
		cr_expect_eq(v[i].vm_lock, a, "chunk %u", i);
	cr_expect_eq(v[4].vm_lock, other);

	mm_unmap_vma(mm, &v[2], &s, &e);
	mm_vma_relink(mm, &v[2], 1);
	cr_expect_eq(v[1].vm_lock, a);
	cr_expect_eq(v[3].vm_lock, b, "the freed lock is reused");
	cr_expect_eq(b->sem.count.writer, 1);
	mm_free(mm);
}

/*
 * Unmapping chunks 0, 1, 2, ... of a long run one by one rewrites nothing
 * but the chunk itself: the rest always keeps the lock (the work per call is
 * the shorter part's length, here none).
 */
Test(mm_vma_lock, unmapping_a_long_run_in_order_keeps_its_lock)
{
	struct mm *mm = mm_new(1, 4);
	for (unsigned c = 0; c < 64; c++)
		mm_add_vma(mm, SPAN(0) + c * 4 * K4, 4 * K4, PS_4K, false, 0, c);
	mm_finish_layout(mm);
	struct vma_lock *a = mm->vmas[0].vm_lock;
	uint64_t s = 0, e = 0;
	for (unsigned c = 0; c < 63; c++) {
		mm_unmap_vma(mm, &mm->vmas[c], &s, &e);
		mm_vma_relink(mm, &mm->vmas[c], 0);
		cr_assert_eq(mm->vmas[c + 1].vm_lock, a, "after chunk %u", c);
		cr_assert_eq(mm->vmas[63].vm_lock, a, "after chunk %u", c);
	}
	cr_expect_eq(mm->free_vma_locks, NULL, "no lock was made or freed");
	mm_free(mm);
}

/* The first chunk goes: the rest keeps the lock (the first one found). */
Test(mm_vma_lock, unmap_of_the_first_chunk_keeps_the_lock_for_the_rest)
{
	struct mm *mm = merged_chunks();
	struct vma *v = mm->vmas;
	struct vma_lock *a = v[0].vm_lock;
	uint64_t s = 0, e = 0;
	mm_unmap_vma(mm, &v[0], &s, &e);
	mm_vma_relink(mm, &v[0], 0);
	cr_expect_null(v[0].vm_lock);
	for (unsigned i = 1; i < 4; i++)
		cr_expect_eq(v[i].vm_lock, a, "chunk %u", i);
	mm_free(mm);
}

/* mprotect(read) of chunk 2 makes three VMAs of [0-3]; mprotect(write)
 * merges them again under the longer part's lock, [0-1]'s. */
Test(mm_vma_lock, protection_change_splits_and_merges)
{
	struct mm *mm = merged_chunks();
	struct vma *v = mm->vmas;
	struct vma_lock *a = v[0].vm_lock;
	v[2].writable = false;
	mm_vma_relink(mm, &v[2], 0);
	cr_expect_eq(v[1].vm_lock, a);
	cr_expect_neq(v[2].vm_lock, a);
	cr_expect_neq(v[3].vm_lock, a);
	cr_expect_neq(v[3].vm_lock, v[2].vm_lock);
	v[2].writable = true;
	mm_vma_relink(mm, &v[2], 0);
	for (unsigned i = 0; i < 4; i++)
		cr_expect_eq(v[i].vm_lock, a, "chunk %u", i);
	mm_free(mm);
}

/* hugetlb (VM_DONTEXPAND) and shared (a shmem file each) never merge. */
Test(mm_vma_lock, hugetlb_and_shared_chunks_keep_their_own_locks)
{
	struct mm *mm = mm_new(1, 4);
	mm_add_vma(mm, SPAN(0), M2, PS_2M, true, 0, 0);
	mm_add_vma(mm, SPAN(1), M2, PS_2M, true, 0, 1);
	mm_add_vma(mm, SPAN(2), 4 * K4, PS_4K, false, 1, 0);
	mm_add_vma(mm, SPAN(2) + 4 * K4, 4 * K4, PS_4K, false, 1, 1);
	/* (after both: adding one may move the array) */
	mm->vmas[2].shared = mm->vmas[3].shared = true;
	mm_finish_layout(mm);
	cr_expect_neq(mm->vmas[0].vm_lock, mm->vmas[1].vm_lock);
	cr_expect_neq(mm->vmas[2].vm_lock, mm->vmas[3].vm_lock);
	mm_free(mm);
}

/* ---- page-table occupancy ------------------------------------------------ */

/*
 *   A = [S0 + 4K, S1 + 4K)     touches S0, S1
 *   B = [S1 + 4K, S1 + 12K)    touches S1
 *   C = [S1 + 64K, S2 + 8K)    touches S1, S2
 * pmd_users = {S0: 1, S1: 3, S2: 1}.
 */
static struct mm *three_vmas(void)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0) + K4, M2, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(1) + K4, 2 * K4, PS_4K, false, 0, 1);
	mm_add_vma(mm, SPAN(1) + 16 * K4, M2 - 14 * K4, PS_4K, false, 0, 2);
	mm_finish_layout(mm);
	cr_assert_eq(mm->vmas[2].end, SPAN(2) + 2 * K4);
	return mm;
}

struct unmap_step {
	unsigned vma;
	unsigned freed;
	uint64_t start, end; /* expected when freed > 0 */
};

static void run_unmaps(struct mm *mm, const struct unmap_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t start = UINT64_MAX, end = UINT64_MAX;
		unsigned freed = mm_unmap_vma(mm, &mm->vmas[steps[i].vma], &start, &end);

		cr_expect_eq(freed, steps[i].freed, "step %zu (vma %u): freed %u, want %u", i,
			     steps[i].vma, freed, steps[i].freed);
		if (steps[i].freed == 0 || freed == 0)
			continue;
		cr_expect_eq(start, steps[i].start, "step %zu: start %#lx, want %#lx", i,
			     (unsigned long)start, (unsigned long)steps[i].start);
		cr_expect_eq(end, steps[i].end, "step %zu: end %#lx, want %#lx", i,
			     (unsigned long)end, (unsigned long)steps[i].end);
	}
	for (unsigned p = 0; p < mm->nr_pmds; p++)
		cr_expect_eq(mm->pmd_users[p], 0, "span %u still used", p);
}

Test(mm_pgtable, layout_counts_users_per_span)
{
	struct mm *mm = three_vmas();

	cr_expect_eq(mm->pmd_base, SPAN(0) >> 21);
	cr_assert_eq(mm->nr_pmds, 3);
	cr_expect_eq(mm->pmd_users[0], 1);
	cr_expect_eq(mm->pmd_users[1], 3);
	cr_expect_eq(mm->pmd_users[2], 1);
	mm_free(mm);
}

Test(mm_pgtable, unmap_middle_first)
{
	struct mm *mm = three_vmas();
	static const struct unmap_step steps[] = {
	    {1, 0, 0, 0},             /* S1 still has A and C */
	    {0, 1, SPAN(0), SPAN(1)}, /* S0 was A's alone; S1 keeps C */
	    {2, 2, SPAN(1), SPAN(3)}, /* C was last in S1 and alone in S2 */
	};

	run_unmaps(mm, steps, G_N_ELEMENTS(steps));
	mm_free(mm);
}

Test(mm_pgtable, unmap_last_first)
{
	struct mm *mm = three_vmas();
	static const struct unmap_step steps[] = {
	    {2, 1, SPAN(2), SPAN(3)}, /* S2 */
	    {1, 0, 0, 0},             /* S1 keeps A */
	    {0, 2, SPAN(0), SPAN(2)}, /* S0 and S1 */
	};

	run_unmaps(mm, steps, G_N_ELEMENTS(steps));
	mm_free(mm);
}

Test(mm_pgtable, unmap_in_address_order)
{
	struct mm *mm = three_vmas();
	static const struct unmap_step steps[] = {
	    {0, 1, SPAN(0), SPAN(1)}, /* S0; S1 keeps B and C */
	    {1, 0, 0, 0},             /* S1 keeps C */
	    {2, 2, SPAN(1), SPAN(3)}, /* S1 and S2 */
	};

	run_unmaps(mm, steps, G_N_ELEMENTS(steps));
	mm_free(mm);
}

/*
 * A VMA over three spans shares its first and last with neighbours:
 *   L = [S0, S0 + 8K)            touches S0
 *   M = [S0 + 8K, S2 + 2M - 8K)  touches S0, S1, S2
 *   R = [S2 + 2M - 8K, S3)       touches S2
 * Only the interior span can be M's alone.  (The spans one VMA frees are
 * always contiguous: the interior ones are wholly its own.)
 */
static struct mm *shared_ends(void)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), 2 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, SPAN(0) + 2 * K4, 3 * M2 - 4 * K4, PS_4K, false, 0, 1);
	mm_add_vma(mm, SPAN(3) - 2 * K4, 2 * K4, PS_4K, false, 0, 2);
	mm_finish_layout(mm);
	cr_assert_eq(mm->nr_pmds, 3);
	cr_expect_eq(mm->pmd_users[0], 2);
	cr_expect_eq(mm->pmd_users[1], 1);
	cr_expect_eq(mm->pmd_users[2], 2);
	return mm;
}

Test(mm_pgtable, wide_vma_with_shared_ends)
{
	struct mm *mm = shared_ends();
	static const struct unmap_step middle_first[] = {
	    {1, 1, SPAN(1), SPAN(2)}, /* only S1 */
	    {0, 1, SPAN(0), SPAN(1)},
	    {2, 1, SPAN(2), SPAN(3)},
	};
	run_unmaps(mm, middle_first, G_N_ELEMENTS(middle_first));
	mm_free(mm);

	mm = shared_ends();
	static const struct unmap_step left_first[] = {
	    {0, 0, 0, 0},
	    {1, 2, SPAN(0), SPAN(2)}, /* S0 and S1; S2 keeps R */
	    {2, 1, SPAN(2), SPAN(3)},
	};
	run_unmaps(mm, left_first, G_N_ELEMENTS(left_first));
	mm_free(mm);

	mm = shared_ends();
	static const struct unmap_step ends_first[] = {
	    {2, 0, 0, 0},             /* S2 keeps M */
	    {0, 0, 0, 0},             /* S0 keeps M */
	    {1, 3, SPAN(0), SPAN(3)}, /* all three */
	};
	run_unmaps(mm, ends_first, G_N_ELEMENTS(ends_first));
	mm_free(mm);
}

/*
 * mm_map_vma() takes back the references mm_unmap_vma() dropped: in
 * three_vmas(), C unmapped frees S2 (its alone) but not S1; mapped again, the
 * counts are the layout's, and unmapping everything frees each span again.
 */
Test(mm_pgtable, map_again_takes_the_tables_back)
{
	struct mm *mm = three_vmas();
	uint64_t start = 0, end = 0;
	cr_assert_eq(mm_unmap_vma(mm, &mm->vmas[2], &start, &end), 1);
	cr_expect_eq(start, SPAN(2));
	cr_expect_eq(end, SPAN(3));
	cr_expect_eq(mm->pmd_users[1], 2);
	cr_expect(mm_pmd_freed(mm, SPAN(2) >> 21));

	mm_map_vma(mm, &mm->vmas[2]);
	cr_expect_eq(mm->pmd_users[0], 1);
	cr_expect_eq(mm->pmd_users[1], 3);
	cr_expect_eq(mm->pmd_users[2], 1);
	cr_expect_not(mm_pmd_freed(mm, SPAN(2) >> 21));

	static const struct unmap_step steps[] = {
	    {1, 0, 0, 0},             /* S1 keeps A and C */
	    {2, 1, SPAN(2), SPAN(3)}, /* S2 again; S1 keeps A */
	    {0, 2, SPAN(0), SPAN(2)}, /* S0 and S1 */
	};
	run_unmaps(mm, steps, G_N_ELEMENTS(steps));
	mm_free(mm);
}

/* Holes between VMAs are spans with no user; they are never reported. */
Test(mm_pgtable, holes_are_never_reported)
{
	struct mm *mm = mm_new(1, 1);
	mm_add_vma(mm, SPAN(0), K4, PS_4K, false, 0, 0);    /* S0 */
	mm_add_vma(mm, SPAN(3), 2 * M2, PS_2M, true, 1, 0); /* S3, S4 */
	mm_finish_layout(mm);
	cr_assert_eq(mm->nr_pmds, 5);
	cr_expect_eq(mm->pmd_users[1], 0);
	cr_expect_eq(mm->pmd_users[2], 0);
	static const struct unmap_step steps[] = {
	    {1, 2, SPAN(3), SPAN(5)},
	    {0, 1, SPAN(0), SPAN(1)},
	};

	run_unmaps(mm, steps, G_N_ELEMENTS(steps));
	mm_free(mm);
}

/* ---- mm_cpumask --------------------------------------------------------- */

#define NR_CPUS_WIDE 130

Test(mm_cpumask, set_clear_test_across_words)
{
	struct mm *mm = mm_new(1, NR_CPUS_WIDE);
	static const unsigned cpus[] = {0, 1, 63, 64, 65, 127, 128, 129};

	for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++) {
		mm_cpumask_set(mm, cpus[i]);
		cr_expect_eq(mm_cpumask_weight(mm), i + 1, "after setting %u", cpus[i]);
	}
	for (unsigned c = 0; c < NR_CPUS_WIDE; c++) {
		bool want = false;
		for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++)
			want |= cpus[i] == c;
		cr_expect_eq(mm_cpumask_test(mm, c), want, "cpu %u", c);
	}

	/* Setting twice is idempotent. */
	mm_cpumask_set(mm, 64);
	cr_expect_eq(mm_cpumask_weight(mm), G_N_ELEMENTS(cpus));

	mm_cpumask_clear(mm, 64);
	cr_expect_not(mm_cpumask_test(mm, 64));
	cr_expect(mm_cpumask_test(mm, 63));
	cr_expect(mm_cpumask_test(mm, 65));
	cr_expect_eq(mm_cpumask_weight(mm), G_N_ELEMENTS(cpus) - 1);
	/* Clearing a clear bit is a no-op. */
	mm_cpumask_clear(mm, 64);
	mm_cpumask_clear(mm, 100);
	cr_expect_eq(mm_cpumask_weight(mm), G_N_ELEMENTS(cpus) - 1);

	for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++)
		mm_cpumask_clear(mm, cpus[i]);
	cr_expect_eq(mm_cpumask_weight(mm), 0);
	for (unsigned c = 0; c < NR_CPUS_WIDE; c++)
		cr_expect_not(mm_cpumask_test(mm, c), "cpu %u", c);
	mm_free(mm);
}

Test(mm_cpumask, next_walks_across_words)
{
	struct mm *mm = mm_new(1, NR_CPUS_WIDE);

	cr_expect_eq(mm_cpumask_next(mm, 0), NR_CPUS_WIDE);
	mm_cpumask_set(mm, 5);
	mm_cpumask_set(mm, 63);
	mm_cpumask_set(mm, 64);
	mm_cpumask_set(mm, 127);
	mm_cpumask_set(mm, 129);

	cr_expect_eq(mm_cpumask_next(mm, 0), 5);
	cr_expect_eq(mm_cpumask_next(mm, 5), 5);
	cr_expect_eq(mm_cpumask_next(mm, 6), 63);
	cr_expect_eq(mm_cpumask_next(mm, 63), 63);
	cr_expect_eq(mm_cpumask_next(mm, 64), 64);
	cr_expect_eq(mm_cpumask_next(mm, 65), 127);
	cr_expect_eq(mm_cpumask_next(mm, 127), 127);
	cr_expect_eq(mm_cpumask_next(mm, 128), 129);
	cr_expect_eq(mm_cpumask_next(mm, 129), 129);
	cr_expect_eq(mm_cpumask_next(mm, NR_CPUS_WIDE), NR_CPUS_WIDE);
	cr_expect_eq(mm_cpumask_next(mm, 200), NR_CPUS_WIDE);

	/* The for_each_cpu() idiom visits exactly the set bits, in order. */
	static const unsigned want[] = {5, 63, 64, 127, 129};
	size_t n = 0;
	for (unsigned c = mm_cpumask_next(mm, 0); c < NR_CPUS_WIDE;
	     c = mm_cpumask_next(mm, c + 1)) {
		cr_assert_lt(n, G_N_ELEMENTS(want));
		cr_expect_eq(c, want[n], "visit %zu", n);
		n++;
	}
	cr_expect_eq(n, G_N_ELEMENTS(want));

	/* A set bit below @from in the same word is skipped, in either half of it. */
	mm_cpumask_set(mm, 40);
	mm_cpumask_set(mm, 100);
	cr_expect_eq(mm_cpumask_next(mm, 40), 40);
	cr_expect_eq(mm_cpumask_next(mm, 41), 63);
	cr_expect_eq(mm_cpumask_next(mm, 101), 127);
	cr_expect_eq(mm_cpumask_next(mm, 6), 40);
	cr_expect_eq(mm_cpumask_next(mm, 65), 100);
	mm_cpumask_clear(mm, 40);
	mm_cpumask_clear(mm, 100);

	mm_cpumask_clear(mm, 64);
	cr_expect_eq(mm_cpumask_next(mm, 64), 127);
	mm_cpumask_clear(mm, 129);
	cr_expect_eq(mm_cpumask_next(mm, 128), NR_CPUS_WIDE);
	mm_free(mm);
}

Test(mm_cpumask, exact_word_multiple)
{
	struct mm *mm = mm_new(1, 128);

	mm_cpumask_set(mm, 127);
	cr_expect_eq(mm_cpumask_weight(mm), 1);
	cr_expect_eq(mm_cpumask_next(mm, 0), 127);
	cr_expect_eq(mm_cpumask_next(mm, 128), 128);
	mm_free(mm);
}

Test(mm_cpumask, set_out_of_range_aborts, .signal = SIGABRT)
{
	struct mm *mm = mm_new(1, NR_CPUS_WIDE);
	mm_cpumask_set(mm, NR_CPUS_WIDE);
}
