/*
 * End-to-end tests of the tlbsim program (src/main.c, src/report.c, and
 * src/sweep.c through "tlbsim sweep"): the binary is run as a user runs it,
 * with g_spawn_sync in a fresh temporary directory, and its exit status,
 * stdout, stderr and output files are checked.
 *
 * Notes:
 * - Most runs use tests/data/e2e-small.json, munmap16's harness scaled down
 *   (4 readers, 128 munmaps of 8 pages, 4 MiB, 1 ms tail): a run takes tens of
 *   milliseconds.  munmap16 itself (several seconds) runs exactly once.
 * - The CSV written here never needs quoting (names have no comma or quote),
 *   so a row is split on ','; table_parse() asserts there is no '"'.
 * - Counts asserted exactly (128 munmaps, 7 receivers per flush...) follow
 *   from the workload and topology files; each says where it comes from.
 */
#define _POSIX_C_SOURCE 200809L /* symlink(), mkfifo() */
#include <stdarg.h>
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>
#include <glib/gstdio.h>
#include "support.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/machine/counters.h"

#ifndef TLBSIM_BINARY
#error "TLBSIM_BINARY must be the absolute path of the tlbsim program"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif
#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif

#define SMALL TLBSIM_TEST_DATA "/e2e-small.json"
#define ACCESS_ONLY TLBSIM_TEST_DATA "/e2e-access-only.json"
#define TOUCH_MUNMAP TLBSIM_TEST_DATA "/e2e-smt-touch-munmap.json"
#define TOUCH_MADVISE TLBSIM_TEST_DATA "/e2e-smt-touch-madvise.json"
#define TINY TLBSIM_TEST_DATA "/tiny-2cpu.json"
#define HASWELL_PATH TLBSIM_SOURCE_DIR "/topologies/haswell-i7.json"

/* e2e-small: file_size / 4096 / pages_per_munmap = 4 MiB / 4 KiB / 8. */
#define SMALL_MUNMAPS 128

/* The harness's own summary line (munmap16's and e2e-small's "summary"). */
#define HARNESS_SUMMARY                                                                            \
	"^munmap use [0-9]+ms [0-9]+ns/time, memory access uses [0-9]+ times/thread/ms, "          \
	"cost [0-9]+ns/time$"

/* --------------------------------------------------------------------------
 * Running the program
 * ------------------------------------------------------------------------ */

/*
 * The test's scratch directory, made by .init and removed by .fini (which
 * Criterion runs even after a failed assertion).  Each test runs in its own
 * process, so this is per test, not shared.
 */
static char *tmp_dir;

static void tmp_dir_make(void)
{
	GError *error = NULL;
	tmp_dir = g_dir_make_tmp("tlbsim-e2e-XXXXXX", &error);
	cr_assert_not_null(tmp_dir, "g_dir_make_tmp: %s", error ? error->message : "?");
}

/* Remove the scratch directory and what the tests wrote in it. */
static void remove_tree(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	if (!d)
		return;
	const char *name;
	while ((name = g_dir_read_name(d))) {
		char *path = g_build_filename(dir, name, NULL);
		if (g_file_test(path, G_FILE_TEST_IS_DIR))
			remove_tree(path);
		else
			g_unlink(path);
		g_free(path);
	}
	g_dir_close(d);
	g_rmdir(dir);
}

static void tmp_dir_remove(void)
{
	if (tmp_dir)
		remove_tree(tmp_dir);
	g_free(tmp_dir);
	tmp_dir = NULL;
}

TestSuite(e2e_csv, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_determinism, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_output, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_identities, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_errors, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_names, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_policy, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_munmap16, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_sweep, .init = tmp_dir_make, .fini = tmp_dir_remove);
TestSuite(e2e_timelines, .init = tmp_dir_make, .fini = tmp_dir_remove);

struct run {
	int status; /* exit status; -1 if the program did not exit normally */
	char *out;
	char *err;
};

static void run_clear(struct run *r)
{
	g_free(r->out);
	g_free(r->err);
	memset(r, 0, sizeof(*r));
}

/* What the child gets before exec: a file-size limit (bytes; 0: none), with
 * SIGXFSZ ignored so that a write past it fails with EFBIG; stdout on a
 * device that is always full. */
struct child_limits {
	rlim_t file_size;
	bool stdout_full;
};

static void limit_child(gpointer data)
{
	const struct child_limits *limits = data;
	if (limits->file_size) {
		struct rlimit rl = {limits->file_size, limits->file_size};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	if (limits->stdout_full) {
		int fd = open("/dev/full", O_WRONLY);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
	}
}

/* Run tlbsim in the scratch directory with the NULL-terminated @args, under
 * @limits (NULL: none). */
static void run_tlbsim_limited(struct run *r, const struct child_limits *limits,
			       const char *const *args)
{
	GPtrArray *argv = g_ptr_array_new();
	g_ptr_array_add(argv, (gpointer)TLBSIM_BINARY);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (gpointer)*a);
	g_ptr_array_add(argv, NULL);

	/* Bare names resolve in this source tree, whatever the caller's
	 * $TLBSIM_DATADIR holds. */
	char **envp = g_environ_unsetenv(g_get_environ(), "TLBSIM_DATADIR");
	GError *error = NULL;
	int wait_status = 0;
	memset(r, 0, sizeof(*r));
	gboolean spawned = g_spawn_sync(tmp_dir, (char **)argv->pdata, envp, G_SPAWN_DEFAULT,
					limits ? limit_child : NULL, (gpointer)limits, &r->out,
					&r->err, &wait_status, &error);
	g_ptr_array_free(argv, TRUE);
	g_strfreev(envp);
	cr_assert(spawned, "cannot run %s: %s", TLBSIM_BINARY, error ? error->message : "?");
	r->status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

static void run_tlbsim_argv(struct run *r, const char *const *args)
{
	run_tlbsim_limited(r, NULL, args);
}

/* Run tlbsim in the scratch directory with a NULL-terminated argument list. */
static G_GNUC_NULL_TERMINATED void run_tlbsim(struct run *r, const char *arg, ...)
{
	GPtrArray *args = g_ptr_array_new();
	va_list ap;
	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *))
		g_ptr_array_add(args, (gpointer)a);
	va_end(ap);
	g_ptr_array_add(args, NULL);
	run_tlbsim_argv(r, (const char *const *)args->pdata);
	g_ptr_array_free(args, TRUE);
}

/* The run exited with @status; the message shows stderr, which says why. */
static void expect_status(const struct run *r, int status)
{
	cr_assert_eq(r->status, status, "exit status %d, expected %d; stderr:\n%s", r->status,
		     status, r->err);
}

static char *tmp_path(const char *name)
{
	return g_build_filename(tmp_dir, name, NULL);
}

/* The contents of @name in the scratch directory; the file must exist. */
static char *read_tmp(const char *name)
{
	char *path = tmp_path(name);
	char *text = NULL;
	GError *error = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, &error), "%s",
		  error ? error->message : "?");
	g_free(path);
	return text;
}

