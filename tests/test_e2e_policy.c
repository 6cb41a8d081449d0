/*
 * Flush policies seen from the CSV: SMT de-duplication sends fewer flushes,
 * leaves entries behind where invalidation is per thread, gives stale hits
 * once a workload reuses the zapped pages, and --strict exits 3 on them.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_policy, .init = tmp_dir_make, .fini = tmp_dir_remove);

/*
 * e2e-small places main on CPU 0 and the 4 unpinned readers on CPUs 1-4, so
 * each munmap's shootdown targets CPUs 1-4 under linux-4.5 (4 x 128 = 512
 * flush_tlb_func runs).  The de-dup patch skips CPU 4, CPU 0's SMT sibling,
 * because the initiator's own flush is taken to clear its core: 3 x 128.
 * The munmap side is the same in both, so the number of shootdowns is too.
 */
Test(e2e_policy, smt_dedup_sends_fewer_flushes)
{
	struct table plain, dedup;
	run_small(&plain, "haswell-i7", "linux-4.5");
	run_small(&dedup, "haswell-i7", "linux-4.5-smt-dedup");
	cr_expect_lt(table_u64(&dedup, 0, "nr_tlb_remote_flush_received"),
		     table_u64(&plain, 0, "nr_tlb_remote_flush_received"));
	cr_expect_eq(table_u64(&plain, 0, "nr_tlb_remote_flush_received"), 4 * SMALL_MUNMAPS);
	cr_expect_eq(table_u64(&dedup, 0, "nr_tlb_remote_flush_received"), 3 * SMALL_MUNMAPS);
	cr_expect_eq(table_u64(&dedup, 0, "nr_tlb_remote_flush"),
		     table_u64(&plain, 0, "nr_tlb_remote_flush"));
	cr_expect_lt(table_u64(&dedup, 0, "ipis_sent"), table_u64(&plain, 0, "ipis_sent"));
	/* haswell-i7 invalidates core-wide, the patch's premise: never stale. */
	cr_expect_eq(table_u64(&plain, 0, "stale_hits"), 0);
	cr_expect_eq(table_u64(&dedup, 0, "stale_hits"), 0);
	table_clear(&plain);
	table_clear(&dedup);
}

/*
 * On the SDM's per-thread invalidation the de-dup leaves CPU 4's entries in
 * place, but e2e-small cannot show it: the readers only touch "big" and no
 * CPU ever holds a translation of a munmapped "small" page.  The run is the
 * same as on haswell-i7, bar the topology's name and the walks' loads: an
 * INVLPG on one sibling leaves the other's paging-structure cache entries
 * there too, so its walks load fewer PDE lines (fewer here, none slower
 * enough to move a time).
 */
Test(e2e_policy, smt_thread_small_workload_has_no_stale_hits)
{
	static const char *const differ[] = {"topology", "walk_loads", "walk_load_ns", NULL};
	struct table core, thread;
	run_small(&core, "haswell-i7", "linux-4.5-smt-dedup");
	run_small(&thread, "haswell-i7-smt-thread", "linux-4.5-smt-dedup");
	cr_expect_eq(table_u64(&thread, 0, "stale_hits"), 0);
	cr_expect_eq(table_u64(&thread, 0, "tlb_entries_invalidated"), 0);
	cr_expect_lt(table_u64(&thread, 0, "walk_loads"), table_u64(&core, 0, "walk_loads"));
	for (unsigned i = 0; i < core.nr_fields; i++)
		if (!g_strv_contains(differ, core.header[i]))
			cr_expect_str_eq(table_get(&thread, 0, core.header[i]),
					 table_get(&core, 0, core.header[i]), "column %s",
					 core.header[i]);
	table_clear(&core);
	table_clear(&thread);
}

/*
 * e2e-smt-touch-munmap: 7 threads pinned to CPUs 1-7 read each chunk before
 * main (CPU 0) munmaps it, so every CPU holds translations of the pages going
 * away.  With per-thread invalidation the de-dup leaves the skipped siblings'
 * entries behind (fewer entries invalidated than linux-4.5), yet there are no
 * stale hits: nobody touches a chunk after its munmap (a program that did would
 * get SIGSEGV unless a stale entry let the access through), so the leftover
 * translations are never used.  This workload cannot show the hazard;
 * e2e-smt-touch-madvise does.
 */
