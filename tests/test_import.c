/*
 * tlbsim import (import.h): both readers, the joining of split calls, the
 * mapping of calls onto ops and regions, the approximations it reports, and
 * its errors naming FILE:LINE.
 */
#include <string.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/cli/import.h"
#include "tlbsim/util/error.h"

/* The workload for @text, which must import. */
static cJSON *import_ok(const char *text, enum import_format format, GString *notes)
{
	GError *error = NULL;
	char *json = import_trace(text, "dir/t.trace", format, "t", notes, &error);
	cr_assert_not_null(json, "%s", error ? error->message : "");
	cJSON *w = cJSON_Parse(json);
	cr_assert_not_null(w);
	g_free(json);
	return w;
}

/* The error message for @text, which must not import. */
static char *import_fails(const char *text, enum import_format format)
{
	GError *error = NULL;
	GString *notes = g_string_new(NULL);
	char *json = import_trace(text, "t.trace", format, "t", notes, &error);
	cr_assert_null(json);
	cr_assert_not_null(error);
	cr_expect_eq(error->code, TLBSIM_ERROR_PARSE);
	char *message = g_strdup(error->message);
	g_error_free(error);
	g_string_free(notes, TRUE);
	return message;
}

/* "op region" of each item of task @t's program, space-separated. */
static char *program_of(const cJSON *w, int t)
{
	const cJSON *task = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tasks"), t);
	GString *s = g_string_new(NULL);
	const cJSON *op;
	cJSON_ArrayForEach(op, cJSON_GetObjectItem(task, "program"))
	{
		const cJSON *region = cJSON_GetObjectItem(op, "region");
		const cJSON *flag = cJSON_GetObjectItem(op, "flag");
		g_string_append_printf(s, "%s%s%s%s", s->len ? " " : "",
				       cJSON_GetObjectItem(op, "op")->valuestring,
				       region || flag ? ":" : "",
				       region ? region->valuestring
				       : flag ? flag->valuestring
					      : "");
	}
	return g_string_free(s, FALSE);
}

static const char strace_text[] =
    "100 10:00:00.000000 brk(NULL)               = 0x5555000\n"
    "100 10:00:00.000010 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, "
    "-1, 0) = 0x7f0000000000\n"
    "101 10:00:00.000020 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, "
    "-1, 0 <unfinished ...>\n"
    "100 10:00:00.000030 madvise(0x7f0000001000, 4096, MADV_DONTNEED) = 0\n"
    "101 10:00:00.000040 <... mmap resumed>) = 0x7f0000010000\n"
    "101 10:00:00.000050 mprotect(0x7f0000010000, 16384, PROT_READ) = 0\n"
    "101 10:00:00.001050 munmap(0x7f0000010000, 16384) = 0\n"
    "101 10:00:00.001060 +++ exited with 0 +++\n";

Test(import, strace_calls_become_ops_on_their_regions)
{
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(strace_text, IMPORT_AUTO, notes);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "regions")), 2);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tasks")), 2);
	char *p0 = program_of(w, 0), *p1 = program_of(w, 1);
	/* 100: one page touched then zapped. */
	cr_expect_str_eq(p0, "compute access:r0 madvise:r0");
	/* 101: its resumed mmap is r1 (started at 20 us); read-only for its
	 * munmap's touch. */
	cr_expect_str_eq(p1, "compute access:r1 mprotect:r1 compute access:r1 munmap:r1");
	const cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tasks"), 1);
	const cJSON *prog = cJSON_GetObjectItem(t1, "program");
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(prog, 0), "cycles")->valuestring,
			 "40000 * $cycles_per_us / 1000",
			 "its first op at 50 us, 40 us after the first call of the trace");
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(prog, 3), "cycles")->valuestring,
			 "1000000 * $cycles_per_us / 1000");
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(prog, 4), "write")->valueint, 0);
	const cJSON *madv = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tasks"), 0), "program"),
	    2);
	cr_expect_eq(cJSON_GetObjectItem(madv, "first")->valueint, 1);
	cr_expect_eq(cJSON_GetObjectItem(madv, "pages")->valueint, 1);
	cr_expect_str_eq(cJSON_GetObjectItem(madv, "advice")->valuestring, "dontneed");
	/* Both mappings exist from time 0: the one approximation. */
	cr_expect_str_eq(notes->str, "2 mappings exist from time 0, not from their mmap() (tlbsim "
				     "lays regions out before the run; that mmap()'s own cost is "
				     "left out)\n");
	cr_expect(
	    strstr(cJSON_GetObjectItem(w, "description")->valuestring, "from t.trace (strace)"));
	g_free(p0);
	g_free(p1);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

