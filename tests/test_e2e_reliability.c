/*
 * Reliability under hostile workloads and faults (issue 26), through the
 * program: a signal stops every phase (loading, populating, waiting for an
 * output's reader) with exit 130 and nothing written; the wall-time budget
 * covers loading; a loop of a billion report ops stays in bounded memory;
 * loading time grows linearly with the input; outputs are committed
 * together; a loop that takes no time fails; names are UTF-8.
 *
 * The slow inputs are built here.  No verdict depends on the host's speed:
 * where a signal must land in a phase, the test waits until the child's
 * memory shows it is there, and checks that it stopped by what it held
 * (the phase's memory could not have been reached), or by an output that
 * could never complete; time limits are tens of seconds.
 */
#define _POSIX_C_SOURCE 200809L /* kill(), mkfifo(), getrusage() */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_reliability, .init = tmp_dir_make, .fini = tmp_dir_remove, .timeout = 300);

/*
 * The generated workloads are written as they are made, never held whole:
 * a child's peak memory counts the test's, which it shares until exec, and
 * under ASan a test that freed much holds it in the quarantine.
 */
static FILE *open_tmp(const char *name)
{
	char *path = tmp_path(name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	g_free(path);
	return f;
}

static void close_tmp(FILE *f)
{
	cr_assert_eq(fclose(f), 0);
}

/* A workload of one task running @n copies of @op (JSON), in one 4 KiB
 * region "r". */
static void write_program(const char *name, const char *op, unsigned n)
{
	FILE *f = open_tmp(name);
	fputs("{\"name\": \"gen\", \"regions\": [{\"name\": \"r\", \"size\": 4096}], "
	      "\"tasks\": [{\"name\": \"t\", \"program\": [",
	      f);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		fputs(op, f);
	}
	fputs("]}]}", f);
	close_tmp(f);
}

