/*
 * Tests of src/native/tracefs.c's parsing, on a recorded trace
 * (tests/data/native/trace-6.1.txt, v6.1's reason texts): events counted
 * by the reason's number, per CPU, "pages:-1" as full; other events and
 * comments skipped; lost events, unknown reasons and CPUs refused.  A
 * session's instance (where tracefs is writable); the traced run itself is
 * covered by test_native_e2e.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <unistd.h>
#include "native_data.h"
#include "tlbsim/native/tracefs.h"

Test(native_tracefs, recorded_trace)
{
	struct tracefs_counts c;
	tracefs_counts_init(&c, 4);
	char *text = native_data("trace-6.1.txt");
	GError *error = NULL;
	cr_assert(tracefs_parse(text, &c, &error), "%s", error ? error->message : "");
	cr_assert_eq(c.total.events, 9, "the sched_switch line is not a tlb_flush");
	cr_assert_eq(c.total.reason[0], 2); /* task switch */
	cr_assert_eq(c.total.full[0], 2);
	cr_assert_eq(c.total.reason[1], 2); /* remote shootdown */
	cr_assert_eq(c.total.full[1], 1);
	cr_assert_eq(c.total.reason[2], 1); /* local shootdown */
	cr_assert_eq(c.total.full[2], 0);
	cr_assert_eq(c.total.reason[3], 1); /* local mm shootdown */
	cr_assert_eq(c.total.reason[4], 2); /* remote ipi send */
	cr_assert_eq(c.total.full[4], 1);
	cr_assert_eq(c.total.reason[5], 1); /* remote wrong CPU */
	cr_assert_eq(c.cpu[0].events, 5);
	cr_assert_eq(c.cpu[1].events, 2);
	cr_assert_eq(c.cpu[2].reason[0], 1);
	cr_assert_eq(c.cpu[3].full[1], 1);
	uint64_t sum = 0;
	for (unsigned r = 0; r < TRACEFS_NR_REASONS; r++)
		sum += c.total.reason[r];
	cr_assert_eq(sum, c.total.events);
	g_free(text);
	tracefs_counts_clear(&c);
}

Test(native_tracefs, column_names_are_tlbsims)
{
	cr_assert_str_eq(tracefs_reason_columns[1], "tlb_remote_shootdown");
	cr_assert_str_eq(tracefs_reason_full_columns[4], "tlb_remote_send_ipi_full");
}

static void expect_refused(const char *text, const char *why)
{
	struct tracefs_counts c;
	tracefs_counts_init(&c, 2);
	GError *error = NULL;
	cr_assert_not(tracefs_parse(text, &c, &error), "%s", text);
	cr_assert(strstr(error->message, why), "%s", error->message);
	g_error_free(error);
	tracefs_counts_clear(&c);
}

Test(native_tracefs, refused)
{
	expect_refused("x-1 [000] d..1. 1.0: tlb_flush: pages:1 reason:new (9)\n",
		       "trace line 1: a reason number tlbsim-native does not know");
	expect_refused("x-1 [007] d..1. 1.0: tlb_flush: pages:1 reason:local shootdown (2)\n",
		       "a CPU beyond the machine's");
	expect_refused("# c\nx-1 [000] d..1. 1.0: tlb_flush: reason:local shootdown (2)\n",
		       "trace line 2: expected");
	expect_refused("CPU:1 [LOST 12 EVENTS]\n", "lost events");
}

Test(native_tracefs, lost_from_stats)
{
	char *text = native_data("stats-lost.txt");
	cr_assert_eq(tracefs_parse_lost(text), 5, "overrun 3 + dropped 2, not commit overrun");
	cr_assert_eq(tracefs_parse_lost("entries: 1\noverrun: 0\ndropped events: 0\n"), 0);
	g_free(text);
}

/* A session records into an instance of its own, which goes with it. */
Test(native_tracefs, session_instance_made_and_removed)
{
	if (access("/sys/kernel/tracing/events/tlb/tlb_flush/enable", W_OK) != 0)
		cr_skip_test("no writable tracefs here: a session needs root");
	GError *error = NULL;
	struct tracefs *t = tracefs_open(1, 64, &error);
	cr_assert_not_null(t, "%s", error ? error->message : "");
	char *dir = g_strdup(tracefs_dir(t));
	char *expected = g_strdup_printf("/instances/tlbsim-native-%ld", (long)getpid());
	cr_expect(g_str_has_suffix(dir, expected), "%s", dir);
	cr_expect(g_file_test(dir, G_FILE_TEST_IS_DIR), "%s", dir);
	tracefs_close(t);
	cr_expect_not(g_file_test(dir, G_FILE_TEST_EXISTS), "%s is left behind", dir);
	g_free(expected);
	g_free(dir);
}
