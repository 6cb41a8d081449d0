/*
 * Whole runs (src/sim/sim.c): budgets, deadlocks, and the shape of the result.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

static const char *waits_forever =
	"{\"name\": \"stuck\","
	" \"tasks\": ["
	"  {\"name\": \"waiter\", \"program\": [{\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 2}]},"
	"  {\"name\": \"setter\", \"program\": [{\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1}]}]}";

/* Six blocked tasks: the first four named, the rest counted. */
Test(sim, many_blocked_tasks_are_summed_up)
{
	int code = -1;
	char *msg = support_run_error(
	    "tiny-2cpu.json", "linux-4.5", NULL,
	    "{\"name\": \"stuck\", \"tasks\": ["
	    "  {\"name\": \"waiter\", \"count\": 6, \"program\": ["
	    "    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 2}]},"
	    "  {\"name\": \"setter\", \"program\": ["
	    "    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1}]}]}",
	    &code);
	cr_assert(strstr(msg, "6 task(s) still blocked") != NULL, "%s", msg);
	char **named = g_strsplit(msg, " waits on flag ", -1);
	cr_expect_eq(g_strv_length(named) - 1, 4, "%s", msg);
	cr_expect(g_str_has_suffix(msg, "; and 2 more"), "%s", msg);
	g_strfreev(named);
	g_free(msg);
}

Test(sim, blocked_tasks_at_the_end_are_an_error)
{
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, waits_forever, &code);
	cr_assert_eq(code, TLBSIM_ERROR_INVALID);
	cr_assert(strstr(msg, "1 task(s) still blocked") != NULL, "%s", msg);
	/* Which task, where, and on which flag. */
	cr_assert(g_str_has_suffix(msg, ": waiter 0 at $.tasks[0].program[0] waits on flag "
					"\"go\" (now 1)"),
		  "%s", msg);
	g_free(msg);
}

static const char *yield_loop =
	"{\"name\": \"spin\", \"regions\": [{\"name\": \"r\", \"size\": 4096, \"populate\": \"all\"}],"
	" \"tasks\": [{\"name\": \"t\", \"program\": [{\"op\": \"loop\", \"count\": 1000000, \"body\": ["
	"   {\"op\": \"yield\"}]}]}]}";

static struct sim_result *run_stopped(const char *workload, uint64_t max_events,
				      uint64_t max_sim_ns, struct stop stop, GError **error);

static struct sim_result *run_with_budget(const char *workload, uint64_t max_events,
					  uint64_t max_sim_ns, double max_wall_seconds,
					  GError **error)
{
	return run_stopped(workload, max_events, max_sim_ns, stop_from_now(NULL, max_wall_seconds),
			   error);
}

