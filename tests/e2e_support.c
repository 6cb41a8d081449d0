/*
 * The helpers the end-to-end tests share (e2e_support.h says what each does
 * and asserts).
 */
#define _POSIX_C_SOURCE 200809L /* setrlimit(), dup2(), kill(), getrusage() */
#include "e2e_support.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include "support.h"
#include "tlbsim/cli/report.h"

/* --------------------------------------------------------------------------
 * The scratch directory
 * ------------------------------------------------------------------------ */

char *tmp_dir;

void tmp_dir_make(void)
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

void tmp_dir_remove(void)
{
	if (tmp_dir)
		remove_tree(tmp_dir);
	g_free(tmp_dir);
	tmp_dir = NULL;
}

char *tmp_path(const char *name)
{
	return g_build_filename(tmp_dir, name, NULL);
}

char *read_tmp(const char *name)
{
	char *path = tmp_path(name);
	char *text = NULL;
	GError *error = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, &error), "%s",
		  error ? error->message : "?");
	g_free(path);
	return text;
}

void write_tmp(const char *name, const char *text)
{
	char *path = tmp_path(name);
	cr_assert(g_file_set_contents(path, text, -1, NULL));
	g_free(path);
}

void expect_tmp_listing(const char *expected)
{
	char *list = support_dir_listing(tmp_dir);
	cr_expect_str_eq(list, expected, "scratch directory holds \"%s\"", list);
	g_free(list);
}

/* --------------------------------------------------------------------------
 * Running the program
 * ------------------------------------------------------------------------ */

void run_clear(struct run *r)
{
	g_free(r->out);
	g_free(r->err);
	memset(r, 0, sizeof(*r));
}

static void limit_child(gpointer data)
{
	const struct child_limits *limits = data;
	if (limits->file_size) {
		struct rlimit rl = {limits->file_size, limits->file_size};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	if (limits->data_size) {
		struct rlimit rl = {limits->data_size, limits->data_size};
		setrlimit(RLIMIT_DATA, &rl);
	}
	if (limits->stdout_full) {
		int fd = open("/dev/full", O_WRONLY);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
	}
}

void run_tlbsim_limited(struct run *r, const struct child_limits *limits, const char *const *args)
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

void run_tlbsim_argv(struct run *r, const char *const *args)
{
	run_tlbsim_limited(r, NULL, args);
}

void run_tlbsim_sets(struct run *r, const char *const *args, const char *const *sets)
{
	GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, g_strdup(*a));
	for (const char *const *s = sets; *s; s++)
		g_ptr_array_add(argv, g_strdup_printf("--set=%s", *s));
	g_ptr_array_add(argv, NULL);
	run_tlbsim_argv(r, (const char *const *)argv->pdata);
	g_ptr_array_free(argv, TRUE);
}

void run_tlbsim(struct run *r, const char *arg, ...)
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

void child_start(struct child *c, const char *const *env, const char *const *args)
{
	GPtrArray *argv = g_ptr_array_new();
	g_ptr_array_add(argv, (gpointer)TLBSIM_BINARY);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (gpointer)*a);
	g_ptr_array_add(argv, NULL);
	char **envp = g_environ_unsetenv(g_get_environ(), "TLBSIM_DATADIR");
	for (const char *const *e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char *name = g_strndup(*e, (gsize)(eq - *e));
		envp = g_environ_setenv(envp, name, eq + 1, TRUE);
		g_free(name);
	}
	GError *error = NULL;
	memset(c, 0, sizeof(*c));
	gboolean spawned = g_spawn_async_with_pipes(
		tmp_dir, (char **)argv->pdata, envp,
		G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &c->pid, NULL,
		NULL, &c->err_fd, &error);
	g_ptr_array_free(argv, TRUE);
	g_strfreev(envp);
	cr_assert(spawned, "cannot run %s: %s", TLBSIM_BINARY, error ? error->message : "?");
}

long child_rss_kb(const struct child *c)
{
	char *path = g_strdup_printf("/proc/%d/statm", (int)c->pid);
	char *text = NULL;
	long pages = -1, resident = -1;
	if (g_file_get_contents(path, &text, NULL, NULL) &&
	    sscanf(text, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	g_free(text);
	g_free(path);
	/* A zombie (exited, not yet reaped) has no pages left. */
	return resident > 0 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

bool child_wait_rss(const struct child *c, long kb, double timeout)
{
	gint64 end = g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC);
	while (g_get_monotonic_time() < end) {
		long rss = child_rss_kb(c);
		if (rss < 0)
			return false;
		if (rss >= kb)
			return true;
		g_usleep(2000);
	}
	return false;
}

bool child_wait(struct child *c, double timeout)
{
	gint64 end = g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC);
	int wait_status = 0;
	bool in_time = true;
	while (waitpid(c->pid, &wait_status, WNOHANG) == 0) {
		if (g_get_monotonic_time() > end) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &wait_status, 0);
			in_time = false;
			break;
		}
		g_usleep(5000);
	}
	c->status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
	GString *err = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(c->err_fd, buf, sizeof(buf))) > 0)
		g_string_append_len(err, buf, n);
	close(c->err_fd);
	c->err = g_string_free(err, FALSE);
	g_spawn_close_pid(c->pid);
	return in_time;
}

