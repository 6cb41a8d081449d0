/*
 * Replays tests/fuzz-regressions/: inputs the fuzz targets in fuzz/ found to
 * crash a loader (each fixed since) and hand-made tricky inputs.  A file is
 * named <target>-<short-name>.json (.txt for fuzz_set) and goes through the
 * loader that target fuzzes, the way the target feeds it:
 *   fuzz_topology  config_parse_string -> topology_from_json
 *   fuzz_workload  config_parse_string -> workload_from_json (8 CPUs)
 *   fuzz_policy    config_parse_string -> policy_from_json
 *   fuzz_set       "PATH=VALUE" -> config_apply_set on topologies/haswell-i7.json
 *                  -> topology_from_json
 * Each must return cleanly: a result, or NULL with a TLBSIM_ERROR that has a
 * message.  Memory errors are the sanitizer build's to catch.  As in the fuzz
 * targets, the text ends at its first NUL byte.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"
#include "tlbsim/workload/workload.h"

#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define REGRESSIONS TLBSIM_SOURCE_DIR "/tests/fuzz-regressions"
#define SET_BASE TLBSIM_SOURCE_DIR "/topologies/haswell-i7.json"
/* The haswell-i7's CPU count, as fuzz/fuzz_workload.c loads with. */
#define WORKLOAD_CPUS 8

/* A call that returned @ok must have set @error exactly when it failed. */
static void check_result(const char *file, bool ok, GError *error)
{
	if (ok) {
		cr_assert_null(error, "%s: success with an error set: %s", file, error->message);
		return;
	}
	cr_assert_not_null(error, "%s: failed without an error", file);
	cr_assert_eq(error->domain, TLBSIM_ERROR, "%s: error outside TLBSIM_ERROR", file);
	cr_assert(error->message != NULL && error->message[0] != '\0', "%s: empty message", file);
	g_error_free(error);
}

/* Parse @text like an input file; NULL (checked) when it is not JSON. */
static cJSON *parse(const char *file, const char *text)
{
	GError *error = NULL;
	cJSON *json = config_parse_string(text, file, &error);
	check_result(file, json != NULL, error);
	return json;
}

static void replay_topology(const char *file, const char *text)
{
	GError *error = NULL;
	cJSON *json = parse(file, text);
	if (json == NULL)
		return;
	struct topology *t = topology_from_json(json, file, &error);
	check_result(file, t != NULL, error);
	if (t != NULL) {
		unsigned n = topology_nr_cpus(t);
		cr_assert_lt(topology_distance(t, 0, n - 1), NR_DISTANCES, "%s", file);
	}
	topology_free(t);
	cJSON_Delete(json);
}

static void replay_workload(const char *file, const char *text)
{
	GError *error = NULL;
	cJSON *json = parse(file, text);
	if (json == NULL)
		return;
	struct workload *w = workload_from_json(json, file, WORKLOAD_CPUS, NULL, &error);
	check_result(file, w != NULL, error);
	workload_free(w);
	cJSON_Delete(json);
}

static void replay_policy(const char *file, const char *text)
{
	GError *error = NULL;
	cJSON *json = parse(file, text);
	if (json == NULL)
		return;
	struct policy *p = policy_from_json(json, file, &error);
	check_result(file, p != NULL, error);
	policy_free(p);
	cJSON_Delete(json);
}

static void replay_set(const char *file, const char *text)
{
	GError *error = NULL;
	char *path = g_strdup(text);
	char *eq = strchr(path, '=');
	const char *value = "";
	if (eq != NULL) {
		*eq = '\0';
		value = eq + 1;
	}
	cJSON *tree = config_load_file(SET_BASE, NULL, &error);
	cr_assert_not_null(tree, "%s", error != NULL ? error->message : "?");
	bool ok = config_apply_set(tree, path, value, &error);
	check_result(file, ok, error);
	if (ok) {
		error = NULL;
		struct topology *t = topology_from_json(tree, SET_BASE, &error);
		check_result(file, t != NULL, error);
		topology_free(t);
	}
	cJSON_Delete(tree);
	g_free(path);
}

static const struct target {
	const char *prefix; /* "<target>-" */
	void (*replay)(const char *file, const char *text);
} targets[] = {
    {"fuzz_topology-", replay_topology},
    {"fuzz_workload-", replay_workload},
    {"fuzz_policy-", replay_policy},
    {"fuzz_set-", replay_set},
};

static int compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the regression files (g_strfreev). */
static char **regression_files(void)
{
	GError *error = NULL;
	GDir *dir = g_dir_open(REGRESSIONS, 0, &error);
	cr_assert_not_null(dir, "%s", error != NULL ? error->message : "?");
	GPtrArray *names = g_ptr_array_new();
	const char *name;
	while ((name = g_dir_read_name(dir)) != NULL)
		if (name[0] != '.')
			g_ptr_array_add(names, g_strdup(name));
	g_dir_close(dir);
	g_ptr_array_sort(names, compare_names);
	g_ptr_array_add(names, NULL);
	return (char **)g_ptr_array_free(names, FALSE);
}

/* Replay every file of @target; returns how many there were. */
static unsigned replay_all(const struct target *target)
{
	char **names = regression_files();
	unsigned n = 0;
	for (char **name = names; *name != NULL; name++) {
		if (!g_str_has_prefix(*name, target->prefix))
			continue;
		char *path = g_build_filename(REGRESSIONS, *name, NULL);
		char *text = NULL;
		GError *error = NULL;
		cr_assert(g_file_get_contents(path, &text, NULL, &error), "%s",
			  error != NULL ? error->message : "?");
		target->replay(*name, text);
		g_free(text);
		g_free(path);
		n++;
	}
	g_strfreev(names);
	return n;
}

Test(fuzz_regressions, every_file_names_its_target)
{
	char **names = regression_files();
	for (char **name = names; *name != NULL; name++) {
		bool known = false;
		for (size_t i = 0; i < G_N_ELEMENTS(targets); i++)
			known = known || g_str_has_prefix(*name, targets[i].prefix);
		cr_expect(known, "%s: not named <fuzz target>-<name>", *name);
	}
	g_strfreev(names);
}

Test(fuzz_regressions, topology)
{
	cr_assert_gt(replay_all(&targets[0]), 0);
}

Test(fuzz_regressions, workload)
{
	cr_assert_gt(replay_all(&targets[1]), 0);
}

Test(fuzz_regressions, policy)
{
	cr_assert_gt(replay_all(&targets[2]), 0);
}

Test(fuzz_regressions, set)
{
	cr_assert_gt(replay_all(&targets[3]), 0);
}
