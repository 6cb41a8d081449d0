/*
 * The full munmap16 run on haswell-i7 under linux-4.5 (several seconds:
 * once only): the CSV, the harness summary, and the shootdown counts.  In
 * the sanitizer build (support_small()) a 16 MiB file, a 1 ms tail and
 * short scheduler slices (the munmap thread takes turns with readers on its
 * CPU), 64 munmaps instead of 4096: the same mechanisms, a fraction of the run.
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
	uint64_t calls = small ? 64 : 4096;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "munmap16", "-p", "linux-4.5",
		   small ? "--set=workload.file_size=16M" : NULL, "--set=workload.tail_ms=1",
		   "--set=policy.sched={\"latency_ns\": 200000, \"min_granularity_ns\": 50000}",
		   NULL);
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

/*
 * Every reader of the harness runs, however short the run: main sets run
 * before started, so a reader released by started never finds run still 0
 * (in the other order, on a machine with a CPU per reader, the first reader
 * passed started before run's store landed and left at once).  Three readers
 * on the oracle's 8-CPU guest, 16 munmaps: each reader gets every IPI.
 */
Test(e2e_munmap16, every_reader_runs_in_a_short_run)
{
	struct run r;
	run_tlbsim(&r, "-T", "qemu-x86-8", "-w", "munmap16", "-p", "linux-6.1",
		   "--set=workload.threads=3", "--set=workload.munmaps=16",
		   "--set=workload.file_size=1M", "--set=workload.tail_ms=0", NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	cr_assert_eq(t.rows->len, 1);
	cr_expect_eq(table_u64(&t, 0, "threads"), 3);
	cr_expect_eq(table_u64(&t, 0, "access_tasks"), 3);
	cr_expect_eq(table_u64(&t, 0, "tlb_remote_send_ipi"), 16);
	cr_expect_eq(table_u64(&t, 0, "tlb_remote_shootdown"), 3 * 16);
	table_clear(&t);
	run_clear(&r);
}
