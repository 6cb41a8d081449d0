/*
 * Reclaim flushing (src/kernel/rmap.c) through MADV_PAGEOUT on x86, worked out by
 * hand: cpu 0 reclaims 8 populated pages while cpu 1 keeps reading them.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"

/* 4.5: cpu 1 is in mm_cpumask, so try_to_unmap_one() defers every page; one
 * IPI round at try_to_unmap_flush(), a full flush on each side. */
Test(rmap, batched_reclaim_is_one_shootdown_with_full_flushes)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(r.result->total.invlpg, 0);
	/* CR3 writes: each CPU's first mm load, plus the batch's full flush. */
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* 3.6 had no batching: ptep_clear_flush() per page, each a one-page flush
 * (1 <= min(16, total_vm) >> 1) with its own IPI. */
Test(rmap, per_page_reclaim_sends_one_shootdown_per_page)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.6", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 8);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 8);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	cr_assert_eq(r.result->total.ipis_sent, 8);
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
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 8);
	support_run_free(&r);
	g_free(w);
}

/* 4.20+: the batch flush carries no mm and no generation; each CPU flushes
 * fully because add_pending moved its mm's tlb_gen. */
Test(rmap, batched_reclaim_with_tlb_gen)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.20", NULL, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Alone in the mm, nothing is deferred (x86 should_defer wants another CPU):
 * one local INVLPG per page, no IPI. */
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
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 8);
	support_run_free(&r);
}
