/*
 * numaPTE (flush_targets "numapte", src/kernel/numapte.c) on tiny-2socket
 * (2 sockets x 2 cores x 2 threads, 2.5 GHz; cpu n: socket (n % 4) / 2, so
 * cpus 0 and 1 are on socket 0, cpus 2 and 3 on socket 1): the replica
 * bitmap a walk sets per 2 MiB span, what a replica costs, and whom a
 * madvise(MADV_DONTNEED) interrupts; the stale checker watches.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/engine/engine.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/machine.h"
#include "tlbsim/util/histogram.h"

#define TWO_SOCKET "tiny-2socket.json"
#define VICTIM 0x400000
#define OTHER 0x800000 /* another 2 MiB span: another PTE page */

/*
 * Readers on cpus 1 (socket 0) and 2 (socket 1) read @reader_region
 * ("victim" or "other", one page each, 2 MiB apart as regions are) while
 * the flag "run" is 1; cpu 0, at 100 us, reads "victim" once, then
 * madvise(DONTNEED)s it (the report op), then lets them read on for 100 us.
 */
static char *dontneed_case(const char *reader_region)
{
	return g_strdup_printf(
		"{\"name\": \"numapte\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
		"              {\"name\": \"other\", \"size\": 4096, \"populate\": \"all\"}],"
		" \"report\": {\"op\": \"madvise\"},"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 250000},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"write\": 0, \"cycles\": 10},"
		"    {\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"},"
		"    {\"op\": \"compute\", \"cycles\": 250000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"near\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"other\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]},"
		"  {\"name\": \"far\", \"cpu\": 2, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"%s\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"while_flag\": \"run\", \"write\": 0, \"cycles\": 10}]}]}",
		reader_region);
}

static uint64_t madvise_cycles(const struct support_run *r)
{
	cr_assert_eq(histogram_count(r->result->op_cycles), 1);
	return histogram_max(r->result->op_cycles);
}

/*
 * (a) Only socket 0's CPUs walked "victim" (cpu 0, just before): its PTE
 * page has a replica on socket 0 alone.  cpu 2 runs the mm on socket 1,
 * reading "other": numaPTE sends it no IPI; cpu 1, on the replica's node,
 * still gets one (numaPTE knows nodes, not CPUs).  linux-6.8 interrupts
 * both, and waits for cpu 2's acknowledgement, the later one: the madvise
 * takes 1900 cycles (760 ns) more than numaPTE's 5700: the csd_lock RMW of
 * cpu 2's queue line (a remote transfer, 300), a second ipi_send (200), the
 * remote IPI's latency over the socket one's (2500 - 1500), cpu 2's read of
 * the csd line and cpu 0's sight of its unlock (remote 300 instead of
 * socket 100, twice: 2 x 200).
 */
Test(numapte, no_ipi_to_a_node_without_the_replica)
{
	char *w = dontneed_case("other");
	struct support_run r = support_run(TWO_SOCKET, "numapte", NULL, w);
	struct support_run l = support_run(TWO_SOCKET, "linux-6.8", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_assert_eq(CPU(r, 0, ipis_sent), 1, "cpu 1 only");
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 2, nr_tlb_remote_flush_received), 0, "socket 1 holds no replica");
	cr_assert_eq(CPU(r, 2, irq_cycles), 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(CPU(l, 0, ipis_sent), 2, "linux-6.8: cpus 1 and 2");
	cr_assert_eq(CPU(l, 2, nr_tlb_remote_flush_received), 1);
	cr_assert_gt(CPU(l, 2, irq_cycles), 0);
	uint64_t numapte_cycles = madvise_cycles(&r), linux_cycles = madvise_cycles(&l);
	cr_assert_eq(numapte_cycles, 5700, "madvise %lu cycles", (unsigned long)numapte_cycles);
	cr_assert_eq(linux_cycles - numapte_cycles, 300 + 200 + 1000 + 200 + 200);
	support_run_free(&r);
	support_run_free(&l);
	g_free(w);
}

