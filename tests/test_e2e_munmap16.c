/*
 * The full munmap16 run on haswell-i7 under linux-4.5 (several seconds:
 * once only): the CSV, the harness summary, and the shootdown counts.  In
 * the sanitizer build (support_small()) a 64 MiB file, 256 munmaps instead
 * of 4096: the same mechanisms, a sixteenth of the run.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"
#include "support.h"

TestSuite(e2e_munmap16, .init = tmp_dir_make, .fini = tmp_dir_remove);

Test(e2e_munmap16, haswell_i7_linux_4_5)
{
	struct run r;
	bool small = support_small();
	uint64_t calls = small ? 256 : 4096;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "munmap16", "-p", "linux-4.5",
		   small ? "--set=workload.file_size=64M" : NULL, NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	char *header = expected_header();
	char *got = g_strjoinv(",", t.header);
	cr_expect_str_eq(got, header);
	cr_assert_eq(t.rows->len, 1);
	expect_field_formats(&t);
	expect_identities(&t, "munmap16");

	char *line = g_strchomp(g_strdup(r.err));
	cr_expect(matches(HARNESS_SUMMARY, line), "summary: %s", r.err);

	/* 1 GiB / 4 KiB / 64 pages per munmap = 4096 calls, one shootdown each:
	 * only the first page of each region is populated, so every call
	 * flushes one page. */
	uint64_t flushes = table_u64(&t, 0, "nr_tlb_remote_flush");
	cr_expect_eq(table_u64(&t, 0, "op_count"), calls);
	cr_expect_eq(flushes, calls);
	/* 16 unpinned readers keep all 8 CPUs busy with the mm all through the
	 * phase, so no CPU goes lazy and mm_cpumask holds all 8: linux-4.5 sends
	 * each shootdown to every CPU in it but the initiator, 7 receivers each. */
	cr_expect_eq(table_u64(&t, 0, "nr_tlb_remote_flush_received"), 7 * flushes);
	cr_expect_eq(table_u64(&t, 0, "ipis_received"), 7 * flushes);
	cr_expect_eq(table_u64(&t, 0, "stale_hits"), 0);
	g_free(line);
	g_free(got);
	g_free(header);
	table_clear(&t);
	run_clear(&r);
}
