/*
 * The output files of a run: -o (through links, into FIFOs), --append,
 * --no-header, --per-cpu, and what is left behind when a run fails, is
 * interrupted, runs out of wall time, or appends concurrently with others.
 */
#define _POSIX_C_SOURCE 200809L /* symlink(), mkfifo(), kill() */
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"
#include "tlbsim/machine/counters.h"

TestSuite(e2e_output, .init = tmp_dir_make, .fini = tmp_dir_remove);

Test(e2e_output, output_holds_what_stdout_would)
{
	struct run plain, to_file;
	run_tlbsim(&plain, "-T", "haswell-i7", "-w", SMALL, NULL);
	run_tlbsim(&to_file, "-T", "haswell-i7", "-w", SMALL, "-o", "run.csv", NULL);
	expect_status(&plain, 0);
	expect_status(&to_file, 0);
	cr_expect_str_empty(to_file.out);
	cr_expect_str_eq(to_file.err, plain.err); /* the summary still goes to stderr */
	char *text = read_tmp("run.csv");
	cr_expect_str_eq(text, plain.out);
	/* The temporary file was renamed over run.csv: nothing else is left. */
	expect_tmp_listing("run.csv");
	g_free(text);
	run_clear(&plain);
	run_clear(&to_file);
}

Test(e2e_output, output_replaces_an_existing_file)
{
	char *path = tmp_path("run.csv");
	cr_assert(g_file_set_contents(path, "old,contents\n1,2\n3,4\n5,6\n", -1, NULL));
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "-o", "run.csv", NULL);
	expect_status(&r, 0);
	char *text = read_tmp("run.csv");
	struct table t;
	table_parse(&t, text);
	char *header = expected_header();
	char *got = g_strjoinv(",", t.header);
	cr_expect_str_eq(got, header);
	cr_expect_eq(t.rows->len, 1);
	table_clear(&t);
	g_free(got);
	g_free(header);
	g_free(text);
	g_free(path);
	run_clear(&r);
}

Test(e2e_output, failed_input_leaves_no_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "workload.threads=many", "-o",
		   "new.csv", "--per-cpu", "cpus.csv", NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_output, failed_run_leaves_no_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-events", "1000", "-o", "new.csv",
		   "--per-cpu", "cpus.csv", NULL);
	expect_status(&r, 4);
	cr_expect_str_empty(r.out);
	expect_tmp_listing("");
	run_clear(&r);
}

/* An access costs at least a cycle: a free one, spinning on a flag, would stop
 * the clock for good.  Refused at run time with the op's path, nothing written. */
Test(e2e_output, zero_cycle_access_is_refused)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "--set",
		   "workload.tasks[0].program[0].cycles=0", "-o", "new.csv", NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "$.tasks[0].program[0]") &&
		      strstr(r.err, "cycles is 0, expected [1, 1000000000]"),
		  "stderr: %s", r.err);
	expect_tmp_listing("");
	run_clear(&r);
}

/* -o through a symbolic link replaces the file it points to, not the link. */
Test(e2e_output, output_through_a_symlink_keeps_the_link)
{
	char *real = tmp_path("real.csv"), *link = tmp_path("link.csv");
	cr_assert(g_file_set_contents(real, "old\n", -1, NULL));
	cr_assert_eq(symlink("real.csv", link), 0);
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "-o", "link.csv", NULL);
	expect_status(&r, 0);
	cr_expect(g_file_test(link, G_FILE_TEST_IS_SYMLINK), "the link was replaced");
	char *text = read_tmp("real.csv");
	char *header = expected_header();
	cr_expect(g_str_has_prefix(text, header), "%s", text);
	expect_tmp_listing("link.csv real.csv");
	g_free(header);
	g_free(text);
	run_clear(&r);
	g_free(link);
	g_free(real);
}

/*
 * -o naming a FIFO (or a device: /dev/null, /dev/stdout) writes into it: a
 * rename over it would replace the node, and as root "-o /dev/null" would
 * have replaced /dev/null with a regular file.
 */