static void expect_tmp_listing(const char *expected)
{
	char *list = support_dir_listing(tmp_dir);
	cr_expect_str_eq(list, expected, "scratch directory holds \"%s\"", list);
	g_free(list);
}

/* --------------------------------------------------------------------------
 * CSV
 * ------------------------------------------------------------------------ */

struct table {
	char **header;
	GPtrArray *rows; /* char ** each */
	unsigned nr_fields;
};

static void table_parse(struct table *t, const char *text)
{
	cr_assert(g_str_has_suffix(text, "\n"), "CSV does not end with a newline:\n%s", text);
	cr_assert_null(strchr(text, '"'), "unexpected quoted field:\n%s", text);
	char **lines = g_strsplit(text, "\n", -1);
	unsigned n = g_strv_length(lines) - 1; /* after the last '\n' */
	cr_assert_geq(n, 1);
	t->header = g_strsplit(lines[0], ",", -1);
	t->nr_fields = g_strv_length(t->header);
	t->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	for (unsigned i = 1; i < n; i++) {
		char **fields = g_strsplit(lines[i], ",", -1);
		cr_assert_eq(g_strv_length(fields), t->nr_fields,
			     "line %u has %u fields, the header %u:\n%s", i + 1,
			     g_strv_length(fields), t->nr_fields, lines[i]);
		g_ptr_array_add(t->rows, fields);
	}
	g_strfreev(lines);
}

static void table_clear(struct table *t)
{
	g_strfreev(t->header);
	if (t->rows)
		g_ptr_array_free(t->rows, TRUE);
	memset(t, 0, sizeof(*t));
}

static int table_column(const struct table *t, const char *name)
{
	for (unsigned i = 0; i < t->nr_fields; i++)
		if (strcmp(t->header[i], name) == 0)
			return (int)i;
	return -1;
}

static const char *table_get(const struct table *t, unsigned row, const char *name)
{
	int col = table_column(t, name);
	cr_assert_geq(col, 0, "no column %s", name);
	cr_assert_lt(row, t->rows->len);
	return ((char **)g_ptr_array_index(t->rows, row))[col];
}

static uint64_t table_u64(const struct table *t, unsigned row, const char *name)
{
	const char *s = table_get(t, row, name);
	guint64 v = 0;
	GError *error = NULL;
	cr_assert(g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, &v, &error),
		  "column %s: \"%s\": %s", name, s, error ? error->message : "?");
	return v;
}

/* Every column of row 0 but @except is the same in @a and @b. */
static void expect_same_row_except(const struct table *a, const struct table *b,
				   const char *except, const char *what)
{
	for (unsigned i = 0; i < a->nr_fields; i++)
		if (strcmp(a->header[i], except))
			cr_expect_str_eq(table_get(a, 0, a->header[i]),
					 table_get(b, 0, a->header[i]), "%s: column %s", what,
					 a->header[i]);
}

/* The header report_columns() describes. */
static char *expected_header(void)
{
	return g_strjoinv(",", (char **)report_columns());
}

/* Run tlbsim -q with @topology, @workload, @policy and --seed @seed (plus up to
 * two more arguments, or NULL), expect exit 0 and a header and one row. */
static void run_row(struct table *t, const char *topology, const char *workload, const char *policy,
		    const char *seed, const char *extra1, const char *extra2)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", topology, "-w", workload, "-p", policy, "--seed", seed, extra1,
		   extra2, NULL);
	expect_status(&r, 0);
	table_parse(t, r.out);
	cr_assert_eq(t->rows->len, 1, "expected one row:\n%s", r.out);
	run_clear(&r);
}

static void run_small(struct table *t, const char *topology, const char *policy)
{
	run_row(t, topology, SMALL, policy, "1", NULL, NULL);
}

static bool matches(const char *pattern, const char *s)
{
	return g_regex_match_simple(pattern, s, 0, 0);
}

/* Fixed-point columns: put_milli() in report.c, three decimals. */
static const char *const milli_columns[] = {
    "sim_ns",
    "phase_ns",
    "op_ns_mean",
    "op_ns_p50",
    "op_ns_p99",
    "access_ns",
    "accesses_per_thread_ms",
    "irq_ns",
    "switch_mm_ns",
    "local_flush_ns",
    "walk_wait_ns",
    "walk_load_ns",
    "lru_lock_ns",
    "mmap_lock_wait_ns",
    "vma_lock_wait_ns",
    NULL,
};
static const char *const text_columns[] = {"topology", "workload", "policy", "op", NULL};

/* Every field of every row has its column's format; any other column is a
 * count (an unsigned integer), which is what a new counter column will be. */
static void expect_field_formats(const struct table *t)
{
	for (unsigned row = 0; row < t->rows->len; row++) {
		char **fields = g_ptr_array_index(t->rows, row);
		for (unsigned i = 0; i < t->nr_fields; i++) {
			const char *name = t->header[i], *v = fields[i];
			const char *pattern = "^[0-9]+$";
			if (g_strv_contains(milli_columns, name))
				pattern = "^[0-9]+\\.[0-9]{3}$";
			else if (g_strv_contains(text_columns, name))
				pattern = "^[A-Za-z0-9_.-]*$";
			else if (strcmp(name, "host_seconds") == 0)
				pattern = "^([0-9]+\\.[0-9]{6})?$";
			cr_expect(matches(pattern, v), "row %u column %s: \"%s\" does not match %s",
				  row, name, v, pattern);
		}
	}
}

/* --------------------------------------------------------------------------
 * 1. CSV shape
 * ------------------------------------------------------------------------ */

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
		run_row(&t, runs[i][0], runs[i][1], "linux-4.5-smt-dedup", "3", NULL, NULL);
		expect_field_formats(&t);
		table_clear(&t);
	}
}

