/*
 * The "rar" transport (src/kernel/arch/x86/rar.c) on tiny-2cpu-rar (1 GHz:
 * cycles are nanoseconds; 2 cores of one socket, a line transfer 100, an
 * INVLPG 100, RAR's dispatch 50).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>
#include "cases.h"
#include "support.h"
#include "tlbsim/util/histogram.h"

/* cpu 1 reads the one-page "victim" until 100 us after cpu 0 zaps it with
 * MADV_DONTNEED at 100 us. */
#define MADVISE_CASE() two_cpu_case_after(1, DONTNEED_OP, 100000)

/*
 * One request, one action, no interrupt: cpu 1's microcode reads the payload
 * (a line cpu 0 wrote: 100), dispatches (50) and INVLPGs the page (100), 250
 * cycles taken from its task; no flush_tlb_func() runs there, so nothing is
 * counted as received.  The reader never hits the zapped page after the
 * madvise returns.
 */
Test(rar, one_request_one_action_no_interrupt)
{
	char *w = MADVISE_CASE();
	struct support_run r = support_run("tiny-2cpu-rar.json", "intel-rar", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 0, rar_requests), 1);
	cr_assert_eq(CPU(r, 1, rar_actions), 1);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(r.result->total.ipis_received, 0);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	cr_assert_eq(CPU(r, 1, irq_cycles), 250);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* Against the same preset with IPIs: the initiator waits less (no interrupt
 * entry and exit on the target), the target loses less time. */
Test(rar, cheaper_than_the_ipi_round)
{
	char *w = MADVISE_CASE();
	const char *const ipi[] = {"flush_transport=ipi", "flush_disturbance=irq_handler", NULL};
	struct support_run r = support_run("tiny-2cpu-rar.json", "intel-rar", NULL, w);
	struct support_run i = support_run("tiny-2cpu-rar.json", "intel-rar", ipi, w);
	cr_assert_eq(i.result->total.ipis_sent, 1);
	cr_assert_lt(histogram_max(r.result->op_cycles), histogram_max(i.result->op_cycles));
	cr_assert_lt(CPU(r, 1, irq_cycles), CPU(i, 1, irq_cycles));
	support_run_free(&r);
	support_run_free(&i);
	g_free(w);
}

/* A machine without RAR refuses the preset, naming both. */
Test(rar, refused_without_rar)
{
	char *w = MADVISE_CASE();
	int code = 0;
	char *msg = support_run_error("tiny-2cpu.json", "intel-rar", NULL, w, &code);
	cr_assert(strstr(msg, "policy intel-rar sends its flushes by Intel RAR, which topology "
			      "tiny-2cpu does not have"),
		  "%s", msg);
	g_free(msg);
	g_free(w);
}
