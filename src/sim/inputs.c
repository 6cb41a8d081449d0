/*
 * Locating and loading input files, applying --set overrides.  The parse ->
 * override -> validate order means an override is checked exactly like a value
 * written in the file, with the same messages, led by the option that caused
 * them (blame_set()).
 */
#define _POSIX_C_SOURCE 200809L /* stat() */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

static const char *const folders[NR_INPUT_KINDS] = {"topologies", "workloads", "policies"};
/* NULL-terminated: config_suggest() reads it as a list. */
static const char *const prefixes[NR_INPUT_KINDS + 1] = {"topology", "workload", "policy", NULL};

const char *inputs_folder(enum inputs_kind kind)
{
	return folders[kind];
}

const char *inputs_kind_name(enum inputs_kind kind)
{
	return prefixes[kind];
}

int inputs_key_kind(const char *key, size_t len, const char **hint)
{
	for (int k = 0; k < NR_INPUT_KINDS; k++)
		if (strlen(prefixes[k]) == len && strncmp(key, prefixes[k], len) == 0)
			return k;
	char *word = g_strndup(key, len);
	*hint = config_suggest(word, prefixes);
	g_free(word);
	return -1;
}

/* The installed data next to the running binary (bin/../share/tlbsim), or
 * NULL: an installed copy finds its own data wherever its prefix went. */
static char *beside_binary(void)
{
	char *exe = g_file_read_link("/proc/self/exe", NULL);
	if (!exe)
		return NULL;
	char *bin = g_path_get_dirname(exe);
	char *data = g_build_filename(bin, TLBSIM_DATADIR_FROM_BIN, NULL);
	char *dir = g_canonicalize_filename(data, NULL);
	g_free(data);
	g_free(bin);
	g_free(exe);
	if (g_file_test(dir, G_FILE_TEST_IS_DIR))
		return dir;
	g_free(dir);
	return NULL;
}

static GPtrArray *search_dirs(enum inputs_kind kind)
{
	GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
	const char *env = g_getenv("TLBSIM_DATADIR");
	if (env && *env)
		g_ptr_array_add(dirs, g_build_filename(env, folders[kind], NULL));
	char *installed = beside_binary();
	if (installed)
		g_ptr_array_add(dirs, g_build_filename(installed, folders[kind], NULL));
	g_free(installed);
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

/* @name taken as a path: it must be a regular file. */
static char *resolve_path(const char *name, GError **error)
{
	struct stat st;
	if (stat(name, &st) != 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: %s", name,
			    errno == ENOENT ? "no such file" : g_strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: %s", name,
			    S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		return NULL;
	}
	return g_strdup(name);
}

/* In the bundled folders, or NULL. */
static char *find_bundled(enum inputs_kind kind, const char *file)
{
	GPtrArray *dirs = search_dirs(kind);
	char *found = NULL;
	for (unsigned i = 0; i < dirs->len && !found; i++) {
		char *path = g_build_filename(g_ptr_array_index(dirs, i), file, NULL);
		if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
			found = path;
		else
			g_free(path);
	}
	g_ptr_array_free(dirs, TRUE);
	return found;
}

/*
 * Neither a file nor a bundled name.  A name that looks like a file (it
 * ends in .json) or is a directory here says so, before the suggestion.
 */
static void set_not_found(enum inputs_kind kind, const char *name, const char *file,
			  GError **error)
{
	if (g_file_test(name, G_FILE_TEST_IS_DIR)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "%s: is a directory (expected a %s file or a bundled name)", name,
			    prefixes[kind]);
		return;
	}
	char **known = inputs_list(kind);
	char *bare = g_strndup(file, strlen(file) - 5);
	const char *hint = config_suggest(bare, (const char *const *)known);
	char *list = g_strjoinv(", ", known);
	char *what = g_str_has_suffix(name, ".json")
			     ? g_strdup_printf("%s: no such file, nor a bundled %s", name,
					       prefixes[kind])
			     : g_strdup_printf("no %s named \"%s\"", prefixes[kind], name);
	if (hint)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s (did you mean \"%s\"?)", what,
			    hint);
	else
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s; bundled ones: %s", what,
			    *list ? list : "(none found)");
	g_free(what);
	g_free(list);
	g_free(bare);
	g_strfreev(known);
}

