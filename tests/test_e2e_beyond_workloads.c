/*
 * The "Beyond Linux" papers' workloads (workloads/latr-micro.json,
 * madv-dontneed-touch.json, apache-churn.json, numa-migrate.json), run as a
 * user runs them, shrunk with --set, on haswell-i7 (1 socket, CPUs 0-3 the
 * cores' first threads) and skylake-sp-2s-48 / ivybridge-ep-2s (2 x 12 cores
 * x 2 threads: socket 1's first threads are CPUs 12-23).  What is asserted
 * follows from each file's pinning and the policy's lazy-TLB rule: who runs
 * the mm is who gets the shootdowns, and nobody else.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_beyond_workloads, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* A run's CSV row and its per-CPU table (--per-cpu). */
struct beyond_run {
	struct table run;
	struct table cpus;
};

#define BEYOND_RUN(b, topology, workload, policy, ...)                                             \
	beyond_run(b, topology, workload, policy, (const char *const[]){__VA_ARGS__, NULL})

static void beyond_run(struct beyond_run *b, const char *topology, const char *workload,
		       const char *policy, const char *const *sets)
{
	const char *fixed[] = {"-T", topology, "-w", workload, "-p", policy, "-q", "--per-cpu",
			       "cpus.csv", NULL};
	struct run r;
	run_tlbsim_sets(&r, fixed, sets);
	expect_status(&r, 0);
	table_parse(&b->run, r.out);
	cr_assert_eq(b->run.rows->len, 1);
	expect_identities(&b->run, workload);
	cr_expect_eq(table_u64(&b->run, 0, "stale_hits"), 0, "%s", workload);
	char *cpus = read_tmp("cpus.csv");
	table_parse(&b->cpus, cpus);
	g_free(cpus);
	run_clear(&r);
}

static void beyond_clear(struct beyond_run *b)
{
	table_clear(&b->run);
	table_clear(&b->cpus);
}

static uint64_t run_u64(const struct beyond_run *b, const char *column)
{
	return table_u64(&b->run, 0, column);
}

/* The CPUs that received a shootdown IPI, ascending, joined by ','. */
static char *ipi_receivers(const struct beyond_run *b)
{
	GString *s = g_string_new("");
	for (unsigned i = 0; i < b->cpus.rows->len; i++)
		if (table_u64(&b->cpus, i, "ipis_received") > 0)
			g_string_append_printf(s, "%s%s", s->len ? "," : "",
					       table_get(&b->cpus, i, "cpu"));
	return g_string_free(s, FALSE);
}

/* Expects @cpus to be the receivers, each with @each IPIs (0: any number). */
static void expect_receivers(const struct beyond_run *b, const char *cpus, uint64_t each)
{
	char *got = ipi_receivers(b);
	cr_expect_str_eq(got, cpus);
	for (unsigned i = 0; each && i < b->cpus.rows->len; i++) {
		uint64_t n = table_u64(&b->cpus, i, "ipis_received");
		cr_expect(n == 0 || n == each, "CPU %s received %lu IPIs, expected %lu",
			  table_get(&b->cpus, i, "cpu"), (unsigned long)n, (unsigned long)each);
	}
	g_free(got);
}

/* Every CPU that received an IPI ran a task of the workload (its only mm). */
static void expect_ipis_only_where_the_mm_ran(const struct beyond_run *b)
{
	for (unsigned i = 0; i < b->cpus.rows->len; i++)
		if (table_u64(&b->cpus, i, "ipis_received") > 0)
			cr_expect_gt(table_u64(&b->cpus, i, "accesses"), 0,
				     "CPU %s got IPIs but never ran the mm",
				     table_get(&b->cpus, i, "cpu"));
}

/* ---- latr-micro ------------------------------------------------------------ */

/*
 * 4 reference cores on each of 2 sockets: CPUs 0-3 and 12-15, the first of
 * them the allocator's own.  Under linux-4.5 (strict lazy TLB, as LATR's
 * 4.10 baseline) a reference thread's CPU, idle and lazy on the mm after its
 * touch, still gets every munmap's IPI: one shootdown per munmap, 7 IPIs.
 */
