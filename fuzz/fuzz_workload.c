/*
 * Fuzz target: bytes -> config_parse_string -> workload_from_json (for an
 * 8-CPU machine, the haswell-i7's count).  A small workload that loads is
 * then loaded again for a built-in 2-CPU machine and run there under
 * linux-4.5, which puts arbitrary programs through the interpreter.
 *
 * Notes:
 * - A run is only attempted when a static bound on what each task does is
 *   small (RUN_MAX_STEPS): every loop count must evaluate from the parameters
 *   and $cpus alone.  With run-ahead, each access counts too, so access ops
 *   also need bounded "rounds" and "pages"; without it, every access is an
 *   event of its own and the event budget bounds them.  A workload that only
 *   the second bound accepts runs without run-ahead.  The budgets would stop
 *   any run now (the interpreter hands back to the engine every 4096 ops and
 *   65536 accesses), but not fast: fuzz/known/workload-hang-compute-loop.json
 *   takes 24 s in this build before its 20000 events are spent, so the bound
 *   keeps the target fast.  It used to be the only thing between the target
 *   and a hang (fuzz/known/).
 * - Two tasks of one process making munmap, mprotect or madvise calls at once
 *   are run: the assertion and the livelock they hit (fuzz/known/) are fixed.
 * - Small: at most RUN_MAX_TASKS tasks and RUN_MAX_PTES page-table entries, so
 *   a run costs well under a millisecond and the target stays fast.
 */
#include <string.h>
#include "fuzz.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/config.h"
#include "tlbsim/workload/workload.h"

#define LOAD_CPUS 8
#define RUN_MAX_TASKS 64
#define RUN_MAX_PTES 4096
/* Ops plus accesses of all tasks together. */
#define RUN_MAX_STEPS 100000
#define RUN_MAX_EVENTS 20000
/*
 * 20 ms, not less: the engine reports a time-budget stop when an event is
 * still pending past the budget, even after every task has exited, and the
 * scheduler's slice timer of a run that ended early can lie about 6 ms
 * (linux-4.5's sched latency) later; with a 1 ms budget almost every run
 * ended in TLBSIM_ERROR_LIMIT and never reached the result collection.
 */
#define RUN_MAX_SIM_NS 20000000
#define UNBOUNDED UINT64_MAX

#ifndef TLBSIM_SOURCE_DATADIR
#error "TLBSIM_SOURCE_DATADIR must be the source tree (tlbsim_sim defines it)"
#endif
/* Read from the tree, not copied here: a copy went stale when the topology
 * format gained required keys, and the target aborted at start-up. */
#define MACHINE_FILE TLBSIM_SOURCE_DATADIR "/tests/data/tiny-2cpu.json"
#define POLICY_FILE TLBSIM_SOURCE_DATADIR "/policies/linux-4.5.json"

/* The machine and policy of every run, built once (libFuzzer has no context
 * pointer); read-only afterwards. */
static struct topology *machine;
static struct policy *policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	GError *error = NULL;

	(void)argc;
	(void)argv;
	cJSON *json = config_load_file(MACHINE_FILE, NULL, &error);
	machine = json ? topology_from_json(json, MACHINE_FILE, &error) : NULL;
	cJSON_Delete(json);
	if (machine == NULL) {
		g_printerr("fuzz_workload: %s\n", error->message);
		abort();
	}
	json = config_load_file(POLICY_FILE, NULL, &error);
	policy = json ? policy_from_json(json, POLICY_FILE, &error) : NULL;
	cJSON_Delete(json);
	if (policy == NULL) {
		g_printerr("fuzz_workload: %s\n", error->message);
		abort();
	}
	return 0;
}

/* ---- the run filter ------------------------------------------------------- */

struct bound_ctx {
	const struct workload *w;
	unsigned nr_cpus;
};

/* Load-time variables only: a task's $thread, $task or loop variable fails. */
static bool bound_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct bound_ctx *bc = ctx;
	if (strcmp(name, "cpus") == 0) {
		*value = bc->nr_cpus;
		return true;
	}
	return workload_param(bc->w, name, value);
}

/* Value of @expr from load-time variables, or UNBOUNDED; NULL is @absent. */
static uint64_t bound_value(const struct bound_ctx *bc, const struct expr *expr, uint64_t absent)
{
	int64_t v;
	GError *error = NULL;

	if (expr == NULL)
		return absent;
	if (!expr_eval(expr, bound_lookup, (void *)bc, &v, &error)) {
		g_error_free(error);
		return UNBOUNDED;
	}
	return v < 0 ? 0 : (uint64_t)v;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UNBOUNDED : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UNBOUNDED : r;
}

