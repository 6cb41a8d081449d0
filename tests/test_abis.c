/*
 * ABIS (flush_targets "abis", src/kernel/abis.c) on tiny-2cpu (1 GHz: cycles
 * are nanoseconds): the walker's Accessed bit and single accessor
 * (struct pte), and the three verdicts at a madvise(MADV_DONTNEED) of one
 * page: no flush when nobody walked it, a local flush when only the caller
 * did, Linux's IPI when the other CPU did; the stale checker watches.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/engine/engine.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/machine.h"
#include "tlbsim/util/histogram.h"

/*
 * cpu 1 reads @reader_region ("victim" or "other", one page each) while the
 * flag "run" is 1; cpu 0, at 100 us, runs @before, then madvise(DONTNEED)s
 * "victim" (the report op), then lets cpu 1 read on for 100 us.  Both are
 * populated before the run: no walk has loaded either.
 */
static char *dontneed_case(const char *before, const char *reader_region)
{
	return g_strdup_printf(
		"{\"name\": \"abis\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
		"              {\"name\": \"other\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"report\": {\"op\": \"madvise\"},"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    %s"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"%s\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]}]}",
		before, reader_region);
}

#define CALLER_READS_VICTIM                                                                    \
	"{\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 1," \
	" \"rounds\": 1, \"write\": 0, \"cycles\": 10},"

static uint64_t madvise_ns(const struct support_run *r)
{
	cr_assert_eq(histogram_count(r->result->op_cycles), 1);
	return histogram_max(r->result->op_cycles);
}

/*
 * (a) Nobody walked "victim" since "populate": all (which fills no TLB), so
 * its A bit is clear and no TLB can hold it: no flush at all.  Linux 4.5
 * sends cpu 1 (in mm_cpumask, reading "other") an IPI all the same.
 * madvise by hand: syscall 150, down_read (a line RMW, 20), vma_op 3000:
 * the zap at 3170; pte_op 10 and no flush; freeing the page onto the LRU
 * (two line RMWs and lru_page: 80) ends at 3260, but the return is a global
 * event no sooner than the lookahead (a socket line transfer, 100) after
 * the zap's: 3270; up_read 20: 3290 ns.  Linux 4.5 flushes after the zap's
 * 10: the local INVLPG 100, the IPI send 200, its delivery 1500, cpu 1's
 * interrupt entry 300 and INVLPG 100, the csd line there and back 2 x 100:
 * 5580; LRU 80, up_read 20: 5680 ns.
 */
Test(abis, untouched_page_is_not_flushed)
{
	char *w = dontneed_case("", "other");
	struct support_run abis = support_run("tiny-2cpu.json", "abis", NULL, w);
	cr_assert_eq(CPU(abis, 0, abis_flush_skipped), 1);
	cr_assert_eq(CPU(abis, 0, abis_local_only), 0);
	cr_assert_eq(abis.result->total.ipis_sent, 0);
	cr_assert_eq(abis.result->total.nr_tlb_remote_flush, 0);
	cr_assert_eq(abis.result->total.nr_tlb_local_flush_one, 0);
	cr_assert_eq(abis.result->total.invlpg, 0);
	cr_assert_eq(abis.result->total.tlb_flush_events,
		     abis.result->total.tlb_flush_task_switch, "only the two tasks' switches");
	cr_assert_eq(abis.result->total.stale_hits, 0);
	uint64_t skipped_ns = madvise_ns(&abis);
	cr_assert_eq(skipped_ns, 3290, "madvise %lu ns", (unsigned long)skipped_ns);

	struct support_run linux_ = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(linux_, 0, ipis_sent), 1, "cpu 1 is in mm_cpumask");
	cr_assert_eq(CPU(linux_, 1, invlpg), 1);
	cr_assert_eq(linux_.result->total.abis_flush_skipped, 0);
	uint64_t linux_ns = madvise_ns(&linux_);
	cr_assert_eq(linux_ns, 5680, "linux %lu ns", (unsigned long)linux_ns);
	support_run_free(&abis);
	support_run_free(&linux_);
	g_free(w);
}

/* (b) Only cpu 0's walk loaded "victim": a local INVLPG, no IPI, although
 * cpu 1 runs the mm.  As (a) with the INVLPG (100) after the zap: the LRU
 * free ends at 3170 + 10 + 100 + 80 = 3360, past the lookahead; up_read
 * 20: 3380 ns. */
Test(abis, page_only_the_caller_walked_is_flushed_locally)
{
	char *w = dontneed_case(CALLER_READS_VICTIM, "other");
	struct support_run r = support_run("tiny-2cpu.json", "abis", NULL, w);
	cr_assert_eq(CPU(r, 0, abis_local_only), 1);
	cr_assert_eq(CPU(r, 0, abis_flush_skipped), 0);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 1);
	cr_assert_eq(CPU(r, 0, invlpg), 1);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 1, invlpg), 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	uint64_t ns = madvise_ns(&r);
	cr_assert_eq(ns, 3380, "madvise %lu ns", (unsigned long)ns);
	support_run_free(&r);
	g_free(w);
}

/* (c) cpu 1 walked "victim": its accessor is not the caller, so Linux's path,
 * an IPI, and cpu 1 reads nothing stale (it faults the page back in). */
