/*
 * Lazy TLB eras (src/kernel/arch/x86/lazytlb.c) on a 2-CPU machine, counters worked out by
 * hand.  cpu 1 runs a thread that reads a page of the victim chunk, sleeps
 * (its CPU goes idle: enter_lazy_tlb) and reads the same page again; cpu 0
 * zaps the chunk while cpu 1 sleeps.  tiny-2cpu-pcid has 4096 PCIDs.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"

/*
 * @zap: "madvise" (no page table freed) or "munmap" (the chunk is alone in its
 * 2 MiB span, so its PTE page is freed: freed_tables).  The second read
 * happens only after a madvise (after a munmap it would fault on a hole).
 */
static char *sleeper_case(const char *zap)
{
	bool reread = strcmp(zap, "madvise") == 0;
	return g_strdup_printf(
		"{\"name\": \"lazy\","
		" \"regions\": [{\"name\": \"victim\", \"chunks\": 2, \"chunk_size\": \"2M\","
		"                \"populate\": \"first\"}],"
		" \"tasks\": ["
		"  {\"name\": \"zapper\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"compute\", \"cycles\": 200000},"
		"    {\"op\": \"%s\", \"region\": \"victim\", \"chunk\": 0%s}]},"
		"  {\"name\": \"sleeper\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"chunk\": 0, \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 10},"
		"    {\"op\": \"sleep\", \"ms\": 1}%s]}]}",
		zap, reread ? ", \"advice\": \"dontneed\"" : "",
		reread ? ",{\"op\": \"access\", \"region\": \"victim\", \"chunk\": 0,"
			 " \"pattern\": \"sequential\", \"pages\": 1, \"rounds\": 1, \"cycles\": 10}"
		       : "");
}

/* 4.5: the lazy CPU gets the IPI and leaves the mm; back, it reloads CR3. */
Test(lazytlb, strict_lazy_cpu_leaves_then_reloads)
{
	char *w = sleeper_case("madvise");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	/* Switch in (set mm, clear init_mm), leave_mm (clear mm), back (set mm). */
	cr_assert_eq(CPU(r, 1, cpumask_atomics), 4);
	/* CR3 writes: switch in, leave_mm to swapper, reload on return. */
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 3);
	cr_assert_eq(CPU(r, 1, page_faults), 1, "the re-read finds the page zapped");
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * 4.20 "lazier": cpu 1 stays in mm_cpumask but is skipped (no page table was
 * freed).  Back from idle it finds its PCID's tlb_gen (0) behind the mm's (1)
 * and flushes: without that catch-up its L1 entry for the page, filled before
 * the zap, would be a stale hit.
 */
