/*
 * Fuzz target: bytes -> config_parse_string -> workload_from_json (for an
 * 8-CPU machine, the haswell-i7's count).  A small workload that loads is
 * then loaded again for a built-in 2-CPU machine and run there under
 * linux-4.5, which puts arbitrary programs through the interpreter.
 *
 * Notes:
 * - The budgets of a run (max_events, max_sim_ns) are checked by the engine
 *   between events, and the interpreter runs a task's ops inside one event
 *   until it must wait: a loop over ops that take no turn of the engine
 *   (compute, phase, set_flag, a satisfied wait_flag) never yields to it, and
 *   with run-ahead neither do the accesses of an access op while no other
 *   event is pending, so no budget stops them.  A run is therefore only
 *   attempted when a static bound on what each task does inside events is
 *   small (RUN_MAX_STEPS): every loop count must evaluate from the
 *   parameters and $cpus alone.  With run-ahead, each access counts too, so
 *   access ops also need bounded "rounds" and "pages"; without it, every
 *   access is an event of its own and the event budget bounds them.  A
 *   workload that only the second bound accepts runs without run-ahead.
 *   Without this filter the target hangs within seconds (fuzz/known/); it is
 *   off when TLBSIM_FUZZ_KNOWN_BUGS=1.
 * - Two tasks of one process that munmap the same chunk at once abort the
 *   simulator (an assertion in mm_unmap_vma()), and two shootdowns that
 *   overlap in time livelock until the event budget (fuzz/known/).  Until
 *   that is fixed, a workload with more than one task of a process making
 *   munmap, mprotect or madvise calls is not run, unless the environment sets
 *   TLBSIM_FUZZ_KNOWN_BUGS=1.
 * - Small: at most RUN_MAX_TASKS tasks and RUN_MAX_PTES page-table entries, so
 *   a run costs well under a millisecond and the target stays fast.
 */
#include <string.h>
#include "fuzz.h"
#include "tlbsim/config.h"
#include "tlbsim/policy.h"
#include "tlbsim/sim.h"
#include "tlbsim/topology.h"
#include "tlbsim/workload.h"

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

/* tests/data/tiny-2cpu.json without its description. */
static const char tiny_2cpu[] =
    "{\"name\": \"tiny-2cpu\", \"description\": \"\", \"sockets\": 1,"
    " \"cores_per_socket\": 2, \"threads_per_core\": 1, \"clock_ghz\": 1.0, \"hw_asids\": 0,"
    " \"smt_invalidation\": \"core\","
    " \"cpuid\": {\"tlb_lld_4k\": 16, \"tlb_lli_4k\": 16, \"tlb_flushall_shift\": 1},"
    " \"tlbs\": ["
    "  {\"name\": \"l1d\", \"level\": 1, \"entries\": 4, \"ways\": 2, \"page_sizes\": [\"4K\"],"
    "   \"per_core\": false, \"hit_cycles\": 0},"
    "  {\"name\": \"stlb\", \"level\": 2, \"entries\": 16, \"ways\": 4,"
    "   \"page_sizes\": [\"4K\", \"2M\"], \"per_core\": true, \"hit_cycles\": 10}],"
    " \"costs\": {\"page_walk\": 30, \"invlpg\": 100, \"flush_all\": 120, \"ipi_send\": 200,"
    "  \"ipi_latency\": {\"smt\": 1000, \"socket\": 1500, \"remote\": 2500},"
    "  \"irq_entry\": 300, \"irq_exit\": 300,"
    "  \"line_transfer\": {\"self\": 20, \"smt\": 40, \"socket\": 100, \"remote\": 300},"
    "  \"context_switch\": 2000, \"syscall\": 150, \"page_fault\": 1500, \"vma_op\": 3000,"
    "  \"pte_op\": 10}}";

/* policies/linux-4.5.json without its description. */
static const char linux_4_5[] =
    "{\"name\": \"linux-4.5\", \"range_flush\": \"single_page_flush_ceiling\","
    " \"single_page_flush_ceiling\": 33, \"munmap_flush_range\": \"gathered\","
    " \"flush_targets\": \"mm_cpumask\"}";

/* The machine and policy of every run, built once (libFuzzer has no context
 * pointer); read-only afterwards. */
static struct topology *machine;
static struct policy *policy;
/* TLBSIM_FUZZ_KNOWN_BUGS=1: do not steer around the bugs in fuzz/known/
 * (the run filter's step bound and its concurrent-syscall check). */
static bool known_bugs;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	GError *error = NULL;

	(void)argc;
	(void)argv;
	known_bugs = g_strcmp0(g_getenv("TLBSIM_FUZZ_KNOWN_BUGS"), "1") == 0;
	cJSON *json = config_parse_string(tiny_2cpu, "tiny-2cpu", &error);
	g_assert(json != NULL);
	machine = topology_from_json(json, "tiny-2cpu", &error);
	g_assert(machine != NULL);
	cJSON_Delete(json);
	json = config_parse_string(linux_4_5, "linux-4.5", &error);
	g_assert(json != NULL);
	policy = policy_from_json(json, "linux-4.5", &error);
	g_assert(policy != NULL);
	cJSON_Delete(json);
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

/* Does a pass over @ops make a munmap, mprotect or madvise call? */
static bool makes_syscalls(const struct op *ops, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		enum op_kind kind = ops[i].kind;
		if (kind == OP_MUNMAP || kind == OP_MPROTECT || kind == OP_MADVISE ||
		    (kind == OP_LOOP && makes_syscalls(ops[i].body, ops[i].nr_body)))
			return true;
	}
	return false;
}

/* Could two tasks of one process make syscalls at once (see the notes)? */
static bool concurrent_syscalls(const struct workload *w)
{
	uint64_t *callers = g_new0(uint64_t, w->nr_mms);
	bool found = false;

	for (unsigned g = 0; g < w->nr_groups; g++) {
		const struct task_group *group = &w->groups[g];
		if (makes_syscalls(group->ops, group->nr_ops))
			callers[group->mm] += group->count;
		found = found || callers[group->mm] > 1;
	}
	g_free(callers);
	return found;
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
	if (tasks > RUN_MAX_TASKS || ptes > RUN_MAX_PTES || (!known_bugs && concurrent_syscalls(w)))
		return RUN_NONE;
	if (steps <= RUN_MAX_STEPS || known_bugs)
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
	struct workload *w = workload_from_json(json, "fuzz", nr_cpus, &error);

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
	struct workload *w = workload_from_json(json, "fuzz", LOAD_CPUS, &error);
	fuzz_check_result(w != NULL, error);
	if (w != NULL)
		/* Both ways of running, picked by the input so each is reproducible. */
		run(json, size % 2 == 0);
	workload_free(w);
	cJSON_Delete(json);
	return 0;
}