/*
 * (b) cpu 2 walked "victim" too: socket 1 holds a replica, and the flush
 * reaches it as linux-6.8's does; cpu 2 reads nothing stale.  The zap
 * writes the PTE in both replicas: one pte_op (10 cycles) more than
 * linux-6.8's madvise.
 */
Test(numapte, a_walk_from_the_other_node_brings_it_in)
{
	char *w = dontneed_case("victim");
	struct support_run r = support_run(TWO_SOCKET, "numapte", NULL, w);
	struct support_run l = support_run(TWO_SOCKET, "linux-6.8", NULL, w);
	cr_assert_eq(CPU(r, 0, ipis_sent), 2, "cpus 1 and 2");
	cr_assert_eq(CPU(r, 2, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 2, page_faults), 1, "cpu 2 faults the page back in");
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(CPU(l, 0, ipis_sent), 2);
	cr_assert_eq(madvise_cycles(&r), madvise_cycles(&l) + 10, "the zap's second replica write");
	support_run_free(&r);
	support_run_free(&l);
	g_free(w);
}

struct rig {
	struct topology *topo;
	struct engine *engine;
	struct machine *m;
	struct mm *mm;
	struct vma *victim, *other;
};

/* A machine with the replica cost of @replica_cycles and an mm with one page
 * in each of two spans, populated (no walk yet). */
static struct rig rig_new(uint64_t replica_cycles)
{
	struct rig r = {.topo = support_topology(TWO_SOCKET)};
	r.engine = engine_new(r.topo->sockets * r.topo->cores_per_socket *
			      r.topo->threads_per_core);
	r.m = machine_new(r.topo, r.engine, NULL, NULL);
	r.m->replica_cycles = replica_cycles;
	r.mm = mm_new(1, r.m->nr_cpus);
	mm_add_vma(r.mm, VICTIM, 4096, PS_4K, false, 0, 0);
	mm_add_vma(r.mm, OTHER, 4096, PS_4K, false, 1, 0);
	mm_finish_layout(r.mm);
	r.victim = &r.mm->vmas[0];
	r.other = &r.mm->vmas[1];
	mm_populate(r.mm, r.victim, VICTIM, true);
	mm_populate(r.mm, r.other, OTHER, true);
	return r;
}

static void rig_free(struct rig *r)
{
	mm_free(r->mm);
	machine_free(r->m);
	engine_free(r->engine);
	topology_free(r->topo);
}

/* The cycles a read of @addr in @vma by @cpu at @now costs (a TLB miss or hit). */
static uint64_t read_cycles(struct rig *r, unsigned cpu, struct vma *vma, uint64_t addr,
			    uint64_t now)
{
	uint64_t cycles = 0;
	cr_assert_eq(machine_translate(r->m, &r->m->cpus[cpu], 0, vma, addr, false, now,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	return cycles;
}

/*
 * (c) A walk on tiny-2socket costs page_walk 30 cycles (no cache levels, so
 * its loads add nothing).  The first walk of a span (cpu 0) finds its table
 * on its own node: 30, and socket 0 holds it.  cpu 1 (socket 0 too): 30.
 * cpu 2 (socket 1) copies it: 30 + 2000.  cpu 3 (socket 1): 30, and cpu 2
 * again after its TLB lost the entry: 30.  Hits pay nothing of it: 0 +
 * the l1d's hit_cycles, 0.  The other span's bits are its own.
 */
Test(numapte, a_replica_costs_once_per_node_and_span)
{
	struct rig r = rig_new(2000);
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 0, "populate walks nothing");
	cr_assert_eq(read_cycles(&r, 0, r.victim, VICTIM, 0), 30);
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 1);
	cr_assert_eq(read_cycles(&r, 0, r.victim, VICTIM, 1000), 0, "a hit");
	cr_assert_eq(read_cycles(&r, 1, r.victim, VICTIM, 2000), 30);
	cr_assert_eq(read_cycles(&r, 2, r.victim, VICTIM, 3000), 2030);
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 3, "sockets 0 and 1");
	cr_assert_eq(read_cycles(&r, 3, r.victim, VICTIM, 6000), 30);
	machine_flush_all(r.m, &r.m->cpus[2]);
	cr_assert_eq(read_cycles(&r, 2, r.victim, VICTIM, 7000), 30, "socket 1 has it");
	cr_assert_eq(mm_pmd_nodes(r.mm, OTHER), 0);
	cr_assert_eq(read_cycles(&r, 2, r.other, OTHER, 8000), 30, "first walk of its span");
	cr_assert_eq(mm_pmd_nodes(r.mm, OTHER), 2);
	rig_free(&r);
}

