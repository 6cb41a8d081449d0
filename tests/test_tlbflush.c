/*
 * The flush path (src/kernel/arch/x86/tlb.c, src/kernel/vm.c, src/kernel/smp.c) on machines small
 * enough that every counter can be worked out by hand.  Each case names the
 * reasoning behind its numbers.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"

/*
 * cpu 0 munmaps @chunks chunks of @pages populated pages each while cpu 1
 * keeps reading a page of its own (so it runs the mm and is not lazy).  The
 * victim region sits alone in its 2 MiB span, so its PTE page is freed too,
 * which widens the gathered range by one page at the region's own start:
 * the range stays the chunk.
 */
static char *two_cpu_munmap(unsigned pages, unsigned chunks, const char *populate,
			    unsigned own_pages)
{
	return g_strdup_printf(
		"{\"name\": \"two-cpu-munmap\","
		" \"regions\": ["
		"  {\"name\": \"victim\", \"chunks\": %u, \"chunk_size\": %u, \"populate\": \"%s\"},"
		"  {\"name\": \"own\", \"size\": %u, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"unmapper\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"loop\", \"count\": %u, \"var\": \"i\", \"body\": ["
		"      {\"op\": \"munmap\", \"region\": \"victim\", \"chunk\": \"$i\"}]},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"own\", \"pattern\": \"sequential\", \"pages\": 1,"
		"     \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		chunks, pages * 4096, populate, own_pages * 4096, chunks);
}


Test(tlbflush, munmap_of_4_pages_is_one_shootdown_with_4_invlpg_each_side)
{
	char *w = two_cpu_munmap(4, 1, "all", 1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	/* 4 pages <= 33: INVLPG each page locally, then one IPI round. */
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush_received, 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 4);
	cr_assert_eq(CPU(r, 0, invlpg), 4);
	cr_assert_eq(CPU(r, 1, invlpg), 4);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(CPU(r, 1, ipis_received), 1);
	cr_assert_eq(r.result->total.nr_tlb_local_flush_all, 0);
	/* Each CPU loaded the mm once at its first switch (init_mm -> mm). */
	cr_assert_eq(CPU(r, 0, tlb_flush_all), 1);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(histogram_count(r.result->op_cycles), 1);
	support_run_free(&r);
	g_free(w);
}

/*
 * 4.14+ (linux-4.19 here) flush_tlb_func() reads mm->context.tlb_gen, the line the initiator's
 * inc_mm_tlb_gen() RMW just wrote: the handler on cpu 1 pulls it from cpu 0,
 * a same-socket transfer, which 4.5's handler (no generations) does not.
 * The rest of the handler is the same: irq entry and exit, 4 INVLPGs.
 */
Test(tlbflush, tlb_gen_read_pulls_the_initiators_line_into_the_handler)
{
	char *w = two_cpu_munmap(4, 1, "all", 1);
	struct support_run old = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	struct support_run gen = support_run("tiny-2cpu.json", "linux-4.19", NULL, w);
	const struct topology_costs *costs = &old.topology->costs;
	uint64_t handler = costs->irq_entry + costs->irq_exit + 4 * costs->invlpg;
	cr_assert_eq(CPU(old, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(gen, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(gen, 1, invlpg), 4);
	cr_expect_eq(CPU(old, 1, irq_cycles), handler);
	cr_expect_eq(CPU(gen, 1, irq_cycles), handler + costs->line_transfer[DIST_SOCKET]);
	support_run_free(&old);
	support_run_free(&gen);
	g_free(w);
}

Test(tlbflush, ceiling_33_pages_still_invlpg_34_flush_all)
{
	char *w33 = two_cpu_munmap(33, 1, "all", 1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w33);
	cr_assert_eq(CPU(r, 0, invlpg), 33);
	cr_assert_eq(CPU(r, 1, invlpg), 33);
	cr_assert_eq(r.result->total.nr_tlb_local_flush_all, 0);
	support_run_free(&r);
	g_free(w33);

	char *w34 = two_cpu_munmap(34, 1, "all", 1);
	r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w34);
	cr_assert_eq(CPU(r, 0, invlpg), 0);
	cr_assert_eq(CPU(r, 1, invlpg), 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	/* The remote side gets a full flush too: its first mm load plus this one. */
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	support_run_free(&r);
	g_free(w34);
}

/* tlb_flush_events by reason, per CPU, as the kernel's trace_tlb_flush() calls. */
static uint64_t reasons_sum(const struct counters *c)
{
	return c->tlb_flush_task_switch + c->tlb_remote_shootdown + c->tlb_local_shootdown +
	       c->tlb_local_mm_shootdown + c->tlb_remote_send_ipi + c->tlb_remote_wrong_cpu +
	       c->tlb_broadcast;
}

/*
 * A 4-page munmap: the initiator traces its own flush (local mm shootdown)
 * and the IPI it sends (remote send IPI), the target its handler's flush
 * (remote shootdown), none of them full; each CPU's first switch to the mm
 * writes CR3 with a flush (task switch, full).  At 34 pages the same three
 * become full flushes.
 */
Test(tlbflush, flush_reasons_counted_where_traced)
{
	char *w4 = two_cpu_munmap(4, 1, "all", 1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w4);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 1);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 1);
	cr_assert_eq(CPU(r, 0, tlb_remote_shootdown), 0);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown), 1);
	cr_assert_eq(CPU(r, 1, tlb_remote_send_ipi), 0);
	cr_assert_eq(r.result->total.tlb_local_mm_shootdown_full, 0);
	cr_assert_eq(r.result->total.tlb_remote_send_ipi_full, 0);
	cr_assert_eq(r.result->total.tlb_remote_shootdown_full, 0);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		cr_assert_eq(r.result->per_cpu[cpu].tlb_flush_task_switch, 1);
		cr_assert_eq(r.result->per_cpu[cpu].tlb_flush_task_switch_full, 1);
		cr_assert_eq(reasons_sum(&r.result->per_cpu[cpu]),
			     r.result->per_cpu[cpu].tlb_flush_events);
	}
	support_run_free(&r);
	g_free(w4);

	char *w34 = two_cpu_munmap(34, 1, "all", 1);
	r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w34);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown_full), 1);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 1);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown), 1);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown_full), 1);
	cr_assert_eq(reasons_sum(&r.result->total), r.result->total.tlb_flush_events);
	support_run_free(&r);
	g_free(w34);
}

