/*
 * Sweeps: "tlbsim sweep", its rows against the single runs', --jobs,
 * --emit-commands (through GNU parallel, and the --append recipe of docs/clusters.md),
 * --label, budgets, interruption and usage errors.
 */
#define _POSIX_C_SOURCE 200809L /* kill() */
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_sweep, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* A grid of 2 x 2 runs of e2e-small with 32 munmaps (1 MiB): well under a
 * second in all.  Grid order: threads outermost, policy innermost. */
#define SWEEP_GRID                                                                                 \
	"-T", "haswell-i7", "-w", SMALL, "--set", "workload.file_size=1M", "--vary",               \
		"workload.threads=1,2", "--vary", "policy=linux-4.5,linux-3.11"
#define SWEEP_RUNS 4
static const char *const sweep_threads[SWEEP_RUNS] = {"1", "1", "2", "2"};
static const char *const sweep_policies[SWEEP_RUNS] = {"linux-4.5", "linux-3.11", "linux-4.5",
						       "linux-3.11"};

/* Contents of two files in the scratch directory are the same bytes. */
static void expect_same_file(const char *a, const char *b)
{
	char *ta = read_tmp(a), *tb = read_tmp(b);
	cr_expect_str_eq(tb, ta, "%s and %s differ", a, b);
	g_free(ta);
	g_free(tb);
}

/* Run @cmd with sh in the scratch directory; it must exit with 0. */
static void shell_in_tmp(const char *cmd)
{
	char *quoted = g_shell_quote(tmp_dir);
	char *full = g_strdup_printf("cd %s && { %s; }", quoted, cmd);
	int status = system(full);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "failed: %s", full);
	g_free(full);
	g_free(quoted);
}

/*
 * Every row of a sweep is the row of the single run with the same --set and
 * the same --label options, byte for byte; without the labels, the single
 * run's row is the sweep's row minus its leading columns.
 */
Test(e2e_sweep, rows_are_the_single_runs_rows)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, NULL);
	expect_status(&r, 0);
	/* stderr is not a terminal: no progress bar, and no per-run summary. */
	cr_expect_str_empty(r.err);
	char **lines = g_strsplit(r.out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), SWEEP_RUNS + 2, "header, rows, \"\":\n%s", r.out);
	char *header = expected_header();
	char *want = g_strconcat("run,workload.threads,policy_file,", header, NULL);
	cr_expect_str_eq(lines[0], want);
	for (unsigned i = 0; i < SWEEP_RUNS; i++) {
		char *threads = g_strconcat("workload.threads=", sweep_threads[i], NULL);
		char *run_label = g_strdup_printf("run=%u", i + 1);
		char *threads_label = g_strconcat("workload.threads=", sweep_threads[i], NULL);
		char *policy_label = g_strconcat("policy_file=", sweep_policies[i], NULL);
		struct run single;
		run_tlbsim(&single, "-q", "--no-header", "-T", "haswell-i7", "-w", SMALL, "-p",
			   sweep_policies[i], "--set", "workload.file_size=1M", "--set", threads,
			   "--label", run_label, "--label", threads_label, "--label", policy_label,
			   NULL);
		expect_status(&single, 0);
		char *row = g_strconcat(lines[i + 1], "\n", NULL);
		cr_expect_str_eq(single.out, row, "run %u", i + 1);
		run_clear(&single);

		run_tlbsim(&single, "-q", "--no-header", "-T", "haswell-i7", "-w", SMALL, "-p",
			   sweep_policies[i], "--set", "workload.file_size=1M", "--set", threads,
			   NULL);
		expect_status(&single, 0);
		char *expected_prefix =
			g_strdup_printf("%u,%s,%s,", i + 1, sweep_threads[i], sweep_policies[i]);
		cr_assert(g_str_has_prefix(row, expected_prefix), "%s", row);
		cr_expect_str_eq(single.out, row + strlen(expected_prefix), "run %u", i + 1);
		run_clear(&single);
		g_free(expected_prefix);
		g_free(row);
		g_free(policy_label);
		g_free(threads_label);
		g_free(run_label);
		g_free(threads);
	}
	g_free(want);
	g_free(header);
	g_strfreev(lines);
	run_clear(&r);
}