Test(import, munmap_then_mmap_at_the_same_address_is_an_mmap_op)
{
	const char text[] =
	    "7 1.000000 mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x1000\n"
	    "7 1.000001 munmap(0x1000, 4096) = 0\n"
	    "7 1.000002 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) "
	    "= 0x1000\n"
	    "7 1.000003 munmap(0x1000, 4096) = 0\n";
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(text, IMPORT_STRACE, notes);
	char *p = program_of(w, 0);
	/* PROT_NONE: nothing can be present, no touch before the first munmap. */
	cr_expect_str_eq(p, "compute munmap:r0 compute mmap:r0 compute access:r0 munmap:r0");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "regions")), 1);
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "report"), "op")->valuestring,
			 "munmap");
	g_free(p);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

Test(import, approximations_are_counted_and_reported)
{
	const char text[] = "1 0.000001 mmap(NULL, 16384, PROT_READ, MAP_PRIVATE, 3, 0) = 0x10000\n"
			    "1 0.000002 munmap(0x10000, 4096) = 0\n"
			    "1 0.000003 munmap(0x11000, 4096) = 0\n"
			    "1 0.000004 mprotect(0x12000, 4096, PROT_NONE) = 0\n"
			    "1 0.000005 munmap(0x900000, 8192) = 0\n"
			    "1 0.000006 madvise(0x10000, 4096, MADV_HUGEPAGE) = 0\n"
			    "1 0.000007 munmap(0x12000, 8192) = 0\n"
			    "1 0.000008 munmap(0x12000, 8192) = -1 EINVAL (Invalid argument)\n";
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(text, IMPORT_AUTO, notes);
	char *p = program_of(w, 0);
	/* Two partial munmaps are madvises; the third, the last part, the munmap. */
	cr_expect_str_eq(p, "compute access:r0 madvise:r0 compute access:r0 madvise:r0 compute "
			    "access:r0 mprotect:r0 compute access:r1 munmap:r1 compute munmap:r0");
	const char *simplified = cJSON_GetObjectItem(w, "simplified")->valuestring;
	static const char *const expected[] = {
	    "1 file mappings became anonymous",
	    "1 calls named addresses no traced mmap() returned",
	    "3 munmap()s of part of a mapping became MADV_DONTNEED",
	    "1 mprotect()s of part of a mapping changed all of it",
	    "1 mprotect(PROT_NONE)s became \"read\"",
	    "1 madvise()s that flush nothing",
	    "1 failed calls were dropped",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
		cr_expect(strstr(notes->str, expected[i]), "notes lack \"%s\": %s", expected[i],
			  notes->str);
		cr_expect(strstr(simplified, expected[i]), "simplified lacks \"%s\"", expected[i]);
	}
	g_free(p);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

/* Thread 2 maps again what thread 1 unmapped: the order is kept by a flag. */
Test(import, a_region_passed_between_threads_is_ordered_by_a_flag)
{
	const char text[] =
	    "1 0.000001 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, "
	    "0) = 0x1000\n"
	    "1 0.000002 munmap(0x1000, 4096) = 0\n"
	    "2 0.000003 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, "
	    "0) = 0x1000\n";
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(text, IMPORT_STRACE, notes);
	char *p0 = program_of(w, 0), *p1 = program_of(w, 1);
	cr_expect_str_eq(p0, "compute access:r0 munmap:r0 set_flag:h0");
	cr_expect_str_eq(p1, "compute wait_flag:h0 mmap:r0");
	g_free(p0);
	g_free(p1);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

static const char perf_text[] =
    "# a comment\n"
    "  churn 20127 [001] 14543.557179:     syscalls:sys_enter_mmap: addr: 0x00000000, len: "
    "0x00002000, prot: 0x00000003, flags: 0x00000022, fd: 0xffffffff, off: 0x00000000\n"
    "  churn 20127 [001] 14543.557196:      syscalls:sys_exit_mmap: 0x7fcd88a81000\n"
    "  my worker 20127/20130 [000] 14543.557300:  syscalls:sys_enter_madvise: start: "
    "0x7fcd88a81000, len_in: 0x00001000, behavior: 0x00000015\n"
    "  churn 20127 [001] 14543.557400: syscalls:sys_enter_brk: brk: 0x00000000\n"
    "  churn 20127 [001] 14543.557500:   syscalls:sys_enter_munmap: addr: 0x7fcd88a81000, "
    "len: 0x00002000\n";

Test(import, perf_script_enter_and_exit_events)
{
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(perf_text, IMPORT_AUTO, notes);
	const cJSON *tasks = cJSON_GetObjectItem(w, "tasks");
	cr_assert_eq(cJSON_GetArraySize(tasks), 2,
		     "20127 and 20130 (PID/TID, a comm with a space)");
	/* Tasks in the order of their first op: 20127's mmap is none. */
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 0), "name")->valuestring,
			 "tid20130");
	char *p0 = program_of(w, 0), *p1 = program_of(w, 1);
	cr_expect_str_eq(p0, "compute access:r0 madvise:r0 set_flag:h0");
	cr_expect_str_eq(p1, "compute wait_flag:h0 access:r0 munmap:r0");
	const cJSON *prog = cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 0), "program");
	cr_assert_eq(cJSON_GetArraySize(prog), 4);
	const cJSON *madv = cJSON_GetArrayItem(prog, 2);
	cr_expect_str_eq(cJSON_GetObjectItem(madv, "advice")->valuestring, "pageout", "0x15 = 21");
	cr_expect(strstr(cJSON_GetObjectItem(w, "description")->valuestring, "(perf script)"));
	g_free(p0);
	g_free(p1);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