Test(e2e_csv, no_syscalls_means_empty_op_and_zero_op_count)
{
	struct table t;
	run_row(&t, TINY, ACCESS_ONLY, "linux-4.5", "1", NULL, NULL);
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

/* --------------------------------------------------------------------------
 * 2. Determinism
 * ------------------------------------------------------------------------ */

Test(e2e_determinism, same_seed_same_bytes)
{
	struct run a, b;
	run_tlbsim(&a, "-T", "haswell-i7", "-w", SMALL, "--seed", "7", "--per-cpu", "a.csv", NULL);
	run_tlbsim(&b, "-T", "haswell-i7", "-w", SMALL, "--seed", "7", "--per-cpu", "b.csv", NULL);
	expect_status(&a, 0);
	expect_status(&b, 0);
	cr_expect_str_eq(a.out, b.out);
	cr_expect_str_eq(a.err, b.err);
	char *pa = read_tmp("a.csv"), *pb = read_tmp("b.csv");
	cr_expect_str_eq(pa, pb);
	g_free(pa);
	g_free(pb);
	run_clear(&a);
	run_clear(&b);
}

Test(e2e_determinism, other_seed_changes_a_counter)
{
	struct table a, b;
	run_row(&a, "haswell-i7", SMALL, "linux-4.5", "1", NULL, NULL);
	run_row(&b, "haswell-i7", SMALL, "linux-4.5", "2", NULL, NULL);
	cr_expect_eq(table_u64(&a, 0, "seed"), 1);
	cr_expect_eq(table_u64(&b, 0, "seed"), 2);
	/* The readers draw their random pages from the seed; which pages miss
	 * the TLB depends on them. */
	unsigned differ = 0;
	for (unsigned i = 0; counters_names[i]; i++)
		if (table_column(&a, counters_names[i]) >= 0 &&
		    strcmp(table_get(&a, 0, counters_names[i]),
			   table_get(&b, 0, counters_names[i])))
			differ++;
	cr_expect_gt(differ, 0, "seeds 1 and 2 gave the same counters");
	/* The munmap side does not depend on the seed. */
	cr_expect_eq(table_u64(&a, 0, "op_count"), table_u64(&b, 0, "op_count"));
	cr_expect_eq(table_u64(&a, 0, "nr_tlb_remote_flush"),
		     table_u64(&b, 0, "nr_tlb_remote_flush"));
	table_clear(&a);
	table_clear(&b);
}

Test(e2e_determinism, host_seconds_only_with_host_time)
{
	struct table t;
	run_row(&t, "haswell-i7", SMALL, "linux-4.5", "1", NULL, NULL);
	cr_expect_str_eq(table_get(&t, 0, "host_seconds"), "");
	table_clear(&t);
	run_row(&t, "haswell-i7", SMALL, "linux-4.5", "1", "--host-time", NULL);
	const char *s = table_get(&t, 0, "host_seconds");
	cr_expect(matches("^[0-9]+\\.[0-9]{6}$", s), "host_seconds \"%s\"", s);
	/* Nothing else changes: host_seconds is the only host-dependent column. */
	struct table u;
	run_row(&u, "haswell-i7", SMALL, "linux-4.5", "1", NULL, NULL);
	expect_same_row_except(&t, &u, "host_seconds", "--host-time");
	table_clear(&t);
	table_clear(&u);
}

/* Run-ahead (many accesses per event) is an optimisation: with one access per
 * event every column but the event count is the same. */
Test(e2e_determinism, run_ahead_changes_only_events)
{
	static const char *const topologies[] = {"haswell-i7-smt-thread", TINY};
	for (size_t k = 0; k < G_N_ELEMENTS(topologies); k++) {
		struct table a, b;
		run_row(&a, topologies[k], SMALL, "linux-4.5-smt-dedup", "5", NULL, NULL);
		run_row(&b, topologies[k], SMALL, "linux-4.5-smt-dedup", "5", "--no-run-ahead",
			NULL);
		expect_same_row_except(&a, &b, "events", topologies[k]);
		cr_expect_lt(table_u64(&a, 0, "events"), table_u64(&b, 0, "events"));
		table_clear(&a);
		table_clear(&b);
	}
}

/* The same with independent loads on SMT siblings, whose walks queue for the
 * core's one walker: run inline or one event each, they reach it in the same
 * order. */
Test(e2e_determinism, run_ahead_keeps_the_walker_queue)
{
	struct table a, b;
	run_row(&a, "haswell-i7", "munmap16", "linux-4.5", "5", "--set=workload.file_size=4M",
		NULL);
	run_row(&b, "haswell-i7", "munmap16", "linux-4.5", "5", "--set=workload.file_size=4M",
		"--no-run-ahead");
	cr_expect_gt(g_ascii_strtod(table_get(&a, 0, "walk_wait_ns"), NULL), 0,
		     "the siblings do queue");
	expect_same_row_except(&a, &b, "events", "munmap16");
	table_clear(&a);
	table_clear(&b);
}

/* Bug 8 of tests/test_property.c, frozen: a wait whose targets acknowledge
 * early (from a handler they run for another caller) must bound the others'
 * run-ahead by when it can really complete, not by its last interrupt. */
static void expect_run_ahead_identity(const char *name, const char *seed)
{
	char *topo = g_strdup_printf("%s/%s-topology.json", TLBSIM_TEST_DATA, name);
	char *wl = g_strdup_printf("%s/%s-workload.json", TLBSIM_TEST_DATA, name);
	char *pol = g_strdup_printf("%s/%s-policy.json", TLBSIM_TEST_DATA, name);
	struct table a, b;
	run_row(&a, topo, wl, pol, seed, NULL, NULL);
	run_row(&b, topo, wl, pol, seed, "--no-run-ahead", NULL);
	expect_same_row_except(&a, &b, "events", name);
	table_clear(&a);
	table_clear(&b);
	g_free(topo);
	g_free(wl);
	g_free(pol);
}

Test(e2e_determinism, run_ahead_stops_at_an_early_completing_wait)
{
	expect_run_ahead_identity("runahead-sentinel", "66097198");
}

/* Bug 9, frozen: a pending target acknowledges from the handler of another
 * caller's later interrupt, so that arrival must bound the wait too. */
Test(e2e_determinism, run_ahead_bounds_a_wait_by_other_callers_interrupts)
{
	expect_run_ahead_identity("runahead-early-ack", "143283282");
}

/* --------------------------------------------------------------------------
 * 3. Output files
 * ------------------------------------------------------------------------ */

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

/* The run succeeds but its CSV cannot be written: exit 2, and the per-CPU file
 * (written first) is removed too, so no half of the run's output survives. */
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
	char *header = g_strconcat("topology,workload,policy,seed,cpu,socket,core,thread,"
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

/* --------------------------------------------------------------------------
 * 4. Counter identities (README "Counters")
 * ------------------------------------------------------------------------ */

static void expect_identities(const struct table *t, const char *what)
{
	uint64_t lookups = table_u64(t, 0, "tlb_lookups");
	cr_expect_eq(lookups, table_u64(t, 0, "tlb_hits") + table_u64(t, 0, "tlb_misses"),
		     "%s: lookups == hits + misses", what);
	cr_expect_eq(lookups, table_u64(t, 0, "accesses"), "%s: lookups == accesses", what);
	cr_expect_geq(table_u64(t, 0, "page_walks"), table_u64(t, 0, "tlb_misses"),
		      "%s: page_walks >= tlb_misses", what);
	cr_expect_leq(table_u64(t, 0, "stlb_hits"), table_u64(t, 0, "tlb_hits"),
		      "%s: stlb_hits <= tlb_hits", what);
	cr_expect_eq(table_u64(t, 0, "ipis_sent"), table_u64(t, 0, "ipis_received"),
		     "%s: ipis_sent == ipis_received", what);
}

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
	};
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
		struct table t;
		run_row(&t, runs[i][0], runs[i][1], runs[i][2], "1", NULL, NULL);
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
	run_row(&t, "haswell-i7", TOUCH_MADVISE, "linux-4.5", "1", NULL, NULL);
	/* 7 threads re-read 8 zapped pages of each of 16 chunks: 896 faults. */
	cr_expect_eq(table_u64(&t, 0, "page_faults"), 7 * 8 * 16);
	cr_expect_gt(table_u64(&t, 0, "page_walks"), table_u64(&t, 0, "tlb_misses"));
	table_clear(&t);
}

