/*
 * Tests of src/native/runner.c and runner_ops.c: small workloads run for
 * real in this process's children.  Op counts and accesses follow from the
 * program; mmap after munmap maps at the old address; a phase narrows the
 * counted calls; run-time errors name the op's JSON path; what has no
 * native meaning is refused.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/native/runner.h"

static struct workload *load(const char *text)
{
	cJSON *json = cJSON_Parse(text);
	cr_assert_not_null(json, "%s", text);
	GError *error = NULL;
	struct workload *w = workload_from_json(json, "t.json", 2, NULL, &error);
	cr_assert_not_null(w, "%s", error ? error->message : "");
	cJSON_Delete(json);
	return w;
}

static const struct runner_options opts = {.seed = 1, .nr_cpus = 2, .ghz_milli = 2000};

/* munmap 4 chunks, map 2 again, count the munmaps of the phase only. */
static const char CHURN[] =
    "{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"chunks\": 4, \"chunk_size\": \"8K\","
    " \"populate\": \"all\"}],"
    " \"tasks\": [{\"name\": \"main\", \"cpu\": 0, \"program\": ["
    "  {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 3},"
    "  {\"op\": \"phase\", \"name\": \"m\", \"action\": \"begin\"},"
    "  {\"op\": \"loop\", \"count\": 3, \"var\": \"i\", \"body\": ["
    "    {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": \"$i\"}]},"
    "  {\"op\": \"phase\", \"name\": \"m\", \"action\": \"end\"},"
    "  {\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 0},"
    "  {\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 3},"
    "  {\"op\": \"access\", \"region\": \"r\", \"chunk\": 3, \"pattern\": \"sequential\","
    "   \"pages\": 2, \"rounds\": 5, \"write\": 1, \"cycles\": 1}]},"
    "  {\"name\": \"reader\", \"count\": 2, \"program\": ["
    "  {\"op\": \"compute\", \"cycles\": 2000},"
    "  {\"op\": \"sleep\", \"us\": 10}, {\"op\": \"yield\"}]}],"
    " \"report\": {\"op\": \"munmap\", \"phase\": \"m\"}}";

Test(native_runner, churn)
{
	struct workload *w = load(CHURN);
	GError *error = NULL;
	cr_assert(runner_check(w, "t.json", 2, &error));
	struct runner_result r;
	cr_assert(runner_run(w, "t.json", &opts, NULL, &r, &error), "%s",
		  error ? error->message : "");
	cr_assert_eq(r.op_count, 3, "the munmap before the phase is not counted");
	cr_assert_gt(r.op_ns_sum, 0);
	cr_assert_eq(r.accesses, 10);
	cr_assert_eq(r.round_accesses, 10);
	cr_assert_eq(r.threads, 1);
	cr_assert_eq(r.access_tasks, 1);
	cr_assert_leq(r.phase_ns, r.window_ns);
	cr_assert_geq(r.window_ns, 10000, "the readers sleep 10 us");
	workload_free(w);
}

/* Two processes ping-pong on a flag pair. */
static const char PINGPONG[] =
    "{\"name\": \"t\", \"processes\": [\"a\", \"b\"],"
    " \"regions\": [{\"name\": \"r\", \"size\": \"4K\", \"process\": \"b\"}],"
    " \"tasks\": [{\"name\": \"a\", \"process\": \"a\", \"program\": ["
    "  {\"op\": \"loop\", \"count\": 50, \"var\": \"i\", \"body\": ["
    "    {\"op\": \"set_flag\", \"flag\": \"ping\", \"value\": \"$i + 1\"},"
    "    {\"op\": \"wait_flag\", \"flag\": \"pong\", \"value\": \"$i + 1\"}]}]},"
    "  {\"name\": \"b\", \"process\": \"b\", \"program\": ["
    "  {\"op\": \"loop\", \"count\": 50, \"var\": \"i\", \"body\": ["
    "    {\"op\": \"wait_flag\", \"flag\": \"ping\", \"value\": \"$i + 1\"},"
    "    {\"op\": \"set_flag\", \"flag\": \"pong\", \"value\": \"$i + 1\"}]}]}]}";

