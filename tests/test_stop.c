/*
 * Tests of src/util/stop.c: a cancel flag and a wall-clock deadline, the
 * flag first, and the errors they give.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/util/error.h"
#include "tlbsim/util/stop.h"

Test(stop, none_never_stops)
{
	GError *error = NULL;
	cr_expect_not(stop_requested(NULL));
	cr_expect(stop_check(NULL, &error));
	struct stop none = stop_from_now(NULL, 0);
	cr_expect_eq(none.deadline, 0);
	cr_expect_not(stop_requested(&none));
	cr_expect(stop_check(&none, &error));
	cr_expect_null(error);
}

Test(stop, flag_interrupts)
{
	atomic_int cancel = 0;
	struct stop stop = stop_from_now(&cancel, 60);
	cr_expect_not(stop_requested(&stop));
	atomic_store(&cancel, 1);
	cr_expect(stop_requested(&stop));
	GError *error = NULL;
	cr_expect_not(stop_check(&stop, &error));
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED));
	cr_expect_str_eq(error->message, "interrupted");
	g_error_free(error);
}

Test(stop, deadline_is_the_budget)
{
	struct stop stop = stop_from_now(NULL, 0.001);
	g_usleep(5000);
	cr_expect(stop_requested(&stop));
	GError *error = NULL;
	cr_expect_not(stop_check(&stop, &error));
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_LIMIT));
	cr_expect_str_eq(error->message,
			 "stopped after 0.001 s of wall time (the budget, --max-wall-seconds)");
	g_error_free(error);
}

/* A signal is what the user did last: it wins over a budget also past. */
Test(stop, flag_wins_over_the_deadline)
{
	atomic_int cancel = 1;
	struct stop stop = stop_from_now(&cancel, 0.001);
	g_usleep(5000);
	GError *error = NULL;
	cr_expect_not(stop_check(&stop, &error));
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED));
	g_clear_error(&error);
}