/*
 * (d) munmap frees the span's PTE page (mm_unmap_vma(): its only VMA goes):
 * its replicas go with it; mapped again, the first walk holds the table
 * without a copy.  The other span keeps its replicas.
 */
Test(numapte, freeing_the_table_drops_its_replicas)
{
	struct rig r = rig_new(2000);
	read_cycles(&r, 0, r.victim, VICTIM, 0);
	read_cycles(&r, 2, r.victim, VICTIM, 1000);
	read_cycles(&r, 2, r.other, OTHER, 4000);
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 3);
	cr_assert(mm_zap_pte(r.mm, r.victim, VICTIM));
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 3, "a zap keeps the table");
	uint64_t freed_start = 0, freed_end = 0;
	cr_assert_eq(mm_unmap_vma(r.mm, r.victim, &freed_start, &freed_end), 1);
	cr_assert_eq(freed_start, VICTIM);
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 0);
	cr_assert_eq(mm_pmd_nodes(r.mm, OTHER), 2);
	mm_map_vma(r.mm, r.victim);
	mm_populate(r.mm, r.victim, VICTIM, true);
	machine_flush_all(r.m, &r.m->cpus[2]);
	cr_assert_eq(read_cycles(&r, 2, r.victim, VICTIM, 8000), 30, "no copy: the only one");
	cr_assert_eq(mm_pmd_nodes(r.mm, VICTIM), 2);
	rig_free(&r);
}

/*
 * The target set: a gathered flush is narrowed to its nodes unless it freed
 * page tables; select() keeps the CPUs of mm_cpumask on those nodes, never
 * the initiator, and all of them with FLUSH_NODES_ALL.
 */
Test(numapte, select_keeps_the_replica_nodes)
{
	struct rig r = rig_new(0);
	struct kernel k = {.machine = r.m};
	for (unsigned c = 0; c < 4; c++)
		mm_cpumask_set(r.mm, c);
	struct tlb_access seen = {.nodes = 1};
	cr_assert_eq(flush_targets_numapte.reach(&k, &r.m->cpus[0], &seen, false),
		     FLUSH_REACH_NODES);
	cr_assert_eq(flush_targets_numapte.reach(&k, &r.m->cpus[0], &seen, true), FLUSH_REACH_MM);
	unsigned targets[8];
	cr_assert_eq(flush_targets_numapte.select(&k, &r.m->cpus[0], r.mm, 1, targets), 1);
	cr_assert_eq(targets[0], 1);
	cr_assert_eq(flush_targets_numapte.select(&k, &r.m->cpus[0], r.mm, 2, targets), 2);
	cr_assert_eq(targets[0], 2);
	cr_assert_eq(targets[1], 3);
	cr_assert_eq(flush_targets_numapte.select(&k, &r.m->cpus[0], r.mm, 0, targets), 0);
	cr_assert_eq(
	    flush_targets_numapte.select(&k, &r.m->cpus[0], r.mm, FLUSH_NODES_ALL, targets), 3);
	rig_free(&r);
}