/*
 * Upper bound on the ops one pass over @ops executes, plus, when
 * @count_accesses, the accesses of its access ops.
 */
static uint64_t bound_steps(const struct bound_ctx *bc, const struct op *ops, unsigned nr,
			    bool count_accesses)
{
	uint64_t steps = 0;

	for (unsigned i = 0; i < nr; i++) {
		const struct op *op = &ops[i];
		steps = add_sat(steps, 1);
		if (op->kind == OP_LOOP) {
			uint64_t count = bound_value(bc, op->count, UNBOUNDED);
			uint64_t body =
			    count == 0 ? 0 : bound_steps(bc, op->body, op->nr_body, count_accesses);
			steps = add_sat(steps, mul_sat(count, body));
		} else if (op->kind == OP_ACCESS && count_accesses) {
			/* No "rounds": it runs while its flag is set, for ever. */
			uint64_t rounds = bound_value(bc, op->count, UNBOUNDED);
			uint64_t pages = bound_value(bc, op->pages, UNBOUNDED);
			steps = add_sat(steps, mul_sat(rounds, pages));
		}
	}
	return steps;
}

enum run_mode { RUN_NONE, RUN_STEPPED, RUN_ANY };

/* How @w may be run so that the budgets bound the run (see the notes). */
static enum run_mode run_mode(const struct workload *w, unsigned nr_cpus)
{
	const struct bound_ctx bc = {.w = w, .nr_cpus = nr_cpus};
	uint64_t tasks = 0, ptes = 0, steps = 0, stepped = 0;

	for (unsigned i = 0; i < w->nr_regions; i++) {
		const struct region *r = &w->regions[i];
		ptes += r->chunks * (r->chunk_bytes / page_size_bytes(r->page_size));
	}
	for (unsigned g = 0; g < w->nr_groups; g++) {
		const struct task_group *group = &w->groups[g];
		tasks += group->count;
		steps = add_sat(steps, mul_sat(group->count,
					       bound_steps(&bc, group->ops, group->nr_ops, true)));
		stepped =
		    add_sat(stepped, mul_sat(group->count,
					     bound_steps(&bc, group->ops, group->nr_ops, false)));
	}
	if (tasks > RUN_MAX_TASKS || ptes > RUN_MAX_PTES)
		return RUN_NONE;
	if (steps <= RUN_MAX_STEPS)
		return RUN_ANY;
	return stepped <= RUN_MAX_STEPS ? RUN_STEPPED : RUN_NONE;
}

/* ---- the target ------------------------------------------------------------ */

static void simulate(const struct workload *w, bool run_ahead)
{
	GError *error = NULL;
	const struct sim_input input = {
	    .topology = machine,
	    .workload = w,
	    .policy = policy,
	    .workload_file = "fuzz",
	    .seed = 1,
	    .run_ahead = run_ahead,
	    .max_events = RUN_MAX_EVENTS,
	    .max_sim_ns = RUN_MAX_SIM_NS,
	};
	struct sim_result *result = sim_run(&input, &error);
	fuzz_check_result(result != NULL, error);
	sim_result_free(result);
}

/* Run @json's workload if the budgets can bound it; with @run_ahead if allowed. */
static void run(const cJSON *json, bool run_ahead)
{
	GError *error = NULL;
	unsigned nr_cpus = topology_nr_cpus(machine);
	/* Loaded again: $cpus in the parameters must be the machine's. */
	struct workload *w = workload_from_json(json, "fuzz", nr_cpus, NULL, &error);

	fuzz_check_result(w != NULL, error);
	if (w != NULL) {
		enum run_mode mode = run_mode(w, nr_cpus);
		if (mode != RUN_NONE)
			simulate(w, run_ahead && mode == RUN_ANY);
	}
	workload_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	cJSON *json = fuzz_parse(data, size);
	if (json == NULL)
		return 0;
	struct workload *w = workload_from_json(json, "fuzz", LOAD_CPUS, NULL, &error);
	fuzz_check_result(w != NULL, error);
	if (w != NULL)
		/* Both ways of running, picked by the input so each is reproducible. */
		run(json, size % 2 == 0);
	workload_free(w);
	cJSON_Delete(json);
	return 0;
}