/* --------------------------------------------------------------------------
 * 5. Input errors: exit 2, a message naming the place, nothing on stdout
 * ------------------------------------------------------------------------ */

/* Exit 2, no CSV (not even a header), one "tlbsim: " message holding every
 * string of the NULL-terminated list. */
static G_GNUC_NULL_TERMINATED void expect_input_error(const struct run *r, ...)
{
	expect_status(r, 2);
	cr_expect_str_empty(r->out, "stdout: %s", r->out);
	cr_expect(g_str_has_prefix(r->err, "tlbsim: "), "stderr: %s", r->err);
	va_list ap;
	va_start(ap, r);
	for (const char *s; (s = va_arg(ap, const char *));)
		cr_expect(strstr(r->err, s) != NULL, "stderr lacks \"%s\": %s", s, r->err);
	va_end(ap);
}

Test(e2e_errors, invalid_json_names_file_line_column)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-syntax-error.json", NULL);
	/* The missing comma is noticed at "pages", line 6 column 5. */
	expect_input_error(&r, TLBSIM_TEST_DATA "/e2e-syntax-error.json:6:5: invalid JSON", NULL);
	run_clear(&r);
}

Test(e2e_errors, set_value_checked_like_the_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "topology.tlbs[0].ways=3", NULL);
	expect_input_error(&r, "haswell-i7.json", "$.tlbs[0].ways", "divide", NULL);
	run_clear(&r);
}

Test(e2e_errors, misspelt_parameter_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-typo-param.json", NULL);
	/* "treads" defines $treads; the task count uses $threads. */
	expect_input_error(&r, "e2e-typo-param.json", "$.tasks[1].count", "$threads",
			   "did you mean", "$treads", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_key_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-typo-key.json", NULL);
	expect_input_error(&r, "e2e-typo-key.json", "$.tasks[1]", "unknown key \"cout\"",
			   "did you mean \"count\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_topology_name_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswel-i7", "-w", SMALL, NULL);
	expect_input_error(&r, "\"haswel-i7\"", "did you mean \"haswell-i7\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_policy_name_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.55", NULL);
	expect_input_error(&r, "policy", "\"linux-4.55\"", "did you mean \"linux-4.5\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, zero_cpus)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "topology.sockets=0", NULL);
	expect_input_error(&r, "haswell-i7.json", "$.sockets", "[1, 64]", "got 0", NULL);
	run_clear(&r);
}

Test(e2e_errors, pinned_to_missing_cpu)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", TLBSIM_TEST_DATA "/e2e-pinned-cpu9.json", NULL);
	expect_input_error(&r, "e2e-pinned-cpu9.json", "$.tasks[1].cpu", "CPU 9", "CPUs 0-1", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_topology)
{
	struct run r;
	run_tlbsim(&r, "-w", SMALL, NULL);
	expect_input_error(&r, "--topology", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_workload)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", NULL);
	expect_input_error(&r, "--workload", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "./no-such-workload.json", NULL);
	expect_input_error(&r, "./no-such-workload.json", "no such file", NULL);
	run_clear(&r);
}

Test(e2e_errors, unexpected_positional_argument)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "extra", NULL);
	expect_input_error(&r, "unexpected argument \"extra\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_option)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--bogus", NULL);
	expect_input_error(&r, "--bogus", NULL);
	run_clear(&r);
}

Test(e2e_errors, negative_seed)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--seed", "-1", NULL);
	expect_input_error(&r, "--seed", "non-negative", NULL);
	run_clear(&r);
}

Test(e2e_errors, bad_set_syntax)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "threads=2", NULL);
	expect_input_error(&r, "--set threads=2", "KIND.PATH=VALUE", NULL);
	run_clear(&r);
}

/* --------------------------------------------------------------------------
 * 6. Budgets: exit 4, a message naming the budget, no CSV
 * ------------------------------------------------------------------------ */

Test(e2e_errors, event_budget)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-events", "1000", NULL);
	expect_status(&r, 4);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "budget") && strstr(r.err, "--max-events"), "stderr: %s", r.err);
	run_clear(&r);
}

Test(e2e_errors, time_budget)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-sim-ns", "1000", NULL);
	expect_status(&r, 4);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "budget") && strstr(r.err, "--max-sim-ns"), "stderr: %s", r.err);
	run_clear(&r);
}

/* --------------------------------------------------------------------------
 * 7. Listings and version
 * ------------------------------------------------------------------------ */

/* @out has a line whose first word is @name. */
static bool lists(const char *out, const char *name)
{
	char *escaped = g_regex_escape_string(name, -1);
	char *pattern = g_strdup_printf("^%s( |$)", escaped);
	bool found = g_regex_match_simple(pattern, out, G_REGEX_MULTILINE, 0);
	g_free(pattern);
	g_free(escaped);
	return found;
}

