/*
 * Robustness of the command line: outputs into FIFOs, devices and links,
 * failed writes, numbers, repeated options, --set errors, file errors.
 */
#define _POSIX_C_SOURCE 200809L /* symlink(), mkfifo(), lstat() */
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "e2e_support.h"

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
	cr_expect(
	    g_str_has_prefix(series_text,
			     "topology,workload,policy,seed,clock_ghz,t_ns,cpu,metric,value\n"),
	    "%s", series_text);
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
	const char *const starts[] = {
	    "{\"traceEvents\":[", "topology,workload,policy,seed,clock_ghz,t_ns,cpu,metric,value\n",
	    "topology,"};
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
		{"--threads", "two", "--threads takes a positive number of host threads, or 0 for "
				     "the online CPUs, not \"two\""},
		{"--threads", "4096", "(at most 1024)"},
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
