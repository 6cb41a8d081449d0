#ifndef TLBSIM_INTERP_H
#define TLBSIM_INTERP_H
/*
 * The workload interpreter: lays out each process's address space from the
 * workload's regions, creates its tasks, and runs their programs on the
 * simulated kernel.  Memory-access loops run ahead locally until the next
 * pending event (or one access per dispatch when run_ahead is off), which
 * gives identical results: see README, "Run-ahead".
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/util/histogram.h"
#include "tlbsim/util/stop.h"
#include "tlbsim/workload/workload.h"

struct interp;

/* Region i's placement offset ("placement": "aslr") is drawn from stream
 * INTERP_LAYOUT_STREAM + i of the run's seed (rng.h), apart from the tasks'. */
#define INTERP_LAYOUT_STREAM (UINT64_C(1) << 32)

struct interp_results {
	unsigned nr_phases;
	uint64_t *phase_begin; /* cycles; first begin of each phase */
	uint64_t *phase_end;   /* cycles; last end */
	/* The latency of each report_op call, in bounded memory (a loop of
	 * calls may run for billions of them). */
	struct histogram *op_cycles;
	uint64_t accessor_threads; /* tasks that made at least one access */
	uint64_t access_tasks;     /* tasks whose program has an access op */
	uint64_t access_tasks_idle; /* of those, the ones that never began one */
	uint64_t accesses;
	uint64_t round_accesses; /* accesses in completed rounds (the harness's actime * p) */
	uint64_t tasks;
};

/*
 * Build address spaces and tasks for @workload on @k (which must have its
 * machine, policy, scheduler and smp ready).  @seed drives every random choice.
 * Errors (a task pinned to a CPU the machine lacks) name @file.  @stop (may
 * be NULL) is polled while the address spaces are laid out and populated,
 * which for millions of pages takes seconds: a stop fails with
 * stop_check()'s error.
 */
struct interp *interp_new(struct kernel *k, const struct workload *workload, const char *file,
			  uint64_t seed, bool run_ahead, const struct stop *stop, GError **error);
void interp_free(struct interp *interp);

/* Each task's "group thread" label ("accessor 3"), by task id; g_strfreev(). */
char **interp_task_labels(const struct interp *interp);

/* A run-time error stops the engine; this returns it (or NULL). */
const GError *interp_error(const struct interp *interp);
/* The tasks blocked on a flag: name, thread, op path and the flag (the first
 * four); "" when none.  g_free() it. */
char *interp_blocked_summary(const struct interp *interp);
const struct interp_results *interp_results(struct interp *interp);

#endif