char *inputs_resolve(enum inputs_kind kind, const char *name, GError **error)
{
	if (strchr(name, '/'))
		return resolve_path(name, error);
	if (g_file_test(name, G_FILE_TEST_IS_REGULAR))
		return g_strdup(name);
	char *file = g_str_has_suffix(name, ".json") ? g_strdup(name)
						      : g_strconcat(name, ".json", NULL);
	char *found = find_bundled(kind, file);
	if (!found)
		set_not_found(kind, name, file, error);
	g_free(file);
	return found;
}

static const char *const workload_top_keys[] = {
	"name", "description", "imitates", "simplified", "comment",
	"params", "processes", "regions", "tasks", "report", NULL,
};

/* " (did you mean \"HINT\"?)" or "", for messages (g_free). */
static char *did_you_mean(const char *word, const GPtrArray *names)
{
	const char *hint = config_suggest(word, (const char *const *)names->pdata);
	return hint ? g_strdup_printf(" (did you mean \"%s\"?)", hint) : g_strdup("");
}

/* The names of @params (an object, or NULL), then @more; NULL-terminated. */
static GPtrArray *param_names(const cJSON *params, const char *const *more)
{
	GPtrArray *names = g_ptr_array_new();
	const cJSON *p;
	cJSON_ArrayForEach(p, params)
		g_ptr_array_add(names, p->string);
	for (const char *const *k = more; *k; k++)
		g_ptr_array_add(names, (gpointer)*k);
	g_ptr_array_add(names, NULL);
	return names;
}

/* A key config_apply_set() can name: letters, digits, '_' and '-'. */
static bool settable_key(const char *key)
{
	return *key && key[strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789_-")] == '\0';
}

/*
 * "extends": a file may name a base of its kind and give only what differs.
 * The merge happens here, on the parsed trees, before --set and before the
 * kind's reader, which never sees "extends" and validates the merged tree as
 * if it had been written out in full (its messages name the extending file).
 *
 * Rules (docs/inputs.md): objects merge key by key, recursively; arrays,
 * scalars and sourced numbers ({"value": ..., "source": ...}) replace whole,
 * so a base's source never stays on a number it was not written for; a key
 * the base lacks is refused (a typo would otherwise add a key the reader
 * might ignore or, for optional keys, silently default).  Text for people and
 * the file's identity ("name", "description", "comment", ... and "$schema" at
 * the top) are the extending file's own: the base's are dropped.
 */

/* Depth of an "extends" chain: A extends B extends C is 2. */
#define EXTENDS_MAX_DEPTH 8

/* The extending file's own at the top level: never inherited, always accepted. */
static const char *const own_keys[] = {"name",	   "description", "imitates", "simplified",
				       "comment", "$schema",     NULL};

/*
 * The file @base (the value of "extends" in @file) names: a name with a '/'
 * or ending in ".json" is a path, relative to @file's folder; any other is a
 * bundled name of @kind (not a file in the working directory, so that a
 * bundled file means the same wherever it is run from).
 */
static char *resolve_base(enum inputs_kind kind, const char *file, const char *base,
			  GError **error)
{
	if (strchr(base, '/') || g_str_has_suffix(base, ".json")) {
		char *dir = g_path_get_dirname(file);
		char *path = g_path_is_absolute(base) ? g_strdup(base)
						      : g_build_filename(dir, base, NULL);
		g_free(dir);
		char *found = resolve_path(path, error);
		g_free(path);
		return found;
	}
	char *name = g_strconcat(base, ".json", NULL);
	char *found = find_bundled(kind, name);
	if (!found)
		set_not_found(kind, base, name, error);
	g_free(name);
	return found;
}

/* "PATH.KEY" or "PATH[\"KEY\"]" as config_set_error() writes paths (g_free). */
static char *member_path(const char *path, const char *key)
{
	return settable_key(key) ? g_strdup_printf("%s.%s", path, key)
				       : g_strdup_printf("%s[\"%s\"]", path, key);
}

static bool is_sourced(const cJSON *json);

/*
 * Merge @over (from @file, at JSON @path) into @base (of @base_name), key by
 * key.  @top: the root, where own_keys are @file's own.
 */
static bool merge_object(cJSON *base, const cJSON *over, const char *file, const char *path,
			 const char *base_name, bool top, GError **error)
{
	for (const cJSON *item = over->child; item; item = item->next) {
		const char *key = item->string;
		cJSON *old = cJSON_GetObjectItemCaseSensitive(base, key);
		bool own = (top && g_strv_contains(own_keys, key)) || strcmp(key, "comment") == 0;
		if (!old && !own) {
			GPtrArray *names = param_names(base, (const char *const[]){NULL});
			char *hint = did_you_mean(key, names);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: %s: the base %s has no key \"%s\"%s", file, path,
				    base_name, key, hint);
			g_free(hint);
			g_ptr_array_free(names, TRUE);
			return false;
		}
		if (old && cJSON_IsObject(old) && cJSON_IsObject(item) && !is_sourced(item) &&
		    !is_sourced(old)) {
			char *sub = member_path(path, key);
			bool ok = merge_object(old, item, file, sub, base_name, false, error);
			g_free(sub);
			if (!ok)
				return false;
			continue;
		}
		cJSON *copy = cJSON_Duplicate(item, true);
		if (old)
			cJSON_ReplaceItemInObjectCaseSensitive(base, key, copy);
		else
			cJSON_AddItemToObject(base, key, copy);
	}
	return true;
}