Test(e2e_beyond_workloads, latr_micro_two_sockets_shoots_down_every_reference_cpu)
{
	struct beyond_run b;
	BEYOND_RUN(&b, "ivybridge-ep-2s", "latr-micro", "linux-4.5", "workload.iterations=100");
	cr_expect_str_eq(table_get(&b.run, 0, "op"), "munmap");
	cr_expect_eq(run_u64(&b, "op_count"), 100);
	cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), 100);
	cr_expect_eq(run_u64(&b, "ipis_sent"), 7 * 100);
	expect_receivers(&b, "1,2,3,12,13,14,15", 100);
	expect_ipis_only_where_the_mm_ran(&b);
	/* The first touch of each iteration maps the new page. */
	cr_expect_eq(run_u64(&b, "page_faults"), 100);
	beyond_clear(&b);
}

/* One reference thread on one socket runs on the allocator's own CPU 0
 * (main.cc pins it at socket 0, core 0, thread 0): the mm never runs
 * elsewhere, so every munmap flushes locally and sends nothing. */
Test(e2e_beyond_workloads, latr_micro_one_core_flushes_only_locally)
{
	struct beyond_run b;
	BEYOND_RUN(&b, "ivybridge-ep-2s", "latr-micro", "linux-4.5", "workload.iterations=100",
		   "workload.cores=1", "workload.sockets=1");
	cr_expect_eq(run_u64(&b, "op_count"), 100);
	cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), 0);
	cr_expect_eq(run_u64(&b, "ipis_sent"), 0);
	cr_expect_eq(run_u64(&b, "nr_tlb_local_flush_one"), 100);
	beyond_clear(&b);
}

/* On the 1-socket haswell-i7, sockets=1: reference threads on cores 0-3. */
Test(e2e_beyond_workloads, latr_micro_one_socket_haswell)
{
	struct beyond_run b;
	BEYOND_RUN(&b, "haswell-i7", "latr-micro", "linux-4.5", "workload.iterations=100",
		   "workload.sockets=1");
	cr_expect_eq(run_u64(&b, "op_count"), 100);
	cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), 100);
	expect_receivers(&b, "1,2,3", 100);
	beyond_clear(&b);
}

/* Under linux-6.1 (4.20's lazier TLB) the idle reference CPUs are skipped,
 * since the munmap frees no page-table page (the neighbour chunk keeps it):
 * no IPI at all, and a smaller munmap time than under linux-4.5. */
Test(e2e_beyond_workloads, latr_micro_lazier_tlb_skips_idle_reference_cpus)
{
	struct beyond_run lazier, strict;
	BEYOND_RUN(&lazier, "ivybridge-ep-2s", "latr-micro", "linux-6.1",
		   "workload.iterations=100");
	BEYOND_RUN(&strict, "ivybridge-ep-2s", "latr-micro", "linux-4.5",
		   "workload.iterations=100");
	cr_expect_eq(run_u64(&lazier, "op_count"), 100);
	cr_expect_eq(run_u64(&lazier, "ipis_sent"), 0);
	cr_expect_eq(run_u64(&lazier, "nr_tlb_local_flush_all"), 0,
		     "a 1-page munmap that freed no page table is no full flush");
	cr_expect_lt(g_ascii_strtod(table_get(&lazier.run, 0, "op_ns_mean"), NULL),
		     g_ascii_strtod(table_get(&strict.run, 0, "op_ns_mean"), NULL));
	beyond_clear(&lazier);
	beyond_clear(&strict);
}

/* ---- madv-dontneed-touch ------------------------------------------------- */

/* threads 1, 2, 4 on haswell-i7: the others spin on CPUs 1-3, running in the
 * mm, so each MADV_DONTNEED IPIs threads - 1 CPUs, and an iteration on the
 * initiator gets longer with each (the RFC's 661 / 1436 / 1571 ns rise). */
Test(e2e_beyond_workloads, madv_dontneed_touch_threads_1_2_4)
{
	static const char *const receivers[] = {"", "1", "", "1,2,3"};
	double per_iteration[5] = {0};
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		char *set = g_strdup_printf("workload.threads=%u", threads);
		struct beyond_run b;
		BEYOND_RUN(&b, "haswell-i7", "madv-dontneed-touch", "linux-4.5",
			   "workload.iterations=200", set);
		cr_expect_str_eq(table_get(&b.run, 0, "op"), "madvise");
		cr_expect_eq(run_u64(&b, "op_count"), 200);
		cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), threads > 1 ? 200 : 0);
		cr_expect_eq(run_u64(&b, "ipis_sent"), (threads - 1) * 200);
		expect_receivers(&b, receivers[threads - 1], 200);
		/* Every touch faults the zapped page back in. */
		cr_expect_eq(run_u64(&b, "page_faults"), 200);
		per_iteration[threads] =
		    g_ascii_strtod(table_get(&b.run, 0, "phase_ns"), NULL) / 200;
		beyond_clear(&b);
		g_free(set);
	}
	cr_expect_lt(per_iteration[1], per_iteration[2]);
	cr_expect_lt(per_iteration[2], per_iteration[4]);
}

