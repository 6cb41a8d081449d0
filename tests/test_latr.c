/*
 * The "latr" transport (src/kernel/latr.c) on tiny-2cpu (1 GHz: cycles are
 * nanoseconds; the 1000 Hz tick falls every 1 000 000 cycles): a posted
 * flush instead of IPIs, its sweep at the next tick or switch, the ring-full
 * fallback, and what the stale checker says about the frames (release gate).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"

/*
 * cpu 1 reads the one-page "victim" while the flag "run" is 1; cpu 0, at
 * 100 us, runs @calls (madvise DONTNEED, then its own write that faults the
 * page back in), then lets cpu 1 read on until 1.5 ms: past the first tick.
 */
static char *reader_case(const char *calls)
{
	return g_strdup_printf(
		"{\"name\": \"latr\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    %s,"
		"    {\"op\": \"compute\", \"cycles\": 1400000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1,"
		"     \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]}]}",
		calls);
}

#define DONTNEED_THEN_WRITE                                                                    \
	"{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"            \
	"{\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 1," \
	" \"rounds\": 1, \"write\": 1, \"cycles\": 10}"

/*
 * The released code (frames freed at once): no IPI; cpu 1 keeps its entry
 * until its tick at 1 ms and reads through it, stale, from the madvise's
 * return (after 100 us) on: at most (1 000 000 - 100 000) / 10 reads, and
 * all but the syscall's few microseconds of them.  Cpu 0's write faults the
 * page in on the frame just freed (LIFO): cpu 1's stale reads then reach a
 * frame handed out again.
 */
Test(latr, released_code_reads_a_reused_frame_until_the_tick)
{
	char *w = reader_case(DONTNEED_THEN_WRITE);
	struct support_run r = support_run("tiny-2cpu.json", "latr-released", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 0, latr_states_saved), 1);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, latr_states_flushed), 1, "swept once, at the tick");
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	uint64_t stale = CPU(r, 1, stale_hits);
	cr_assert_leq(stale, 90000);
	cr_assert_geq(stale, 85000, "stale reads from the return to the tick: %lu",
		      (unsigned long)stale);
	cr_assert_gt(CPU(r, 1, stale_reuse), 0);
	cr_assert_leq(CPU(r, 1, stale_reuse), stale);
	cr_assert_gt(CPU(r, 1, latr_sweep_cycles), 0);
	cr_assert_eq(CPU(r, 1, irq_cycles), CPU(r, 1, latr_sweep_cycles),
		     "the tick's sweep is its only interrupt work");
	support_run_free(&r);
	g_free(w);
}

/* The paper's gate holds the frame until cpu 1 has swept: the same stale
 * reads, none of them through a frame handed out again. */
Test(latr, paper_gate_holds_the_frame_until_the_sweep)
{
	char *w = reader_case(DONTNEED_THEN_WRITE);
	struct support_run r = support_run("tiny-2cpu.json", "latr", NULL, w);
	cr_assert_eq(CPU(r, 0, latr_states_saved), 1);
	cr_assert_eq(CPU(r, 1, latr_states_flushed), 1);
	cr_assert_geq(CPU(r, 1, stale_hits), 85000);
	cr_assert_eq(r.result->total.stale_reuse, 0);
	support_run_free(&r);
	g_free(w);
}

/* Linux, for reference: the IPI flushes cpu 1 before madvise returns. */
Test(latr, linux_sends_the_ipi_and_has_no_stale_read)
{
	char *w = reader_case(DONTNEED_THEN_WRITE);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->total.ipis_sent, 1);
	cr_assert_eq(r.result->total.latr_states_saved, 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->total.stale_reuse, 0);
	support_run_free(&r);
	g_free(w);
}

/* A ring of one state: the second madvise before the tick finds it full
 * and sends its flush as an IPI, waited for as Linux does. */
Test(latr, full_ring_falls_back_to_ipis)
{
	char *w = reader_case(DONTNEED_THEN_WRITE "," DONTNEED_THEN_WRITE);
	const char *const sets[] = {"latr_states=1", NULL};
	struct support_run r = support_run("tiny-2cpu.json", "latr-released", sets, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 2);
	cr_assert_eq(CPU(r, 0, latr_states_saved), 1);
	cr_assert_eq(CPU(r, 0, latr_fallback_ipis), 1);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 2);
	support_run_free(&r);
	g_free(w);
}

/*
 * cpu 1 sleeps on a flag while cpu 0 madvises, and is woken after it: its
 * __schedule() sweeps the posted flush at once, long before any tick (the
 * run ends at about 0.3 ms), and it reads nothing stale.
 */
Test(latr, a_context_switch_sweeps)
{
	const char *w =
		"{\"name\": \"latr-switch\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 50000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0},"
		"    {\"op\": \"compute\", \"cycles\": 50000},"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
		"    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1,"
		"     \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10},"
		"    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1,"
		"     \"rounds\": 1000, \"write\": 0, \"cycles\": 10}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "latr-released", NULL, w);
	cr_assert_lt(r.result->sim_cycles, 1000000, "no tick falls inside the run");
	cr_assert_eq(CPU(r, 0, latr_states_saved), 1);
	cr_assert_eq(CPU(r, 1, latr_states_flushed), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	support_run_free(&r);
}