static void expect_listing(const char *option, const char *const *names)
{
	struct run r;
	run_tlbsim(&r, option, NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	for (const char *const *n = names; *n; n++)
		cr_expect(lists(r.out, *n), "%s does not list %s:\n%s", option, *n, r.out);
	run_clear(&r);
}

Test(e2e_names, list_topologies)
{
	expect_listing("--list-topologies",
		       (const char *const[]){"haswell-i7", "haswell-i7-smt-thread", NULL});
}

Test(e2e_names, list_workloads)
{
	expect_listing("--list-workloads", (const char *const[]){"munmap16", "munmap", NULL});
}

Test(e2e_names, list_policies)
{
	expect_listing("--list-policies", (const char *const[]){"linux-4.5", "linux-4.5-smt-dedup",
								"linux-3.11", NULL});
}

Test(e2e_names, version)
{
	struct run r;
	run_tlbsim(&r, "--version", NULL);
	expect_status(&r, 0);
	cr_expect(matches("^tlbsim [0-9]+\\.[0-9]+\\.[0-9]+\n$", r.out), "stdout: %s", r.out);
	cr_expect_str_eq(r.out, "tlbsim " TLBSIM_VERSION "\n");
	run_clear(&r);
}

/* --------------------------------------------------------------------------
 * 8. Names and paths
 * ------------------------------------------------------------------------ */

Test(e2e_names, bare_name_json_suffix_and_path_are_equivalent)
{
	struct run a, b, c, d;
	run_tlbsim(&a, "-q", "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.5", NULL);
	run_tlbsim(&b, "-q", "-T", "haswell-i7.json", "-w", SMALL, "-p", "linux-4.5.json", NULL);
	run_tlbsim(&c, "-q", "-T", HASWELL_PATH, "-w", SMALL, "-p",
		   TLBSIM_SOURCE_DIR "/policies/linux-4.5.json", NULL);
	/* The default policy is linux-4.5. */
	run_tlbsim(&d, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&a, 0);
	expect_status(&b, 0);
	expect_status(&c, 0);
	expect_status(&d, 0);
	cr_expect_str_eq(b.out, a.out);
	cr_expect_str_eq(c.out, a.out);
	cr_expect_str_eq(d.out, a.out);
	run_clear(&a);
	run_clear(&b);
	run_clear(&c);
	run_clear(&d);
}

/* A relative path is taken from the working directory; the CSV names the
 * run by the file's "name" field, not by how it was given. */
Test(e2e_names, relative_path)
{
	char *text = NULL;
	cr_assert(g_file_get_contents(SMALL, &text, NULL, NULL));
	char *copy = tmp_path("copy.json");
	cr_assert(g_file_set_contents(copy, text, -1, NULL));
	struct run a, b;
	run_tlbsim(&a, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	run_tlbsim(&b, "-q", "-T", "haswell-i7", "-w", "./copy.json", NULL);
	expect_status(&a, 0);
	expect_status(&b, 0);
	cr_expect_str_eq(b.out, a.out);
	g_free(copy);
	g_free(text);
	run_clear(&a);
	run_clear(&b);
}

Test(e2e_names, workload_by_bundled_name_with_set)
{
	/* munmap.json as -t 2 -n 8 on an 8 MiB file: 8 MiB / 4 KiB / 8 munmaps. */
	struct table t;
	run_row(&t, "haswell-i7", "munmap", "linux-4.5", "1", "--set=workload.threads=2",
		"--set=workload.file_size=\"8M\"");
	cr_expect_str_eq(table_get(&t, 0, "workload"), "munmap");
	cr_expect_eq(table_u64(&t, 0, "threads"), 2);
	cr_expect_eq(table_u64(&t, 0, "op_count"), 8 * 1024 / 4 / 8);
	table_clear(&t);
}

/*
 * munmap.json's tail: tail_us defaults to tail_ms x 1000 (same run), and sets
 * tails that are not whole milliseconds: the phase is the munmaps plus the
 * tail, so 500 us more tail is exactly 500 us more phase.
 */
Test(e2e_names, munmap_tail_in_microseconds)
{
	struct run ms, us, half;
#define TAIL_RUN(r, tail)                                                                  \
	run_tlbsim(&(r), "-q", "-T", "haswell-i7", "-w", "munmap", "-p", "linux-4.5",          \
		   "--set=workload.threads=2", "--set=workload.file_size=\"8M\"", tail, NULL)
	TAIL_RUN(ms, "--set=workload.tail_ms=2");
	TAIL_RUN(us, "--set=workload.tail_us=2000");
	TAIL_RUN(half, "--set=workload.tail_us=2500");
#undef TAIL_RUN
	expect_status(&ms, 0);
	expect_status(&us, 0);
	expect_status(&half, 0);
	cr_expect_str_eq(us.out, ms.out);
	struct table a, b;
	table_parse(&a, ms.out);
	table_parse(&b, half.out);
	double longer = g_ascii_strtod(table_get(&b, 0, "phase_ns"), NULL) -
			g_ascii_strtod(table_get(&a, 0, "phase_ns"), NULL);
	cr_expect_eq(llround(longer * 1000), 500000000, "phase %.3f ns longer", longer);
	table_clear(&a);
	table_clear(&b);
	run_clear(&ms);
	run_clear(&us);
	run_clear(&half);
}

/* --------------------------------------------------------------------------
 * 9. Flush policy: SMT de-duplication and stale hits
 * ------------------------------------------------------------------------ */

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
	run_row(&core_plain, "haswell-i7", TOUCH_MUNMAP, "linux-4.5", "1", NULL, NULL);
	run_row(&core_dedup, "haswell-i7", TOUCH_MUNMAP, "linux-4.5-smt-dedup", "1", NULL, NULL);
	run_row(&thread_plain, "haswell-i7-smt-thread", TOUCH_MUNMAP, "linux-4.5", "1", NULL, NULL);
	run_row(&thread_dedup, "haswell-i7-smt-thread", TOUCH_MUNMAP, "linux-4.5-smt-dedup", "1",
		NULL, NULL);
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
	run_row(&core_dedup, "haswell-i7", TOUCH_MADVISE, "linux-4.5-smt-dedup", "1", NULL, NULL);
	run_row(&thread_plain, "haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5", "1", NULL,
		NULL);
	run_row(&thread_dedup, "haswell-i7-smt-thread", TOUCH_MADVISE, "linux-4.5-smt-dedup", "1",
		NULL, NULL);
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

/* --------------------------------------------------------------------------
 * The full munmap16 run (several seconds: once only)
 * ------------------------------------------------------------------------ */

Test(e2e_munmap16, haswell_i7_linux_4_5, .timeout = 300)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "munmap16", "-p", "linux-4.5", NULL);
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
	cr_expect_eq(table_u64(&t, 0, "op_count"), 4096);
	cr_expect_eq(flushes, 4096);
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

/* --------------------------------------------------------------------------
 * Interruption, wall-time budget, concurrent appends
 * ------------------------------------------------------------------------ */

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

/* --------------------------------------------------------------------------
 * Sweeps: tlbsim sweep, --emit-commands, --label
 * ------------------------------------------------------------------------ */

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

static void write_tmp(const char *name, const char *text)
{
	char *path = tmp_path(name);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	g_free(path);
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
 * The Slurm recipe of README: commands emitted with --append -o FILE, run in
 * any order one line at a time, then sorted on the run column, give the
 * sweep's CSV.
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

/* --------------------------------------------------------------------------
 * Timelines: --trace, --trace-window, --trace-max-events, --timeseries
 * ------------------------------------------------------------------------ */

/* The trace file @name parses as a Chrome trace object; g_free/cJSON_Delete. */
static cJSON *read_trace(const char *name)
{
	char *text = read_tmp(name);
	cJSON *json = cJSON_Parse(text);
	cr_assert_not_null(json, "%s is not JSON near %.60s", name, cJSON_GetErrorPtr());
	cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(json, "traceEvents")));
	g_free(text);
	return json;
}

static const cJSON *other_data(const cJSON *json, const char *key)
{
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(json, "otherData");
	cr_assert(cJSON_IsObject(other));
	return cJSON_GetObjectItemCaseSensitive(other, key);
}

/* Events named @name, a slice's end ("ph": "E") not counted. */
static unsigned trace_count(const cJSON *json, const char *name)
{
	unsigned n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, "traceEvents")) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		n += cJSON_IsString(item) && strcmp(item->valuestring, name) == 0 &&
		     cJSON_IsString(ph) && strcmp(ph->valuestring, "E") != 0;
	}
	return n;
}