Test(e2e_policy, smt_thread_munmap_leaves_entries_but_no_stale_hits)
{
	struct table core_plain, core_dedup, thread_plain, thread_dedup;
	run_row(&core_plain, "haswell-i7", TOUCH_MUNMAP, "linux-4.5", "1", NULL);
	run_row(&core_dedup, "haswell-i7", TOUCH_MUNMAP, "linux-4.5-smt-dedup", "1", NULL);
	run_row(&thread_plain, "haswell-i7-smt-thread", TOUCH_MUNMAP, "linux-4.5", "1", NULL);
	run_row(&thread_dedup, "haswell-i7-smt-thread", TOUCH_MUNMAP, "linux-4.5-smt-dedup", "1",
		NULL);
	const struct table *all[] = {&core_plain, &core_dedup, &thread_plain, &thread_dedup};
	for (size_t i = 0; i < G_N_ELEMENTS(all); i++) {
		cr_expect_eq(table_u64(all[i], 0, "stale_hits"), 0, "run %zu", i);
		/* 16 munmaps; targets CPUs 1-7 (linux-4.5), or one CPU of each of
		 * cores 1-3 (de-dup: CPU 4 shares core 0 with the initiator). */
		cr_expect_eq(table_u64(all[i], 0, "nr_tlb_remote_flush"), 16, "run %zu", i);
		cr_expect_eq(table_u64(all[i], 0, "nr_tlb_remote_flush_received"),
			     (i % 2 ? 3 : 7) * 16, "run %zu", i);
	}
	cr_expect_lt(table_u64(&thread_dedup, 0, "tlb_entries_invalidated"),
		     table_u64(&thread_plain, 0, "tlb_entries_invalidated"));
	/* Nobody uses them, but the skipped siblings (CPUs 4-7) still hold the
	 * unmapped pages when munmap returns: 4 CPUs x 8 pages x 16 chunks, in
	 * L1 and STLB each; and their PDE caches still point at the freed PTE
	 * page of the region's span (freed by the last munmap). */
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(table_u64(all[i], 0, "stale_entries"), 0, "run %zu", i);
		cr_expect_eq(table_u64(all[i], 0, "stale_pwc"), 0, "run %zu", i);
	}
	cr_expect_eq(table_u64(&thread_dedup, 0, "stale_entries"), 4 * 8 * 16 * 2);
	cr_expect_eq(table_u64(&thread_dedup, 0, "stale_pwc"), 4);
	table_clear(&core_plain);
	table_clear(&core_dedup);
	table_clear(&thread_plain);
	table_clear(&thread_dedup);
}

/*
 * e2e-smt-touch-madvise: the same, but with madvise(MADV_DONTNEED), after
 * which the VMA stays mapped and the threads read the chunk again.  A thread
 * whose CPU still holds a zapped translation hits it instead of faulting.
 * Under de-dup the IPI goes to cores 1-3's thread 0 only; on per-thread
 * invalidation CPUs 4-7 keep their entries: 4 CPUs x 8 pages x 16 chunks
 * stale hits, and only the 3 CPUs that were flushed fault.
 */
Test(e2e_policy, smt_thread_dedup_madvise_gives_stale_hits)
{
	struct table core_dedup, thread_plain, thread_dedup;
	run_row(&core_dedup, "haswell-i7", TOUCH_MADVISE, "linux-4.5-smt-dedup", "1", NULL);
	run_row(&thread_plain, "haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5", "1", NULL);
	run_row(&thread_dedup, "haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5-smt-dedup", "1",
		NULL);
	cr_expect_eq(table_u64(&core_dedup, 0, "stale_hits"), 0);
	cr_expect_eq(table_u64(&thread_plain, 0, "stale_hits"), 0);
	cr_expect_gt(table_u64(&thread_dedup, 0, "stale_hits"), 0);
	cr_expect_eq(table_u64(&thread_dedup, 0, "stale_hits"), 4 * 8 * 16);
	cr_expect_eq(table_u64(&core_dedup, 0, "page_faults"), 7 * 8 * 16);
	cr_expect_eq(table_u64(&thread_plain, 0, "page_faults"), 7 * 8 * 16);
	cr_expect_eq(table_u64(&thread_dedup, 0, "page_faults"), 3 * 8 * 16);
	table_clear(&core_dedup);
	table_clear(&thread_plain);
	table_clear(&thread_dedup);
}

/* --strict turns stale hits into exit 3; the CSV is still written whole and
 * the stale hits are reported on stderr with or without --strict. */
Test(e2e_policy, strict_exits_3_on_stale_hits)
{
	struct run r;
	run_tlbsim(&r, "-q", "--strict", "-T", "haswell-i7-smt-thread", "-w", TOUCH_MADVISE, "-p",
		   "linux-4.5-smt-dedup", NULL);
	expect_status(&r, 3);
	cr_expect(strstr(r.err, "512 stale TLB hits") != NULL, "stderr: %s", r.err);
	struct table t;
	table_parse(&t, r.out);
	cr_expect_eq(t.rows->len, 1);
	cr_expect_eq(table_u64(&t, 0, "stale_hits"), 512);
	table_clear(&t);
	run_clear(&r);

	run_tlbsim(&r, "-q", "-T", "haswell-i7-smt-thread", "-w", TOUCH_MADVISE, "-p",
		   "linux-4.5-smt-dedup", NULL);
	expect_status(&r, 0);
	cr_expect(strstr(r.err, "512 stale TLB hits") != NULL, "stderr: %s", r.err);
	run_clear(&r);

	run_tlbsim(&r, "-q", "--strict", "-T", "haswell-i7", "-w", TOUCH_MADVISE, "-p",
		   "linux-4.5-smt-dedup", NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	run_clear(&r);
}