Test(abis, page_the_other_cpu_read_gets_the_ipi)
{
	char *w = dontneed_case("", "victim");
	struct support_run r = support_run("tiny-2cpu.json", "abis", NULL, w);
	struct support_run l = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->total.abis_flush_skipped, 0);
	cr_assert_eq(r.result->total.abis_local_only, 0);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(CPU(r, 1, invlpg), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(CPU(r, 1, page_faults), 1, "cpu 1 faults the page back in");
	cr_assert_eq(madvise_ns(&r), madvise_ns(&l), "the same path as linux-4.5");
	support_run_free(&r);
	support_run_free(&l);
	g_free(w);
}

/* Both CPUs walked it: shared, Linux's path, as in (c). */
Test(abis, page_both_cpus_read_is_shared)
{
	char *w = dontneed_case(CALLER_READS_VICTIM, "victim");
	struct support_run r = support_run("tiny-2cpu.json", "abis", NULL, w);
	cr_assert_eq(r.result->total.abis_local_only, 0);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * (d) The PTE state itself, by hand: a walk sets A with its CPU, a second
 * CPU's walk makes it shared; a zap clears both; populating the page again
 * (no walk) leaves A clear, so a gather of the next zap sees nothing
 * accessed and ABIS skips the flush again.
 */
Test(abis, zap_clears_and_repopulate_without_a_walk_is_skipped_again)
{
	struct topology *topo = support_topology("tiny-2cpu.json");
	struct engine *engine = engine_new(3);
	struct machine *m = machine_new(topo, engine, NULL, NULL);
	struct mm *mm = mm_new(1, 2);
	struct vma *vma = mm_add_vma(mm, 0x400000, 4096, PS_4K, false, 0, 0);
	mm_finish_layout(mm);
	vma = &mm->vmas[0];
	struct pte *pte = vma_pte(vma, 0x400000);
	uint64_t cycles = 0;

	mm_populate(mm, vma, 0x400000, true);
	cr_assert_not(pte->accessed, "populate fills no TLB");
	cr_assert_eq(machine_translate(m, &m->cpus[0], 0, vma, 0x400000, false, 0,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_assert(pte->accessed);
	cr_assert_eq(pte->accessor, 0);
	cr_assert_eq(machine_translate(m, &m->cpus[0], 0, vma, 0x400000, false, 100,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_assert_eq(pte->accessor, 0, "a TLB hit walks nothing");
	cr_assert_eq(machine_translate(m, &m->cpus[1], 0, vma, 0x400000, false, 200,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_assert_eq(pte->accessor, PTE_ACCESSOR_SHARED);

	struct pte old = *pte;
	cr_assert(mm_zap_pte(mm, vma, 0x400000));
	cr_assert(old.accessed);
	cr_assert_not(pte->accessed, "cleared with the zap");
	mm_populate(mm, vma, 0x400000, true);
	cr_assert_not(pte->accessed, "no walk since: no TLB holds it");

	struct cpu *self = &m->cpus[0];
	struct tlb_access seen = {.accessed = pte->accessed, .foreign = false};
	cr_assert_eq(flush_targets_abis.reach(NULL, self, &seen, false), FLUSH_REACH_NONE);
	cr_assert_eq(self->counters.abis_flush_skipped, 1);
	/* Freed page tables are never skipped: a PDE cache has no A bit. */
	cr_assert_eq(flush_targets_abis.reach(NULL, self, &seen, true), FLUSH_REACH_MM);
	seen = (struct tlb_access){.accessed = true, .foreign = false};
	cr_assert_eq(flush_targets_abis.reach(NULL, self, &seen, false), FLUSH_REACH_LOCAL);
	seen.foreign = true;
	cr_assert_eq(flush_targets_abis.reach(NULL, self, &seen, false), FLUSH_REACH_MM);

	mm_free(mm);
	machine_free(m);
	engine_free(engine);
	topology_free(topo);
}

/*
 * mprotect(read) of a page only the caller wrote: local only; a later write
 * by cpu 1 is refused (SIGSEGV would stop the run), so cpu 1 only reads
 * "other"; its TLB never held "victim".  The write fault's walk (cpu 0's
 * retried access) set A for cpu 0 alone.
 */
Test(abis, mprotect_of_a_private_page_is_local)
{
	char *w = g_strdup_printf(
		"{\"name\": \"abis-mprotect\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096},"
		"              {\"name\": \"other\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"write\": 1, \"cycles\": 10},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"other\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]}]}");
	struct support_run r = support_run("tiny-2cpu.json", "abis", NULL, w);
	cr_assert_eq(CPU(r, 0, abis_local_only), 1);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* The tracking cost: each page fault costs abis_track_cycles more (one
 * fault per page of "victim" here, written by cpu 0 alone). */
Test(abis, faults_pay_the_tracking_cost)
{
	const char *w =
		"{\"name\": \"abis-faults\","
		" \"regions\": [{\"name\": \"heap\", \"size\": 16384}],"
		" \"tasks\": [{\"name\": \"w\", \"cpu\": 0, \"program\": ["
		"   {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
		"    \"pages\": 4, \"rounds\": 1, \"write\": 1, \"cycles\": 5}]}]}";
	const char *const zero[] = {"abis_track_cycles=0", NULL};
	struct support_run free_ = support_run("tiny-2cpu.json", "abis", zero, w);
	struct support_run paid = support_run("tiny-2cpu.json", "abis", NULL, w);
	cr_assert_eq(CPU(paid, 0, page_faults), 4);
	cr_assert_eq(paid.result->sim_cycles, free_.result->sim_cycles + 4 * 200,
		     "%lu vs %lu", (unsigned long)paid.result->sim_cycles,
		     (unsigned long)free_.result->sim_cycles);
	support_run_free(&free_);
	support_run_free(&paid);
}