Test(e2e_output, output_to_a_fifo_writes_into_it)
{
	char *fifo = tmp_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	/* A reader first, so that the writer's open does not wait. */
	int fd = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(fd, 0);
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "-o", "fifo", NULL);
	expect_status(&r, 0);
	char buf[128] = {0};
	cr_expect_gt(read(fd, buf, sizeof(buf) - 1), 0, "nothing came through the FIFO");
	cr_expect(g_str_has_prefix(buf, "topology,workload,"), "%s", buf);
	close(fd);
	struct stat st;
	cr_assert_eq(stat(fifo, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	expect_tmp_listing("fifo");
	run_clear(&r);
	g_free(fifo);
}

Test(e2e_output, unwritable_output_leaves_nothing)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "-o", "no-such-dir/run.csv", "--per-cpu",
		   "cpus.csv", NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "no-such-dir/run.csv") != NULL, "stderr: %s", r.err);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_output, append_twice_one_header_two_rows)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--seed", "1", "-o", "all.csv",
		   "--append", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--seed", "2", "-o", "all.csv", "-a",
		   NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.out);
	run_clear(&r);

	char *text = read_tmp("all.csv");
	struct table t;
	table_parse(&t, text);
	char *header = expected_header();
	char *got = g_strjoinv(",", t.header);
	cr_expect_str_eq(got, header);
	cr_assert_eq(t.rows->len, 2, "expected two rows:\n%s", text);
	cr_expect_eq(table_u64(&t, 0, "seed"), 1);
	cr_expect_eq(table_u64(&t, 1, "seed"), 2);
	expect_tmp_listing("all.csv");
	table_clear(&t);
	g_free(got);
	g_free(header);
	g_free(text);
}

Test(e2e_output, no_header)
{
	struct run with, without;
	run_tlbsim(&with, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	run_tlbsim(&without, "-q", "-T", "haswell-i7", "-w", SMALL, "--no-header", NULL);
	expect_status(&with, 0);
	expect_status(&without, 0);
	const char *row = strchr(with.out, '\n');
	cr_assert_not_null(row);
	cr_expect_str_eq(without.out, row + 1);
	run_clear(&without);

	/* --append --no-header to a new file: rows only, even the first time. */
	run_tlbsim(&without, "-q", "-T", "haswell-i7", "-w", SMALL, "--no-header", "--append", "-o",
		   "rows.csv", NULL);
	expect_status(&without, 0);
	char *text = read_tmp("rows.csv");
	cr_expect_str_eq(text, row + 1);
	g_free(text);
	run_clear(&with);
	run_clear(&without);
}

Test(e2e_output, append_needs_output)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--append", NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "--append") && strstr(r.err, "--output"), "stderr: %s", r.err);
	run_clear(&r);
}

Test(e2e_output, per_cpu_one_row_per_cpu)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--per-cpu", "cpus.csv", NULL);
	expect_status(&r, 0);
	struct table run_table;
	table_parse(&run_table, r.out);

	char *text = read_tmp("cpus.csv");
	struct table t;
	table_parse(&t, text);
	/* The columns report_per_cpu_csv() writes: identity, placement, the TLB
	 * entries left at the end, then every counter in declaration order. */
	char *counters = g_strjoinv(",", (char **)counters_names);
	char *header = g_strconcat("topology,workload,policy,seed,clock_ghz,cpu,socket,core,thread,"
				   "tlb_entries_end,",
				   counters, NULL);
	char *got = g_strjoinv(",", t.header);
	cr_expect_str_eq(got, header);
	cr_assert_eq(t.rows->len, 8, "haswell-i7 has 8 CPUs:\n%s", text);
	for (unsigned cpu = 0; cpu < 8; cpu++) {
		cr_expect_str_eq(table_get(&t, cpu, "topology"), "haswell-i7");
		cr_expect_str_eq(table_get(&t, cpu, "workload"), "e2e-small");
		cr_expect_str_eq(table_get(&t, cpu, "policy"), "linux-4.5");
		cr_expect_eq(table_u64(&t, cpu, "seed"), 1);
		cr_expect_str_eq(table_get(&t, cpu, "clock_ghz"), "3.400");
		cr_expect_eq(table_u64(&t, cpu, "cpu"), cpu);
		/* Linux/Intel numbering: thread 0 of each of the 4 cores, then
		 * thread 1 of each. */
		cr_expect_eq(table_u64(&t, cpu, "socket"), 0);
		cr_expect_eq(table_u64(&t, cpu, "core"), cpu % 4);
		cr_expect_eq(table_u64(&t, cpu, "thread"), cpu / 4);
		(void)table_u64(&t, cpu, "tlb_entries_end");
	}
	/* The run's counter columns are the sums of the per-CPU ones. */
	for (unsigned i = 0; counters_names[i]; i++) {
		const char *name = counters_names[i];
		if (table_column(&run_table, name) < 0)
			continue; /* e.g. irq_cycles, reported as irq_ns */
		uint64_t sum = 0;
		for (unsigned cpu = 0; cpu < 8; cpu++)
			sum += table_u64(&t, cpu, name);
		cr_expect_eq(sum, table_u64(&run_table, 0, name), "%s", name);
	}
	table_clear(&t);
	table_clear(&run_table);
	g_free(got);
	g_free(header);
	g_free(counters);
	g_free(text);
	run_clear(&r);
}