Test(e2e_timelines, trace_and_timeseries_written_and_csv_unchanged)
{
	struct table plain, traced;
	run_row(&plain, "haswell-i7", SMALL, "linux-4.5", "1", NULL, NULL);
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.5", "--trace",
		   "run.json", "--timeseries", "series.csv", "--interval", "100000", NULL);
	expect_status(&r, 0);
	table_parse(&traced, r.out);
	/* Every column, events included: observing changes nothing. */
	for (unsigned i = 0; i < plain.nr_fields; i++)
		cr_expect_str_eq(table_get(&traced, 0, plain.header[i]),
				 table_get(&plain, 0, plain.header[i]), "column %s", plain.header[i]);
	expect_tmp_listing("run.json series.csv");
	cJSON *json = read_trace("run.json");
	cr_expect(cJSON_IsFalse(other_data(json, "truncated")));
	cr_expect_eq(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cr_expect_eq(trace_count(json, "thread_name"), 8);
	char *series = read_tmp("series.csv");
	cr_expect(g_str_has_prefix(series, "t_ns,cpu,metric,value\n"), "%.40s", series);
	cr_expect(strstr(series, ",ipis_received,") != NULL);
	g_free(series);
	cJSON_Delete(json);
	table_clear(&plain);
	table_clear(&traced);
	run_clear(&r);
}

Test(e2e_timelines, trace_window_keeps_its_interval)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--trace", "w.json",
		   "--trace-window", "100000:150000", NULL);
	expect_status(&r, 0);
	cJSON *json = read_trace("w.json");
	cr_expect_eq(other_data(json, "window_start_ns")->valuedouble, 100000);
	cr_expect_eq(other_data(json, "window_end_ns")->valuedouble, 150000);
	unsigned inside = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, "traceEvents")) {
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
		if (!ts)
			continue; /* metadata */
		cr_assert(ts->valuedouble >= 100.0 && ts->valuedouble <= 150.0, "%.3f",
			  ts->valuedouble);
		inside++;
	}
	cr_expect_gt(inside, 0);
	cr_expect_gt(trace_count(json, "munmap"), 0);
	cr_expect_lt(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cJSON_Delete(json);
	run_clear(&r);
}

Test(e2e_timelines, trace_max_events_says_it_was_cut)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--trace", "cut.json",
		   "--trace-max-events", "200", NULL);
	expect_status(&r, 0);
	cJSON *json = read_trace("cut.json");
	cr_expect(cJSON_IsTrue(other_data(json, "truncated")));
	cr_expect_eq(trace_count(json, "trace cut here"), 1);
	cr_expect_lt(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cJSON_Delete(json);
	run_clear(&r);
}

/* A bad timeline option: exit 2 before anything runs, a message naming the
 * option, no file. */
static void expect_bad_timeline(const char *needle, const char *a1, const char *a2,
				const char *a3, const char *a4)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "-o", "run.csv", a1, a2, a3, a4,
		   NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, needle) != NULL, "stderr lacks \"%s\": %s", needle, r.err);
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

Test(e2e_timelines, bad_options_exit_2_and_write_nothing)
{
	expect_bad_timeline("--interval", "--timeseries", "s.csv", "--interval", "0");
	expect_bad_timeline("--interval", "--timeseries", "s.csv", "--interval", "-5");
	expect_bad_timeline("--interval", "--timeseries", "s.csv", NULL, NULL);
	expect_bad_timeline("--timeseries", "--interval", "1000", NULL, NULL);
	expect_bad_timeline("END must be after START", "--trace", "t.json", "--trace-window",
			    "5:3");
	expect_bad_timeline("START:END", "--trace", "t.json", "--trace-window", "soon");
	expect_bad_timeline("START:END", "--trace", "t.json", "--trace-window", "1:2:3");
	expect_bad_timeline("need --trace", "--trace-window", "1:2", NULL, NULL);
	expect_bad_timeline("need --trace", "--trace-max-events", "10", NULL, NULL);
	expect_bad_timeline("--trace-max-events", "--trace", "t.json", "--trace-max-events",
			    "-1");
	expect_bad_timeline("no-such-dir/t.json", "--trace", "no-such-dir/t.json", NULL, NULL);
	expect_bad_timeline("no-such-dir/s.csv", "--timeseries", "no-such-dir/s.csv", "--interval",
			    "10");
}

/* A run that fails leaves neither file, nor a temporary one. */
Test(e2e_timelines, failed_run_leaves_no_trace)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-events", "1000", "--trace",
		   "t.json", "--timeseries", "s.csv", "--interval", "1000", NULL);
	expect_status(&r, 4);
	expect_tmp_listing("");
	run_clear(&r);
}

/* Bug 5, frozen twice: a spin whose resume an interrupt (irq-quiet) or a
 * preemption (preempt-quiet) held while its flag was cleared must not come
 * back quiet, or the others run ahead past the store its end leads to.
 * Since session 5 (the LRU's cycles moved its timing) irq-quiet no longer
 * fails with its fix alone removed, and 120 000 property cases without that
 * fix found nothing: that fix (sched_revoke_quiet() reaching the resume
 * sched_irq_enter() saved) is now pinned by test_sched.c's
 * sched::revoke_reaches_a_quiet_resume_held_by_an_irq, which drives the
 * interrupt and the revoke directly and does not depend on model timing;
 * irq-quiet stays here as an identity case.  preempt-quiet still fails
 * without its own fix. */
Test(e2e_determinism, run_ahead_revokes_a_held_quiet_resume)
{
	expect_run_ahead_identity("runahead-irq-quiet", "884458049");
	expect_run_ahead_identity("runahead-preempt-quiet", "333078541");
}

/* Bug 6, frozen: stepping takes a sibling's access after a compute only once
 * the quiet sibling's earlier accesses have reached the shared walker. */
Test(e2e_determinism, stepping_keeps_siblings_in_time_order)
{
	expect_run_ahead_identity("stepping-sibling-order", "635367472");
}

/* --------------------------------------------------------------------------
 * Robustness of the command line: outputs into FIFOs, devices and links,
 * failed writes, numbers, repeated options, --set errors, file errors
 * ------------------------------------------------------------------------ */

TestSuite(e2e_robustness, .init = tmp_dir_make, .fini = tmp_dir_remove);

static void expect_node(const char *name, bool (*is_kind)(mode_t), const char *kind)
{
	char *path = tmp_path(name);
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0, "%s is gone", name);
	cr_expect(is_kind(st.st_mode), "%s is no longer a %s", name, kind);
	g_free(path);
}

static bool is_fifo(mode_t mode)
{
	return S_ISFIFO(mode);
}

static bool is_link(mode_t mode)
{
	return S_ISLNK(mode);
}

static bool is_char_device(mode_t mode)
{
	return S_ISCHR(mode);
}

/* Open the FIFO @name for reading, without waiting for a writer. */
static int open_fifo_reader(const char *name)
{
	char *path = tmp_path(name);
	cr_assert_eq(mkfifo(path, 0600), 0);
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(fd, 0);
	g_free(path);
	return fd;
}

/* What came through a FIFO (less than a pipe's 64 KiB, so the writer never waited). */
static char *read_fifo(int fd)
{
	GString *got = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		g_string_append_len(got, buf, n);
	close(fd);
	return g_string_free(got, FALSE);
}

