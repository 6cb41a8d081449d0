/*
 * arm64 flushing (src/kernel/arch/arm64/tlbflush.c): broadcast TLBI + DSB, no IPIs.
 * tiny-arm64: TLBI issue 20 cycles, DSB 500, 16-bit ASIDs.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"

/* One TLBI VAE1IS per page reaches cpu 1's TLB without interrupting it. */
Test(tlbflush_arm64, range_flush_is_one_broadcast_per_page)
{
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-arm64.json", "arm64-6.5", NULL, w);
	cr_assert_eq(CPU(r, 0, tlbi_broadcasts), 8);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 0);
	/* One tlbsim-only TLB_BROADCAST event for the range, the only reason. */
	cr_assert_eq(CPU(r, 0, tlb_broadcast), 1);
	cr_assert_eq(CPU(r, 0, tlb_broadcast_full), 0);
	cr_assert_eq(r.result->total.tlb_flush_events, r.result->total.tlb_broadcast);
	/* cpu 1 held the 8 pages in its L1 (4 entries) and STLB (8): all gone. */
	cr_assert_gt(CPU(r, 1, tlb_entries_invalidated), 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* More strides than MAX_TLBI_OPS: one TLBI ASIDE1IS instead. */
Test(tlbflush_arm64, above_max_tlbi_ops_flushes_the_asid)
{
	const char *const sets[] = {"arm64_max_tlbi_ops=4", NULL};
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-arm64.json", "arm64-6.5", sets, w);
	cr_assert_eq(CPU(r, 0, tlbi_broadcasts), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Reclaim: TLBIs issued per page at unmap time, one DSB for the batch. The
 * madvise takes 8 x 20 cycles of TLBIs plus one 500-cycle DSB; per page it
 * would wait for 8 DSBs.  Both then flush the 8 pages whose young bits the
 * walk cleared: 8 more TLBIs and a DSB. */
Test(tlbflush_arm64, reclaim_batch_pays_one_dsb)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run batched = support_run("tiny-arm64.json", "arm64-6.5", NULL, w);
	cr_assert_eq(CPU(batched, 0, tlbi_broadcasts), 8 + 8);
	cr_assert_eq(batched.result->total.ipis_sent, 0);
	cr_assert_eq(batched.result->total.stale_hits, 0);
	const char *const sets[] = {"reclaim_flush=per_page", NULL};
	struct support_run per_page = support_run("tiny-arm64.json", "arm64-6.5", sets, w);
	cr_assert_eq(CPU(per_page, 0, tlbi_broadcasts), 8 + 8);
	cr_assert_eq(histogram_count(per_page.result->op_cycles), 1);
	uint64_t b = histogram_max(batched.result->op_cycles);
	uint64_t p = histogram_max(per_page.result->op_cycles);
	/* At least 7 more DSBs (500 each) per page, beyond what batching pays. */
	cr_assert_geq(p, b + 7 * 500, "per page %lu, batched %lu", (unsigned long)p,
		      (unsigned long)b);
	support_run_free(&batched);
	support_run_free(&per_page);
	g_free(w);
}

/* arm64's flush_tlb_batched_pending() is a DSB, no flush: a MADV_DONTNEED
 * after a batched pageout (it zaps nothing, every page gone; cpu 1 ran in the
 * mm and waits) broadcasts nothing; the pageout's batch DSB and its walk's
 * range flush are the only events. */
Test(tlbflush_arm64, batched_pending_is_no_flush)
{
	const char *w =
		"{\"name\": \"pending\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 32768, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"main\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"ready\", \"value\": 1}, "
		PAGEOUT_OP ", " DONTNEED_OP ","
		"    {\"op\": \"set_flag\", \"flag\": \"done\", \"value\": 1}]},"
		"  {\"name\": \"other\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 1},"
		"    {\"op\": \"set_flag\", \"flag\": \"ready\", \"value\": 1},"
		"    {\"op\": \"wait_flag\", \"flag\": \"done\", \"value\": 1}]}]}";
	struct support_run r = support_run("tiny-arm64.json", "arm64-6.5", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(CPU(r, 0, tlb_broadcast), 2);
	cr_assert_eq(r.result->total.tlb_flush_events, 2);
	cr_assert_eq(CPU(r, 0, tlbi_broadcasts), 8 + 8);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
}

/* An x86 preset on an arm64 machine is refused, naming both. */
Test(tlbflush_arm64, x86_policy_is_refused)
{
	char *w = two_cpu_case(1, DONTNEED_OP);
	int code = 0;
	char *msg = support_run_error("tiny-arm64.json", "linux-4.5", NULL, w, &code);
	cr_assert(strstr(msg, "policy linux-4.5 is for x86, but topology tiny-arm64 is arm64") != NULL,
		  "%s", msg);
	g_free(msg);
	g_free(w);
}
