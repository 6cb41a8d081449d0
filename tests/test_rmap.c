/*
 * Reclaim flushing (src/kernel/rmap.c) through MADV_PAGEOUT on x86, worked out by
 * hand: cpu 0 reclaims 8 populated pages while cpu 1 keeps reading them.
 * Every call also ends with the flush of the young bits its walk cleared
 * (tlb_finish_mmu() over the 8 pages, below the 33-page ceiling: a range
 * flush, 8 INVLPGs on each CPU running the mm, one IPI round).  Populated
 * and read pages are clean; the initiator's writes make them dirty.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"

/* 4.5: cpu 1 is in mm_cpumask, so try_to_unmap_one() defers every page; one
 * IPI round at try_to_unmap_flush(), a full flush on each side; then the
 * walk's range flush. */
Test(rmap, batched_reclaim_is_one_shootdown_with_full_flushes)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 2);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 2);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	/* CR3 writes: each CPU's first mm load, plus the batch's full flush. */
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* 3.6 had no batching: ptep_clear_flush() per page, each a one-page flush
 * (1 <= min(16, total_vm) >> 1) with its own IPI; then the walk's flush of
 * 8 pages, full (8 > min(16, 8) >> 1): its own IPI round, no INVLPG. */
Test(rmap, per_page_reclaim_sends_one_shootdown_per_page)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.6", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 8 + 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 8 + 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	cr_assert_eq(r.result->total.ipis_sent, 8 + 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* The knob alone turns batching off on a batching kernel. */
Test(rmap, reclaim_flush_is_a_knob)
{
	const char *const sets[] = {"reclaim_flush=per_page", NULL};
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 8 + 1);
	support_run_free(&r);
	g_free(w);
}

/* 4.20+: the batch flush carries no mm and no generation; each CPU flushes
 * fully because add_pending moved its mm's tlb_gen. */
Test(rmap, batched_reclaim_with_tlb_gen)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.20", NULL, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 2);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 2);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	/* The batch names no mm: its local flush is a local shootdown. */
	cr_assert_eq(CPU(r, 0, tlb_local_shootdown_full), 1);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 1);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown_full), 0);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Alone in the mm, nothing is deferred (x86 should_defer wants another CPU):
 * one local INVLPG per page, no IPI; the walk's flush INVLPGs the 8 again. */
Test(rmap, single_cpu_mm_flushes_locally_per_page)
{
	const char *w =
		"{\"name\": \"alone\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 32768, \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"t\", \"cpu\": 0, \"program\": ["
		"   {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"    \"pages\": 8, \"rounds\": 1, \"cycles\": 10},"
		"   {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"pageout\"}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 0);
	cr_assert_eq(CPU(r, 0, invlpg), 8 + 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 8 + 8);
	support_run_free(&r);
}

/* The initiator writes pages 0 and 1 first.  Page 0: deferred (dirty), then
 * try_to_unmap_flush_dirty() flushes before writing it out (round 1); page 1
 * the same (round 2); pages 2-7 are clean: deferred, flushed once by
 * try_to_unmap_flush() (round 3); then the walk's flush (round 4).  All clean:
 * rounds 3 and 4 only. */
#define WRITE_2_THEN_PAGEOUT                                                        \
	"{\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", " \
	"\"pages\": 2, \"rounds\": 1, \"write\": 1, \"cycles\": 10}, " PAGEOUT_OP

Test(rmap, each_dirty_page_flushes_the_batch_before_it_is_written)
{
	char *w = two_cpu_case(8, WRITE_2_THEN_PAGEOUT);
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 2 + 1 + 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 2 + 1 + 1);
	/* The three batch flushes are local shootdowns of everything. */
	cr_assert_eq(CPU(r, 0, tlb_local_shootdown_full), 2 + 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * A reclaim batch leaves tlb_flush_batched set; the next walk of the mm
 * (MADV_DONTNEED here) flushes all of it first, freed_tables set, so the IPI
 * reaches cpu 1, lazy on the mm (its task blocked), which switches to init_mm.
 * The pageout's own flushes skip the lazy CPU.
 */
static char *lazy_cpu1_case(const char *after_pageout)
{
	return g_strdup_printf(
		"{\"name\": \"lazy\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 32768, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"main\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"ready\", \"value\": 1},"
		"    %s%s"
		"    {\"op\": \"set_flag\", \"flag\": \"done\", \"value\": 1}]},"
		"  {\"name\": \"pinned\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 1},"
		"    {\"op\": \"set_flag\", \"flag\": \"ready\", \"value\": 1},"
		"    {\"op\": \"wait_flag\", \"flag\": \"done\", \"value\": 1}]}]}",
		PAGEOUT_OP ",", after_pageout);
}

Test(rmap, batched_pending_flush_reaches_the_lazy_cpu)
{
	char *w = lazy_cpu1_case(DONTNEED_OP ",");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	/* pageout: the batch (full) and the walk's range, both skipping cpu 1;
	 * MADV_DONTNEED: flush_tlb_mm() reaches it, then zaps nothing. */
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 3);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 2);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	/* No walk after the pageout: cpu 1 is never interrupted. */
	g_free(w);
	w = lazy_cpu1_case("");
	r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 2);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	support_run_free(&r);
	g_free(w);
	/* Before 4.12 (flush_batched_pending false) the MADV_DONTNEED walk
	 * flushes only what it zaps, nothing: cpu 1 is never interrupted. */
	w = lazy_cpu1_case(DONTNEED_OP ",");
	const char *const before_4_12[] = {"flush_batched_pending=false", NULL};
	r = support_run("tiny-2cpu-pcid.json", "linux-6.1", before_4_12, w);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 2);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	support_run_free(&r);
	g_free(w);
}

/* Once cpu 1 left mm_cpumask, nothing is deferred: a second pageout (after
 * a write touch faults the 8 pages back) flushes each page at once, locally,
 * and leaves no flush pending. */
Test(rmap, after_the_pending_flush_reclaim_flushes_per_page)
{
	char *w = lazy_cpu1_case(
		"{\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", "
		"\"pages\": 8, \"rounds\": 1, \"write\": 1, \"cycles\": 10}, " PAGEOUT_OP ", "
		DONTNEED_OP ",");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 16);
	/* The first pageout's 2 sends, the second's walk flushing cpu 1 out. */
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 3);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	/* Local mm shootdowns: the first walk's range; the second's full
	 * flush_tlb_mm(), its 8 one-page flushes and its walk's range. */
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown_full), 1);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 1 + 1 + 8 + 1);
	cr_assert_eq(CPU(r, 0, tlb_local_shootdown), 1); /* the first batch only */
	cr_assert_eq(CPU(r, 0, invlpg), 8 + 8 + 8);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}