/* @n regions of one page, and one munmap of each. */
static void write_munmaps(const char *name, unsigned n)
{
	FILE *f = open_tmp(name);
	fputs("{\"name\": \"gen\", \"regions\": [", f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s{\"name\": \"r%u\", \"size\": 4096}", i ? "," : "", i);
	fputs("], \"tasks\": [{\"name\": \"t\", \"program\": [", f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s{\"op\": \"munmap\", \"region\": \"r%u\"}", i ? "," : "", i);
	fputs("]}]}", f);
	close_tmp(f);
}

static void expect_interrupted(const struct child *c)
{
	cr_expect_eq(c->status, 130, "exit status %d, stderr: %s", c->status, c->err);
	cr_expect_str_eq(c->err, "tlbsim: interrupted\n");
}

/* Reap @c, which was signalled: a stop takes milliseconds; 30 s is room
 * for a loaded machine and sanitizers, not a measurement. */
static void reap_signalled(struct child *c)
{
	cr_assert(child_wait(c, 30), "still running 30 s after the signal");
}

/*
 * A 16 MiB workload (1.1 M ops) takes hundreds of MiB to parse and load.
 * A SIGINT once the child holds 64 MiB, well inside the parse, stops it:
 * it never holds half of what the whole load does (the run after it, to
 * the end of the layout, shows that).
 */
Test(e2e_reliability, sigint_while_a_large_workload_loads)
{
	write_program("big.json", "{\"op\":\"yield\"}", 1100000); /* 16.5 MB */
	const char *const args[] = {"-T", TINY, "-w", "big.json", "-q", "-o", "out.csv",
				    "--max-events", "1", NULL};
	struct child c;
	child_start(&c, NULL, args);
	cr_assert(child_wait_rss(&c, 64 << 10, 120), "the child never held 64 MiB");
	kill(c.pid, SIGINT);
	reap_signalled(&c);
	expect_interrupted(&c);
	long interrupted = children_max_rss_kb();
	child_clear(&c);
	expect_tmp_listing("big.json");

	child_start(&c, NULL, args);
	cr_assert(child_wait(&c, 240));
	cr_expect_eq(c.status, 4, "the whole load, then the event budget: %s", c.err);
	long whole = children_max_rss_kb();
	cr_expect_geq(whole, 2 * interrupted,
		      "interrupted at %ld KiB, while the whole load takes %ld KiB", interrupted,
		      whole);
	child_clear(&c);
}

/*
 * A 64 GiB region populated page by page: 16 Mi PTEs, 256 MiB.  A SIGTERM
 * once the child holds 48 MiB stops the population (it held 7.9 s, then
 * wrote its CSV, before).
 */
Test(e2e_reliability, sigterm_while_pages_are_populated)
{
	write_tmp(
	    "populate.json",
	    "{\"name\": \"populate\", \"regions\": [{\"name\": \"r\", \"size\": \"64G\", "
	    "\"populate\": \"all\"}], \"tasks\": [{\"name\": \"t\", \"program\": [{\"op\": "
	    "\"access\", \"region\": \"r\", \"pages\": 16, \"rounds\": 1, \"cycles\": 1}]}]}");
	struct child c;
	child_start(&c, NULL,
		    (const char *const[]){"-T", TINY, "-w", "populate.json", "-q", "-o", "out.csv",
					  NULL});
	cr_assert(child_wait_rss(&c, 48 << 10, 120), "the child never held 48 MiB");
	kill(c.pid, SIGTERM);
	reap_signalled(&c);
	expect_interrupted(&c);
	long held = children_max_rss_kb();
	cr_expect_lt(held, 160 << 10, "held %ld KiB; the PTEs alone are 256 MiB", held);
	child_clear(&c);
	expect_tmp_listing("populate.json");
}

/*
 * -o naming a FIFO nobody reads: the run is done in milliseconds, and the
 * output can never be written.  A signal stops the wait (it was held for
 * ever before), and leaves the FIFO as it was.
 */
Test(e2e_reliability, signal_while_an_output_waits_for_its_reader)
{
	char *fifo = tmp_path("out.fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	g_free(fifo);
	struct child c;
	child_start(&c, NULL,
		    (const char *const[]){"-T", TINY, "-w", ACCESS_ONLY, "-q", "--per-cpu",
					  "cpus.csv", "-o", "out.fifo", NULL});
	g_usleep(G_USEC_PER_SEC); /* the run takes milliseconds: it waits by now */
	kill(c.pid, SIGINT);
	reap_signalled(&c);
	expect_interrupted(&c);
	child_clear(&c);
	expect_tmp_listing("out.fifo");
}

/* --max-wall-seconds counts from the start: a load of 15 MiB is cut short. */
Test(e2e_reliability, wall_time_budget_covers_loading)
{
	write_program("big.json", "{\"op\":\"compute\",\"cycles\":1}", 560000);
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", "big.json", "-q", "--max-wall-seconds", "0.05", "-o",
		   "out.csv", NULL);
	expect_status(&r, 4);
	cr_expect_str_eq(r.err, "tlbsim: stopped after 0.05 s of wall time (the budget, "
				"--max-wall-seconds)\n");
	run_clear(&r);
	expect_tmp_listing("big.json");
}

/*
 * A loop of report ops keeps its latencies in bounded memory: 2 Mi madvise
 * calls hold no more than 256 Ki do (each latency appended to an array
 * held 16 MiB more, and 5.2 GB after ten minutes).  ASan's quarantine of
 * freed memory would grow with the calls too: it is off for these runs.
 */
Test(e2e_reliability, report_op_loop_in_bounded_memory)
{
	const char *env[] = {NULL, NULL};
	const char *asan = g_getenv("ASAN_OPTIONS");
	char *asan_options =
		g_strdup_printf("ASAN_OPTIONS=%s%squarantine_size_mb=0", asan ? asan : "",
				asan && *asan ? ":" : "");
	env[0] = asan_options;
	long rss[2];
	const char *counts[] = {"262144", "2097152"};
	for (int i = 0; i < 2; i++) {
		char *w = g_strdup_printf(
			"{\"name\": \"madvise-loop\", \"regions\": [{\"name\": \"r\", \"size\": "
			"4096, \"populate\": \"all\"}], \"tasks\": [{\"name\": \"t\", \"program\": "
			"[{\"op\": \"loop\", \"count\": %s, \"body\": [{\"op\": \"madvise\", "
			"\"region\": \"r\", \"advice\": \"dontneed\"}]}]}]}",
			counts[i]);
		write_tmp("madvise.json", w);
		g_free(w);
		struct child c;
		child_start(&c, env,
			    (const char *const[]){"-T", TINY, "-w", "madvise.json", "-q", "-o",
						  "out.csv", NULL});
		cr_assert(child_wait(&c, 240));
		cr_assert_eq(c.status, 0, "%s", c.err);
		child_clear(&c);
		rss[i] = children_max_rss_kb();
	}
	char *csv = read_tmp("out.csv");
	struct table t;
	table_parse(&t, csv);
	cr_expect_eq(table_u64(&t, 0, "op_count"), 2097152);
	table_clear(&t);
	g_free(csv);
	cr_expect_lt(rss[1] - rss[0], 8 << 10, "%s calls held %ld KiB, %s calls %ld KiB",
		     counts[0], rss[0], counts[1], rss[1]);
	g_free(asan_options);
}

/* CPU seconds the children reaped so far have used. */
static double children_cpu_seconds(void)
{
	struct rusage usage;
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &usage), 0);
	return (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
	       (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

/* CPU seconds of loading @workload and laying it out (--max-events 1). */
static double load_seconds(const char *workload)
{
	double before = children_cpu_seconds();
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", workload, "-q", "--max-events", "1", NULL);
	expect_status(&r, 4);
	run_clear(&r);
	return children_cpu_seconds() - before;
}

/*
 * Four times the input takes about four times the CPU time to load, not
 * sixteen: 100 000 regions took 82 s, 200 000 ops 92 s, growing with the
 * square of their number.  CPU time, not wall time: other jobs on the
 * machine do not count.
 */
Test(e2e_reliability, loading_is_linear)
{
	write_munmaps("m1.json", 25000);
	write_munmaps("m4.json", 100000);
	write_program("y1.json", "{\"op\": \"yield\"}", 50000);
	write_program("y4.json", "{\"op\": \"yield\"}", 200000);
	double m1 = load_seconds("m1.json"), m4 = load_seconds("m4.json");
	double y1 = load_seconds("y1.json"), y4 = load_seconds("y4.json");
	cr_expect_lt(m4, 8 * m1 + 0.1, "regions: %.3f s, four times as many %.3f s", m1, m4);
	cr_expect_lt(y4, 8 * y1 + 0.1, "ops: %.3f s, four times as many %.3f s", y1, y4);
}

/* A loop of ops that take no time fails instead of running for hours. */
Test(e2e_reliability, loop_without_time_fails)
{
	write_tmp("spin.json",
		  "{\"name\": \"spin\", \"regions\": [{\"name\": \"r\", \"size\": 4096}], "
		  "\"tasks\": [{\"name\": \"t\", \"program\": [{\"op\": \"loop\", \"count\": "
		  "\"1000000 * 1000000\", \"body\": [{\"op\": \"compute\", \"cycles\": 0}]}]}]}");
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", "spin.json", "-q", "-o", "out.csv", NULL);
	expect_input_error(&r, "spin.json: $.tasks[0].program[0].body[0]: 16777216 ops in a row",
			   "without simulated time passing", NULL);
	run_clear(&r);
	expect_tmp_listing("spin.json");
}

/*
 * The CSV cannot be written (a full device): the older trace stays as it
 * was (the new one was renamed over it, then removed).
 */
Test(e2e_reliability, failed_csv_keeps_the_older_trace)
{
	struct stat st;
	if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode))
		cr_skip_test("no /dev/full");
	write_tmp("t.json", "the older trace\n");
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--trace", "t.json", "--per-cpu",
		   "cpus.csv", "-o", "/dev/full", NULL);
	expect_input_error(&r, "cannot write /dev/full: No space left on device", NULL);
	run_clear(&r);
	char *trace = read_tmp("t.json");
	cr_expect_str_eq(trace, "the older trace\n");
	g_free(trace);
	expect_tmp_listing("t.json");
}

