/*
 * PTI and the deferred user flush (src/kernel/arch/x86/pti.c) on
 * tiny-2cpu-pti (1 GHz: cycles are nanoseconds; PCIDs; an INVLPG 100, a CR3
 * write 120, an INVPCID of one address 150, a CR3 switch 50, interrupt entry
 * and exit 300 each, a line transfer between the cores 100).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>
#include "cases.h"
#include "support.h"
#include "tlbsim/util/histogram.h"

/* cpu 0 alone: after 100 us, @op on its @pages populated pages, then (but
 * after a munmap) reads them again, faulting; @op is the report op. */
static char *local_case(unsigned pages, const char *op)
{
	bool unmaps = strstr(op, "munmap") != NULL;
	char *again = unmaps ? g_strdup("")
			     : g_strdup_printf(", {\"op\": \"access\", \"region\": \"victim\","
					       " \"pattern\": \"sequential\", \"pages\": %u,"
					       " \"rounds\": 1, \"cycles\": 10}",
					       pages);
	char *w = g_strdup_printf(
	    "{\"name\": \"local\","
	    " \"regions\": [{\"name\": \"victim\", \"size\": %u, \"populate\": \"all\"}],"
	    " \"tasks\": [{\"name\": \"main\", \"cpu\": 0, \"program\": ["
	    "  {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
	    "   \"pages\": %u, \"rounds\": 1, \"cycles\": 10},"
	    "  {\"op\": \"compute\", \"cycles\": 100000}, %s%s]}],"
	    " \"report\": {\"op\": \"%s\"}}",
	    pages * 4096, pages, op, again, unmaps ? "munmap" : "madvise");
	g_free(again);
	return w;
}

static uint64_t op_ns(const struct support_run *r)
{
	return histogram_max(r->result->op_cycles);
}

static const char *const pti_off[] = {"pti=false", NULL};

/*
 * A local MADV_DONTNEED of 1 page.  linux-5.2-pti against the same kernel
 * without PTI: a CR3 switch on entry and one on exit (2 x 50) and the user
 * PCID's INVPCID after the kernel PCID's INVLPG (150): 250 more.
 * deferred-pti: the INVPCID becomes an INVLPG (100) after the exit's CR3
 * switch: 50 less than linux-5.2-pti.  The re-read faults: no stale hit.
 */
Test(pti, local_madvise_one_page_by_hand)
{
	char *w = local_case(1, DONTNEED_OP);
	struct support_run off = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", pti_off, w);
	struct support_run on = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", NULL, w);
	struct support_run def = support_run("tiny-2cpu-pti.json", "deferred-pti", NULL, w);
	cr_assert_eq(op_ns(&on) - op_ns(&off), 2 * 50 + 150, "%lu vs %lu",
		     (unsigned long)op_ns(&on), (unsigned long)op_ns(&off));
	cr_assert_eq(op_ns(&on) - op_ns(&def), 150 - 100, "%lu vs %lu",
		     (unsigned long)op_ns(&on), (unsigned long)op_ns(&def));
	cr_assert_eq(CPU(def, 0, pti_user_flushes_deferred), 1);
	cr_assert_eq(CPU(on, 0, pti_user_flushes_deferred), 0);
	cr_assert_eq(CPU(def, 0, pti_user_flush_all), 0, "one range: INVLPGs, not the PCID");
	const struct support_run *const runs[] = {&off, &on, &def};
	for (unsigned i = 0; i < G_N_ELEMENTS(runs); i++)
		cr_assert_eq(runs[i]->result->total.stale_hits, 0);
	support_run_free(&off);
	support_run_free(&on);
	support_run_free(&def);
	g_free(w);
}

/* 10 pages: the saving is per page, 10 x (150 - 100). */
Test(pti, local_madvise_ten_pages_by_hand)
{
	char *w = local_case(10, DONTNEED_OP);
	struct support_run on = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", NULL, w);
	struct support_run def = support_run("tiny-2cpu-pti.json", "deferred-pti", NULL, w);
	cr_assert_eq(op_ns(&on) - op_ns(&def), 10 * (150 - 100));
	cr_assert_eq(def.result->total.stale_hits, 0);
	support_run_free(&on);
	support_run_free(&def);
	g_free(w);
}

