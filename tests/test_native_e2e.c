/*
 * End-to-end tests of tlbsim-native: a shipped workload shrunk with --set
 * runs for real and writes tlbsim's header and one row whose op_count is
 * the program's; with a writable tracefs (root) the tlb_flush columns are
 * filled and add up, and tracefs is left as it was; options and keys with
 * no native meaning exit 2 with a message and write nothing.
 */
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "tlbsim/cli/report.h"

#ifndef TLBSIM_NATIVE_BINARY
#error "TLBSIM_NATIVE_BINARY must be the absolute path of tlbsim-native"
#endif

#define TLB_ENABLE "/sys/kernel/tracing/events/tlb/tlb_flush/enable"

struct result {
	int status;
	char *out, *err;
};

/* Run tlbsim-native with @args (NULL-terminated) in @dir. */
static void run(struct result *r, const char *dir, const char *const *args)
{
	GPtrArray *argv = g_ptr_array_new();
	g_ptr_array_add(argv, (gpointer)TLBSIM_NATIVE_BINARY);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (gpointer)*a);
	g_ptr_array_add(argv, NULL);
	GError *error = NULL;
	int wait = 0;
	cr_assert(g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
			       &r->out, &r->err, &wait, &error),
		  "%s", error ? error->message : "");
	r->status = WIFEXITED(wait) ? WEXITSTATUS(wait) : 128;
	g_ptr_array_free(argv, TRUE);
}

static void result_clear(struct result *r)
{
	g_free(r->out);
	g_free(r->err);
}

/* @column of the CSV @text's one row (header line + row line). */
static char *column(const char *text, const char *name)
{
	char **lines = g_strsplit(text, "\n", -1);
	cr_assert_geq(g_strv_length(lines), 2, "%s", text);
	char **h = g_strsplit(lines[0], ",", -1), **v = g_strsplit(lines[1], ",", -1);
	cr_assert_eq(g_strv_length(h), g_strv_length(v));
	char *value = NULL;
	for (unsigned i = 0; h[i]; i++)
		if (strcmp(h[i], name) == 0)
			value = g_strdup(v[i]);
	g_strfreev(h);
	g_strfreev(v);
	g_strfreev(lines);
	cr_assert_not_null(value, "no column %s", name);
	return value;
}

static uint64_t number(const char *text, const char *name)
{
	char *v = column(text, name);
	cr_assert(*v, "%s is empty", name);
	uint64_t n = g_ascii_strtoull(v, NULL, 10);
	g_free(v);
	return n;
}

/* 2M / 4K / 8 pages = 64 munmaps by main, one reader, a 1 ms tail. */
#define SMALL_MUNMAP                                                                               \
	"-w", "munmap", "--set", "workload.file_size=2M", "--set", "workload.threads=1", "--set",  \
	    "workload.tail_ms=1", "-q"