/*
 * An append to a new file that fails (the header does not fit under the
 * file-size limit; the row alone does) leaves no file, not an empty one.
 */
Test(e2e_reliability, failed_append_to_a_new_file_leaves_none)
{
	struct child_limits limits = {.file_size = 500}; /* header ~750 bytes, row ~220 */
	struct run r;
	run_tlbsim_limited(&r, &limits,
			   (const char *const[]){"-T", TINY, "-w", ACCESS_ONLY, "-q", "--append",
						 "-o", "new.csv", NULL});
	expect_input_error(&r, "cannot append to new.csv: File too large", NULL);
	run_clear(&r);
	expect_tmp_listing("");
}

/* A name that is not UTF-8 is refused where it stands, before it reaches a
 * trace (which it made invalid JSON). */
Test(e2e_reliability, names_must_be_utf8)
{
	write_tmp("latin1.json",
		  "{\"name\": \"caf\xe9\", \"regions\": [{\"name\": \"r\", \"size\": 4096}],\n"
		  " \"tasks\": [{\"name\": \"t\", \"program\": [{\"op\": \"yield\"}]}]}");
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", "latin1.json", "-q", "--trace", "t.json", "-o",
		   "out.csv", NULL);
	expect_input_error(&r, "latin1.json:1:14: not UTF-8 (byte 0xe9)", NULL);
	run_clear(&r);
	expect_tmp_listing("latin1.json");
	/* Command-line text is refused by GLib's option parser already. */
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--label", "who=caf\xe9", NULL);
	expect_input_error(&r, NULL);
	run_clear(&r);
}