/*
 * cpu 1 reads the victim when cpu 0 zaps it: the IPI interrupts user code.
 * Its handler keeps the user flush (the initiator does not: it waits for
 * the ack anyway), and does it at the interrupt's return, after the CR3
 * switch: 100 for the INVLPG there instead of 150 for an INVPCID in the
 * handler, so the ack comes 150 sooner and the interrupt takes 50 less.
 * Against no PTI, the interrupt costs the two CR3 switches and the
 * deferred INVLPG more.  The reader never uses the zapped page.
 */
Test(pti, remote_user_flush_at_interrupt_return)
{
	char *w = two_cpu_case_after(1, DONTNEED_OP, 100000);
	struct support_run off = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", pti_off, w);
	struct support_run on = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", NULL, w);
	struct support_run def = support_run("tiny-2cpu-pti.json", "deferred-pti", NULL, w);
	cr_assert_eq(CPU(def, 1, pti_user_flushes_deferred), 1);
	cr_assert_eq(CPU(def, 0, pti_user_flushes_deferred), 0, "the initiator waits: INVPCID");
	cr_assert_eq(CPU(def, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(op_ns(&on) - op_ns(&def), 150);
	cr_assert_eq(CPU(on, 1, irq_cycles) - CPU(def, 1, irq_cycles), 50);
	cr_assert_eq(CPU(def, 1, irq_cycles) - CPU(off, 1, irq_cycles), 2 * 50 + 100);
	const struct support_run *const runs[] = {&off, &on, &def};
	for (unsigned i = 0; i < G_N_ELEMENTS(runs); i++)
		cr_assert_eq(runs[i]->result->total.stale_hits, 0);
	support_run_free(&off);
	support_run_free(&on);
	support_run_free(&def);
	g_free(w);
}

/* munmap of the whole region frees its page table: never deferred, so
 * deferred-pti costs what linux-5.2-pti does, INVPCID and all. */
Test(pti, freed_tables_never_deferred)
{
	char *w = local_case(1, "{\"op\": \"munmap\", \"region\": \"victim\"}");
	struct support_run on = support_run("tiny-2cpu-pti.json", "linux-5.2-pti", NULL, w);
	struct support_run def = support_run("tiny-2cpu-pti.json", "deferred-pti", NULL, w);
	cr_assert_eq(CPU(def, 0, pti_user_flushes_deferred), 0);
	cr_assert_eq(op_ns(&on), op_ns(&def));
	cr_assert_eq(def.result->total.stale_pwc, 0);
	support_run_free(&on);
	support_run_free(&def);
	g_free(w);
}

/*
 * No INVPCID (tiny-2cpu-pcid: invpcid_addr 0, cr3_switch 0): Linux marks the
 * user PCID (invalidate_user_asid()) and the return to user flushes it
 * whole; the re-read finds nothing stale.
 */
Test(pti, no_invpcid_flushes_the_whole_user_pcid_at_return)
{
	char *w = local_case(1, DONTNEED_OP);
	struct support_run on = support_run("tiny-2cpu-pcid.json", "linux-5.2-pti", NULL, w);
	struct support_run off = support_run("tiny-2cpu-pcid.json", "linux-5.2-pti", pti_off, w);
	cr_assert_eq(CPU(on, 0, pti_user_flush_all), 1);
	cr_assert_eq(on.result->total.stale_hits, 0);
	cr_assert_eq(op_ns(&on), op_ns(&off), "an INVLPG either way; the switches cost 0 here");
	support_run_free(&on);
	support_run_free(&off);
	g_free(w);
}

/* A machine without PCIDs refuses PTI, naming both. */
Test(pti, refused_without_pcids)
{
	char *w = local_case(1, DONTNEED_OP);
	int code = 0;
	char *msg = support_run_error("tiny-2cpu.json", "linux-5.2-pti", NULL, w, &code);
	cr_assert_str_eq(msg, "policy linux-5.2-pti runs PTI with a user PCID beside each mm's, "
			      "but topology tiny-2cpu has no PCIDs (hw_asids is 0): pick a "
			      "machine with them");
	g_free(msg);
	g_free(w);
}
