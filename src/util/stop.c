/*
 * Stopping long work early (see include/tlbsim/util/stop.h).
 */
#include "tlbsim/util/error.h"
#include "tlbsim/util/stop.h"

struct stop stop_from_now(const atomic_int *cancel, double wall_seconds)
{
	struct stop stop = {.cancel = cancel, .wall_seconds = wall_seconds};
	if (wall_seconds > 0)
		stop.deadline = g_get_monotonic_time() + (int64_t)(wall_seconds * 1e6);
	return stop;
}

static bool stop_cancelled(const struct stop *stop)
{
	/* Relaxed: the flag carries no data; a stop seen one poll late is fine. */
	return stop->cancel && atomic_load_explicit(stop->cancel, memory_order_relaxed);
}

bool stop_requested(const struct stop *stop)
{
	if (!stop)
		return false;
	return stop_cancelled(stop) || (stop->deadline && g_get_monotonic_time() > stop->deadline);
}

void stop_set_error(const struct stop *stop, GError **error)
{
	if (stop_cancelled(stop))
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED, "interrupted");
	else
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_LIMIT,
			    "stopped after %g s of wall time (the budget, --max-wall-seconds)",
			    stop->wall_seconds);
}

bool stop_check(const struct stop *stop, GError **error)
{
	if (!stop_requested(stop))
		return true;
	stop_set_error(stop, error);
	return false;
}
