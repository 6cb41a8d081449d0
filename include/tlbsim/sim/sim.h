#ifndef TLBSIM_SIM_H
#define TLBSIM_SIM_H
/*
 * One simulation run: build the machine and kernel for a topology, policy and
 * workload, run the workload to completion (or a budget), and collect the
 * results.  Runs share no mutable state, so several may run on different
 * threads at once.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>
#include "tlbsim/engine/pool.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/counters.h"
#include "tlbsim/machine/machine.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/observe/trace.h"
#include "tlbsim/sim/sample.h"
#include "tlbsim/util/histogram.h"
#include "tlbsim/util/stop.h"
#include "tlbsim/workload/workload.h"

/* The budgets when none is given: enough for any workload that terminates
 * (munmap16 dispatches 0.36 M events in 51.6 ms simulated), small enough that
 * one that does not stops within minutes. */
#define SIM_DEFAULT_MAX_EVENTS UINT64_C(2000000000)
#define SIM_DEFAULT_MAX_SIM_NS (UINT64_C(3600) * 1000000000)
/* --sample's plan when --sample-plan is not given (docs/performance.md,
 * "Sampled mode"): an eighth of the time simulated access by access. */
#define SIM_SAMPLE_PERIOD_NS UINT64_C(200000)
#define SIM_SAMPLE_WARM_NS UINT64_C(20000)
#define SIM_SAMPLE_WINDOW_NS UINT64_C(5000)

struct sim_input {
	const struct topology *topology;
	const struct workload *workload;
	const struct policy *policy;
	const char *workload_file; /* for run-time messages */
	uint64_t seed;
	bool run_ahead;       /* false: one access per event (slow; for checking) */
	uint64_t max_events;  /* 0: no limit */
	uint64_t max_sim_ns;  /* 0: no limit */
	/*
	 * A cancel flag and the wall-time budget's deadline (stop.h), polled
	 * while the address spaces are laid out and populated and every 16
	 * events of the run: a stop fails the run with stop_check()'s error.
	 * The deadline may lie before the run starts, for a budget that covers
	 * the loading too.
	 */
	struct stop stop;
	/* Timeline (trace.h): written to @trace_out while the run goes on, complete
	 * after a successful run (seekable: trace_new()).
	 * NULL: no trace.  Both borrowed. */
	const struct trace_options *trace;
	FILE *trace_out;
	/* Counters per interval (timeseries.h), streamed to @timeseries_out
	 * (borrowed) during the run; 0: none.  Neither changes the results. */
	uint64_t timeseries_interval_ns;
	FILE *timeseries_out;
	/* Its leading columns: timeseries_new()'s @key_header, @key (NULL: none). */
	const char *timeseries_key_header;
	const char *timeseries_key;
	/* Sampled mode (sample.h) in simulated ns: periods of @sample_period_ns,
	 * each warming for @sample_warm_ns then measuring for @sample_window_ns
	 * (warm + window < period; needs run_ahead).  0: every access simulated. */
	uint64_t sample_period_ns, sample_warm_ns, sample_window_ns;
	/* Host threads for the run (0 and 1: the caller's only): the CPUs'
	 * quiet accesses run on them core by core, with the same results for
	 * any count (engine_schedule_independent()); at most one per core.
	 * Without effect with a trace, whose writer sees every event in order. */
	unsigned threads;
	/* A pool shared with other runs (a sweep's): used instead of
	 * @threads, and not freed.  NULL: the run makes its own. */
	struct pool *shared_pool;
};

struct sim_result {
	unsigned nr_cpus;
	struct counters total;
	struct counters *per_cpu;
	uint64_t sim_cycles; /* when the last task exited */
	uint64_t events;
	/* From the interpreter. */
	unsigned nr_phases;
	uint64_t phase_cycles; /* the report phase's duration, or sim_cycles */
	struct histogram *op_cycles; /* latency per report_op call */
	uint64_t accessor_threads;
	uint64_t tasks;             /* every task of the workload */
	uint64_t access_tasks;      /* tasks whose program has an access op */
	uint64_t access_tasks_idle; /* of those, the ones that never began one */
	uint64_t accesses;
	uint64_t round_accesses;
	unsigned nr_stale_reports;
	struct stale_report stale[MACHINE_STALE_REPORTS];
	unsigned *tlb_occupancy; /* per CPU, at the end */
	/* Sampled mode: the counters accesses drive are estimates (sample.h). */
	bool sampled;
	unsigned sample_windows;
	uint64_t sample_error_ppm[SAMPLE_NR_SCALED]; /* struct sample_estimate's */
};

/* Errors: a run-time workload error (TLBSIM_ERROR_INVALID), a budget hit
 * (TLBSIM_ERROR_LIMIT), a stop by the cancel flag (TLBSIM_ERROR_INTERRUPTED), or a
 * failed write of the trace or time series (TLBSIM_ERROR_IO).  After an
 * error the trace and time-series streams hold nothing usable. */
struct sim_result *sim_run(const struct sim_input *input, GError **error);
void sim_result_free(struct sim_result *result);

#endif
