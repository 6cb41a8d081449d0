/* See support.h. */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/config.h"

static cJSON *load_json(enum inputs_kind kind, const char *name, char **path_out)
{
	GError *error = NULL;
	char *local = g_build_filename(TLBSIM_TEST_DATA, name, NULL);
	char *path = g_file_test(local, G_FILE_TEST_IS_REGULAR) ? g_strdup(local)
								 : inputs_resolve(kind, name, &error);
	cr_assert_not_null(path, "%s", error ? error->message : "");
	cJSON *json = inputs_load_tree(kind, path, NULL, &error);
	cr_assert_not_null(json, "%s", error ? error->message : "");
	g_free(local);
	*path_out = path;
	return json;
}

bool support_small(void)
{
#ifdef TLBSIM_TEST_SANITIZE
	const char *env = g_getenv("TLBSIM_TEST_LONG");
	return !(env && strcmp(env, "1") == 0);
#else
	return false;
#endif
}

struct topology *support_topology(const char *name)
{
	return support_topology_at(name, NULL);
}

struct topology *support_topology_at(const char *name, const char *clock_ghz)
{
	GError *error = NULL;
	char *path;
	cJSON *json = load_json(INPUT_TOPOLOGY, name, &path);
	if (clock_ghz)
		cr_assert(config_apply_set(json, "clock_ghz", clock_ghz, &error), "%s",
			  error->message);
	struct topology *topology = topology_from_json(json, path, &error);
	cr_assert_not_null(topology, "%s", error ? error->message : "");
	cJSON_Delete(json);
	g_free(path);
	return topology;
}

struct policy *support_policy(const char *name)
{
	GError *error = NULL;
	char *path;
	cJSON *json = load_json(INPUT_POLICY, name, &path);
	struct policy *policy = policy_from_json(json, path, &error);
	cr_assert_not_null(policy, "%s", error ? error->message : "");
	cJSON_Delete(json);
	g_free(path);
	return policy;
}

static struct sim_result *support_try(const char *topology, const char *policy,
				      const char *const *sets, const char *workload_json,
				      const struct support_outputs *outputs,
				      struct support_run *out, GError **run_error);

struct support_run support_run(const char *topology, const char *policy,
			       const char *const *sets, const char *workload_json)
{
	return support_run_outputs(topology, policy, sets, workload_json, NULL);
}

struct support_run support_run_outputs(const char *topology, const char *policy,
				       const char *const *sets, const char *workload_json,
				       const struct support_outputs *outputs)
{
	struct support_run r = {0};
	GError *error = NULL;
	r.result = support_try(topology, policy, sets, workload_json, outputs, &r, &error);
	cr_assert_not_null(r.result, "%s", error ? error->message : "");
	return r;
}

char *support_run_error(const char *topology, const char *policy, const char *const *sets,
			const char *workload_json, int *code)
{
	struct support_run r = {0};
	GError *error = NULL;
	r.result = support_try(topology, policy, sets, workload_json, NULL, &r, &error);
	cr_assert_null(r.result, "the run was expected to fail");
	cr_assert_not_null(error);
	char *message = g_strdup(error->message);
	*code = error->code;
	g_error_free(error);
	support_run_free(&r);
	return message;
}

static struct sim_result *support_try(const char *topology, const char *policy,
				      const char *const *sets, const char *workload_json,
				      const struct support_outputs *outputs,
				      struct support_run *out, GError **run_error)
{
	struct support_run r = {0};
	GError *error = NULL;
	char *tpath, *ppath;
	struct sim_result *result;
	cJSON *tjson = load_json(INPUT_TOPOLOGY, topology, &tpath);
	r.topology = topology_from_json(tjson, tpath, &error);
	cr_assert_not_null(r.topology, "%s", error ? error->message : "");

	cJSON *pjson = load_json(INPUT_POLICY, policy, &ppath);
	for (const char *const *s = sets; s && *s; s++) {
		char **kv = g_strsplit(*s, "=", 2);
		cr_assert(config_apply_set(pjson, kv[0], kv[1], &error), "%s", error->message);
		g_strfreev(kv);
	}
	r.policy = policy_from_json(pjson, ppath, &error);
	cr_assert_not_null(r.policy, "%s", error ? error->message : "");

	cJSON *wjson = config_parse_string(workload_json, "case", &error);
	cr_assert_not_null(wjson, "%s", error ? error->message : "");
	r.workload = workload_from_json(wjson, "case", topology_nr_cpus(r.topology), NULL, &error);
	cr_assert_not_null(r.workload, "%s", error ? error->message : "");

	struct sim_input input = {
		.topology = r.topology,
		.workload = r.workload,
		.policy = r.policy,
		.workload_file = "case",
		.seed = 1,
		.run_ahead = true,
	};
	if (outputs) {
		input.trace = outputs->trace;
		input.trace_out = outputs->trace_out;
		input.timeseries_interval_ns = outputs->interval_ns;
		input.timeseries_out = outputs->series_out;
		input.timeseries_key_header = outputs->series_key_header;
		input.timeseries_key = outputs->series_key;
		input.sample_period_ns = outputs->sample_ns[0];
		input.sample_warm_ns = outputs->sample_ns[1];
		input.sample_window_ns = outputs->sample_ns[2];
	}
	result = sim_run(&input, run_error);
	cJSON_Delete(tjson);
	cJSON_Delete(pjson);
	cJSON_Delete(wjson);
	g_free(tpath);
	g_free(ppath);
	*out = r;
	return result;
}

void support_run_free(struct support_run *r)
{
	sim_result_free(r->result);
	workload_free(r->workload);
	policy_free(r->policy);
	topology_free(r->topology);
}

static int compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *support_dir_listing(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	cr_assert_not_null(d, "cannot list %s", dir);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	const char *name;
	while ((name = g_dir_read_name(d)))
		g_ptr_array_add(names, g_strdup(name));
	g_dir_close(d);
	g_ptr_array_sort(names, compare_names);
	g_ptr_array_add(names, NULL);
	char *joined = g_strjoinv(" ", (char **)names->pdata);
	g_ptr_array_free(names, TRUE);
	return joined;
}