void child_clear(struct child *c)
{
	g_free(c->err);
	memset(c, 0, sizeof(*c));
}

long children_max_rss_kb(void)
{
	struct rusage usage;
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &usage), 0);
	return usage.ru_maxrss;
}

void expect_status(const struct run *r, int status)
{
	cr_assert_eq(r->status, status, "exit status %d, expected %d; stderr:\n%s", r->status,
		     status, r->err);
}

void expect_input_error(const struct run *r, ...)
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

/* --------------------------------------------------------------------------
 * CSV
 * ------------------------------------------------------------------------ */

void table_parse(struct table *t, const char *text)
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

void table_clear(struct table *t)
{
	g_strfreev(t->header);
	if (t->rows)
		g_ptr_array_free(t->rows, TRUE);
	memset(t, 0, sizeof(*t));
}

int table_column(const struct table *t, const char *name)
{
	for (unsigned i = 0; i < t->nr_fields; i++)
		if (strcmp(t->header[i], name) == 0)
			return (int)i;
	return -1;
}

const char *table_get(const struct table *t, unsigned row, const char *name)
{
	int col = table_column(t, name);
	cr_assert_geq(col, 0, "no column %s", name);
	cr_assert_lt(row, t->rows->len);
	return ((char **)g_ptr_array_index(t->rows, row))[col];
}

uint64_t table_u64(const struct table *t, unsigned row, const char *name)
{
	const char *s = table_get(t, row, name);
	guint64 v = 0;
	GError *error = NULL;
	cr_assert(g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, &v, &error),
		  "column %s: \"%s\": %s", name, s, error ? error->message : "?");
	return v;
}

char *expected_header(void)
{
	return g_strjoinv(",", (char **)report_columns());
}

void run_row(struct table *t, const char *topology, const char *workload, const char *policy,
	     const char *seed, ...)
{
	struct run r;
	GPtrArray *args = g_ptr_array_new();
	const char *fixed[] = {"-q", "-T", topology, "-w", workload, "-p", policy, "--seed", seed};
	for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++)
		g_ptr_array_add(args, (gpointer)fixed[i]);
	va_list ap;
	va_start(ap, seed);
	for (const char *a; (a = va_arg(ap, const char *));)
		g_ptr_array_add(args, (gpointer)a);
	va_end(ap);
	g_ptr_array_add(args, NULL);
	run_tlbsim_argv(&r, (const char *const *)args->pdata);
	g_ptr_array_free(args, TRUE);
	expect_status(&r, 0);
	table_parse(t, r.out);
	cr_assert_eq(t->rows->len, 1, "expected one row:\n%s", r.out);
	run_clear(&r);
}

void run_small(struct table *t, const char *topology, const char *policy)
{
	run_row(t, topology, SMALL, policy, "1", NULL);
}

bool matches(const char *pattern, const char *s)
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
    "latr_sweep_ns",
    NULL,
};
static const char *const text_columns[] = {"topology", "workload", "policy", "op", NULL};

void expect_field_formats(const struct table *t)
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
			else if (strcmp(name, "tlbsim_version") == 0)
				pattern = "^[0-9]+\\.[0-9]+\\.[0-9]+ \\([0-9a-z-]+\\)$";
			cr_expect(matches(pattern, v), "row %u column %s: \"%s\" does not match %s",
				  row, name, v, pattern);
		}
	}
}

/* tlb_flush_events by reason (counters.h COUNTERS_FLUSH_REASONS): the reasons
 * add up to the events, and each reason's full flushes are some of it. */
static void expect_flush_reasons(const struct table *t, const char *what)
{
	static const char *const reasons[] = {
	    "tlb_flush_task_switch", "tlb_remote_shootdown", "tlb_local_shootdown",
	    "tlb_local_mm_shootdown", "tlb_remote_send_ipi", "tlb_remote_wrong_cpu",
	    "tlb_broadcast",
	};
	uint64_t sum = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(reasons); i++) {
		char *full = g_strconcat(reasons[i], "_full", NULL);
		uint64_t n = table_u64(t, 0, reasons[i]);
		cr_expect_leq(table_u64(t, 0, full), n, "%s: %s <= %s", what, full, reasons[i]);
		sum += n;
		g_free(full);
	}
	cr_expect_eq(sum, table_u64(t, 0, "tlb_flush_events"),
		     "%s: the reasons add up to tlb_flush_events", what);
}

void expect_identities(const struct table *t, const char *what)
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
	expect_flush_reasons(t, what);
}
