#ifndef TLBSIM_NATIVE_RUNNER_H
#define TLBSIM_NATIVE_RUNNER_H
/*
 * A workload run for real: each address space (mm) a child process with
 * the workload's regions mmap()ed and populated, each task a thread of it,
 * pinned where the workload pins; every op the real system call or loop.
 * All tasks wait at a start barrier after setup; the measured window runs
 * from its release to the last task's end, and the hooks read the kernel's
 * counters just outside it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "tlbsim/workload/workload.h"

struct runner_options {
	uint64_t seed;      /* the tasks' random access patterns (rng.h streams) */
	unsigned nr_cpus;   /* $cpus */
	unsigned ghz_milli; /* the clock compute ops' cycles are converted at */
};

/* Called by the coordinating process right before the tasks are released
 * and right after the last one ended; false with an error aborts the run. */
struct runner_hooks {
	bool (*before)(void *ctx, GError **error);
	bool (*after)(void *ctx, GError **error);
	void *ctx;
};

struct runner_result {
	uint64_t window_ns;
	uint64_t phase_ns;  /* the report phase's first begin to last end; the window without */
	uint64_t op_count;  /* report op calls in the report phase */
	uint64_t op_ns_sum; /* their wall time */
	uint64_t accesses;
	uint64_t round_accesses;
	uint64_t threads;      /* tasks that made an access */
	uint64_t access_tasks; /* tasks whose program has an access op */
};

/**
 * runner_check() - refuse, before anything runs, a pinning outside this
 * machine's online CPUs (the loader checks constant ones; "$thread" needs
 * each task's value).  Every op and key of the loader has a native meaning;
 * a flag value beyond 32 bits (a futex word) fails at run time, naming the
 * op.  Errors name @file and the JSON path.
 */
bool runner_check(const struct workload *w, const char *file, unsigned nr_cpus, GError **error);

/**
 * runner_run() - run @w (checked) with @o, calling @hooks around the window.
 *
 * Errors: a system call that fails (naming the op's JSON path and the
 * errno), a run-time expression error, a task killed by a signal (an
 * access to a page the workload unmapped or made read-only).
 */
bool runner_run(const struct workload *w, const char *file, const struct runner_options *o,
		const struct runner_hooks *hooks, struct runner_result *result, GError **error);

#endif
