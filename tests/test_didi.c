/*
 * DiDi's TLB directory (src/kernel/didi.c: flush_targets and flush_transport
 * "directory") on tiny-2cpu-didi (1 GHz: cycles are nanoseconds; 2 cores of
 * one socket, a line transfer 100, an INVLPG 100, a directory lookup 150, an
 * LSQ check 30).
 *
 * Hand-worked: cpu 0's MADV_DONTNEED of one page flushes that page locally
 * (one INVLPG, 100, overlapping the request) and asks the directory (150).
 * If cpu 1's TLB holds the page, the directory forwards one invalidation,
 * cpu 1 checks its LSQ and acks: 100 + 30 more.  The call waits for the later
 * of the local flush and the directory, so the remote part adds exactly
 * 150 + 100 + 30 when cpu 1 shares the page, and 150 when it does not.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>
#include "cases.h"
#include "support.h"
#include "tlbsim/util/histogram.h"

#define TINY "tiny-2cpu-didi.json"

/* cpu 1 reads the one-page "victim" until 100 us after cpu 0 zaps it with
 * MADV_DONTNEED at 100 us. */
#define SHARED_CASE() two_cpu_case_after(1, DONTNEED_OP, 100000)

/* The same, but cpu 1 reads another region of the same mm: it is in
 * mm_cpumask and running the mm, yet its TLB never held the victim. */
static char *unshared_case(void)
{
	return g_strdup(
	    "{\"name\": \"two-cpu-unshared\","
	    " \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
	    "              {\"name\": \"other\", \"size\": 4096, \"populate\": \"all\"}],"
	    " \"tasks\": ["
	    "  {\"name\": \"initiator\", \"cpu\": 0, \"program\": ["
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"compute\", \"cycles\": 100000}," DONTNEED_OP ","
	    "    {\"op\": \"compute\", \"cycles\": 100000},"
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	    "  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
	    "    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"access\", \"region\": \"other\", \"pattern\": \"sequential\","
	    "     \"pages\": 1, \"while_flag\": \"run\", \"cycles\": 10}]}]}");
}

static uint64_t op_ns(const struct support_run *r)
{
	return histogram_max(r->result->op_cycles);
}

/* cpu 1 cached the page: one lookup, one invalidation to cpu 1, no IPI, no
 * handler, no stale read. */
Test(didi, a_sharer_gets_one_invalidation)
{
	char *w = SHARED_CASE();
	struct support_run r = support_run(TINY, "didi", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1, "the kernel still asks for it");
	cr_assert_eq(CPU(r, 0, didi_lookups), 1);
	cr_assert_eq(CPU(r, 1, didi_invalidations), 1);
	cr_assert_eq(r.result->total.didi_invalidations, 1);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	cr_assert_eq(CPU(r, 1, irq_cycles), 0);
	cr_assert_eq(CPU(r, 1, tlb_entries_invalidated), 2, "its L1 DTLB's and STLB's");
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->total.stale_entries, 0);
	support_run_free(&r);
	g_free(w);
}

/* cpu 1 runs the mm but never cached the page: the directory sends nothing. */
Test(didi, no_sharer_no_message)
{
	char *w = unshared_case();
	struct support_run r = support_run(TINY, "didi", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1, "cpu 1 is in mm_cpumask");
	cr_assert_eq(CPU(r, 0, didi_lookups), 1);
	cr_assert_eq(r.result->total.didi_invalidations, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, tlb_entries_invalidated), 0);
	support_run_free(&r);
	g_free(w);
}

/* The remote part of the call, hand-worked (top of file): the sharer's
 * round trip is one line transfer and one LSQ check on top of the lookup. */
Test(didi, costs_lookup_transfer_and_lsq_check)
{
	char *shared = SHARED_CASE(), *unshared = unshared_case();
	struct support_run s = support_run(TINY, "didi", NULL, shared);
	struct support_run u = support_run(TINY, "didi", NULL, unshared);
	cr_assert_eq(op_ns(&s) - op_ns(&u), 100 + 30, "%lu vs %lu", (unsigned long)op_ns(&s),
		     (unsigned long)op_ns(&u));
	/* test_e2e_didi pins the lookup and the LSQ check alone (each +1000
	 * cycles there is +1000 on the call). */
	support_run_free(&s);
	support_run_free(&u);
	g_free(shared);
	g_free(unshared);
}

/* Against linux-6.8's IPI round on the same machine: shorter. */
Test(didi, cheaper_than_the_ipi_round)
{
	char *w = SHARED_CASE();
	struct support_run r = support_run(TINY, "didi", NULL, w);
	struct support_run l = support_run(TINY, "linux-6.8", NULL, w);
	cr_assert_eq(l.result->total.ipis_sent, 1);
	cr_assert_lt(op_ns(&r), op_ns(&l));
	support_run_free(&r);
	support_run_free(&l);
	g_free(w);
}

/* A machine without a directory refuses the preset, naming both. */
Test(didi, refused_without_a_directory)
{
	int code = 0;
	char *w = SHARED_CASE();
	char *msg = support_run_error("tiny-2cpu.json", "didi", NULL, w, &code);
	cr_assert(strstr(msg, "policy didi sends its flushes through a shared TLB directory "
			      "(DiDi), which topology tiny-2cpu does not have "
			      "(flush_hw.tlb_directory_entries is 0)"),
		  "%s", msg);
	g_free(msg);
	g_free(w);
}