/* Drop the base's own keys that @over does not give (it gives the rest in place). */
static void drop_base_own(cJSON *base, const cJSON *over)
{
	for (const char *const *k = own_keys; *k; k++)
		if (!cJSON_GetObjectItemCaseSensitive(over, *k))
			cJSON_DeleteItemFromObjectCaseSensitive(base, *k);
}

static cJSON *load_chain(enum inputs_kind kind, const char *path, const struct stop *stop,
			 GPtrArray *chain, GError **error);

/*
 * @json (parsed from @path) with its "extends" resolved: the merged tree, or
 * @json itself without one.  Takes @json; NULL with an error.
 */
static cJSON *extend(enum inputs_kind kind, cJSON *json, const char *path,
		     const struct stop *stop, GPtrArray *chain, GError **error)
{
	const cJSON *extends = cJSON_GetObjectItemCaseSensitive(json, "extends");
	if (!cJSON_IsObject(json) || !extends)
		return json;
	if (!cJSON_IsString(extends) || !*extends->valuestring) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: $.extends: expected the name or path of a base %s", path,
			    prefixes[kind]);
		goto out_free_json;
	}
	char *base_path = resolve_base(kind, path, extends->valuestring, error);
	if (!base_path) {
		g_prefix_error(error, "%s: $.extends: ", path);
		goto out_free_json;
	}
	cJSON *base = load_chain(kind, base_path, stop, chain, error);
	g_free(base_path);
	if (!base)
		goto out_free_json;
	char *base_name = g_strdup_printf("\"%s\"", extends->valuestring);
	cJSON_DeleteItemFromObjectCaseSensitive(json, "extends");
	drop_base_own(base, json);
	bool ok = merge_object(base, json, path, "$", base_name, true, error);
	g_free(base_name);
	cJSON_Delete(json);
	if (ok)
		return base;
	cJSON_Delete(base);
	return NULL;
out_free_json:
	cJSON_Delete(json);
	return NULL;
}

/*
 * Parse @path and resolve its "extends" chain; @chain holds the canonical
 * paths of the files that extend it, for the depth limit and cycles.
 */
