/*
 * --set overrides (config_apply_set(), config.h).
 *
 * Notes:
 * - config_apply_set() checks the whole path against the tree before it
 *   changes anything, so a failed --set leaves the tree untouched.  It also
 *   takes a leading "$." so that a path copied from a message works.  A value
 *   given as JSON is checked for duplicate keys like a file.
 */
#include <stdarg.h>
#include <string.h>
#include "config_impl.h"
#include "tlbsim/util/error.h"

/* ----------------------------------------------------------------------------
 * --set overrides
 * ------------------------------------------------------------------------- */

/* One step of a --set path: a key or an array index. */
struct set_step {
	const char *text; /* the key or the index digits, inside the path */
	size_t len;
	bool is_index;
	uint64_t index; /* saturated at UINT64_MAX */
	size_t end;     /* offset in the path just after this step */
};

static void set_path_error(GError **error, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void set_path_error(GError **error, const char *path, const char *fmt, ...)
{
	va_list args;

	if (error == NULL)
		return;
	va_start(args, fmt);
	char *message = g_strdup_vprintf(fmt, args);
	va_end(args);
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "--set %s: %s", path, message);
	g_free(message);
}

static bool is_key_char(char c)
{
	return g_ascii_isalnum(c) || c == '_' || c == '-';
}

/*
 * Split @path (after an optional "$." copied from a message) into steps:
 * key ( '.' key | '[' digits ']' )*.
 */
static bool split_set_path(const char *path, GArray *steps, GError **error)
{
	const char *p = path;

	if (g_str_has_prefix(p, "$."))
		p += 2;
	if (*p == '\0') {
		set_path_error(error, path, "empty path (expected e.g. costs.ipi_send)");
		return false;
	}
	for (bool first = true; *p != '\0'; first = false) {
		struct set_step step = {0};
		const char *expected;

		if (*p == '[' && !first) {
			const char *digits = ++p;
			while (g_ascii_isdigit(*p)) {
				unsigned d = (unsigned)(*p - '0');
				step.index = step.index > (UINT64_MAX - d) / 10
						 ? UINT64_MAX
						 : step.index * 10 + d;
				p++;
			}
			expected = "an array index: digits and ']'";
			if (p == digits || *p != ']')
				goto out_syntax;
			step.is_index = true;
			step.text = digits;
			step.len = (size_t)(p - digits);
			p++;
		} else {
			if (!first && *p++ != '.') {
				p--;
				expected = "'.' or '['";
				goto out_syntax;
			}
			const char *key = p;
			while (is_key_char(*p))
				p++;
			expected = "a key of letters, digits, '_' or '-'";
			if (p == key)
				goto out_syntax;
			step.text = key;
			step.len = (size_t)(p - key);
		}
		step.end = (size_t)(p - path);
		g_array_append_val(steps, step);
		continue;

	out_syntax:
		if (*p == '\0')
			set_path_error(error, path, "bad path: expected %s at the end", expected);
		else
			set_path_error(error, path, "bad path: expected %s at '%s'", expected, p);
		return false;
	}
	return true;
}

/* Member @step (a key) of object @json. */
static cJSON *step_member(cJSON *json, const struct set_step *step)
{
	char *key = g_strndup(step->text, step->len);
	cJSON *item = cJSON_GetObjectItemCaseSensitive(json, key);
	g_free(key);
	return item;
}

/*
 * Check that step @i can be taken from @json, which the path up to the step
 * before reached.
 */
static bool check_step(const char *path, const struct set_step *steps, guint i, const cJSON *json,
		       GError **error)
{
	const struct set_step *step = &steps[i];
	const bool want_array = step->is_index;
	const bool ok = want_array ? cJSON_IsArray(json) : cJSON_IsObject(json);
	const char *kind = want_array ? "an array" : "an object";

	if (!ok) {
		if (i == 0)
			set_path_error(error, path, "the root is %s, not %s",
				       config_type_name(json), kind);
		else
			set_path_error(error, path, "\"%.*s\" is %s, not %s", (int)steps[i - 1].end,
				       path, config_type_name(json), kind);
		return false;
	}
	if (want_array) {
		int size = cJSON_GetArraySize(json);
		if (step->index >= (uint64_t)size) {
			set_path_error(error, path,
				       "index %.*s out of range (array has %d element%s)",
				       (int)step->len, step->text, size, size == 1 ? "" : "s");
			return false;
		}
	}
	return true;
}