/* ---- apache-churn -------------------------------------------------------- */

/* 16 unpinned workers, 20 requests each: one munmap per request; shootdowns
 * reach only CPUs that ran a worker.  On the 48-CPU machine most CPUs never
 * run one and must get nothing. */
Test(e2e_beyond_workloads, apache_churn_munmaps_and_targets)
{
	const char *const machines[] = {"haswell-i7", "skylake-sp-2s-48"};
	for (size_t m = 0; m < G_N_ELEMENTS(machines); m++) {
		struct beyond_run b;
		BEYOND_RUN(&b, machines[m], "apache-churn", "linux-4.5", "workload.requests=20");
		cr_expect_eq(run_u64(&b, "op_count"), 16 * 20, "%s", machines[m]);
		uint64_t flushes = run_u64(&b, "nr_tlb_remote_flush");
		cr_expect_gt(flushes, 0, "%s", machines[m]);
		cr_expect_leq(flushes, 16 * 20, "%s: at most one shootdown per munmap",
			      machines[m]);
		cr_expect_eq(run_u64(&b, "page_faults"), 16 * 20 * 4,
			     "%s: every request reads 4 new pages", machines[m]);
		expect_ipis_only_where_the_mm_ran(&b);
		beyond_clear(&b);
	}
}

/* ---- numa-migrate -------------------------------------------------------- */

/*
 * 20 scans on skylake-sp-2s-48: each is an mprotect of the range and the
 * unmap of the migrated pages, both shootdowns to the 4 readers, which run on
 * socket 1 (CPUs 12-15) all through the phase; the scanner's socket gets
 * nothing.  Without migration only the protection change flushes, and the
 * readers take no fault (the range stays present).
 */
Test(e2e_beyond_workloads, numa_migrate_shoots_down_the_other_socket)
{
	struct beyond_run b;
	BEYOND_RUN(&b, "skylake-sp-2s-48", "numa-migrate", "linux-4.5", "workload.scans=20");
	cr_expect_str_eq(table_get(&b.run, 0, "op"), "mprotect");
	cr_expect_eq(run_u64(&b, "op_count"), 20);
	cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), 2 * 20);
	expect_receivers(&b, "12,13,14,15", 2 * 20);
	for (unsigned i = 0; i < b.cpus.rows->len; i++)
		if (table_u64(&b.cpus, i, "ipis_received") > 0)
			cr_expect_eq(table_u64(&b.cpus, i, "socket"), 1);
	cr_expect_gt(run_u64(&b, "page_faults"), 0, "migrated pages are faulted in again");
	beyond_clear(&b);

	BEYOND_RUN(&b, "skylake-sp-2s-48", "numa-migrate", "linux-4.5", "workload.scans=20",
		   "workload.migrate=0");
	cr_expect_eq(run_u64(&b, "nr_tlb_remote_flush"), 20);
	expect_receivers(&b, "12,13,14,15", 20);
	cr_expect_eq(run_u64(&b, "page_faults"), 0);
	beyond_clear(&b);
}

/*
 * UNITD (unitd on skylake-sp-2s-48-unitd, 2.6 GHz): a MADV_DONTNEED's
 * initiator waits until its PTE store's invalidations have been matched in
 * the other TLBs' CAMs; with a match of 1000 cycles or more that wait is on
 * its path, so 1000 cycles more per match are 1000 / 2.6 ns more per call,
 * and no IPI is ever sent.
 */
Test(e2e_beyond_workloads, unitd_initiator_waits_for_the_cam_match)
{
	struct beyond_run slow, slower;
	BEYOND_RUN(&slow, "skylake-sp-2s-48-unitd", "madv-dontneed-touch", "unitd",
		   "workload.threads=2", "workload.iterations=20",
		   "topology.costs.tlb_snoop=1000");
	BEYOND_RUN(&slower, "skylake-sp-2s-48-unitd", "madv-dontneed-touch", "unitd",
		   "workload.threads=2", "workload.iterations=20",
		   "topology.costs.tlb_snoop=2000");
	double a = g_ascii_strtod(table_get(&slow.run, 0, "op_ns_mean"), NULL);
	double b = g_ascii_strtod(table_get(&slower.run, 0, "op_ns_mean"), NULL);
	cr_expect_float_eq(b - a, 1000 / 2.6, 0.002, "%.3f -> %.3f", a, b);
	cr_expect_eq(run_u64(&slow, "ipis_sent"), 0);
	cr_expect_eq(run_u64(&slower, "ipis_sent"), 0);
	beyond_clear(&slow);
	beyond_clear(&slower);
}