Test(import, errors_name_file_and_line)
{
	char *m = import_fails("1 0.1 munmap(0x1000) = 0\n", IMPORT_STRACE);
	cr_expect(strstr(m, "t.trace:1: expected the arguments of a memory syscall"), "%s", m);
	g_free(m);
	m = import_fails("1 0.1 brk(NULL) = 0\n\n1 0.2 <... munmap resumed>) = 0\n", IMPORT_AUTO);
	cr_expect(strstr(m, "t.trace:3: expected an earlier \"<unfinished ...>\" line"), "%s", m);
	g_free(m);
	m = import_fails("1 xx:00 munmap(0x1000, 4096) = 0\n", IMPORT_STRACE);
	cr_expect(strstr(m, "t.trace:1: expected a time (strace -tt)"), "%s", m);
	g_free(m);
	m = import_fails("1 0.1 munmap(0x1000, lots) = 0\n", IMPORT_STRACE);
	cr_expect(strstr(m, "t.trace:1: expected an address and a length"), "%s", m);
	g_free(m);
	m = import_fails("  a 5 [000] 1.000000: syscalls:sys_exit_mmap: 0x1000\n", IMPORT_PERF);
	cr_expect(strstr(m, "t.trace:1: expected an earlier sys_enter_mmap"), "%s", m);
	g_free(m);
	m = import_fails("  a 5 [000] 1.0: syscalls:sys_enter_munmap: addr: 0x1000\n", IMPORT_PERF);
	cr_expect(strstr(m, "t.trace:1: expected \"key: 0xVALUE\" arguments"), "%s", m);
	g_free(m);
	m = import_fails("not a trace line\n", IMPORT_PERF);
	cr_expect(strstr(m, "t.trace:1: expected a perf script line"), "%s", m);
	g_free(m);
	m = import_fails("1 0.1 brk(NULL) = 0x1000\n", IMPORT_STRACE);
	cr_expect(strstr(m, "t.trace: no mmap, munmap, mprotect or madvise call"), "%s", m);
	g_free(m);
}

