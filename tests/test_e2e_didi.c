/*
 * DiDi's preset (didi) on skylake-sp-2s-48-didi (2.6 GHz; 2 x 12 cores x 2
 * threads), run as a user runs it, shrunk with --set, under --strict: the
 * directory's exact sharers get hardware invalidations, nobody gets an IPI,
 * and no CPU keeps a stale translation.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_didi, .init = tmp_dir_make, .fini = tmp_dir_remove);

#define DIDI_RUN(t, workload, ...) didi_run(t, workload, (const char *const[]){__VA_ARGS__, NULL})

static void didi_run(struct table *t, const char *workload, const char *const *sets)
{
	const char *fixed[] = {
	    "-T", "skylake-sp-2s-48-didi", "-w", workload, "-p", "didi", "-q", "--strict", NULL};
	struct run r;
	run_tlbsim_sets(&r, fixed, sets);
	expect_status(&r, 0);
	table_parse(t, r.out);
	cr_assert_eq(t->rows->len, 1);
	expect_identities(t, workload);
	cr_expect_eq(table_u64(t, 0, "ipis_sent"), 0, "%s", workload);
	cr_expect_eq(table_u64(t, 0, "stale_hits"), 0, "%s", workload);
	cr_expect_eq(table_u64(t, 0, "stale_reuse"), 0, "%s", workload);
	cr_expect_eq(table_u64(t, 0, "stale_pwc"), 0, "%s", workload);
	run_clear(&r);
}

static double mean_ns(const struct table *t)
{
	return g_ascii_strtod(table_get(t, 0, "op_ns_mean"), NULL);
}

/* Alex Shi's harness, 4 munmaps of 64 pages (above the 33-page ceiling: each
 * a full flush, one lookup): the readers that had run by then are the
 * sharers, fewer than linux-6.8's 16 IPIs per munmap. */
Test(e2e_didi, munmap16_sends_to_sharers_only)
{
	struct table t;
	DIDI_RUN(&t, "munmap16", "workload.file_size=1M");
	cr_expect_eq(table_u64(&t, 0, "nr_tlb_remote_flush"), 4);
	cr_expect_eq(table_u64(&t, 0, "didi_lookups"), 4);
	uint64_t sent = table_u64(&t, 0, "didi_invalidations");
	cr_expect(sent > 0 && sent < 16 * 4, "%lu invalidations", (unsigned long)sent);
	table_clear(&t);
}

/*
 * LATR's microbenchmark, 4 reference cores on each socket (CPUs 0-3 and
 * 12-15, CPU 0 the allocator's): each one-page munmap is one lookup and one
 * invalidation to each of the 7 other reference CPUs, whose TLBs still hold
 * the page although they went idle (the hardware does not know laziness,
 * where linux-6.8 skips lazy CPUs).
 */
Test(e2e_didi, latr_micro_invalidates_every_reference_cpu)
{
	struct table t;
	DIDI_RUN(&t, "latr-micro", "workload.iterations=100", "workload.machine_cores=12");
	cr_expect_eq(table_u64(&t, 0, "op_count"), 100);
	cr_expect_eq(table_u64(&t, 0, "didi_lookups"), 100);
	cr_expect_eq(table_u64(&t, 0, "didi_invalidations"), 7 * 100);
	table_clear(&t);
}

/* The lookup and the farthest sharer's LSQ check are on the initiator's path:
 * 1000 cycles more of either is 1000 / 2.6 ns more per munmap. */
Test(e2e_didi, lookup_and_lsq_check_are_waited_for)
{
	struct table base, lookup, lsq;
	DIDI_RUN(&base, "latr-micro", "workload.iterations=20", "workload.machine_cores=12");
	DIDI_RUN(&lookup, "latr-micro", "workload.iterations=20", "workload.machine_cores=12",
		 "topology.costs.directory_lookup=1020");
	DIDI_RUN(&lsq, "latr-micro", "workload.iterations=20", "workload.machine_cores=12",
		 "topology.costs.lsq_drain=1020");
	cr_expect_float_eq(mean_ns(&lookup) - mean_ns(&base), 1000 / 2.6, 0.002, "%.3f -> %.3f",
			   mean_ns(&base), mean_ns(&lookup));
	cr_expect_float_eq(mean_ns(&lsq) - mean_ns(&base), 1000 / 2.6, 0.002, "%.3f -> %.3f",
			   mean_ns(&base), mean_ns(&lsq));
	table_clear(&base);
	table_clear(&lookup);
	table_clear(&lsq);
}
