/*
 * riscv flushing (src/kernel/arch/riscv/tlbflush.c): IPIs or SBI remote fences to
 * mm_cpumask, per-stride sfence.vma up to 64 strides, the 6.8 reclaim batch
 * and SiFive's CIP-1200 erratum.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"

/* Through SBI: one ecall, the firmware interrupts hart 1; each hart fences
 * the 8 pages of the mm's ASID one by one. */
Test(tlbflush_riscv, sbi_remote_fence_for_a_range)
{
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-riscv-sbi.json", "riscv-6.8", NULL, w);
	cr_assert_eq(CPU(r, 0, sbi_rfences), 1);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	/* Named as x86 would: the initiator's own flush, the handler's. */
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 1);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown), 1);
	cr_assert_eq(r.result->total.tlb_flush_events, 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* With direct IPIs no ecall is made; the flush is the same. */
Test(tlbflush_riscv, ipi_remote_fence_for_a_range)
{
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-riscv-ipi.json", "riscv-6.8", NULL, w);
	cr_assert_eq(r.result->total.sbi_rfences, 0);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	support_run_free(&r);
	g_free(w);
}

/* Above tlb_flush_all_threshold strides a hart flushes its whole ASID. */
Test(tlbflush_riscv, above_threshold_flushes_the_asid)
{
	const char *const sets[] = {"riscv_flush_all_threshold=4", NULL};
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-riscv-sbi.json", "riscv-6.8", sets, w);
	cr_assert_eq(r.result->total.invlpg, 0);
	/* With ASIDs the switch in does not flush: these are the fences. */
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 1);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* 6.8 batches reclaim: one fence of every ASID on both harts; 6.7 fences
 * each page as it is unmapped.  Both then fence the 8 pages whose young bits
 * the walk cleared (a range: 8 sfence.vma on each hart). */
Test(tlbflush_riscv, reclaim_batch_is_one_fence)
{
	char *w = two_cpu_case(8, PAGEOUT_OP);
	struct support_run r = support_run("tiny-riscv-sbi.json", "riscv-6.8", NULL, w);
	cr_assert_eq(CPU(r, 0, pages_reclaimed), 8);
	cr_assert_eq(CPU(r, 0, sbi_rfences), 1 + 1);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 1);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	r = support_run("tiny-riscv-sbi.json", "riscv-6.7", NULL, w);
	cr_assert_eq(CPU(r, 0, sbi_rfences), 8 + 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 8 + 1);
	cr_assert_eq(CPU(r, 1, invlpg), 8 + 8);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* CIP-1200: every fence is a full flush; without ASIDs every switch too. */
Test(tlbflush_riscv, cip1200_flushes_everything)
{
	char *w = two_cpu_case(8, DONTNEED_OP);
	struct support_run r = support_run("tiny-riscv-cip1200.json", "riscv-6.8", NULL, w);
	cr_assert_eq(r.result->total.invlpg, 0);
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}