Test(lazytlb, lazier_skips_lazy_cpu_and_catch_up_really_flushes)
{
	char *w = sleeper_case("madvise");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.20", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1, "counted before the lazy filter");
	cr_assert_eq(r.result->total.nr_tlb_remote_flush_received, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	/* No atomics for init_mm: only the first set of cpu 1's bit in mm. */
	cr_assert_eq(CPU(r, 1, cpumask_atomics), 1);
	/* CR3 with flush: the first load, and the catch-up on return. */
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(CPU(r, 1, page_faults), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * 4.14-4.19 with PCIDs: idle switches to init_mm at once, so cpu 1 leaves the
 * mask and the madvise interrupts nobody.  Every switch pays two atomics
 * (init_mm's mask too): in, idle, back, and idle again after the task exits
 * = 4 switches, 8 atomics.  Returning, choose_new_asid() finds the mm's PCID
 * with an old tlb_gen and flushes it.
 */
Test(lazytlb, pcid_era_switches_to_init_mm_at_once)
{
	char *w = sleeper_case("madvise");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.19", NULL, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, cpumask_atomics), 8);
	cr_assert_eq(CPU(r, 1, switch_mm), 4);
	/* Flushes: the mm's first PCID, then its stale PCID on return; init_mm's
	 * PCID 0 is current (init_mm's tlb_gen never moves). */
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Without PCIDs 4.14-4.19 defers: the lazy CPU stays and flushes as if running. */
Test(lazytlb, pcid_era_without_pcids_defers_and_flushes)
{
	char *w = sleeper_case("madvise");
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.19", NULL, w);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	/* 1 page <= 33: a partial flush of the one present page. */
	cr_assert_eq(CPU(r, 1, invlpg), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* A freed page table reaches lazy CPUs too (freed_tables IPIs the whole mask). */
Test(lazytlb, lazier_table_free_reaches_lazy_cpu)
{
	char *w = sleeper_case("munmap");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.20", NULL, w);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	/* Switches: in; to init_mm in the handler (leaving lazy mode, clearing
	 * its bit); back in when the sleeper wakes to exit. */
	cr_assert_eq(CPU(r, 1, switch_mm), 3);
	cr_assert_eq(CPU(r, 1, cpumask_atomics), 3);
	/* CR3 flushes: the mm's first PCID, and its PCID again on return, whose
	 * tlb_gen the munmap moved; init_mm's PCID is always current. */
	cr_assert_eq(CPU(r, 1, tlb_flush_all), 2);
	cr_assert_eq(r.result->total.stale_pwc, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * The unsafe variant (lazy CPUs skipped even when tables are freed, as Rik van
 * Riel's first version would have been without the table-free IPI): cpu 1 still
 * has the mm loaded and its PDE cache points at the freed PTE page.
 */
Test(lazytlb, skipping_lazy_cpus_on_table_free_is_caught)
{
	const char *const sets[] = {"lazy_table_free_ipi=false", NULL};
	char *w = sleeper_case("munmap");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-4.20", sets, w);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush_received, 0);
	cr_assert_eq(CPU(r, 1, stale_pwc), 1);
	cr_assert_eq(r.result->nr_stale_reports, 1);
	cr_assert(r.result->stale[0].freed_table);
	cr_assert_eq(r.result->stale[0].cpu, 1);
	support_run_free(&r);
	g_free(w);
}

/*
 * 6.14: a CPU that switched to another process keeps its bit in the first
 * mm and is not interrupted (no trim within the first second); back, its
 * PCID's tlb_gen makes it flush.
 */
Test(lazytlb, trimmed_keeps_stale_bit_and_skips_it)
{
	const char *w =
		"{\"name\": \"trim\", \"processes\": [\"a\", \"b\"],"
		" \"regions\": [{\"name\": \"victim\", \"process\": \"a\", \"size\": 16384,"
		"                \"populate\": \"all\"},"
		"              {\"name\": \"other\", \"process\": \"b\", \"size\": 4096,"
		"                \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"zapper\", \"process\": \"a\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"compute\", \"cycles\": 200000},"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"}]},"
		"  {\"name\": \"a1\", \"process\": \"a\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 10}]},"
		"  {\"name\": \"b1\", \"process\": \"b\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"other\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1000, \"cycles\": 1000}]}]}";
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.14", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(r.result->total.ipis_sent, 0, "cpu 1 runs b: not loaded, no trim yet");
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	r = support_run("tiny-2cpu-pcid.json", "linux-6.8", NULL, w);
	cr_assert_eq(r.result->total.ipis_sent, 0, "6.8 cleared the bit when cpu 1 switched to b");
	support_run_free(&r);
}

/*
 * 5.13+ (linux-6.8) runs the initiator's own flush while the IPIs fly:
 * against 4.20 (same lazy era) the madvise of 8 pages returns exactly the
 * local flush earlier, 8 INVLPGs x 100 cycles, the acknowledgement coming
 * later than both.  6.8's per-VMA locks are off here: its faults would leave
 * mmap_lock's line where 4.20's do not, and the madvise takes that lock.
 */
Test(lazytlb, concurrent_local_flush_overlaps_the_ipis)
{
	char *w = two_cpu_case(8, DONTNEED_OP);
	const char *const no_vma_lock[] = {"per_vma_lock=false", NULL};
	struct support_run serial = support_run("tiny-2cpu-pcid.json", "linux-4.20", NULL, w);
	struct support_run overlap =
		support_run("tiny-2cpu-pcid.json", "linux-6.8", no_vma_lock, w);
	cr_assert_eq(histogram_count(serial.result->op_cycles), 1);
	cr_assert_eq(histogram_count(overlap.result->op_cycles), 1);
	uint64_t s = histogram_min(serial.result->op_cycles);
	uint64_t o = histogram_min(overlap.result->op_cycles);
	cr_assert_eq(s - o, 800, "4.20 %lu cycles, 6.8 %lu", (unsigned long)s, (unsigned long)o);
	cr_assert_eq(CPU(overlap, 0, local_flush_cycles), 800);
	support_run_free(&serial);
	support_run_free(&overlap);
	g_free(w);
}
