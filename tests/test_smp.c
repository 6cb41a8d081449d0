/*
 * Cross-CPU calls (src/kernel/smp.c): the timing of one shootdown worked out by hand
 * on the tiny test machines (1 GHz, so cycles are nanoseconds).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"

/* CPU @unmapper munmaps one populated page while @readers readers run on the
 * CPUs @reader_cpu (an expression of $thread) gives. */
static char *one_page_munmap_on(unsigned unmapper, unsigned readers, const char *reader_cpu)
{
	return g_strdup_printf(
		"{\"name\": \"one-page\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
		"              {\"name\": \"own\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"unmapper\", \"cpu\": %u, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"munmap\", \"region\": \"victim\"},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"count\": %u, \"cpu\": \"%s\", \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"own\", \"pattern\": \"sequential\", \"pages\": 1,"
		"     \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		unmapper, readers, reader_cpu);
}

/* cpu 0 munmaps one populated page while readers on @readers other CPUs run. */
static char *one_page_munmap(unsigned readers)
{
	return one_page_munmap_on(0, readers, "$thread + 1");
}

/*
 * tiny-2cpu, one target on the other core:
 *   entry: syscall 150, down_write(mmap_lock) (rwsem.c: a line never
 *   written before, 20), vma_op 3000            -> 3170
 *   zap one PTE (pte_op 10)                     -> 3180
 *   local INVLPG (100)                          -> 3280
 *   queue the csd on cpu 1's line (socket, 100) -> 3380
 *   ICR write (ipi_send 200), IPI leaves        -> 3580
 *   arrives (socket latency 1500)               -> 5080
 *   irq entry 300, INVLPG 100, csd unlock       -> 5480
 *   unlock seen by cpu 0 (line transfer 100)    -> 5580
 *   free the page off the LRU (swap.c: lock and list lines never written
 *   before, 20 each, + lru_page 40)             -> 5660
 *   up_write(mmap_lock) (its line is here, 20)  -> 5680 = munmap returns
 * cpu 1 spends irq_entry + INVLPG + irq_exit = 700 cycles in the handler.
 */
Test(smp, one_target_shootdown_timing)
{
	char *w = one_page_munmap(1);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(histogram_count(r.result->op_cycles), 1);
	cr_assert_eq(histogram_min(r.result->op_cycles), 5680);
	cr_assert_eq(CPU(r, 1, irq_cycles), 700);
	cr_assert_eq(CPU(r, 0, irq_cycles), 0);
	cr_assert_eq(CPU(r, 0, ipis_received), 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * tiny-smt (siblings 0/2, 1/3), targets 1, 2, 3 in order:
 *   local flush done (mmap_lock's down_write included) -> 3280
 *   csds: cpu 1 (socket 100), cpu 2 (smt 40), cpu 3 (socket 100) -> 3520
 *   ICR writes at 3720 (cpu 1), 3920 (cpu 2), 4120 (cpu 3)
 *   arrivals: 5220, 4920 (smt latency 1000), 5620
 *   unlocks (entry 300 + INVLPG 100): 5620, 5320, 6020
 *   seen by cpu 0: 5720, 5360, 6120; the page leaves the LRU (80, as above)
 *   -> 6200; up_write(mmap_lock) (20) -> returns at 6220
 */
Test(smp, three_targets_wait_for_the_slowest)
{
	char *w = one_page_munmap(3);
	struct support_run r = support_run("tiny-smt.json", "linux-4.5", NULL, w);
	cr_assert_eq(histogram_min(r.result->op_cycles), 6220);
	for (unsigned c = 1; c < 4; c++) {
		cr_assert_eq(CPU(r, c, ipis_received), 1);
		cr_assert_eq(CPU(r, c, irq_cycles), 700);
	}
	cr_assert_eq(CPU(r, 0, ipis_sent), 3);
	support_run_free(&r);
	g_free(w);
}

/*
 * tiny-smt, cpu 1 unmaps; targets 0, 2 (other core) and 3 (its sibling), in
 * that order.  csd_lock_wait() takes the csds in turn, so a csd unlocked
 * before the caller reaches it still costs one line transfer:
 *   csds: cpu 0 (100), cpu 2 (100), cpu 3 (40)      -> 3500
 *   ICR writes at 3700 (cpu 0), 3900 (cpu 2), 4100 (cpu 3)
 *   arrivals 5200, 5400, 5100 (smt latency 1000); unlocks 5600, 5800, 5500
 *   the caller's loop: 5600 + 100 = 5700, then max(5700, 5800) + 100 = 5900,
 *   then cpu 3's unlock, long done, + 40            -> 5940
 *   the page leaves the LRU (80, as above)          -> 6020
 * (waiting only for the latest unlock would give 5980); mmap_lock's
 * down_write and up_write (20 each, as above)       -> returns at 6060.
 */
Test(smp, the_caller_waits_for_the_csds_in_turn)
{
	char *w = one_page_munmap_on(1, 3, "$thread + ($thread + 1) / 2");
	struct support_run r = support_run("tiny-smt.json", "linux-4.5", NULL, w);
	cr_assert_eq(histogram_count(r.result->op_cycles), 1);
	cr_assert_eq(histogram_min(r.result->op_cycles), 6060);
	for (unsigned c = 0; c < 4; c++)
		cr_assert_eq(CPU(r, c, ipis_received), c == 1 ? 0 : 1, "cpu %u", c);
	support_run_free(&r);
	g_free(w);
}

/* An IPI to an idle, lazy CPU is still taken (4.5 sends to the whole mask). */
Test(smp, lazy_target_takes_the_interrupt)
{
	const char *w =
		"{\"name\": \"lazy-target\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"unmapper\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"munmap\", \"region\": \"victim\"}]},"
		"  {\"name\": \"short\", \"cpu\": 1, \"program\": [{\"op\": \"compute\", \"cycles\": 10}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 1, ipis_received), 1);
	/* leave_mm: the cpumask clear (an RMW on a line cpu 1 wrote last:
	 * the self cost, 20) and a CR3 load (flush_all, 120) inside the
	 * handler's entry and exit (600). */
	cr_assert_eq(CPU(r, 1, irq_cycles), 600 + 20 + 120);
	support_run_free(&r);
}

/*
 * Two shootdowns at the same moment, each targeting the other's CPU (found by
 * fuzzing: the two waits' bounds used to re-arm each other forever at one
 * instant).  Both complete, each with one remote flush.
 */
Test(smp, crossing_shootdowns_both_complete)
{
	const char *w =
		"{\"name\": \"two-munmaps\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": \"8K\", \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"a\", \"count\": 2, \"cpu\": \"$thread\", \"program\": ["
		"   {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": \"$thread\"}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(histogram_count(r.result->op_cycles), 2);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush), 1);
	cr_assert_eq(r.result->total.ipis_received, 2);
	support_run_free(&r);
}

/*
 * When cpu 0's madvise() of a zero-page PTE (a flush to cpu 1, no page to
 * free, so no LRU lock of its own) returns if it starts @delay cycles in,
 * while cpu 1 faults 15 pages in (the 15th drains the LRU batch under the
 * lock).
 */
static uint64_t madvise_end_during_drain(unsigned delay)
{
	char *w = g_strdup_printf(
		"{\"name\": \"irqoff\","
		" \"regions\": [{\"name\": \"heap\", \"size\": \"64K\"},"
		"  {\"name\": \"victim\", \"size\": \"4K\"}],"
		" \"tasks\": ["
		"  {\"name\": \"a\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 10},"
		"    {\"op\": \"compute\", \"cycles\": %u},"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"}]},"
		"  {\"name\": \"b\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
		"     \"pages\": 15, \"rounds\": 1, \"write\": 1, \"cycles\": 10}]}],"
		" \"report\": {\"op\": \"madvise\"}}",
		delay);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(histogram_count(r.result->op_cycles), 1);
	cr_assert_eq(CPU(r, 0, lru_lock_acquisitions), 0);
	uint64_t end = delay + histogram_min(r.result->op_cycles);
	support_run_free(&r);
	g_free(w);
	return end;
}

/*
 * The LRU lock is taken with spin_lock_irqsave(): an IPI that reaches a CPU
 * waiting for or holding it is handled only at the unlock.  cpu 1's drain
 * holds it for 640 cycles (tiny-2cpu: two self transfers and 15 x 40); the
 * madvise() calls whose IPI lands in that time all end at the same moment,
 * the unlock plus the handler and the acknowledgement (13 delays here).
 * Without the rule each ends 50 cycles after the one before.
 */
Test(smp, an_ipi_waits_for_the_lru_lock_section)
{
	unsigned longest = 0, run = 0;
	uint64_t previous = 0;
	for (unsigned delay = 15500; delay <= 18500; delay += 50) {
		uint64_t end = madvise_end_during_drain(delay);
		run = end == previous ? run + 1 : 0;
		longest = MAX(longest, run);
		previous = end;
	}
	cr_expect_geq(longest, 8, "longest run of equal ends: %u", longest);
}
