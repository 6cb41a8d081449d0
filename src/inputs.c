/*
 * Locating and loading input files, applying --set overrides.  The parse ->
 * override -> validate order means an override is checked exactly like a value
 * written in the file, with the same messages.
 */
#include <string.h>
#include "tlbsim/config.h"
#include "tlbsim/error.h"
#include "tlbsim/inputs.h"

static const char *const folders[NR_INPUT_KINDS] = {"topologies", "workloads", "policies"};
/* NULL-terminated: config_suggest() reads it as a list. */
static const char *const prefixes[NR_INPUT_KINDS + 1] = {"topology", "workload", "policy", NULL};

const char *inputs_folder(enum inputs_kind kind)
{
	return folders[kind];
}

static GPtrArray *search_dirs(enum inputs_kind kind)
{
	GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
	const char *env = g_getenv("TLBSIM_DATADIR");
	if (env && *env)
		g_ptr_array_add(dirs, g_build_filename(env, folders[kind], NULL));
	g_ptr_array_add(dirs, g_build_filename(TLBSIM_SOURCE_DATADIR, folders[kind], NULL));
	g_ptr_array_add(dirs, g_build_filename(TLBSIM_INSTALL_DATADIR, folders[kind], NULL));
	return dirs;
}

static int compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **inputs_list(enum inputs_kind kind)
{
	GPtrArray *dirs = search_dirs(kind);
	GPtrArray *names = g_ptr_array_new();
	for (unsigned i = 0; i < dirs->len; i++) {
		GDir *dir = g_dir_open(g_ptr_array_index(dirs, i), 0, NULL);
		if (!dir)
			continue;
		const char *entry;
		while ((entry = g_dir_read_name(dir))) {
			if (!g_str_has_suffix(entry, ".json"))
				continue;
			char *name = g_strndup(entry, strlen(entry) - 5);
			bool seen = false;
			for (unsigned j = 0; j < names->len && !seen; j++)
				seen = strcmp(g_ptr_array_index(names, j), name) == 0;
			if (seen)
				g_free(name);
			else
				g_ptr_array_add(names, name);
		}
		g_dir_close(dir);
	}
	g_ptr_array_sort(names, compare_names);
	g_ptr_array_add(names, NULL);
	g_ptr_array_free(dirs, TRUE);
	return (char **)g_ptr_array_free(names, FALSE);
}

char *inputs_resolve(enum inputs_kind kind, const char *name, GError **error)
{
	if (strchr(name, '/') || g_file_test(name, G_FILE_TEST_IS_REGULAR)) {
		if (g_file_test(name, G_FILE_TEST_IS_REGULAR))
			return g_strdup(name);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: no such file", name);
		return NULL;
	}
	GPtrArray *dirs = search_dirs(kind);
	char *file = g_str_has_suffix(name, ".json") ? g_strdup(name)
						      : g_strconcat(name, ".json", NULL);
	char *found = NULL;
	for (unsigned i = 0; i < dirs->len && !found; i++) {
		char *path = g_build_filename(g_ptr_array_index(dirs, i), file, NULL);
		if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
			found = path;
		else
			g_free(path);
	}
	if (!found) {
		char **known = inputs_list(kind);
		char *bare = g_strndup(file, strlen(file) - 5);
		const char *hint = config_suggest(bare, (const char *const *)known);
		char *list = g_strjoinv(", ", known);
		if (hint)
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "no %s named \"%s\" (did you mean \"%s\"?)", prefixes[kind], name,
				    hint);
		else
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "no %s named \"%s\"; bundled ones: %s", prefixes[kind], name,
				    *list ? list : "(none found)");
		g_free(list);
		g_free(bare);
		g_strfreev(known);
	}
	g_free(file);
	g_ptr_array_free(dirs, TRUE);
	return found;
}

static const char *const workload_top_keys[] = {
	"name", "description", "imitates", "simplified", "comment",
	"params", "processes", "regions", "tasks", "report", NULL,
};

/*
 * "workload.threads=24" is sugar for "workload.params.threads=24" when
 * "threads" is a parameter and not a top-level key.  A name that is neither
 * is refused here, with a suggestion among both, since the most likely
 * mistake is a misspelt parameter.
 */
static bool workload_param_path(const cJSON *json, const char *arg, char **path, GError **error)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(json, "params");
	char *first = g_strndup(*path, strcspn(*path, ".["));
	bool is_param = params && cJSON_GetObjectItemCaseSensitive(params, first);
	bool ok = true;
	if (is_param && !g_strv_contains(workload_top_keys, first)) {
		char *full = g_strconcat("params.", *path, NULL);
		g_free(*path);
		*path = full;
	} else if (!is_param && !g_strv_contains(workload_top_keys, first)) {
		GPtrArray *names = g_ptr_array_new();
		const cJSON *p;
		cJSON_ArrayForEach(p, params)
			g_ptr_array_add(names, p->string);
		for (const char *const *k = workload_top_keys; *k; k++)
			g_ptr_array_add(names, (gpointer)*k);
		g_ptr_array_add(names, NULL);
		const char *hint = config_suggest(first, (const char *const *)names->pdata);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: the workload has no parameter or key \"%s\"%s%s%s", arg, first,
			    hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
		g_ptr_array_free(names, TRUE);
		g_free(*path);
		ok = false;
	}
	g_free(first);
	return ok;
}

