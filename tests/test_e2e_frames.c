/*
 * Frame reuse seen from the CSV (docs/model.md, "Stale translations"): under
 * Linux's order (free after the flush) no stale hit reaches a frame handed
 * out again, in runs that free frames and allocate them again (reclaim and
 * refault, munmap, fork and exit); a policy that leaves translations behind
 * gives stale hits, and reuses once the faulting CPUs get the freed frames.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_frames, .init = tmp_dir_make, .fini = tmp_dir_remove);

#define TOUCH_MADVISE_WRITE TLBSIM_TEST_DATA "/e2e-smt-touch-madvise-write.json"

/* A Linux run under --strict: exit 0, no stale hit, no reuse. */
static void expect_clean(const char *topology, const char *workload, const char *policy,
			 const char *set1, const char *set2, const char *set3)
{
	struct run r;
	run_tlbsim(&r, "-q", "--strict", "-T", topology, "-w", workload, "-p", policy, set1, set2,
		   set3, NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	cr_assert_eq(t.rows->len, 1);
	cr_expect_eq(table_u64(&t, 0, "stale_hits"), 0, "%s on %s", workload, topology);
	cr_expect_eq(table_u64(&t, 0, "stale_reuse"), 0, "%s on %s", workload, topology);
	/* Entries left behind may be reported (stale_entries): hits are not. */
	cr_expect(strstr(r.err, "stale TLB hits") == NULL, "stderr: %s", r.err);
	table_clear(&t);
	run_clear(&r);
}

Test(e2e_frames, linux_runs_never_reach_a_reused_frame)
{
	expect_clean("qemu-x86-8", "munmap16", "linux-6.1", "--set=workload.threads=3",
		     "--set=workload.munmaps=16", "--set=workload.file_size=1M");
	/* Reclaim frees the pages, the next touches fault them back in: the
	 * freed frames are handed out again (LIFO) every iteration. */
	expect_clean("haswell-i7", "madv-pageout", "linux-6.1", "--set=workload.iterations=10",
		     NULL, NULL);
	expect_clean("qemu-riscv-virt", "madv-pageout", "riscv-6.8",
		     "--set=workload.iterations=10", NULL, NULL);
	expect_clean("haswell-i7", "fork-exit", "linux-6.1", "--set=workload.forks=5", NULL, NULL);
}

/*
 * e2e-smt-touch-madvise under the SMT de-dup patch on per-thread
 * invalidation: CPUs 4-7 keep their entries of each chunk main zaps.  The
 * touchers read, so CPUs 1-3 fault in the zero page: 4 CPUs x 8 pages x 16
 * chunks stale hits (test_e2e_policy.c), none on a frame handed out again.
 */
Test(e2e_frames, stale_hits_on_freed_frames_are_no_reuse)
{
	struct table t;
	run_row(&t, "haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5-smt-dedup", "1", NULL);
	cr_expect_eq(table_u64(&t, 0, "stale_hits"), 4 * 8 * 16);
	cr_expect_eq(table_u64(&t, 0, "stale_reuse"), 0);
	table_clear(&t);
}

/*
 * The same with writes, the second touch 40 rounds long: CPUs 1-3's write
 * faults (3 x 8 x 16) allocate the 8 frames the madvise just freed, and
 * CPUs 4-7, still writing through their old entries (4 x 8 x 16 x 40 stale
 * hits), write into them: reuses, once the faults are through (not the
 * first rounds).  --strict exits 3 and stderr says so.  On core-wide
 * invalidation the patch's premise holds: nothing stale.
 */
Test(e2e_frames, stale_writes_into_frames_handed_out_again_are_reuses)
{
	struct run r;
	run_tlbsim(&r, "-q", "--strict", "-T", "haswell-i7-smt-thread", "-w", TOUCH_MADVISE_WRITE,
		   "-p", "linux-4.5-smt-dedup", NULL);
	expect_status(&r, 3);
	struct table t;
	table_parse(&t, r.out);
	cr_assert_eq(t.rows->len, 1);
	uint64_t stale = table_u64(&t, 0, "stale_hits"), reuse = table_u64(&t, 0, "stale_reuse");
	cr_expect_eq(stale, 4 * 8 * 16 * 40);
	cr_expect_eq(table_u64(&t, 0, "page_faults"), 3 * 8 * 16);
	cr_expect_gt(reuse, 0);
	cr_expect_lt(reuse, stale, "the first rounds run before the faults allocate");
	cr_expect(strstr(r.err, "on a frame allocated again") != NULL, "stderr: %s", r.err);
	table_clear(&t);
	run_clear(&r);

	expect_clean("haswell-i7", TOUCH_MADVISE_WRITE, "linux-4.5-smt-dedup", NULL, NULL, NULL);
}