/*
 * SIGINT in the middle of a long run: exit status 130, "interrupted", and no
 * output file (nor a temporary one) left behind.
 */
Test(e2e_output, sigint_leaves_nothing)
{
	char *out = tmp_path("run.csv");
	const char *argv[] = {TLBSIM_BINARY, "-T", "haswell-i7", "-w", "munmap16", "-q",
			      "-o", out, NULL};
	GPid pid;
	GError *error = NULL;
	int err_fd = -1;
	cr_assert(g_spawn_async_with_pipes(tmp_dir, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
					   NULL, NULL, &pid, NULL, NULL, &err_fd, &error),
		  "%s", error ? error->message : "?");
	g_usleep(300000); /* well inside a several-second run */
	kill(pid, SIGINT);
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "killed instead of stopping cleanly");
	cr_assert_eq(WEXITSTATUS(status), 130);
	char buf[256] = {0};
	ssize_t n = read(err_fd, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	cr_assert(strstr(buf, "interrupted") != NULL, "%s", buf);
	close(err_fd);
	g_spawn_close_pid(pid);
	expect_tmp_listing("");
	g_free(out);
}

Test(e2e_output, wall_time_budget_exits_4)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "munmap16", "-q", "--max-wall-seconds", "0.2", NULL);
	expect_status(&r, 4);
	cr_assert(strstr(r.err, "--max-wall-seconds") != NULL, "%s", r.err);
	cr_assert_str_empty(r.out);
	run_clear(&r);
}

/*
 * Eight runs appending to one CSV at once through GNU parallel: one header,
 * eight whole rows, one per seed.
 */
Test(e2e_output, concurrent_appends_through_gnu_parallel)
{
	char *parallel = g_find_program_in_path("parallel");
	cr_assert_not_null(parallel, "GNU parallel is installed by scripts/deps.sh");
	char *out = tmp_path("all.csv");
	char *cmd = g_strdup_printf("%s -j 8 '%s' -T haswell-i7 -w '%s' -q --seed {} --append -o '%s'"
				    " ::: 1 2 3 4 5 6 7 8",
				    parallel, TLBSIM_BINARY, SMALL, out);
	int status = system(cmd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", cmd);
	char *text = read_tmp("all.csv");
	struct table t;
	table_parse(&t, text);
	char *header = expected_header();
	char *got = g_strjoinv(",", t.header);
	cr_assert_str_eq(got, header, "one header, first");
	cr_assert_eq(t.rows->len, 8);
	bool seen[9] = {false};
	for (unsigned i = 0; i < t.rows->len; i++) {
		uint64_t seed = table_u64(&t, i, "seed");
		cr_assert(seed >= 1 && seed <= 8 && !seen[seed], "row %u seed %lu", i,
			  (unsigned long)seed);
		seen[seed] = true;
	}
	table_clear(&t);
	g_free(got);
	g_free(header);
	g_free(text);
	g_free(cmd);
	g_free(out);
	g_free(parallel);
}
