/*
 * tlbsim import through the binary, on the traces recorded on the
 * development machine (tests/data/import/, docs/import.md): churn.strace
 * (tests/data/import/churn.c, 4 threads), xz.strace (xz -T4 compressing a
 * 2.6 MB file), churn.perf (churn under perf record, perf script) and
 * churn.ptrace (churn under perf trace).  Their imports
 * must equal the shipped workloads byte for byte, so that those cannot
 * drift from the importer, and must run under two presets.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_import, .init = tmp_dir_make, .fini = tmp_dir_remove);

#define TRACES TLBSIM_TEST_DATA "/import/"

/* Import @trace as @name into the scratch file @out; must succeed, with
 * notes on stderr. */
static void import_to(const char *trace, const char *name, const char *out)
{
	struct run r;
	char *path = tmp_path(out);
	run_tlbsim(&r, "import", trace, "--name", name, "--schema",
		   "../docs/schema/workload.schema.json", "-o", path, NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.out, "the workload went to -o");
	cr_expect(strstr(r.err, "tlbsim import: note: "), "the approximations are noted: %s",
		  r.err);
	run_clear(&r);
	g_free(path);
}

static void expect_same_as_shipped(const char *out, const char *shipped)
{
	char *text = read_tmp(out), *want = NULL;
	cr_assert(g_file_get_contents(shipped, &want, NULL, NULL), "%s", shipped);
	cr_expect_str_eq(text, want, "re-import the trace into %s (docs/import.md)", shipped);
	g_free(text);
	g_free(want);
}

/* Runs @workload under linux-4.5 and linux-6.8: exit 0, one row each, and
 * the reported op was called. */
static void expect_runs_under_two_presets(const char *workload)
{
	static const char *const presets[] = {"linux-4.5", "linux-6.8"};
	for (size_t i = 0; i < G_N_ELEMENTS(presets); i++) {
		struct run r;
		run_tlbsim(&r, "-T", "haswell-i7", "-w", workload, "-p", presets[i], "-q", NULL);
		expect_status(&r, 0);
		struct table t;
		table_parse(&t, r.out);
		cr_assert_eq(t.rows->len, 1);
		cr_expect_gt(table_u64(&t, 0, "op_count"), 0, "%s under %s", workload, presets[i]);
		cr_expect_gt(table_u64(&t, 0, "tlb_flush_events"), 0);
		table_clear(&t);
		run_clear(&r);
	}
}

Test(e2e_import, churn_strace_is_the_shipped_workload_and_runs)
{
	import_to(TRACES "churn.strace", "import-churn", "churn.json");
	expect_same_as_shipped("churn.json", TLBSIM_SOURCE_DIR "/workloads/import-churn.json");
	expect_runs_under_two_presets("import-churn");
}

Test(e2e_import, xz_strace_is_the_shipped_workload_and_runs)
{
	import_to(TRACES "xz.strace", "import-xz", "xz.json");
	expect_same_as_shipped("xz.json", TLBSIM_SOURCE_DIR "/workloads/import-xz.json");
	expect_runs_under_two_presets("import-xz");
}

/* The perf script recording of the same program, format guessed. */
Test(e2e_import, churn_perf_script_imports_and_runs)
{
	import_to(TRACES "churn.perf", "churn-perf", "perf.json");
	char *path = tmp_path("perf.json");
	expect_runs_under_two_presets(path);
	g_free(path);
}

Test(e2e_import, churn_perf_trace_imports_and_runs)
{
	import_to(TRACES "churn.ptrace", "churn-ptrace", "ptrace.json");
	char *path = tmp_path("ptrace.json");
	expect_runs_under_two_presets(path);
	g_free(path);
}

/* A bad line: exit 2, FILE:LINE, and nothing written. */
Test(e2e_import, bad_trace_fails_with_file_line_and_writes_nothing)
{
	write_tmp("bad.strace", "1 10:00:00.000001 munmap(0x1000, 4096) = 0\n"
				"1 10:00:00.000002 mprotect(0x1000) = 0\n");
	char *trace = tmp_path("bad.strace"), *out = tmp_path("bad.json");
	struct run r;
	run_tlbsim(&r, "import", trace, "-o", out, NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "bad.strace:2: expected the arguments of a memory syscall"), "%s",
		  r.err);
	cr_expect_not(g_file_test(out, G_FILE_TEST_EXISTS));
	run_clear(&r);
	run_tlbsim(&r, "import", trace, "--format", "ltrace", NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "expected strace, perf or perf-trace"), "%s", r.err);
	run_clear(&r);
	g_free(trace);
	g_free(out);
}