/*
 * Intel RAR with every payload slot in flight: a flush that finds none goes
 * out as IPIs (tlb_flush2's threads flush concurrently).  With the machine's
 * 64 slots no flush falls back; with one, some do, and neither run uses a
 * stale translation.
 */
Test(e2e_beyond_workloads, rar_falls_back_to_ipis_without_a_free_payload)
{
	struct beyond_run many, one;
	BEYOND_RUN(&many, "skylake-sp-2s-48-rar", "tlb_flush2", "intel-rar",
		   "workload.iterations=40", "workload.warmup=4", "workload.threads=4",
		   "workload.pages=16");
	BEYOND_RUN(&one, "skylake-sp-2s-48-rar", "tlb_flush2", "intel-rar",
		   "workload.iterations=40", "workload.warmup=4", "workload.threads=4",
		   "workload.pages=16", "topology.flush_hw.rar_payloads=1");
	cr_expect_eq(run_u64(&many, "ipis_sent"), 0);
	cr_expect_gt(run_u64(&many, "rar_requests"), 0);
	cr_expect_gt(run_u64(&one, "ipis_sent"), 0, "flushes without a free slot go as IPIs");
	cr_expect_lt(run_u64(&one, "rar_requests"), run_u64(&many, "rar_requests"));
	cr_expect_eq(run_u64(&many, "stale_hits"), 0);
	cr_expect_eq(run_u64(&one, "stale_hits"), 0);
	beyond_clear(&many);
	beyond_clear(&one);
}

/*
 * UNITD sends nothing, so its initiator's concurrent local flush starts at
 * once: the cost of an ICR write, which IPIs would pay per target first,
 * changes nothing in its calls.
 */
Test(e2e_beyond_workloads, unitd_local_flush_waits_for_no_send)
{
	struct beyond_run cheap, dear;
	BEYOND_RUN(&cheap, "skylake-sp-2s-48-unitd", "madv-dontneed-touch", "unitd",
		   "workload.threads=4", "workload.iterations=20", "topology.costs.ipi_send=0");
	BEYOND_RUN(&dear, "skylake-sp-2s-48-unitd", "madv-dontneed-touch", "unitd",
		   "workload.threads=4", "workload.iterations=20", "topology.costs.ipi_send=5000");
	cr_expect_str_eq(table_get(&cheap.run, 0, "op_ns_mean"),
			 table_get(&dear.run, 0, "op_ns_mean"));
	cr_expect_gt(run_u64(&cheap, "nr_tlb_remote_flush"), 0, "the kernel asked for shootdowns");
	beyond_clear(&cheap);
	beyond_clear(&dear);
}

/*
 * Deferred PTI flushes (deferred-pti against linux-5.2-pti on
 * skylake-sp-2s-48, 2.6 GHz), the RFC's experiment: a single task's local
 * MADV_DONTNEED of 10 pages keeps each page's user-PCID flush for the
 * return to user, an INVLPG (200 cycles) instead of an INVPCID (350): 1500
 * cycles, 1500 / 2.6 ns, less per call, every call deferred once.
 */
Test(e2e_beyond_workloads, deferred_pti_saves_an_invpcid_per_page)
{
	struct beyond_run base, deferred;
	BEYOND_RUN(&base, "skylake-sp-2s-48", "madv-local-flush", "linux-5.2-pti",
		   "workload.pages=10", "workload.iterations=20");
	BEYOND_RUN(&deferred, "skylake-sp-2s-48", "madv-local-flush", "deferred-pti",
		   "workload.pages=10", "workload.iterations=20");
	double a = g_ascii_strtod(table_get(&base.run, 0, "op_ns_mean"), NULL);
	double b = g_ascii_strtod(table_get(&deferred.run, 0, "op_ns_mean"), NULL);
	cr_expect_float_eq(a - b, 10 * (350 - 200) / 2.6, 0.002, "%.3f -> %.3f", a, b);
	cr_expect_eq(run_u64(&deferred, "pti_user_flushes_deferred"), 20);
	cr_expect_eq(run_u64(&base, "pti_user_flushes_deferred"), 0);
	beyond_clear(&base);
	beyond_clear(&deferred);
}