Test(native_runner, processes_ping_pong)
{
	struct workload *w = load(PINGPONG);
	GError *error = NULL;
	struct runner_result r;
	cr_assert(runner_run(w, "t.json", &opts, NULL, &r, &error), "%s",
		  error ? error->message : "");
	cr_assert_eq(r.op_count, 0);
	cr_assert_gt(r.window_ns, 0);
	workload_free(w);
}

/* fork with a reader thread of the same process: each fork waited for,
 * counted as the report op; the parent's writes after it go on. */
static const char FORKS[] =
    "{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": \"16K\","
    " \"populate\": \"all\"}],"
    " \"tasks\": [{\"name\": \"main\", \"program\": ["
    "  {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
    "  {\"op\": \"fork\", \"count\": 3},"
    "  {\"op\": \"loop\", \"count\": 2, \"body\": [{\"op\": \"fork\"},"
    "    {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\","
    "     \"pages\": 4, \"rounds\": 1, \"write\": 1, \"cycles\": 1}]},"
    "  {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
    "  {\"name\": \"reader\", \"program\": ["
    "  {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\","
    "   \"pages\": 4, \"while_flag\": \"run\", \"cycles\": 1}]}],"
    " \"report\": {\"op\": \"fork\"}}";

Test(native_runner, fork_and_wait)
{
	struct workload *w = load(FORKS);
	GError *error = NULL;
	struct runner_result r;
	cr_assert(runner_run(w, "t.json", &opts, NULL, &r, &error), "%s",
		  error ? error->message : "");
	cr_assert_eq(r.op_count, 5, "3 forks of one op, 2 of a loop");
	cr_assert_gt(r.op_ns_sum, 0);
	cr_assert_geq(r.accesses, 8, "the parent's writes after the forks");
	workload_free(w);
}

static void expect_run_error(const char *text, const char *want)
{
	struct workload *w = load(text);
	GError *error = NULL;
	struct runner_result r;
	cr_assert_not(runner_run(w, "t.json", &opts, NULL, &r, &error));
	cr_assert(strstr(error->message, want), "%s", error->message);
	g_error_free(error);
	workload_free(w);
}

Test(native_runner, run_time_errors)
{
	expect_run_error(
	    "{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": \"8K\"}],"
	    " \"tasks\": [{\"name\": \"main\", \"program\": ["
	    "  {\"op\": \"munmap\", \"region\": \"r\"}, {\"op\": \"munmap\", \"region\": "
	    "\"r\"}]}]}",
	    "$.tasks[0].program[1]: munmap of chunk 0 of r, already unmapped (task main/0)");
	expect_run_error(
	    "{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": \"8K\"}],"
	    " \"tasks\": [{\"name\": \"main\", \"program\": ["
	    "  {\"op\": \"mprotect\", \"region\": \"r\", \"prot\": \"read\"},"
	    "  {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", \"pages\": 1,"
	    "   \"rounds\": 1, \"write\": 1, \"cycles\": 1}]}]}",
	    "$.tasks[0].program[1]: Segmentation fault");
	/* No native meaning: a flag is a futex word, 32 bits. */
	expect_run_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"main\", \"program\": ["
			 "  {\"op\": \"set_flag\", \"flag\": \"f\", \"value\": \"4G\"}]}]}",
			 "$.tasks[0].program[0]: value (a futex word natively) is 4294967296");
}

Test(native_runner, pinned_beyond_the_machine)
{
	struct workload *w = load(
	    "{\"name\": \"t\", \"tasks\": [{\"name\": \"main\", \"count\": 2, \"cpu\": \"$thread\","
	    " \"program\": [{\"op\": \"yield\"}]}]}");
	GError *error = NULL;
	cr_assert_not(runner_check(w, "t.json", 1, &error));
	cr_assert(strstr(error->message, "t.json: $.tasks[0].cpu: thread 1 is pinned to CPU 1, but "
					 "this machine has CPUs 0-0 online"),
		  "%s", error->message);
	g_error_free(error);
	workload_free(w);
}