/*
 * Apply the overrides meant for @kind.  "workload.threads=24" is sugar for
 * "workload.params.threads=24" when "threads" is a parameter and not a
 * top-level key.
 */
static bool apply_sets(enum inputs_kind kind, cJSON *json, const char *const *sets,
		       GError **error)
{
	for (const char *const *s = sets; s && *s; s++) {
		const char *eq = strchr(*s, '=');
		const char *dot = strchr(*s, '.');
		if (!eq || !dot || dot > eq) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--set %s: expected KIND.PATH=VALUE with KIND topology, workload "
				    "or policy (e.g. --set workload.threads=24)",
				    *s);
			return false;
		}
		char *prefix = g_strndup(*s, (gsize)(dot - *s));
		bool known = false, mine = false;
		for (int k = 0; k < NR_INPUT_KINDS; k++) {
			known = known || strcmp(prefix, prefixes[k]) == 0;
			mine = mine || (strcmp(prefix, prefixes[k]) == 0 && k == (int)kind);
		}
		if (!known) {
			const char *hint = config_suggest(prefix, prefixes);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--set %s: unknown kind \"%s\"%s%s%s (expected topology, "
				    "workload or policy)",
				    *s, prefix, hint ? " (did you mean \"" : "", hint ? hint : "",
				    hint ? "\"?)" : "");
			g_free(prefix);
			return false;
		}
		g_free(prefix);
		if (!mine)
			continue;
		char *path = g_strndup(dot + 1, (gsize)(eq - dot - 1));
		if (kind == INPUT_WORKLOAD && !workload_param_path(json, *s, &path, error))
			return false;
		GError *set_error = NULL;
		bool ok = config_apply_set(json, path, eq + 1, &set_error);
		if (!ok) {
			/* config_apply_set() starts with "--set PATH: " for the path it got;
			 * name the whole argument instead, once. */
			char *own = g_strdup_printf("--set %s: ", path);
			const char *reason = set_error->message;
			if (g_str_has_prefix(reason, own))
				reason += strlen(own);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "--set %s: %s", *s,
				    reason);
			g_free(own);
			g_error_free(set_error);
		}
		g_free(path);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * Without --policy, the kernel most measurements were published on for the
 * machine's architecture.
 */
static const char *default_policy(const struct topology *topology)
{
	static const char *const names[] = {
		[ARCH_X86] = "linux-4.5",
		[ARCH_ARM64] = "arm64-6.5",
		[ARCH_RISCV] = "riscv-6.8",
	};
	return names[topology->arch];
}

static cJSON *load_kind(const struct inputs_request *request, enum inputs_kind kind,
			struct inputs *inputs, GError **error)
{
	const char *wanted = request->names[kind];
	if (!wanted && kind == INPUT_POLICY)
		wanted = default_policy(inputs->topology);
	inputs->paths[kind] = inputs_resolve(kind, wanted, error);
	if (!inputs->paths[kind])
		return NULL;
	cJSON *json = config_load_file(inputs->paths[kind], error);
	if (!json)
		return NULL;
	if (!apply_sets(kind, json, request->sets, error)) {
		cJSON_Delete(json);
		return NULL;
	}
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(json, "name");
	inputs->names[kind] = g_strdup(cJSON_IsString(name) ? name->valuestring : wanted);
	return json;
}

bool inputs_load(const struct inputs_request *request, struct inputs *inputs, GError **error)
{
	memset(inputs, 0, sizeof(*inputs));
	cJSON *json = load_kind(request, INPUT_TOPOLOGY, inputs, error);
	if (json)
		inputs->topology = topology_from_json(json, inputs->paths[INPUT_TOPOLOGY], error);
	cJSON_Delete(json);
	if (!inputs->topology)
		goto out_clear;

	json = load_kind(request, INPUT_POLICY, inputs, error);
	if (json)
		inputs->policy = policy_from_json(json, inputs->paths[INPUT_POLICY], error);
	cJSON_Delete(json);
	if (!inputs->policy || !policy_check_topology(inputs->policy, inputs->topology, error))
		goto out_clear;

	json = load_kind(request, INPUT_WORKLOAD, inputs, error);
	if (json)
		inputs->workload = workload_from_json(json, inputs->paths[INPUT_WORKLOAD],
						      topology_nr_cpus(inputs->topology), error);
	cJSON_Delete(json);
	if (!inputs->workload)
		goto out_clear;
	return true;

out_clear:
	inputs_clear(inputs);
	return false;
}

void inputs_clear(struct inputs *inputs)
{
	for (int k = 0; k < NR_INPUT_KINDS; k++) {
		g_free(inputs->paths[k]);
		g_free(inputs->names[k]);
	}
	topology_free(inputs->topology);
	workload_free(inputs->workload);
	policy_free(inputs->policy);
	memset(inputs, 0, sizeof(*inputs));
}
