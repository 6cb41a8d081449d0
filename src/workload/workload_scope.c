/*
 * Names and expressions of workload files as they are read (workload_impl.h):
 * every expression's variables checked against the scope it stands in,
 * names interned or resolved with a suggestion.
 */
#include <string.h>
#include "workload_impl.h"

/* Up to this many parameters a scan beats hashing the name. */
#define PARAMS_SCANNED 16

bool workload_param(const struct workload *workload, const char *name, int64_t *value)
{
	if (workload->nr_params > PARAMS_SCANNED) {
		unsigned i = GPOINTER_TO_UINT(g_hash_table_lookup(workload->param_index, name));
		if (i)
			*value = workload->params[i - 1].value;
		return i != 0;
	}
	for (unsigned i = 0; i < workload->nr_params; i++) {
		if (strcmp(workload->params[i].name, name) == 0) {
			*value = workload->params[i].value;
			return true;
		}
	}
	return false;
}

bool workload_is_identifier(const char *s)
{
	if (!g_ascii_isalpha(*s) && *s != '_')
		return false;
	while (*++s)
		if (!g_ascii_isalnum(*s) && *s != '_')
			return false;
	return true;
}

GHashTable *workload_index_new(void)
{
	return g_hash_table_new(g_str_hash, g_str_equal);
}

void workload_index_add(GHashTable *index, const char *name, unsigned i)
{
	g_hash_table_insert(index, (gpointer)name, GUINT_TO_POINTER(i + 1));
}

int workload_index_find(const GHashTable *index, const char *name)
{
	return (int)GPOINTER_TO_UINT(g_hash_table_lookup((GHashTable *)index, name)) - 1;
}

struct var_check {
	const struct scope *scope;
	const char *missing;
};

bool workload_scope_has(const struct scope *scope, const char *name)
{
	if (strcmp(name, "cpus") == 0)
		return true;
	if (scope->runtime && (strcmp(name, "thread") == 0 || strcmp(name, "task") == 0))
		return true;
	for (unsigned i = 0; i < scope->nr_vars; i++)
		if (strcmp(scope->vars[i], name) == 0)
			return true;
	int64_t unused;
	return workload_param(scope->w, name, &unused);
}

static void check_var(void *ctx, const char *name)
{
	struct var_check *check = ctx;
	if (!check->missing && !workload_scope_has(check->scope, name))
		check->missing = name;
}

static const char *scope_suggest(const struct scope *scope, const char *name)
{
	GPtrArray *names = g_ptr_array_new();
	g_ptr_array_add(names, (gpointer) "cpus");
	if (scope->runtime) {
		g_ptr_array_add(names, (gpointer) "thread");
		g_ptr_array_add(names, (gpointer) "task");
	}
	for (unsigned i = 0; i < scope->nr_vars; i++)
		g_ptr_array_add(names, (gpointer)scope->vars[i]);
	for (unsigned i = 0; i < scope->w->nr_params; i++)
		g_ptr_array_add(names, scope->w->params[i].name);
	g_ptr_array_add(names, NULL);
	const char *best = config_suggest(name, (const char *const *)names->pdata);
	g_ptr_array_free(names, TRUE);
	return best;
}

/* Characters of a bad expression quoted in its error message. */
#define EXPR_QUOTE_CHARS 80

bool workload_read_expr(const struct config_node *node, const char *key, bool required,
		      const struct scope *scope, struct expr **out, GError **error)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(node->json, key);
	struct config_node child = config_child(node, key);
	*out = NULL;
	if (!item) {
		if (required)
			config_set_error(error, node, "missing required key \"%s\"", key);
		return !required;
	}
	if (cJSON_IsBool(item)) {
		*out = expr_constant(cJSON_IsTrue(item) ? 1 : 0);
		return true;
	}
	if (cJSON_IsNumber(item)) {
		double v = item->valuedouble;
		/* Range first: converting an out-of-range double is undefined. */
		if (!(v >= -9.2e18 && v <= 9.2e18)) {
			/* JSON numbers are doubles: exact only up to 2^53. */
			config_set_error(error, &child,
					 "expected an integer within +-9.2e18, got %.17g (write a "
					 "larger product as an expression string)", v);
			return false;
		}
		if (v != (double)(int64_t)v) {
			config_set_error(error, &child, "expected an integer, got %g", v);
			return false;
		}
		*out = expr_constant((int64_t)v);
		return true;
	}
	if (!cJSON_IsString(item)) {
		config_set_error(error, &child,
				 "expected an integer or an expression string such as \"$pages * 2\"");
		return false;
	}
	GError *parse_error = NULL;
	struct expr *expr = expr_parse(item->valuestring, &parse_error);
	if (!expr) {
		/* The message says where; quote a long expression's start only
		 * (whole characters: config.c checked the string is UTF-8). */
		const char *text = item->valuestring;
		bool cut = g_utf8_strlen(text, -1) > EXPR_QUOTE_CHARS;
		int shown = cut ? (int)(g_utf8_offset_to_pointer(text, EXPR_QUOTE_CHARS) - text)
				: (int)strlen(text);
		config_set_error(error, &child, "%s in \"%.*s%s\"", parse_error->message, shown,
				 text, cut ? "..." : "");
		g_error_free(parse_error);
		return false;
	}
	struct var_check check = {.scope = scope};
	expr_foreach_variable(expr, check_var, &check);
	if (check.missing) {
		const char *hint = scope_suggest(scope, check.missing);
		config_set_error(error, &child, "unknown variable '$%s'%s%s%s", check.missing,
				 hint ? " (did you mean '$" : "", hint ? hint : "",
				 hint ? "'?)" : "");
		expr_free(expr);
		return false;
	}
	*out = expr;
	return true;
}

unsigned workload_intern(char ***names, unsigned *nr, GHashTable *index, const char *name)
{
	int found = workload_index_find(index, name);
	if (found >= 0)
		return (unsigned)found;
	/* Slots for the names and a NULL, doubled whenever they are full:
	 * *nr + 1 slots are full when *nr + 1 is a power of two. */
	if (((*nr + 1) & *nr) == 0)
		*names = g_renew(char *, *names, 2 * (*nr + 1));
	(*names)[*nr] = g_strdup(name);
	(*names)[*nr + 1] = NULL;
	workload_index_add(index, (*names)[*nr], *nr);
	return (*nr)++;
}

bool workload_find_name(const struct config_node *node, const char *key, char *const *names,
			const GHashTable *index, const char *what, unsigned *out, GError **error)
{
	char *name = NULL;
	if (!config_get_string(node, key, true, &name, error))
		return false;
	int found = workload_index_find(index, name);
	if (found >= 0) {
		*out = (unsigned)found;
		g_free(name);
		return true;
	}
	struct config_node child = config_child(node, key);
	const char *hint =
	    names && *names ? config_suggest(name, (const char *const *)names) : NULL;
	config_set_error(error, &child, "no %s named \"%s\"%s%s%s", what, name,
			 hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
	g_free(name);
	return false;
}