/*
 * --trace, --timeseries and --per-cpu naming FIFOs write into them, like -o:
 * no file is renamed over the FIFO (as root, over a device such as
 * /dev/null), and no temporary file is left beside it.
 */
Test(e2e_robustness, trace_timeseries_per_cpu_into_fifos)
{
	int trace = open_fifo_reader("trace.fifo");
	int series = open_fifo_reader("series.fifo");
	int per_cpu = open_fifo_reader("cpus.fifo");
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--trace", "trace.fifo", "--timeseries",
		   "series.fifo", "--interval", "1000", "--per-cpu", "cpus.fifo", NULL);
	expect_status(&r, 0);
	char *trace_text = read_fifo(trace), *series_text = read_fifo(series),
	     *per_cpu_text = read_fifo(per_cpu);
	cr_expect(g_str_has_prefix(trace_text, "{\"traceEvents\":["), "%s", trace_text);
	cr_expect(g_str_has_suffix(trace_text, "}}\n"), "the whole trace came through");
	cr_expect(g_str_has_prefix(series_text, "t_ns,cpu,metric,value\n"), "%s", series_text);
	cr_expect(g_str_has_prefix(per_cpu_text, "topology,"), "%s", per_cpu_text);
	expect_node("trace.fifo", is_fifo, "FIFO");
	expect_node("series.fifo", is_fifo, "FIFO");
	expect_node("cpus.fifo", is_fifo, "FIFO");
	expect_tmp_listing("cpus.fifo series.fifo trace.fifo");
	g_free(trace_text);
	g_free(series_text);
	g_free(per_cpu_text);
	run_clear(&r);
}

/* Through a symbolic link, the file it names is replaced and the link stays. */
Test(e2e_robustness, trace_timeseries_per_cpu_through_symlinks)
{
	const char *const names[][2] = {{"t.json", "t-real.json"},
					{"s.csv", "s-real.csv"},
					{"p.csv", "p-real.csv"}};
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		write_tmp(names[i][1], "old\n");
		char *link = tmp_path(names[i][0]);
		cr_assert_eq(symlink(names[i][1], link), 0);
		g_free(link);
	}
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--trace", "t.json", "--timeseries",
		   "s.csv", "--interval", "1000", "--per-cpu", "p.csv", NULL);
	expect_status(&r, 0);
	const char *const starts[] = {"{\"traceEvents\":[", "t_ns,cpu,metric,value\n", "topology,"};
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		expect_node(names[i][0], is_link, "symbolic link");
		char *text = read_tmp(names[i][1]);
		cr_expect(g_str_has_prefix(text, starts[i]), "%s: %s", names[i][1], text);
		g_free(text);
	}
	expect_tmp_listing("p-real.csv p.csv s-real.csv s.csv t-real.json t.json");
	run_clear(&r);
}

/*
 * A device node is written into, not replaced.  The node is made here, a copy
 * of /dev/null (1, 3), so that a regression replaces only the copy; making it
 * needs root, and the test is skipped without.
 */
Test(e2e_robustness, trace_into_a_device_node)
{
	char *quoted = g_shell_quote(tmp_dir);
	char *cmd = g_strdup_printf("mknod %s/null c 1 3 2>/dev/null", quoted);
	int status = system(cmd);
	g_free(cmd);
	g_free(quoted);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		cr_skip_test("mknod needs root");
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--trace", "null", "--timeseries",
		   "null", "--interval", "1000", "--per-cpu", "null", "-o", "null", NULL);
	expect_status(&r, 0);
	expect_node("null", is_char_device, "character device");
	expect_tmp_listing("null");
	run_clear(&r);
}

/*
 * An append that fails part-way (here the file-size limit, as a full disk
 * would) leaves the file as it was, not with half a row, and says why with
 * the real errno and the file's name.
 */
Test(e2e_robustness, failed_append_leaves_the_file_as_it_was)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--append", "-o", "all.csv", NULL);
	expect_status(&r, 0);
	run_clear(&r);
	char *before = read_tmp("all.csv");
	/* Room for a few bytes more: the row is cut short by the limit. */
	struct child_limits limits = {.file_size = strlen(before) + 16};
	run_tlbsim_limited(&r, &limits,
			   (const char *const[]){"-T", TINY, "-w", ACCESS_ONLY, "-q", "--append",
						 "-o", "all.csv", NULL});
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "cannot append to all.csv: File too large") != NULL, "%s",
		  r.err);
	char *after = read_tmp("all.csv");
	cr_expect_str_eq(after, before, "a partial row was left behind");
	g_free(after);
	g_free(before);
	run_clear(&r);
}

/* A trace that cannot be written: the message names the file and the errno,
 * and no trace (nor a temporary file) is left. */
Test(e2e_robustness, failed_trace_write_names_the_file)
{
	struct child_limits limits = {.file_size = 1000}; /* the trace is a few KiB */
	struct run r;
	run_tlbsim_limited(&r, &limits,
			   (const char *const[]){"-T", TINY, "-w", ACCESS_ONLY, "-q", "--trace",
						 "t.json", NULL});
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "tlbsim: cannot write t.json: File too large") != NULL, "%s",
		  r.err);
	cr_expect_str_empty(r.out);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_robustness, failed_write_to_stdout_says_so)
{
	struct stat st;
	if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode))
		cr_skip_test("no /dev/full");
	struct child_limits limits = {.stdout_full = true};
	struct run r;
	run_tlbsim_limited(&r, &limits,
			   (const char *const[]){"-T", TINY, "-w", ACCESS_ONLY, "-q", NULL});
	expect_status(&r, 2);
	cr_expect_str_eq(r.err, "tlbsim: cannot write the CSV to standard output: No space left "
				"on device\n");
	run_clear(&r);
}

/* Numbers are decimal: "010" is ten (GLib's parser took it for octal 8). */
Test(e2e_robustness, numbers_are_decimal)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--seed", "010", NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	cr_expect_eq(table_u64(&t, 0, "seed"), 10);
	table_clear(&t);
	run_clear(&r);

	run_tlbsim(&r, "-T", TINY, "-w", SMALL, "-q", "--max-events", "010", NULL);
	expect_status(&r, 4);
	cr_expect(strstr(r.err, "stopped after 10 events") != NULL, "%s", r.err);
	run_clear(&r);
}

Test(e2e_robustness, bad_numbers_are_refused)
{
	const char *const cases[][3] = {
		{"--seed", "0x10", "--seed takes a non-negative decimal integer, not \"0x10\""},
		{"--seed", "1e3", "--seed takes a non-negative decimal integer, not \"1e3\""},
		{"--max-events", "99999999999999999999", "(at most 9223372036854775807)"},
		{"--max-wall-seconds", "nan", "--max-wall-seconds takes a non-negative decimal "
					      "number of seconds (0: no limit), not \"nan\""},
		{"--max-wall-seconds", "inf", "not \"inf\""},
		{"--max-wall-seconds", "-1", "not \"-1\""},
		{"--max-wall-seconds", "0x1p3", "not \"0x1p3\""},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct run r;
		run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", cases[i][0], cases[i][1],
			   NULL);
		expect_status(&r, 2);
		cr_expect(strstr(r.err, cases[i][2]) != NULL, "%s %s: %s", cases[i][0],
			  cases[i][1], r.err);
		cr_expect_str_empty(r.out);
		run_clear(&r);
	}
}

