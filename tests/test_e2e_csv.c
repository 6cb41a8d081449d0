/*
 * The CSV tlbsim writes on stdout: its header is report_columns(), every field
 * has its column's format on every input, and the summary line on stderr
 * (or nothing with -q).
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_csv, .init = tmp_dir_make, .fini = tmp_dir_remove);

Test(e2e_csv, header_is_report_columns_and_row_matches)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&r, 0);
	char *header = expected_header();
	char **lines = g_strsplit(r.out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 3, "expected header, row, \"\":\n%s", r.out);
	cr_expect_str_eq(lines[0], header);
	cr_expect_str_eq(lines[2], "");

	struct table t;
	table_parse(&t, r.out);
	cr_assert_eq(t.rows->len, 1);
	expect_field_formats(&t);
	cr_expect_str_eq(table_get(&t, 0, "topology"), "haswell-i7");
	cr_expect_str_eq(table_get(&t, 0, "workload"), "e2e-small");
	cr_expect_str_eq(table_get(&t, 0, "policy"), "linux-4.5");
	cr_expect_str_eq(table_get(&t, 0, "op"), "munmap");
	cr_expect_eq(table_u64(&t, 0, "seed"), 1);
	cr_expect_eq(table_u64(&t, 0, "cpus"), 8);
	cr_expect_eq(table_u64(&t, 0, "threads"), 4);
	cr_expect_eq(table_u64(&t, 0, "op_count"), SMALL_MUNMAPS);
	cr_expect_eq(table_u64(&t, 0, "syscalls"), SMALL_MUNMAPS);
	cr_expect_str_eq(table_get(&t, 0, "host_seconds"), "");
	table_clear(&t);
	g_strfreev(lines);
	g_free(header);
	run_clear(&r);
}

Test(e2e_csv, fields_parse_on_every_input)
{
	static const char *const runs[][2] = {
	    {"haswell-i7", SMALL},
	    {TINY, SMALL},
	    {"haswell-i7-smt-thread", TOUCH_MADVISE},
	    {TINY, ACCESS_ONLY},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
		struct table t;
		run_row(&t, runs[i][0], runs[i][1], "linux-4.5-smt-dedup", "3", NULL);
		expect_field_formats(&t);
		table_clear(&t);
	}
}

Test(e2e_csv, no_syscalls_means_empty_op_and_zero_op_count)
{
	struct table t;
	run_row(&t, TINY, ACCESS_ONLY, "linux-4.5", "1", NULL);
	cr_expect_str_eq(table_get(&t, 0, "op"), "");
	cr_expect_eq(table_u64(&t, 0, "op_count"), 0);
	cr_expect_eq(table_u64(&t, 0, "cpus"), 2);
	/* 2 readers x 16 pages x 1 round */
	cr_expect_eq(table_u64(&t, 0, "accesses"), 32);
	table_clear(&t);
}

Test(e2e_csv, summary_line_on_stderr)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&r, 0);
	char *line = g_strchomp(g_strdup(r.err));
	cr_expect(g_str_has_suffix(r.err, "\n") && !strchr(line, '\n'), "one line:\n%s", r.err);
	cr_expect(matches(HARNESS_SUMMARY, line), "summary: %s", line);
	g_free(line);
	run_clear(&r);
}

/* The default summary leaves out the op part when the workload has none. */
Test(e2e_csv, default_summary_without_op)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, NULL);
	expect_status(&r, 0);
	cr_expect(matches("^32 accesses by 2 threads, [0-9]+ ns/access\n$", r.err), "summary: %s",
		  r.err);
	run_clear(&r);
}

Test(e2e_csv, quiet_prints_nothing_on_stderr)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	cr_expect_str_not_empty(r.out);
	run_clear(&r);
}

/* 12 readers and the main thread on 8 CPUs, with no tail after the mprotects:
 * the 5 readers still waiting for a CPU when they end begin their loop only
 * after it ended.  threads counts the 7 that made an access, access_tasks the
 * 12 asked for, and stderr says why. */
Test(e2e_csv, threads_fewer_than_asked_says_why)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", "mprotect-thp", "--set=workload.threads=12",
		   "--set=workload.file_size=16M", "--set=workload.tail_ms=0", NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	cr_expect_eq(table_u64(&t, 0, "threads"), 7);
	cr_expect_eq(table_u64(&t, 0, "access_tasks"), 12);
	cr_expect(strstr(r.err, "threads is 7, not the 12 tasks with an access op") &&
			  strstr(r.err, "5 began their access loop only after it had ended") &&
			  strstr(r.err, "13 tasks shared 8 CPUs"),
		  "stderr: %s", r.err);
	table_clear(&t);
	run_clear(&r);
	/* When every reader makes its accesses, nothing is said. */
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", "mprotect-thp", "--set=workload.threads=4",
		   "--set=workload.file_size=16M", "--set=workload.tail_ms=1", NULL);
	expect_status(&r, 0);
	table_parse(&t, r.out);
	cr_expect_eq(table_u64(&t, 0, "threads"), 4);
	cr_expect_eq(table_u64(&t, 0, "access_tasks"), 4);
	cr_expect_str_empty(r.err);
	table_clear(&t);
	run_clear(&r);
}