/* A call that never returns before the trace ends is dropped, and said so. */
Test(import, unfinished_calls_are_dropped)
{
	const char text[] = "1 0.000001 munmap(0x1000, 4096) = 0\n"
			    "2 0.000002 munmap(0x5000, 4096 <unfinished ...>\n";
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(text, IMPORT_STRACE, notes);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tasks")), 1);
	cr_expect(strstr(notes->str, "1 calls the trace never saw return were dropped"), "%s",
		  notes->str);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
}

static const char ptrace_text[] =
    "     0.000 ( 0.034 ms): a b/7 mmap(len: 8192, prot: READ|WRITE, flags: PRIVATE|ANONYMOUS)"
    "   = 0x7f0000000000\n"
    "     1.648 ( 0.011 ms): a b/7 mmap(len: 8192, flags: PRIVATE|ANONYMOUS|STACK) = "
    "0x7f0000100000\n"
    "     2.000 (         ): a b/8 munmap(addr: 0x7f0000000000, len: 8192)       ...\n"
    "     2.100 ( 0.030 ms): a b/7 madvise(start: 0x7f0000100000, len_in: 4096, behavior: "
    "MADV_DONTNEED) = 0\n"
    "     2.000 ( 0.126 ms): a b/8  ... [continued]: munmap())                = 0\n"
    "     3.000 ( 0.010 ms): a b/8 mprotect(start: 0x7f0000100000, len: 8192, prot: READ) = -1 "
    "ENOMEM (Cannot allocate memory)\n";

/* perf trace: milliseconds, "comm/TID" (a comm with a space), zero
 * arguments left out, a call "..." until its "[continued]" line. */
Test(import, perf_trace_calls)
{
	GString *notes = g_string_new(NULL);
	cJSON *w = import_ok(ptrace_text, IMPORT_AUTO, notes);
	const cJSON *tasks = cJSON_GetObjectItem(w, "tasks");
	cr_assert_eq(cJSON_GetArraySize(tasks), 2);
	char *p0 = program_of(w, 0), *p1 = program_of(w, 1);
	/* 7's madvise of its PROT_NONE stack: no touch. */
	cr_expect_str_eq(p0, "compute madvise:r1");
	cr_expect_str_eq(p1, "compute access:r0 munmap:r0");
	const cJSON *gap =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 1), "program"), 0);
	cr_expect_str_eq(cJSON_GetObjectItem(gap, "cycles")->valuestring,
			 "2000000 * $cycles_per_us / 1000", "2 ms");
	cr_expect(strstr(notes->str, "1 failed calls were dropped"), "%s", notes->str);
	cr_expect(strstr(cJSON_GetObjectItem(w, "description")->valuestring, "(perf trace)"));
	g_free(p0);
	g_free(p1);
	cJSON_Delete(w);
	g_string_free(notes, TRUE);
	char *m = import_fails("     1.000 ( 0.1 ms): x/1 munmap(addr: zz, len: 1) = 0\n",
			       IMPORT_PERF_TRACE);
	cr_expect(strstr(m, "t.trace:1: expected \"key: NUMBER\" arguments"), "%s", m);
	g_free(m);
}