static cJSON *load_chain(enum inputs_kind kind, const char *path, const struct stop *stop,
			 GPtrArray *chain, GError **error)
{
	char *canonical = g_canonicalize_filename(path, NULL);
	for (unsigned i = 0; i < chain->len; i++) {
		if (strcmp(g_ptr_array_index(chain, i), canonical) == 0) {
			GString *cycle = g_string_new(NULL);
			for (unsigned j = i; j < chain->len; j++)
				g_string_append_printf(cycle, "%s -> ",
						       (const char *)g_ptr_array_index(chain, j));
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: $.extends: a cycle of bases: %s%s",
				    (const char *)g_ptr_array_index(chain, 0), cycle->str,
				    canonical);
			g_string_free(cycle, TRUE);
			g_free(canonical);
			return NULL;
		}
	}
	if (chain->len > EXTENDS_MAX_DEPTH) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: $.extends: more than %d bases in a chain",
			    (const char *)g_ptr_array_index(chain, 0), EXTENDS_MAX_DEPTH);
		g_free(canonical);
		return NULL;
	}
	g_ptr_array_add(chain, canonical);
	cJSON *json = config_load_file(path, stop, error);
	if (json)
		json = extend(kind, json, path, stop, chain, error);
	g_ptr_array_remove_index(chain, chain->len - 1);
	return json;
}

cJSON *inputs_load_tree(enum inputs_kind kind, const char *path, const struct stop *stop,
			GError **error)
{
	GPtrArray *chain = g_ptr_array_new_with_free_func(g_free);
	cJSON *json = load_chain(kind, path, stop, chain, error);
	g_ptr_array_free(chain, TRUE);
	return json;
}

/*
 * "workload.params.NAME...": NAME must be a parameter of the file.  A new
 * one would do nothing (every expression of the file names only its own
 * parameters), so a misspelt name is refused as in the short form.
 */
static bool check_param(const cJSON *params, const char *arg, const char *rest, GError **error)
{
	char *name = g_strndup(rest, strcspn(rest, ".["));
	bool ok = cJSON_IsObject(params) && cJSON_GetObjectItemCaseSensitive(params, name);
	if (!ok) {
		const char *const none[] = {NULL};
		GPtrArray *names = param_names(cJSON_IsObject(params) ? params : NULL, none);
		char *hint = did_you_mean(name, names);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: the workload has no parameter \"%s\"%s", arg, name,
			    names->len > 1 ? hint : " (it has none)");
		g_free(hint);
		g_ptr_array_free(names, TRUE);
	}
	g_free(name);
	return ok;
}

/*
 * "workload.threads=24" is sugar for "workload.params.threads=24" when
 * "threads" is a parameter and not a top-level key.  A name that is neither
 * is refused here, with a suggestion among both, since the most likely
 * mistake is a misspelt parameter; so is a misspelt parameter in the long
 * form.  On error *path is freed.
 */
static bool workload_param_path(const cJSON *json, const char *arg, char **path, GError **error)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(json, "params");
	char *first = g_strndup(*path, strcspn(*path, ".["));
	bool is_param = params && cJSON_GetObjectItemCaseSensitive(params, first);
	bool top = g_strv_contains(workload_top_keys, first);
	bool ok = true;
	if (strcmp(first, "params") == 0 && (*path)[strlen(first)] == '.') {
		ok = check_param(params, arg, *path + strlen(first) + 1, error);
	} else if (is_param && !top) {
		char *full = g_strconcat("params.", *path, NULL);
		g_free(*path);
		*path = full;
	} else if (!top) {
		GPtrArray *names = param_names(params, workload_top_keys);
		char *hint = did_you_mean(first, names);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: the workload has no parameter or key \"%s\"%s", arg, first,
			    hint);
		g_free(hint);
		g_ptr_array_free(names, TRUE);
		ok = false;
	}
	if (!ok) {
		g_free(*path);
		*path = NULL;
	}
	g_free(first);
	return ok;
}

/*
 * The path in @kind's file (@json) that --set @arg sets: after "KIND.", a
 * leading "$." dropped, a workload parameter's short form expanded.  *path
 * stays NULL when @arg is for another kind.  Malformed options and unknown
 * kinds are refused whatever @kind is.
 */