Test(e2e_sweep, same_bytes_with_one_or_two_jobs)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--jobs", "1", "-o", "one.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--jobs", "2", "-o", "two.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	/* Written through a temporary file and rename(2): nothing else left. */
	expect_tmp_listing("one.csv two.csv");
	expect_same_file("one.csv", "two.csv");
}

/* The sweep's --threads shared among its jobs, or each run's whole: the same bytes. */
Test(e2e_sweep, same_bytes_with_any_threads)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--jobs", "1", "--threads", "1", "-o", "one.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--jobs", "2", "--threads", "4", "-o", "four.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--jobs", "1", "--threads", "3", "-o", "three.csv",
		   NULL);
	expect_status(&r, 0);
	run_clear(&r);
	expect_same_file("one.csv", "four.csv");
	expect_same_file("one.csv", "three.csv");
}

/* --emit-commands passes --threads on when it is given, else leaves it to each run. */
Test(e2e_sweep, emitted_commands_carry_threads_only_if_given)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--threads", "3", "--emit-commands", NULL);
	expect_status(&r, 0);
	char **lines = g_strsplit(r.out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), SWEEP_RUNS + 1);
	for (unsigned i = 0; i < SWEEP_RUNS; i++)
		cr_expect(strstr(lines[i], " --threads 3 ") != NULL, "%s", lines[i]);
	g_strfreev(lines);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--emit-commands", NULL);
	expect_status(&r, 0);
	cr_expect(strstr(r.out, "--threads") == NULL, "%s", r.out);
	run_clear(&r);
}

/*
 * The emitted commands, run by GNU parallel with -k, print the sweep's CSV:
 * the first command prints the header, the others --no-header.  A --set value
 * with blanks, quotes, a comma and shell syntax checks the quoting.
 */
Test(e2e_sweep, emitted_commands_through_gnu_parallel)
{
	char *parallel = g_find_program_in_path("parallel");
	if (!parallel)
		cr_skip_test("GNU parallel is not installed (scripts/deps.sh installs it): "
			     "the emitted commands were not checked against the sweep");
	const char *odd = "workload.description=it's a \"test\", with $HOME, `true` and *";
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--set", odd, "-o", "a.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--set", odd, "--emit-commands", NULL);
	expect_status(&r, 0);
	char **lines = g_strsplit(r.out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), SWEEP_RUNS + 1, "one command per run:\n%s", r.out);
	/* Each line is one command whose arguments hold the value intact. */
	for (unsigned i = 0; i < SWEEP_RUNS; i++) {
		int argc = 0;
		char **argv = NULL;
		cr_assert(g_shell_parse_argv(lines[i], &argc, &argv, NULL), "%s", lines[i]);
		cr_expect_str_eq(argv[0], TLBSIM_BINARY);
		cr_expect(g_strv_contains((const char *const *)argv, odd), "%s", lines[i]);
		cr_expect_eq(g_strv_contains((const char *const *)argv, "--no-header"), i > 0);
		g_strfreev(argv);
	}
	write_tmp("jobs.txt", r.out);
	shell_in_tmp("parallel -k --joblog jobs.log :::: jobs.txt > b.csv");
	expect_same_file("a.csv", "b.csv");
	g_strfreev(lines);
	run_clear(&r);
	g_free(parallel);
}

/*
 * The --append recipe of docs/clusters.md: commands emitted with --append
 * -o FILE, run in any order one line at a time, then sorted on the run
 * column, give the sweep's CSV.
 */
