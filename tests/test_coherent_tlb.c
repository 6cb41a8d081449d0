/*
 * The "coherence" transport (src/kernel/coherent_tlb.c, UNITD) on
 * tiny-2cpu-unitd (1 GHz: cycles are nanoseconds; a line transfer 100, the
 * TLB's CAM match 20).
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

static uint64_t op_ns(const struct support_run *r)
{
	return histogram_max(r->result->op_cycles);
}

/* The PTE store's invalidation drops cpu 1's entry: no IPI, no handler,
 * nothing counted on cpu 1, no stale read, and the call is shorter than the
 * IPI round of linux-6.8. */
Test(coherent_tlb, no_shootdown_runs)
{
	char *w = MADVISE_CASE();
	struct support_run r = support_run("tiny-2cpu-unitd.json", "unitd", NULL, w);
	struct support_run l = support_run("tiny-2cpu-unitd.json", "linux-6.8", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1, "the kernel still asks for it");
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	cr_assert_eq(CPU(r, 1, irq_cycles), 0);
	cr_assert_gt(CPU(r, 1, tlb_entries_invalidated), 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_lt(op_ns(&r), op_ns(&l));
	support_run_free(&r);
	support_run_free(&l);
	g_free(w);
}

/* A machine without coherent TLBs refuses the preset, naming both. */
Test(coherent_tlb, refused_without_coherent_tlbs)
{
	int code = 0;
	char *w = MADVISE_CASE();
	char *msg = support_run_error("tiny-2cpu.json", "unitd", NULL, w, &code);
	cr_assert(strstr(msg, "policy unitd relies on TLBs kept coherent by hardware, which "
			      "topology tiny-2cpu does not have"),
		  "%s", msg);
	g_free(msg);
	g_free(w);
}