Test(native_e2e, munmap_row)
{
	char *dir = g_dir_make_tmp("native-XXXXXX", NULL);
	struct result r;
	const char *args[] = {SMALL_MUNMAP, "--no-trace", "--label", "run=3",
			      "-o",         "out.csv",    NULL};
	run(&r, dir, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *path = g_build_filename(dir, "out.csv", NULL), *csv = NULL;
	cr_assert(g_file_get_contents(path, &csv, NULL, NULL));
	const char *const labels[] = {"run", NULL};
	GString *header = g_string_new(NULL);
	report_csv_header(header, labels, false);
	cr_assert(g_str_has_prefix(csv, header->str), "tlbsim's header:\n%s", csv);
	cr_assert_eq(number(csv, "op_count"), 64);
	cr_assert_eq(number(csv, "run"), 3);
	cr_assert_eq(number(csv, "cpus"), (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	char *topology = column(csv, "topology"), *policy = column(csv, "policy"),
	     *events = column(csv, "tlb_flush_events"), *misses = column(csv, "tlb_misses");
	cr_assert_str_eq(topology, "native");
	cr_assert(g_str_has_prefix(policy, "linux-"), "%s", policy);
	cr_assert_str_eq(events, "", "--no-trace leaves the trace columns empty");
	cr_assert_str_eq(misses, "", "no TLB miss is measured natively");
	cr_assert_gt(number(csv, "op_ns_mean"), 0);
	g_free(topology);
	g_free(policy);
	g_free(events);
	g_free(misses);
	g_string_free(header, TRUE);
	g_free(csv);
	g_unlink(path);
	g_free(path);
	g_rmdir(dir);
	g_free(dir);
	result_clear(&r);
}

/* Flushes per reason add up to the events, and munmaps of present pages
 * flush at least once each. */
static void expect_trace_sums(const char *csv)
{
	static const char *const reasons[] = {"tlb_flush_task_switch", "tlb_remote_shootdown",
					      "tlb_local_shootdown",   "tlb_local_mm_shootdown",
					      "tlb_remote_send_ipi",   "tlb_remote_wrong_cpu"};
	uint64_t sum = 0;
	for (unsigned i = 0; i < G_N_ELEMENTS(reasons); i++) {
		char *full = g_strconcat(reasons[i], "_full", NULL);
		cr_assert_leq(number(csv, full), number(csv, reasons[i]));
		sum += number(csv, reasons[i]);
		g_free(full);
	}
	cr_assert_eq(sum, number(csv, "tlb_flush_events"));
	cr_assert_geq(number(csv, "tlb_local_mm_shootdown") + number(csv, "tlb_remote_send_ipi"),
		      64, "%s", csv);
}

Test(native_e2e, traced_when_tracefs_is_writable)
{
	if (access(TLB_ENABLE, W_OK) != 0)
		cr_skip_test("no writable tracefs here (%s): the trace part needs root",
			     TLB_ENABLE);
	char *before = NULL;
	cr_assert(g_file_get_contents(TLB_ENABLE, &before, NULL, NULL));
	struct result r;
	const char *args[] = {SMALL_MUNMAP, "--per-cpu", "cpus.csv", NULL};
	char *dir = g_dir_make_tmp("native-XXXXXX", NULL);
	run(&r, dir, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	expect_trace_sums(r.out);
	char *after = NULL, *path = g_build_filename(dir, "cpus.csv", NULL), *cpus = NULL;
	cr_assert(g_file_get_contents(TLB_ENABLE, &after, NULL, NULL));
	cr_assert_str_eq(after, before,
			 "the machine's event enable is untouched (an instance traces)");
	cr_assert(g_file_get_contents(path, &cpus, NULL, NULL));
	char **lines = g_strsplit(cpus, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 2 + (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	g_strfreev(lines);
	g_unlink(path);
	g_rmdir(dir);
	g_free(path);
	g_free(cpus);
	g_free(dir);
	g_free(before);
	g_free(after);
	result_clear(&r);
}

/* A failed run leaves no output in @dir; removes @dir (g_free'd). */
static void expect_nothing_written(char *dir)
{
	char *path = g_build_filename(dir, "out.csv", NULL);
	cr_assert_not(g_file_test(path, G_FILE_TEST_EXISTS), "nothing written");
	g_free(path);
	g_rmdir(dir);
	g_free(dir);
}

/* A ring buffer too small for the run's events: exit 1, nothing written. */
Test(native_e2e, lost_events_fail)
{
	if (access(TLB_ENABLE, W_OK) != 0)
		cr_skip_test("no writable tracefs here (%s): the trace part needs root",
			     TLB_ENABLE);
	char *dir = g_dir_make_tmp("native-XXXXXX", NULL);
	struct result r;
	/* tlb_flush2, 1 thread, 8000 madvise+fault pairs: over 8000 flushes on
	 * its CPU, some 250 KiB of events against 64 KiB. */
	const char *args[] = {"-w",      "tlb_flush2",
			      "--set",   "workload.threads=1",
			      "--set",   "workload.iterations=8000",
			      "-q",      "--trace-buffer-kb",
			      "64",      "-o",
			      "out.csv", NULL};
	run(&r, dir, args);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "ring buffer lost") && strstr(r.err, "raise --trace-buffer-kb"),
		  "%s", r.err);
	expect_nothing_written(dir);
	result_clear(&r);
}

static void expect_error(const char *const *args, const char *want)
{
	char *dir = g_dir_make_tmp("native-XXXXXX", NULL);
	struct result r;
	run(&r, dir, args);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, want), "%s", r.err);
	cr_assert(g_str_has_prefix(r.err, "tlbsim-native: "), "%s", r.err);
	expect_nothing_written(dir);
	result_clear(&r);
}

Test(native_e2e, errors)
{
	const char *topology[] = {"-w", "munmap",  "--set", "topology.clock_ghz=3",
				  "-o", "out.csv", NULL};
	expect_error(topology, "--set topology.clock_ghz=3: only workload.* keys apply natively");
	const char *key[] = {"-w", "munmap", "--set", "workload.threadz=2", "-o", "out.csv", NULL};
	expect_error(key, "did you mean \"threads\"");
	const char *option[] = {"-w", "munmap", "--bogus", NULL};
	expect_error(option, "--bogus");
	const char *none[] = {"-o", "out.csv", NULL};
	expect_error(none, "--workload is required");
	const char *name[] = {"-w", "munmapp", "-o", "out.csv", NULL};
	expect_error(name, "munmap");
}

/* The first line of file @name in @dir (g_free). */
static char *first_line(const char *dir, const char *name)
{
	char *path = g_build_filename(dir, name, NULL), *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
	char *line = g_strndup(text, strcspn(text, "\n"));
	g_unlink(path);
	g_free(path);
	g_free(text);
	return line;
}

Test(native_e2e, headers_are_tlbsims)
{
	char *dir = g_dir_make_tmp("native-XXXXXX", NULL);
	char *argv[] = {(char *)TLBSIM_BINARY,
			"-T",
			"haswell-i7",
			"-w",
			"munmap",
			"--set",
			"workload.file_size=2M",
			"--set",
			"workload.threads=1",
			"-q",
			"-o",
			"sim.csv",
			"--per-cpu",
			"sim-cpus.csv",
			NULL};
	int wait = 0;
	cr_assert(
	    g_spawn_sync(dir, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &wait, NULL));
	cr_assert(WIFEXITED(wait) && WEXITSTATUS(wait) == 0);
	struct result r;
	const char *args[] = {SMALL_MUNMAP, "--no-trace",      "-o", "native.csv",
			      "--per-cpu",  "native-cpus.csv", NULL};
	run(&r, dir, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *sim = first_line(dir, "sim.csv"), *native = first_line(dir, "native.csv");
	char *sim_cpus = first_line(dir, "sim-cpus.csv"),
	     *native_cpus = first_line(dir, "native-cpus.csv");
	cr_assert_str_eq(native, sim);
	cr_assert_str_eq(native_cpus, sim_cpus);
	g_free(sim);
	g_free(native);
	g_free(sim_cpus);
	g_free(native_cpus);
	g_rmdir(dir);
	g_free(dir);
	result_clear(&r);
}