Test(e2e_sweep, appended_rows_sort_back_to_the_sweep)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "-o", "a.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--emit-commands", "--append", "-o", "merged.csv", NULL);
	expect_status(&r, 0);
	write_tmp("jobs.txt", r.out);
	run_clear(&r);
	shell_in_tmp("for SLURM_ARRAY_TASK_ID in 3 1 4 2; do"
		     " sed -n \"${SLURM_ARRAY_TASK_ID}p\" jobs.txt | sh || exit 1; done");
	char *merged = read_tmp("merged.csv");
	char *header = read_tmp("a.csv");
	*strchr(header, '\n') = '\0';
	cr_expect(g_str_has_prefix(merged, header), "one header, first");
	cr_expect(strstr(merged, "\n3,") == strchr(merged, '\n'), "run 3 finished first");
	shell_in_tmp("(head -n 1 merged.csv && tail -n +2 merged.csv | sort -t, -k1,1n) > sorted.csv");
	expect_same_file("a.csv", "sorted.csv");
	g_free(header);
	g_free(merged);
}

/* A bad value fails the sweep before it runs, names the grid point, and
 * writes nothing. */
Test(e2e_sweep, bad_value_names_the_point_and_writes_nothing)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--vary", "topology.costs.invlpg=100,-1", "-o",
		   "a.csv", NULL);
	expect_status(&r, 2);
	cr_expect(g_str_has_prefix(r.err, "tlbsim sweep: run 2 of 8 (workload.threads=1, "
					  "policy=linux-4.5, topology.costs.invlpg=-1): "),
		  "%s", r.err);
	cr_expect(strstr(r.err, "invlpg") != NULL, "%s", r.err);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_sweep, budget_exits_4_and_writes_nothing)
{
	struct run r;
	run_tlbsim(&r, "sweep", SWEEP_GRID, "--max-events", "100", "-o", "a.csv", NULL);
	expect_status(&r, 4);
	cr_expect(g_str_has_prefix(r.err, "tlbsim sweep: run "), "%s", r.err);
	cr_expect(strstr(r.err, "--max-events") != NULL, "%s", r.err);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_sweep, sigint_leaves_nothing)
{
	char *out = tmp_path("sweep.csv");
	const char *argv[] = {TLBSIM_BINARY, "sweep", "-T", "haswell-i7", "-w", "munmap16",
			      "--vary", "workload.threads=16,15,14", "-j", "2", "-o", out, NULL};
	GPid pid;
	GError *error = NULL;
	int err_fd = -1;
	cr_assert(g_spawn_async_with_pipes(tmp_dir, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
					   NULL, NULL, &pid, NULL, NULL, &err_fd, &error),
		  "%s", error ? error->message : "?");
	g_usleep(300000); /* inside the first runs, of several seconds each */
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

Test(e2e_sweep, usage_errors)
{
	const char *const *const cases[] = {
		(const char *const[]){"sweep", "-T", "haswell-i7", "-w", SMALL, NULL},
		(const char *const[]){"sweep", SWEEP_GRID, "--vary", "workload.threads=4", NULL},
		(const char *const[]){"sweep", SWEEP_GRID, "-p", "linux-4.5", NULL},
		(const char *const[]){"sweep", SWEEP_GRID, "--emit-commands", "-o", "x.csv", NULL},
		(const char *const[]){"sweep", SWEEP_GRID, "--jobs", "-1", NULL},
		(const char *const[]){"sweep", SWEEP_GRID, "--per-cpu", "x.csv", NULL},
		(const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--label", "run", NULL},
		(const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--label", "policy=x", NULL},
		(const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--label", "a=1", "--label",
				      "a=2", NULL},
	};
	static const char *const messages[] = {
		"a sweep needs at least one --vary",
		"already varied",
		"--policy and --vary policy=... both given",
		"--emit-commands with --output needs --append",
		"--jobs takes a positive number",
		"Unknown option --per-cpu",
		"--label run: expected NAME=VALUE",
		"is already a column of the run",
		"is labelled twice",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct run r;
		run_tlbsim_argv(&r, cases[i]);
		expect_status(&r, 2);
		cr_expect(strstr(r.err, messages[i]) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
			  r.err, messages[i]);
		cr_expect_str_empty(r.out);
		run_clear(&r);
	}
	expect_tmp_listing("");
}
