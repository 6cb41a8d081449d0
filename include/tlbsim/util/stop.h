#ifndef TLBSIM_STOP_H
#define TLBSIM_STOP_H
/*
 * When long work must stop early: a cancel flag (set by a signal handler or
 * another thread) and a wall-clock deadline (--max-wall-seconds).  Every
 * phase that can take long (reading and parsing inputs, loading a workload,
 * laying out and populating address spaces, the run, writing outputs) polls
 * one, so a signal or the wall-time budget stops the program in any phase.
 *
 * It reaches the lower layers as data, a borrowed pointer in their
 * arguments: they read it, and never call up to ask.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

struct stop {
	/*
	 * Non-zero: stop; may be NULL.  An atomic, not a volatile
	 * sig_atomic_t, because a sweep's runs read it from worker threads
	 * while a signal handler or another thread sets it (a lock-free atomic
	 * is also safe to set from a signal handler, C11 7.14.1.1).  Borrowed.
	 */
	const atomic_int *cancel;
	int64_t deadline;    /* g_get_monotonic_time() in µs; 0: no deadline */
	double wall_seconds; /* the budget @deadline came from, for messages */
};

/* @cancel (may be NULL) and a deadline @wall_seconds from now (0: none). */
struct stop stop_from_now(const atomic_int *cancel, double wall_seconds);

/*
 * Has @stop (may be NULL: never) been requested: its flag set or its
 * deadline passed?  Costs an atomic load and a clock read (tens of ns):
 * callers in tight loops poll it every few thousand iterations.
 */
bool stop_requested(const struct stop *stop);

/*
 * False, with @error set, if @stop has been requested: TLBSIM_ERROR_INTERRUPTED
 * ("interrupted") for the flag, which wins, else TLBSIM_ERROR_LIMIT ("stopped
 * after S s of wall time (the budget, --max-wall-seconds)").
 */
bool stop_check(const struct stop *stop, GError **error);

/* The error stop_check() sets, for a caller that saw stop_requested(). */
void stop_set_error(const struct stop *stop, GError **error);

#endif
