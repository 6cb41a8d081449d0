/*
 * The "ipi" transport's completion points (src/kernel/shootdown.c) on
 * tiny-2cpu (1 GHz: cycles are nanoseconds), under the early-ack preset
 * (Linux 5.2's lazier TLB, so flush_tlb_func() on a target reads the mm's
 * tlb_gen line, 100 cycles from the other core, before its INVLPGs of 100).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "cases.h"
#include "support.h"
#include "tlbsim/util/histogram.h"

/* cpu 1 reads the one-page "victim" until 100 us after cpu 0 zaps it with
 * MADV_DONTNEED at 100 us. */
#define MADVISE_CASE() two_cpu_case_after(1, DONTNEED_OP, 100000)

static uint64_t op_ns(const struct support_run *r)
{
	return r->result->op_cycles ? histogram_max(r->result->op_cycles) : 0;
}

/*
 * The target acknowledges when its handler takes the request, before its
 * flush: the initiator's wait is shorter by exactly the flush, a tlb_gen
 * read (100) and one INVLPG (100).  The target runs no user code before it
 * has flushed, so nothing reads the zapped page stale.
 */
Test(shootdown, early_ack_saves_the_remote_flush_and_stays_coherent)
{
	char *w = MADVISE_CASE();
	const char *const late[] = {"flush_completion=remote_flush_done", NULL};
	struct support_run after = support_run("tiny-2cpu.json", "early-ack", late, w);
	struct support_run early = support_run("tiny-2cpu.json", "early-ack", NULL, w);
	cr_assert_eq(op_ns(&after) - op_ns(&early), 200, "%lu vs %lu",
		     (unsigned long)op_ns(&after), (unsigned long)op_ns(&early));
	cr_assert_eq(CPU(early, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(early, 1, ipis_received), 1);
	cr_assert_eq(early.result->total.stale_hits, 0);
	cr_assert_eq(CPU(early, 1, irq_cycles), CPU(after, 1, irq_cycles), "the same handler");
	support_run_free(&after);
	support_run_free(&early);
	g_free(w);
}

/* An initiator that does not wait at all returns once its IPI is sent; the
 * reader hits its old entry until the interrupt arrives: caught. */
Test(shootdown, no_wait_is_caught)
{
	char *w = MADVISE_CASE();
	const char *const none[] = {"flush_completion=none", NULL};
	struct support_run r = support_run("tiny-2cpu.json", "early-ack", none, w);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1, "the flush still happens");
	/* From the return to the IPI's arrival and handler: at most the send
	 * (200), the flight (1000) and the entry (300) at 10 cycles a read. */
	cr_assert_gt(r.result->total.stale_hits, 0);
	cr_assert_leq(r.result->total.stale_hits, 150);
	support_run_free(&r);
	g_free(w);
}

/* cpu 1 walks all 16 pages of "victim" (its PDE cache then holds the PTE
 * page), then reads "other"; cpu 0 munmaps "victim", freeing that page. */
static const char *const tables_case =
	"{\"name\": \"ack-tables\","
	" \"regions\": [{\"name\": \"victim\", \"size\": 65536, \"populate\": \"all\"},"
	"             {\"name\": \"other\", \"size\": 4096, \"populate\": \"all\"}],"
	" \"tasks\": ["
	"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"wait_flag\", \"flag\": \"touched\", \"value\": 1},"
	"    {\"op\": \"munmap\", \"region\": \"victim\"},"
	"    {\"op\": \"compute\", \"cycles\": 100000},"
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
	"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
	"     \"pages\": 16, \"rounds\": 1, \"write\": 0, \"cycles\": 10},"
	"    {\"op\": \"set_flag\", \"flag\": \"touched\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"other\", \"pattern\": \"sequential\","
	"     \"pages\": 1, \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]}]}";

/*
 * The RFC's rule: a flush that freed page tables acknowledges after it, so
 * the munmap takes as long as with Linux's completion and frees the table
 * once cpu 1 has flushed.  Without the rule (early_ack_freed_tables) the
 * munmap returns 1700 ns sooner (a tlb_gen read and 16 INVLPGs), and the
 * table is freed while cpu 1 is still flushing: caught as stale_pwc.
 */
Test(shootdown, early_ack_with_freed_tables_is_caught)
{
	const char *const late[] = {"flush_completion=remote_flush_done", NULL};
	const char *const unsafe[] = {"early_ack_freed_tables=true", NULL};
	struct support_run linux_like =
		support_run("tiny-2cpu.json", "early-ack", late, tables_case);
	struct support_run rule = support_run("tiny-2cpu.json", "early-ack", NULL, tables_case);
	struct support_run bad = support_run("tiny-2cpu.json", "early-ack", unsafe, tables_case);
	cr_assert_eq(op_ns(&rule), op_ns(&linux_like));
	cr_assert_eq(rule.result->total.stale_pwc, 0);
	cr_assert_eq(op_ns(&linux_like) - op_ns(&bad), 1700);
	cr_assert_eq(CPU(bad, 1, stale_pwc), 1);
	cr_assert(bad.result->stale[0].freed_table);
	cr_assert_eq(bad.result->total.stale_hits, 0, "no user access in the window");
	support_run_free(&linux_like);
	support_run_free(&rule);
	support_run_free(&bad);
}