/* An option of one value given twice, or one --set key twice: refused, not
 * the last one silently winning. */
Test(e2e_robustness, repeated_options_are_refused)
{
	const char *const *const cases[] = {
		(const char *const[]){"-T", TINY, "-T", "haswell-i7", NULL},
		(const char *const[]){"-T", TINY, "--seed", "1", "--seed", "2", NULL},
		(const char *const[]){"-T", TINY, "-o", "a.csv", "--output", "b.csv", NULL},
		(const char *const[]){"-T", TINY, "--set", "workload.threads=2", "--set",
				      "workload.params.threads=3", NULL},
		(const char *const[]){"sweep", "-T", TINY, "--vary", "workload.tail_ms=1,2",
				      "--set", "topology.costs.invlpg=1", "--set",
				      "topology.costs.invlpg=2", NULL},
	};
	static const char *const messages[] = {
		"--topology is given twice (the second time as \"haswell-i7\")",
		"--seed is given twice (the second time as \"2\")",
		"--output is given twice (the second time as \"b.csv\")",
		"--set workload.params.threads=3: \"workload.params.threads\" is already set by "
		"--set workload.threads=2",
		"--set topology.costs.invlpg=2: \"topology.costs.invlpg\" is already set by --set "
		"topology.costs.invlpg=1",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		GPtrArray *args = g_ptr_array_new();
		for (const char *const *a = cases[i]; *a; a++)
			g_ptr_array_add(args, (gpointer)*a);
		const char *const rest[] = {"-w", ACCESS_ONLY, "-q", NULL};
		for (const char *const *a = rest; *a; a++)
			g_ptr_array_add(args, (gpointer)*a);
		g_ptr_array_add(args, NULL);
		struct run r;
		run_tlbsim_argv(&r, (const char *const *)args->pdata);
		expect_status(&r, 2);
		cr_expect(strstr(r.err, messages[i]) != NULL, "case %zu: %s", i, r.err);
		cr_expect_str_empty(r.out);
		g_ptr_array_free(args, TRUE);
		run_clear(&r);
	}
	expect_tmp_listing("");
}

/* Two outputs naming one file (by name, another spelling or a link): one
 * would replace the other, so the run is refused and writes nothing. */
Test(e2e_robustness, two_outputs_to_one_file_are_refused)
{
	write_tmp("real.csv", "old\n");
	char *link = tmp_path("link.csv");
	cr_assert_eq(symlink("real.csv", link), 0);
	g_free(link);
	const char *const cases[][4] = {
		{"--per-cpu", "same.csv", "-o", "same.csv"},
		{"--trace", "./same.json", "--output", "same.json"},
		{"--per-cpu", "link.csv", "-o", "real.csv"},
		{"--timeseries", "x.csv", "--per-cpu", "sub/../x.csv"},
	};
	const char *const messages[] = {
		"--output same.csv and --per-cpu same.csv are the same file",
		"--output same.json and --trace ./same.json are the same file",
		"--output real.csv and --per-cpu link.csv are the same file",
		"--per-cpu sub/../x.csv and --timeseries x.csv are the same file",
	};
	char *sub = tmp_path("sub");
	cr_assert_eq(g_mkdir(sub, 0700), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct run r;
		run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "--interval", "1000",
			   cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL);
		expect_status(&r, 2);
		cr_expect(strstr(r.err, messages[i]) != NULL, "case %zu: %s", i, r.err);
		run_clear(&r);
	}
	char *text = read_tmp("real.csv");
	cr_expect_str_eq(text, "old\n");
	g_free(text);
	expect_tmp_listing("link.csv real.csv sub");
	g_rmdir(sub);
	g_free(sub);
}

/* workload.params.NAME is checked like workload.NAME: a misspelt name would
 * silently do nothing (and give a sweep identical rows). */
Test(e2e_robustness, misspelt_parameter_in_the_long_form)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", SMALL, "--set", "workload.params.threadz=3", NULL);
	expect_input_error(&r, "--set workload.params.threadz=3: the workload has no parameter "
			   "\"threadz\" (did you mean \"threads\"?)", NULL);
	run_clear(&r);
	run_tlbsim(&r, "sweep", "-T", TINY, "-w", SMALL, "--vary", "workload.params.threadz=1,2",
		   NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "did you mean \"threads\"") != NULL, "%s", r.err);
	cr_expect_str_empty(r.out);
	run_clear(&r);
}

/* A value the file's reader refuses came from the command line: the message
 * starts with the option, then says where in the file it went. */
Test(e2e_robustness, set_error_names_the_set)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", SMALL, "--set", "topology.costs.invlpg=5", "--set",
		   "topology.costs.ipi_latency.sockett=5", NULL);
	expect_input_error(&r, "tlbsim: --set topology.costs.ipi_latency.sockett=5: " TINY
			   ": $.costs.ipi_latency: unknown key \"sockett\" (did you mean "
			   "\"socket\"?)", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", TINY, "-w", SMALL, "--set", "workload.threads=abc", NULL);
	expect_input_error(&r, "tlbsim: --set workload.threads=abc: ", "$.params.threads", NULL);
	run_clear(&r);
}

/* Input names that are paths, or look like files, get file errors. */
Test(e2e_robustness, file_errors_say_what_is_wrong)
{
	char *dir = tmp_path("somedir");
	cr_assert_eq(g_mkdir(dir, 0700), 0);
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", "somedir", NULL);
	expect_input_error(&r, "tlbsim: somedir: is a directory", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", TINY, "-w", "./somedir", NULL);
	expect_input_error(&r, "tlbsim: ./somedir: is a directory", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", TINY, "-w", "x.json", NULL);
	expect_input_error(&r, "tlbsim: x.json: no such file, nor a bundled workload", NULL);
	run_clear(&r);
	/* An output that is a directory, and one in a directory that cannot hold
	 * files: the real reason, not "no such directory". */
	run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "-o", "somedir", NULL);
	expect_input_error(&r, "tlbsim: cannot write somedir: Is a directory", NULL);
	run_clear(&r);
	if (g_file_test("/proc/self", G_FILE_TEST_IS_DIR)) {
		run_tlbsim(&r, "-T", TINY, "-w", ACCESS_ONLY, "-q", "-o", "/proc/x.csv", NULL);
		expect_input_error(&r, "tlbsim: cannot write /proc/x.csv: cannot create a "
				   "temporary file in /proc: ", NULL);
		run_clear(&r);
	}
	g_rmdir(dir);
	g_free(dir);
}