Test(tlbflush, ceiling_is_a_knob)
{
	const char *const sets[] = {"single_page_flush_ceiling=3", NULL};
	char *w = two_cpu_munmap(4, 1, "all", 1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * linux-3.11: INVLPG iff pages <= min(tlb_lld_4k, total_vm) >> shift, and the
 * whole unmapped VMA is the range.  tiny-2cpu: tlb_lld_4k 16, shift 1.
 */
Test(tlbflush, flushall_shift_rule_with_large_total_vm)
{
	/* total_vm = 8 + 64 pages >= 16: the bound is 16 >> 1 = 8 pages. */
	char *w8 = two_cpu_munmap(8, 1, "all", 64);
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.11", NULL, w8);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(CPU(r, 1, invlpg), 8);
	support_run_free(&r);
	g_free(w8);

	char *w9 = two_cpu_munmap(9, 1, "all", 64);
	r = support_run("tiny-2cpu.json", "linux-3.11", NULL, w9);
	cr_assert_eq(CPU(r, 0, invlpg), 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	support_run_free(&r);
	g_free(w9);
}

Test(tlbflush, flushall_shift_rule_uses_total_vm_when_smaller)
{
	/* total_vm = 6 + 1 = 7 pages < 16: the bound is 7 >> 1 = 3 pages,
	 * so even 6 pages flush everything. */
	char *w = two_cpu_munmap(6, 1, "all", 1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.11", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(CPU(r, 0, invlpg), 0);
	support_run_free(&r);
	g_free(w);
}

Test(tlbflush, shift_minus_one_never_invlpg)
{
	const char *const sets[] = {"tlb_flushall_shift=-1", NULL};
	char *w = two_cpu_munmap(1, 1, "all", 64);
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.11", sets, w);
	cr_assert_eq(CPU(r, 0, invlpg), 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	support_run_free(&r);
	g_free(w);
}

/*
 * One populated page in a 40-page VMA: 4.5's mmu_gather flushes the one page
 * (the freed PTE page adds the region's first page, the same one); 3.11
 * flushes the VMA, 40 pages > 8, so everything.
 */
Test(tlbflush, gathered_range_versus_whole_vma)
{
	char *w = two_cpu_munmap(40, 1, "first", 64);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, invlpg), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 1);
	support_run_free(&r);
	r = support_run("tiny-2cpu.json", "linux-3.11", NULL, w);
	cr_assert_eq(CPU(r, 0, invlpg), 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	support_run_free(&r);
	g_free(w);
}

/*
 * 4.5 lazy TLB: the reader reads once and exits, so cpu 1 idles lazily on the
 * mm and stays in mm_cpumask.  The first munmap's IPI makes it leave_mm
 * (counted as received, one cpumask clear, a CR3 load to swapper); the second
 * munmap finds only cpu 0 in the mask and sends nothing.
 */
Test(tlbflush, lazy_cpu_leaves_mm_on_first_flush)
{
	const char *w =
		"{\"name\": \"lazy\","
		" \"regions\": [{\"name\": \"victim\", \"chunks\": 2, \"chunk_size\": 16384, \"populate\": \"all\"},"
		"              {\"name\": \"own\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"unmapper\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"munmap\", \"region\": \"victim\", \"chunk\": 0},"
		"    {\"op\": \"munmap\", \"region\": \"victim\", \"chunk\": 1}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"own\", \"pattern\": \"sequential\", \"pages\": 1,"
		"     \"rounds\": 1, \"cycles\": 10}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 0, "a lazy CPU leaves instead of flushing pages");
	/* First switch: set bit in mm, clear bit in init_mm; leave_mm: clear. */
	cr_assert_eq(CPU(r, 1, cpumask_atomics), 3);
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 0, invlpg), 8);
	cr_assert_eq(r.result->total.ipis_sent, 1);
	cr_assert_eq(histogram_count(r.result->op_cycles), 2);
	support_run_free(&r);
}

/*
 * SMT de-duplication on 2 cores x 2 threads (siblings 0/2 and 1/3), every CPU
 * running the mm.  The patch walks mm_cpumask {0,1,2,3}: cpu 0 has both
 * siblings in the copy, so its next sibling 2 is cleared; cpu 1 clears 3.
 * From cpu 0 that leaves {1}: one IPI instead of three.  From cpu 2 (a second
 * sibling) it leaves {0, 1}: two.
 */
static char *smt_case(unsigned initiator)
{
	return g_strdup_printf(
		"{\"name\": \"smt\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 16384, \"populate\": \"all\"},"
		"              {\"name\": \"own\", \"size\": 16384, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"initiator\", \"cpu\": %u, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"count\": 3, \"cpu\": \"($thread + %u + 1) %% 4\", \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 4,"
		"     \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		initiator, initiator);
}

Test(tlbflush, smt_dedup_target_counts)
{
	char *from0 = smt_case(0), *from2 = smt_case(2);
	struct support_run r = support_run("tiny-smt.json", "linux-4.5", NULL, from0);
	cr_assert_eq(r.result->total.ipis_sent, 3);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush_received, 3);
	support_run_free(&r);
	r = support_run("tiny-smt.json", "linux-4.5-smt-dedup", NULL, from0);
	cr_assert_eq(r.result->total.ipis_sent, 1);
	cr_assert_eq(CPU(r, 1, ipis_received), 1);
	cr_assert_eq(r.result->total.stale_hits, 0, "core-wide invalidation covers the sibling");
	support_run_free(&r);
	r = support_run("tiny-smt.json", "linux-4.5-smt-dedup", NULL, from2);
	cr_assert_eq(r.result->total.ipis_sent, 2);
	cr_assert_eq(CPU(r, 0, ipis_received), 1);
	cr_assert_eq(CPU(r, 1, ipis_received), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(from0);
	g_free(from2);
}

/*
 * Where each logical CPU's entries are its own (SDM), skipping the sibling
 * leaves its translations of the zapped pages alive after madvise returns:
 * the checker must see it.  The correct policy stays clean on that machine.
 */
Test(tlbflush, smt_dedup_is_unsafe_with_thread_scoped_invalidation)
{
	char *w = smt_case(0);
	struct support_run r = support_run("tiny-smt-thread.json", "linux-4.5-smt-dedup", NULL, w);
	cr_assert_gt(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->stale[0].cpu, 2, "the skipped sibling of cpu 0");
	support_run_free(&r);
	r = support_run("tiny-smt-thread.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * Huge pages in a range (references.md, 'Linux: tlb_flushall_shift (3.6-3.15)' to
 * 'Linux: stride-aware ranges (4.19+)'): cpu 0 write-protects one
 * 2 MiB page (THP, or hugetlb) that cpu 1 keeps reading.
 */
static char *huge_case(bool hugetlb)
{
	return g_strdup_printf(
		"{\"name\": \"huge\","
		" \"regions\": [{\"name\": \"victim\", \"size\": \"2M\", \"page_size\": \"2M\","
		"                \"hugetlb\": %s, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"initiator\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		hugetlb ? "true" : "false");
}

/* 4.5 counts a THP range in 4K pages: 512 > 33, a full flush. */
Test(tlbflush, thp_range_in_4k_pages_hits_the_ceiling)
{
	char *w = huge_case(false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	cr_assert_eq(r.result->total.invlpg, 0);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Before the 2012 THP patch, a ceiling that allows it steps 4K at a time:
 * 512 INVLPGs on each side for one huge page. */
Test(tlbflush, thp_range_stepped_4k_at_a_time)
{
	const char *const sets[] = {"single_page_flush_ceiling=1024", NULL};
	char *w = huge_case(false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(CPU(r, 0, invlpg), 512);
	cr_assert_eq(CPU(r, 1, invlpg), 512);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 512);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* The patch (has_large_page): a huge page in the range means a full flush. */
Test(tlbflush, thp_range_with_huge_page_flushes_all)
{
	const char *const sets[] = {"single_page_flush_ceiling=1024", "huge_page_range=flush_all",
				    NULL};
	char *w = huge_case(false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(r.result->total.invlpg, 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	support_run_free(&r);
	g_free(w);
}

/* 4.19+: one INVLPG per 2 MiB stride, on each side. */
Test(tlbflush, thp_range_per_stride)
{
	char *w = huge_case(false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.19", NULL, w);
	cr_assert_eq(CPU(r, 0, invlpg), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 1);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* hugetlb always flushes all before 4.19, even under a generous ceiling;
 * 4.19 flushes it per stride like THP. */
Test(tlbflush, hugetlb_flushes_all_until_strides)
{
	const char *const sets[] = {"single_page_flush_ceiling=1024", NULL};
	char *w = huge_case(true);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(r.result->total.invlpg, 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_all), 1);
	support_run_free(&r);
	r = support_run("tiny-2cpu.json", "linux-4.19", NULL, w);
	cr_assert_eq(CPU(r, 0, invlpg), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * INVLPGB (6.15): cpu 0 zaps 8 pages twice while cpus 1-3 read them.  The
 * first flush goes by IPIs (3 targets); afterwards the mm is active on 4 CPUs
 * (> 3), gets a global ASID, and the second flush is one INVLPGB (8 pages per
 * instruction) + TLBSYNC, with no IPI and no vmstat REMOTE count.
 */
static const char invlpgb_case[] =
	"{\"name\": \"invlpgb\","
	" \"regions\": [{\"name\": \"victim\", \"size\": 32768, \"populate\": \"all\"}],"
	" \"tasks\": ["
	"  {\"name\": \"initiator\", \"cpu\": 0, \"program\": ["
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 8,"
	"     \"rounds\": 1, \"cycles\": 10},"
	"    {\"op\": \"compute\", \"cycles\": 100000},"
	"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
	"    {\"op\": \"compute\", \"cycles\": 100000},"
	"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
	"    {\"op\": \"compute\", \"cycles\": 100000},"
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	"  {\"name\": \"reader\", \"count\": 3, \"cpu\": \"$thread + 1\", \"program\": ["
	"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 8,"
	"     \"while_flag\": \"run\", \"cycles\": 10}]}]}";

Test(tlbflush, invlpgb_replaces_ipis_once_the_mm_is_global)
{
	struct support_run r = support_run("tiny-smt-invlpgb.json", "linux-6.15", NULL, invlpgb_case);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 1);
	cr_assert_eq(r.result->total.ipis_sent, 3);
	cr_assert_eq(CPU(r, 0, tlbi_broadcasts), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	r = support_run("tiny-smt-invlpgb.json", "linux-6.14", NULL, invlpgb_case);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 2);
	cr_assert_eq(r.result->total.ipis_sent, 6);
	cr_assert_eq(r.result->total.tlbi_broadcasts, 0);
	support_run_free(&r);
}
