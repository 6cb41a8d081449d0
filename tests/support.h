#ifndef TLBSIM_TESTS_SUPPORT_H
#define TLBSIM_TESTS_SUPPORT_H
/*
 * Helpers shared by the behavioural tests: run a workload given as a JSON
 * string on a topology from tests/data (or a bundled one) under a bundled
 * policy with knob overrides.  Failures to load or run fail the test.
 */
#include "tlbsim/sim/sim.h"

struct support_run {
	struct topology *topology;
	struct policy *policy;
	struct workload *workload;
	struct sim_result *result;
};

/* @topology: a file name in tests/data or a bundled name; @sets: "knob=value"
 * overrides of the policy, NULL-terminated, may be NULL. */
struct support_run support_run(const char *topology, const char *policy,
			       const char *const *sets, const char *workload_json);

/* What a run may write besides its result (sim.h); zero: nothing. */
struct support_outputs {
	const struct trace_options *trace;
	FILE *trace_out;
	uint64_t interval_ns;
	FILE *series_out;
	const char *series_key_header, *series_key; /* sim_input's; NULL: none */
	uint64_t sample_ns[3]; /* --sample's period, warm, window; 0: exact */
};

/* support_run() with a trace and/or a time series. */
struct support_run support_run_outputs(const char *topology, const char *policy,
				       const char *const *sets, const char *workload_json,
				       const struct support_outputs *outputs);
void support_run_free(struct support_run *run);
/* The same for a run that must fail: its message (g_free it) and error code. */
char *support_run_error(const char *topology, const char *policy, const char *const *sets,
			const char *workload_json, int *code);

/* A topology from tests/data or bundled, and a bundled policy, loaded or the
 * test fails: for tests that build a world by hand.  Free them as usual. */
struct topology *support_topology(const char *name);
/* support_topology() with its clock_ghz set to @clock_ghz (a JSON number). */
struct topology *support_topology_at(const char *name, const char *clock_ghz);
struct policy *support_policy(const char *name);

/*
 * Whether the heaviest cases run small: in the sanitizer build
 * (TLBSIM_TEST_SANITIZE), where every run costs about ten times more and a
 * full-size case proves nothing a small one does not, unless
 * TLBSIM_TEST_LONG=1 in the environment asks for full size.  A case that
 * shrinks says what it keeps.
 */
bool support_small(void);

/* The names in directory @dir, sorted, joined with spaces ("" if empty); g_free(). */
char *support_dir_listing(const char *dir);

#define CPU(run, cpu, field) ((run).result->per_cpu[(cpu)].field)

#endif