static struct sim_result *run_stopped(const char *workload, uint64_t max_events,
				      uint64_t max_sim_ns, struct stop stop, GError **error)
{
	GError *local = NULL;
	char *tpath = g_build_filename(TLBSIM_TEST_DATA, "tiny-2cpu.json", NULL);
	cJSON *t = config_load_file(tpath, NULL, &local);
	struct topology *topo = topology_from_json(t, tpath, &local);
	cr_assert_not_null(topo);
	cJSON *p = config_parse_string(
		"{\"name\": \"p\", \"range_flush\": \"single_page_flush_ceiling\","
		" \"munmap_flush_range\": \"gathered\", \"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		"policy", &local);
	struct policy *policy = policy_from_json(p, "policy", &local);
	cr_assert_not_null(policy);
	cJSON *w = config_parse_string(workload, "w", &local);
	struct workload *wl = workload_from_json(w, "w", 2, NULL, &local);
	cr_assert_not_null(wl);
	struct sim_input input = {.topology = topo, .workload = wl, .policy = policy,
				  .workload_file = "w", .seed = 1, .run_ahead = true,
				  .max_events = max_events, .max_sim_ns = max_sim_ns,
				  .stop = stop};
	struct sim_result *r = sim_run(&input, error);
	workload_free(wl);
	policy_free(policy);
	topology_free(topo);
	cJSON_Delete(t);
	cJSON_Delete(p);
	cJSON_Delete(w);
	g_free(tpath);
	return r;
}

Test(sim, event_budget_stops_the_run)
{
	GError *error = NULL;
	cr_assert_null(run_with_budget(yield_loop, 1000, 0, 0, &error));
	cr_assert_eq(error->code, TLBSIM_ERROR_LIMIT);
	cr_assert(strstr(error->message, "after 1000 events") != NULL, "%s", error->message);
	g_error_free(error);
}

Test(sim, time_budget_stops_the_run)
{
	GError *error = NULL;
	cr_assert_null(run_with_budget(yield_loop, 0, 50000, 0, &error));
	cr_assert_eq(error->code, TLBSIM_ERROR_LIMIT);
	cr_assert(strstr(error->message, "50000 ns") != NULL, "%s", error->message);
	g_error_free(error);
}

Test(sim, result_counts_every_cpu)
{
	const char *w =
		"{\"name\": \"each\", \"regions\": [{\"name\": \"r\", \"size\": 8192, \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"t\", \"count\": 4, \"cpu\": \"$thread\", \"program\": ["
		"   {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", \"pages\": 2,"
		"    \"rounds\": 10, \"cycles\": 1}]}]}";
	struct support_run r = support_run("tiny-smt.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->nr_cpus, 4);
	struct counters sum = {0};
	for (unsigned c = 0; c < 4; c++) {
		cr_assert_eq(CPU(r, c, accesses), 20);
		counters_add(&sum, &r.result->per_cpu[c]);
	}
	cr_assert_eq(memcmp(&sum, &r.result->total, sizeof(sum)), 0);
	cr_assert_eq(r.result->accesses, 80);
	cr_assert_eq(r.result->round_accesses, 80);
	cr_assert_eq(r.result->accessor_threads, 4);
	support_run_free(&r);
}


/*
 * A program that would compute for ever (found by fuzzing: it never handed
 * the CPU back, so no budget could stop it) stops at the time budget.
 */
Test(sim, endless_compute_stops_at_the_time_budget)
{
	const char *w =
		"{\"name\": \"endless\", \"tasks\": [{\"name\": \"t\", \"program\": ["
		"  {\"op\": \"loop\", \"count\": \"1000000000000\", \"body\": ["
		"    {\"op\": \"compute\", \"cycles\": 1}]}]}]}";
	GError *error = NULL;
	cr_assert_null(run_with_budget(w, 0, 1000000, 0, &error));
	cr_assert_eq(error->code, TLBSIM_ERROR_LIMIT);
	g_error_free(error);
}

/*
 * An access loop nobody stops makes few events (one per dispatch of up to
 * 65536 accesses), so the wall-time budget must be checked every few events,
 * not every few thousand: this one stopped after 6-16 s of a 1 s budget.
 */
Test(sim, endless_access_loop_stops_at_the_wall_budget)
{
	const char *w =
		"{\"name\": \"spin\", \"regions\": [{\"name\": \"r\", \"size\": \"64K\","
		" \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"setter\", \"program\": ["
		"   {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1}]},"
		"  {\"name\": \"reader\", \"program\": ["
		"   {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"   {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"random\", \"pages\": 16,"
		"    \"while_flag\": \"run\", \"cycles\": 1}]}]}";
	GError *error = NULL;
	gint64 start = g_get_monotonic_time();
	cr_assert_null(run_with_budget(w, 0, 0, 0.2, &error));
	double seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	cr_assert_eq(error->code, TLBSIM_ERROR_LIMIT, "%s", error->message);
	cr_assert(strstr(error->message, "wall time") != NULL, "%s", error->message);
	/* A bound, not a benchmark: the budget plus a few slices' worth. */
	cr_assert_lt(seconds, 5.0, "stopped after %.1f s of a 0.2 s budget", seconds);
	g_error_free(error);
}

/*
 * A stop requested before a run that would end within its first slice of
 * events: the run polls it at its start and its end, not only between
 * slices (such a run gave exit 0 and a CSV for a SIGTERM).
 */
Test(sim, stop_before_a_short_run)
{
	atomic_int cancel = 1;
	GError *error = NULL;
	cr_assert_null(run_stopped(yield_loop, 0, 0, stop_from_now(&cancel, 0), &error));
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED), "%s",
		  error->message);
	g_clear_error(&error);
}

/*
 * Ops that take no time, in a loop of a trillion rounds: --max-sim-ns cannot
 * stop it, the event budget would after hours.  It fails after 2^24 of them.
 */
Test(sim, loop_without_time_fails, .timeout = 120)
{
	const char *w =
		"{\"name\": \"spin\", \"tasks\": [{\"name\": \"t\", \"program\": ["
		"  {\"op\": \"loop\", \"count\": \"1000000000000\", \"body\": ["
		"    {\"op\": \"phase\", \"name\": \"p\", \"action\": \"begin\"},"
		"    {\"op\": \"phase\", \"name\": \"p\", \"action\": \"end\"}]}]}]}";
	GError *error = NULL;
	cr_assert_null(run_with_budget(w, 0, 1000000, 0, &error));
	cr_assert_eq(error->code, TLBSIM_ERROR_INVALID, "%s", error->message);
	cr_expect(g_str_has_prefix(error->message, "w: $.tasks[0].program[0].body["), "%s",
		  error->message);
	cr_expect(strstr(error->message, "]: 16777216 ops in a row without simulated time "
					 "passing: a loop whose body takes no time never ends") !=
		  NULL, "%s", error->message);
	g_error_free(error);
}
