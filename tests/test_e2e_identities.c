/*
 * The counter identities of README "Counters" (lookups == hits + misses
 * == accesses, page_walks >= tlb_misses...) on every input.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_identities, .init = tmp_dir_make, .fini = tmp_dir_remove);

Test(e2e_identities, hold_on_every_input)
{
	static const char *const runs[][3] = {
	    {"haswell-i7", SMALL, "linux-4.5"},
	    {"haswell-i7", SMALL, "linux-4.5-smt-dedup"},
	    {"haswell-i7", SMALL, "linux-3.11"},
	    {TINY, SMALL, "linux-4.5"},
	    {"haswell-i7", TOUCH_MUNMAP, "linux-4.5"},
	    {"haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5-smt-dedup"},
	    {TINY, ACCESS_ONLY, "linux-4.5"},
	    {"haswell-i7", SMALL, "linux-6.8"},
	    {"arm64-n1", SMALL, "arm64-6.5"},
	    {"qemu-riscv-virt", SMALL, "riscv-6.8"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
		struct table t;
		run_row(&t, runs[i][0], runs[i][1], runs[i][2], "1", NULL);
		char *what = g_strjoin(" ", runs[i][0], runs[i][1], runs[i][2], NULL);
		expect_identities(&t, what);
		g_free(what);
		table_clear(&t);
	}
}

/* A page fault walks the table again after the kernel installs the PTE, so
 * page_walks exceeds tlb_misses exactly when pages fault. */
Test(e2e_identities, faults_add_walks)
{
	struct table t;
	run_row(&t, "haswell-i7", TOUCH_MADVISE, "linux-4.5", "1", NULL);
	/* 7 threads re-read 8 zapped pages of each of 16 chunks: 896 faults. */
	cr_expect_eq(table_u64(&t, 0, "page_faults"), 7 * 8 * 16);
	cr_expect_gt(table_u64(&t, 0, "page_walks"), table_u64(&t, 0, "tlb_misses"));
	table_clear(&t);
}