static bool set_path(enum inputs_kind kind, const cJSON *json, const char *arg, char **path,
		     GError **error)
{
	*path = NULL;
	const char *eq = strchr(arg, '=');
	const char *dot = strchr(arg, '.');
	if (!eq || !dot || dot > eq) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: expected KIND.PATH=VALUE with KIND topology, workload "
			    "or policy (e.g. --set workload.threads=24)",
			    arg);
		return false;
	}
	const char *hint = NULL;
	int found = inputs_key_kind(arg, (size_t)(dot - arg), &hint);
	if (found < 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: unknown kind \"%.*s\"%s%s%s (expected topology, "
			    "workload or policy)",
			    arg, (int)(dot - arg), arg, hint ? " (did you mean \"" : "",
			    hint ? hint : "", hint ? "\"?)" : "");
		return false;
	}
	if (found != (int)kind)
		return true;
	const char *start = g_str_has_prefix(dot + 1, "$.") ? dot + 3 : dot + 1;
	*path = g_strndup(start, (gsize)(eq > start ? eq - start : 0));
	return kind != INPUT_WORKLOAD || workload_param_path(json, arg, path, error);
}

/* Apply the overrides meant for @kind. */
static bool apply_sets(enum inputs_kind kind, cJSON *json, const char *const *sets,
		       GError **error)
{
	for (const char *const *s = sets; s && *s; s++) {
		char *path = NULL;
		if (!set_path(kind, json, *s, &path, error))
			return false;
		if (!path)
			continue;
		GError *set_error = NULL;
		bool ok = config_apply_set(json, path, strchr(*s, '=') + 1, &set_error);
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

char *inputs_set_key(const char *key, size_t len)
{
	const char *dot = memchr(key, '.', len);
	if (!dot)
		return g_strndup(key, len);
	const char *rest = dot + 1;
	size_t rest_len = len - (size_t)(rest - key);
	if (rest_len >= 2 && strncmp(rest, "$.", 2) == 0) {
		rest += 2;
		rest_len -= 2;
	}
	static const char params[] = "params.";
	size_t skip = strlen(params);
	bool workload = dot - key == 8 && strncmp(key, "workload", 8) == 0;
	if (workload && rest_len > skip && strncmp(rest, params, skip) == 0) {
		rest += skip;
		rest_len -= skip;
	}
	GString *out = g_string_new_len(key, dot - key + 1);
	g_string_append_len(out, rest, (gssize)rest_len);
	return g_string_free(out, FALSE);
}

bool inputs_check_sets(const char *const *sets, GError **error)
{
	/* Per option, its key; NULL for a malformed one, refused when applied. */
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	bool ok = true;
	for (unsigned i = 0; ok && sets && sets[i]; i++) {
		const char *eq = strchr(sets[i], '=');
		char *key = eq ? inputs_set_key(sets[i], (size_t)(eq - sets[i])) : NULL;
		for (unsigned j = 0; ok && key && j < i; j++) {
			const char *seen = g_ptr_array_index(keys, j);
			if (seen && strcmp(seen, key) == 0) {
				g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
					    "--set %s: \"%.*s\" is already set by --set %s",
					    sets[i], (int)(eq - sets[i]), sets[i], sets[j]);
				ok = false;
			}
		}
		g_ptr_array_add(keys, key);
	}
	g_ptr_array_free(keys, TRUE);
	return ok;
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

/* @kind's reader on @json, into @inputs (the policy checked against the
 * topology, which the workload needs too). */
static bool read_kind(enum inputs_kind kind, const cJSON *json, struct inputs *inputs,
		      const struct stop *stop, GError **error)
{
	const char *file = inputs->paths[kind];
	switch (kind) {
	case INPUT_TOPOLOGY:
		inputs->topology = topology_from_json(json, file, error);
		return inputs->topology != NULL;
	case INPUT_POLICY:
		inputs->policy = policy_from_json(json, file, error);
		return inputs->policy && policy_check_topology(inputs->policy, inputs->topology,
								error);
	case INPUT_WORKLOAD:
		inputs->workload = workload_from_json(
		    json, file,
		    inputs->topology ? topology_nr_cpus(inputs->topology) : inputs->nr_cpus, stop,
		    error);
		return inputs->workload != NULL;
	default:
		g_assert_not_reached();
	}
}

/* Load @kind's file (inputs->paths[kind]), apply @sets, read it. */
static bool load_with(enum inputs_kind kind, const char *const *sets, struct inputs *inputs,
		      const struct stop *stop, GError **error)
{
	cJSON *json = inputs_load_tree(kind, inputs->paths[kind], stop, error);
	bool ok = json && apply_sets(kind, json, sets, error) &&
		  read_kind(kind, json, inputs, stop, error);
	cJSON_Delete(json);
	return ok;
}

/*
 * The message @kind fails to load with under @sets (g_free), NULL if it
 * loads; @inputs gives the path and the topology, and is not changed.
 */
static char *probe(enum inputs_kind kind, const char *const *sets, const struct inputs *inputs,
		   const struct stop *stop)
{
	struct inputs scratch = {.topology = inputs->topology, .nr_cpus = inputs->nr_cpus};
	if (kind == INPUT_TOPOLOGY)
		scratch.topology = NULL;
	scratch.paths[kind] = inputs->paths[kind];
	GError *error = NULL;
	char *message = NULL;
	if (!load_with(kind, sets, &scratch, stop, &error))
		message = g_strdup(error->message);
	g_clear_error(&error);
	if (kind == INPUT_TOPOLOGY)
		topology_free(scratch.topology);
	workload_free(scratch.workload);
	policy_free(scratch.policy);
	return message;
}

/* @sets without @skip, or without every one for @kind when @skip is NULL. */
static GPtrArray *sets_without(const char *const *sets, enum inputs_kind kind, const char *skip)
{
	GPtrArray *out = g_ptr_array_new();
	size_t len = strlen(prefixes[kind]);
	for (const char *const *s = sets; s && *s; s++) {
		bool mine = strncmp(*s, prefixes[kind], len) == 0 && (*s)[len] == '.';
		if (skip ? *s != skip : !mine)
			g_ptr_array_add(out, (gpointer)*s);
	}
	g_ptr_array_add(out, NULL);
	return out;
}

/* Length of the JSON path ("$", "$.a[2].b", "$[\"odd key\"]") that starts @s
 * and is followed by ": ", as config_set_error() writes it; 0 if none. */
static size_t json_path_length(const char *s)
{
	const char *p = s;
	if (*p++ != '$')
		return 0;
	for (;;) {
		if (*p == '.') {
			const char *key = ++p;
			while (g_ascii_isalnum(*p) || *p == '_' || *p == '-')
				p++;
			if (p == key)
				return 0;
		} else if (p[0] == '[' && p[1] == '"') {
			for (p += 2; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (p[0] != '"' || p[1] != ']')
				return 0;
			p += 2;
		} else if (*p == '[') {
			while (g_ascii_isdigit(*++p))
				;
			if (*p++ != ']')
				return 0;
		} else {
			break;
		}
	}
	return g_str_has_prefix(p, ": ") ? (size_t)(p - s) : 0;
}

/* @inner is @outer, or a member or element below it: "$.a" and "$.a[1].b". */
static bool json_path_within(const char *inner, size_t inner_len, const char *outer,
			     size_t outer_len)
{
	return inner_len >= outer_len && strncmp(inner, outer, outer_len) == 0 &&
	       (inner_len == outer_len || inner[outer_len] == '.' || inner[outer_len] == '[');
}

/*
 * Is @message ("FILE: $.PATH: reason", from @kind's reader) about where --set
 * @arg sets a value: at its path, above it (an unknown key is reported on its
 * object) or below it (a field of an object the option gave)?
 */
static bool is_about(enum inputs_kind kind, const cJSON *file, const char *arg,
		     const char *message, const struct inputs *inputs)
{
	bool about = false;
	char *path = NULL;
	size_t file_len = strlen(inputs->paths[kind]);
	if (strncmp(message, inputs->paths[kind], file_len) == 0 &&
	    g_str_has_prefix(message + file_len, ": ") &&
	    set_path(kind, file, arg, &path, NULL) && path) {
		const char *at = message + file_len + 2;
		size_t at_len = json_path_length(at);
		char *set = g_strconcat("$.", path, NULL);
		about = at_len && (json_path_within(set, strlen(set), at, at_len) ||
				   json_path_within(at, at_len, set, strlen(set)));
		g_free(set);
	}
	g_free(path);
	return about;
}

/*
 * @kind failed in its reader with *@error after its --set options were
 * applied.  Unless the file alone fails the same way, one of them is to
 * blame, and the message starts with it ("--set topology.costs.x=5: FILE:
 * $.costs: unknown key ..."): the value came from the command line, and the
 * file and the JSON path still say where it went.  Of the options without
 * which the message changes, the last whose path the error is at (or above,
 * or below) is named, else the last.  Each candidate costs a reload, only
 * once a load has failed.
 */
static void blame_set(enum inputs_kind kind, const char *const *sets,
		      const struct inputs *inputs, const struct stop *stop, GError **error)
{
	const char *message = (*error)->message;
	GPtrArray *others = sets_without(sets, kind, NULL);
	char *alone = probe(kind, (const char *const *)others->pdata, inputs, stop);
	bool own = alone && strcmp(alone, message) == 0;
	g_free(alone);
	g_ptr_array_free(others, TRUE);
	cJSON *file = own ? NULL : inputs_load_tree(kind, inputs->paths[kind], stop, NULL);
	if (!file)
		return;
	size_t len = strlen(prefixes[kind]);
	const char *culprit = NULL, *related = NULL;
	for (const char *const *s = sets; s && *s; s++) {
		if (strncmp(*s, prefixes[kind], len) != 0 || (*s)[len] != '.')
			continue;
		GPtrArray *rest = sets_without(sets, kind, *s);
		char *without = probe(kind, (const char *const *)rest->pdata, inputs, stop);
		g_ptr_array_free(rest, TRUE);
		if (!without || strcmp(without, message) != 0) {
			culprit = *s;
			if (is_about(kind, file, *s, message, inputs))
				related = *s;
		}
		g_free(without);
	}
	if (related)
		culprit = related;
	if (culprit) {
		GError *old = *error;
		*error = g_error_new(old->domain, old->code, "--set %s: %s", culprit, old->message);
		g_error_free(old);
	}
	cJSON_Delete(file);
}

static bool load_kind(const struct inputs_request *request, enum inputs_kind kind,
		      struct inputs *inputs, GError **error)
{
	const char *wanted = request->names[kind];
	if (!wanted && kind == INPUT_POLICY)
		wanted = default_policy(inputs->topology);
	inputs->paths[kind] = inputs_resolve(kind, wanted, error);
	if (!inputs->paths[kind])
		return false;
	cJSON *json = inputs_load_tree(kind, inputs->paths[kind], request->stop, error);
	bool ok = json && apply_sets(kind, json, request->sets, error);
	if (ok && !read_kind(kind, json, inputs, request->stop, error)) {
		blame_set(kind, request->sets, inputs, request->stop, error);
		ok = false;
	}
	if (ok) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(json, "name");
		inputs->names[kind] = g_strdup(cJSON_IsString(name) ? name->valuestring : wanted);
	}
	cJSON_Delete(json);
	return ok;
}

/* Text for people, not settings: left out of inputs_keys(). */
static const char *const doc_keys[] = {"comment", "description", "imitates", "simplified", NULL};


/* {"value": N, "source": "..."}: one setting, as --set changes its value. */
static bool is_sourced(const cJSON *json)
{
	if (!cJSON_IsObject(json) || !cJSON_GetObjectItemCaseSensitive(json, "value"))
		return false;
	for (const cJSON *item = json->child; item; item = item->next)
		if (strcmp(item->string, "value") != 0 && strcmp(item->string, "source") != 0)
			return false;
	return true;
}

/* The leaves under @json, whose key is @path, into @keys. */
static void add_keys(const cJSON *json, GString *path, GPtrArray *keys)
{
	if ((!cJSON_IsObject(json) && !cJSON_IsArray(json)) || is_sourced(json)) {
		g_ptr_array_add(keys, g_strdup(path->str));
		return;
	}
	size_t len = path->len;
	int index = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, json) {
		if (cJSON_IsArray(json))
			g_string_append_printf(path, "[%d]", index++);
		else if (settable_key(item->string) && !g_strv_contains(doc_keys, item->string))
			g_string_append_printf(path, ".%s", item->string);
		else
			continue;
		add_keys(item, path, keys);
		g_string_truncate(path, len);
	}
}

/*
 * The keys of @kind's file (@json) into @keys: its top-level "name" and the
 * doc keys left out, a workload's parameters first and in the short form
 * --set takes (workload.threads), unless a top-level key has their name.
 */
static void kind_keys(enum inputs_kind kind, const cJSON *json, GPtrArray *keys)
{
	GString *path = g_string_new(NULL);
	const cJSON *params = kind == INPUT_WORKLOAD
				      ? cJSON_GetObjectItemCaseSensitive(json, "params")
				      : NULL;
	if (!cJSON_IsObject(params))
		params = NULL;
	const cJSON *item;
	cJSON_ArrayForEach(item, params) {
		if (!settable_key(item->string))
			continue;
		g_string_printf(path, "workload.%s%s",
				g_strv_contains(workload_top_keys, item->string) ? "params." : "",
				item->string);
		add_keys(item, path, keys);
	}
	cJSON_ArrayForEach(item, json) {
		if (strcmp(item->string, "name") == 0 || !settable_key(item->string) ||
		    g_strv_contains(doc_keys, item->string) ||
		    item == params)
			continue;
		g_string_printf(path, "%s.%s", prefixes[kind], item->string);
		add_keys(item, path, keys);
	}
	g_string_free(path, TRUE);
}

/* @kind's file named @name, with @sets applied, or NULL; *path its path. */
static cJSON *load_for_keys(enum inputs_kind kind, const char *name, const char *const *sets,
			    const struct stop *stop, char **path, GError **error)
{
	*path = inputs_resolve(kind, name, error);
	if (!*path)
		return NULL;
	cJSON *json = inputs_load_tree(kind, *path, stop, error);
	if (json && !apply_sets(kind, json, sets, error)) {
		cJSON_Delete(json);
		json = NULL;
	}
	return json;
}

char **inputs_keys(const struct inputs_request *request, GError **error)
{
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	const char *names[NR_INPUT_KINDS];
	memcpy(names, request->names, sizeof(names));
	bool ok = inputs_check_sets(request->sets, error);
	for (int kind = 0; ok && kind < NR_INPUT_KINDS; kind++) {
		/* Order: topology, workload, policy; the policy's default needs the topology. */
		if (!names[kind])
			continue;
		char *path = NULL;
		cJSON *json = load_for_keys(kind, names[kind], request->sets, request->stop, &path,
					    error);
		ok = json != NULL;
		if (ok)
			kind_keys(kind, json, keys);
		if (ok && kind == INPUT_TOPOLOGY && !names[INPUT_POLICY]) {
			struct topology *topology = topology_from_json(json, path, error);
			ok = topology != NULL;
			if (ok)
				names[INPUT_POLICY] = default_policy(topology);
			topology_free(topology);
		}
		cJSON_Delete(json);
		g_free(path);
	}
	if (!ok) {
		g_ptr_array_free(keys, TRUE);
		return NULL;
	}
	g_ptr_array_add(keys, NULL);
	return (char **)g_ptr_array_free(keys, FALSE);
}

bool inputs_load(const struct inputs_request *request, struct inputs *inputs, GError **error)
{
	memset(inputs, 0, sizeof(*inputs));
	if (!inputs_check_sets(request->sets, error) ||
	    !load_kind(request, INPUT_TOPOLOGY, inputs, error) ||
	    !load_kind(request, INPUT_POLICY, inputs, error) ||
	    !load_kind(request, INPUT_WORKLOAD, inputs, error)) {
		inputs_clear(inputs);
		/* A stop makes any step fail, with a message of its own or not. */
		if (stop_requested(request->stop)) {
			g_clear_error(error);
			stop_set_error(request->stop, error);
		}
		return false;
	}
	return true;
}

bool inputs_load_workload(const struct inputs_request *request, unsigned nr_cpus,
			  struct inputs *inputs, GError **error)
{
	memset(inputs, 0, sizeof(*inputs));
	inputs->nr_cpus = nr_cpus;
	if (!inputs_check_sets(request->sets, error) ||
	    !load_kind(request, INPUT_WORKLOAD, inputs, error)) {
		inputs_clear(inputs);
		return false;
	}
	return true;
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