/* {"value": N, "source": "..."} with nothing else. */
static bool is_sourced_number(const cJSON *json)
{
	if (!cJSON_IsObject(json) || cJSON_GetObjectItemCaseSensitive(json, "value") == NULL)
		return false;
	for (const cJSON *item = json->child; item != NULL; item = item->next)
		if (strcmp(item->string, "value") != 0 && strcmp(item->string, "source") != 0)
			return false;
	return true;
}

/*
 * Put @value at the last step below @parent, replacing what is there (only
 * the "value" of a sourced number, unless @value is itself an object).
 * Takes ownership of @value.
 */
static void set_last(cJSON *parent, const struct set_step *step, cJSON *value)
{
	cJSON *old;
	char *key = NULL;

	if (step->is_index) {
		old = cJSON_GetArrayItem(parent, (int)step->index);
	} else {
		key = g_strndup(step->text, step->len);
		old = cJSON_GetObjectItemCaseSensitive(parent, key);
	}

	if (old != NULL && is_sourced_number(old) && !cJSON_IsObject(value)) {
		cJSON_ReplaceItemInObjectCaseSensitive(old, "value", value);
	} else if (step->is_index) {
		cJSON_ReplaceItemInArray(parent, (int)step->index, value);
	} else if (old != NULL) {
		cJSON_ReplaceItemInObjectCaseSensitive(parent, key, value);
	} else {
		cJSON_AddItemToObject(parent, key, value);
	}
	g_free(key);
}

/* @value as JSON, else as a string; NULL (with an error) on duplicate keys. */
static cJSON *parse_set_value(const char *path, const char *value, GError **error)
{
	/* As in a file (config_parse.c): a name must be UTF-8 text. */
	if (!g_utf8_validate(value, -1, NULL)) {
		set_path_error(error, path, "the value is not UTF-8 text");
		return NULL;
	}
	cJSON *json = config_cjson_parse(value, NULL);
	if (json == NULL)
		return cJSON_CreateString(value);

	char *what = g_strdup_printf("--set %s", path);
	struct config_node node = config_root(json, what);
	strcpy(node.path, "value");
	bool ok = config_check_duplicates(&node, error);
	g_free(what);
	if (!ok) {
		cJSON_Delete(json);
		return NULL;
	}
	return json;
}

bool config_apply_set(cJSON *root, const char *path, const char *value, GError **error)
{
	bool ok = false;
	GArray *steps = g_array_new(FALSE, TRUE, sizeof(struct set_step));
	const struct set_step *step;
	cJSON *json = root, *next, *new_value;
	guint i, last;

	g_assert(root != NULL && path != NULL && value != NULL);
	if (!split_set_path(path, steps, error))
		goto out_free_steps;
	step = (const struct set_step *)(void *)steps->data;
	last = steps->len - 1;

	/* Walk what exists; every check happens before the tree changes. */
	for (i = 0; i < last; i++) {
		if (!check_step(path, step, i, json, error))
			goto out_free_steps;
		next = step[i].is_index ? cJSON_GetArrayItem(json, (int)step[i].index)
					: step_member(json, &step[i]);
		if (next == NULL)
			break;
		json = next;
	}
	if (i == last) {
		if (!check_step(path, step, i, json, error))
			goto out_free_steps;
	} else {
		/* Steps i..last - 1 are created as objects: none may be an index. */
		for (guint j = i + 1; j <= last; j++) {
			if (step[j].is_index) {
				set_path_error(error, path,
					       "\"%.*s\" does not exist (only objects are created, "
					       "not arrays)",
					       (int)step[j - 1].end, path);
				goto out_free_steps;
			}
		}
	}

	new_value = parse_set_value(path, value, error);
	if (new_value == NULL)
		goto out_free_steps;
	for (; i < last; i++) {
		char *key = g_strndup(step[i].text, step[i].len);
		json = cJSON_AddObjectToObject(json, key);
		g_free(key);
		g_assert(json != NULL);
	}
	set_last(json, &step[last], new_value);
	ok = true;

out_free_steps:
	g_array_free(steps, TRUE);
	return ok;
}
