/*
 * Strict JSON input (config.h): cursors with the JSON path for every message,
 * typed getters, unknown keys refused with a suggestion.  Parsing is
 * config_parse.c's, --set overrides config_set.c's.
 *
 * Notes:
 * - cJSON keeps every number as a double.  An integer getter accepts a value
 *   only when it is integral and |v| <= 2^53, where doubles are exact; larger
 *   integers could not be read back exactly, so they are refused even when
 *   the caller's range would allow them.
 * - Paths: "$", "$.key", "$.key[3]"; a key that is not [A-Za-z0-9_-]+ is
 *   written $["odd key"] so the path stays unambiguous.  A path that does not
 *   fit struct config_node's buffer is cut at a character boundary and ends
 *   in "...".
 * - config_suggest() uses the optimal-string-alignment form of the
 *   Damerau-Levenshtein distance (a swap of two adjacent letters costs 1),
 *   ASCII case-insensitive.  A candidate within max(1, strlen(word) / 3) edits
 *   wins (ties: the first in the list).  Failing that, a candidate of which
 *   the word is a prefix, or that is a prefix of the word, wins when the
 *   shorter of the two has at least 3 characters ("ipi" -> "ipi_send",
 *   "tlb_lld" -> "tlb_lld_4k"); the closest length wins, ties first.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "config_impl.h"
#include "tlbsim/util/error.h"

/* Characters of a string value shown in a message before "...". */
#define SHOWN_STRING_CHARS 40
/* 2^53: every integer up to here is exact in a double, the next one is not. */
#define MAX_EXACT_INTEGER 9007199254740992.0

/* ----------------------------------------------------------------------------
 * Text helpers for messages
 * ------------------------------------------------------------------------- */

/*
 * Append at most @max_chars characters of @s (up to @end, or its NUL when @end
 * is NULL) to @out, escaping control characters and invalid UTF-8 so that the
 * message stays one readable, valid UTF-8 line.  @json_string also escapes '"'
 * and '\\' (for text shown inside double quotes).  Returns true when @s was
 * cut short.
 */
bool config_append_escaped(GString *out, const char *s, const char *end, size_t max_chars,
			   bool json_string)
{
	size_t chars = 0;

	while ((end == NULL || s < end) && *s != '\0') {
		if (chars == max_chars)
			return true;
		unsigned char c = (unsigned char)*s;
		if (c == '\n') {
			g_string_append(out, "\\n");
		} else if (c == '\r') {
			g_string_append(out, "\\r");
		} else if (c == '\t') {
			g_string_append(out, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			g_string_append_printf(out, "\\x%02x", c);
		} else if (json_string && (c == '"' || c == '\\')) {
			g_string_append_c(out, '\\');
			g_string_append_c(out, (char)c);
		} else if (c < 0x80) {
			g_string_append_c(out, (char)c);
		} else {
			gssize left = end != NULL ? (gssize)(end - s) : -1;
			gunichar u = g_utf8_get_char_validated(s, left);
			if (u == (gunichar)-1 || u == (gunichar)-2) {
				g_string_append_printf(out, "\\x%02x", c);
			} else {
				const char *next = g_utf8_next_char(s);
				g_string_append_len(out, s, next - s);
				s = next;
				chars++;
				continue;
			}
		}
		s++;
		chars++;
	}
	return false;
}

/* "\"text\"" with escapes, cut to SHOWN_STRING_CHARS characters. */
void config_append_quoted(GString *out, const char *s)
{
	g_string_append_c(out, '"');
	if (config_append_escaped(out, s, NULL, SHOWN_STRING_CHARS, true))
		g_string_append(out, "...");
	g_string_append_c(out, '"');
}

/*
 * Shortest decimal form of @v that reads back as @v ("0.1", "2.5", "1e+30");
 * integers below 1e15 in plain digits ("20", not "2e+01").
 */
static void format_double(char *buf, size_t size, double v)
{
	if (v > -1e15 && v < 1e15 && (double)(int64_t)v == v) {
		snprintf(buf, size, "%" PRId64, (int64_t)v);
		return;
	}
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(buf, size, "%.*g", precision, v);
		if (!isfinite(v) || strtod(buf, NULL) == v)
			return;
	}
}

const char *config_type_name(const cJSON *json)
{
	if (json == NULL)
		return "nothing";
	if (cJSON_IsNumber(json))
		return "a number";
	if (cJSON_IsString(json))
		return "a string";
	if (cJSON_IsBool(json))
		return "a boolean";
	if (cJSON_IsNull(json))
		return "null";
	if (cJSON_IsArray(json))
		return "an array";
	if (cJSON_IsObject(json))
		return "an object";
	return "an invalid value";
}

/*
 * What a message says after "got": the number itself ("2.5"), a string with
 * its type ("\"abc\" (a string)"), "true (a boolean)", "null", or just the
 * type of an array or object.
 */
static void append_value(GString *out, const cJSON *json)
{
	if (cJSON_IsNumber(json)) {
		char buf[40];
		format_double(buf, sizeof(buf), json->valuedouble);
		g_string_append(out, buf);
	} else if (cJSON_IsString(json)) {
		config_append_quoted(out, json->valuestring);
		g_string_append(out, " (a string)");
	} else if (cJSON_IsBool(json)) {
		g_string_append(out, cJSON_IsTrue(json) ? "true (a boolean)" : "false (a boolean)");
	} else {
		g_string_append(out, config_type_name(json));
	}
}

/* A new string describing @json as append_value() does; g_free() it. */
static char *describe_value(const cJSON *json)
{
	GString *out = g_string_new(NULL);
	append_value(out, json);
	return g_string_free(out, FALSE);
}

/* ----------------------------------------------------------------------------
 * Cursors
 * ------------------------------------------------------------------------- */

/* A key that can be written after a '.' in a path (and in --set). */
static bool is_plain_key(const char *key)
{
	if (*key == '\0')
		return false;
	for (const char *p = key; *p != '\0'; p++)
		if (!g_ascii_isalnum(*p) && *p != '_' && *p != '-')
			return false;
	return true;
}

/*
 * @path = @parent + @open + @close, cut at a character boundary with "..."
 * if too long.  Without snprintf(): loading makes a cursor for every
 * member it reads, millions for a large workload.
 */
static void set_path(char *path, size_t size, const char *parent, const char *open,
		     const char *close)
{
	const char *parts[] = {parent, open, close};
	size_t n = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(parts); i++) {
		size_t len = strlen(parts[i]);
		if (n + len < size) {
			memcpy(path + n, parts[i], len);
			n += len;
			continue;
		}
		memcpy(path + n, parts[i], size - 1 - n);
		size_t cut = size - 4;
		while (cut > 0 && ((unsigned char)path[cut] & 0xc0) == 0x80)
			cut--;
		memcpy(path + cut, "...", 4);
		return;
	}
	path[n] = '\0';
}

struct config_node config_root(const cJSON *json, const char *file)
{
	struct config_node node = {.json = json, .file = file};
	strcpy(node.path, "$");
	return node;
}

struct config_node config_node_member(const struct config_node *parent, const cJSON *item,
				      const char *key)
{
	struct config_node node = {.json = item, .file = parent->file};

	if (is_plain_key(key)) {
		set_path(node.path, sizeof(node.path), parent->path, ".", key);
		return node;
	}
	GString *quoted = g_string_new("[");
	config_append_quoted(quoted, key);
	set_path(node.path, sizeof(node.path), parent->path, quoted->str, "]");
	g_string_free(quoted, TRUE);
	return node;
}

struct config_node config_node_element(const struct config_node *parent, const cJSON *item,
				       int index)
{
	struct config_node node = {.json = item, .file = parent->file};
	char digits[16];
	char *p = digits + sizeof(digits);
	unsigned v = index < 0 ? 0u - (unsigned)index : (unsigned)index;

	*--p = '\0';
	*--p = ']';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (index < 0)
		*--p = '-';
	set_path(node.path, sizeof(node.path), parent->path, "[", p);
	return node;
}

struct config_node config_child(const struct config_node *parent, const char *key)
{
	const cJSON *item = NULL;
	if (cJSON_IsObject(parent->json))
		item = cJSON_GetObjectItemCaseSensitive(parent->json, key);
	return config_node_member(parent, item, key);
}

struct config_node config_index(const struct config_node *parent, int index)
{
	const cJSON *item = NULL;
	if (cJSON_IsArray(parent->json) && index >= 0)
		item = cJSON_GetArrayItem(parent->json, index);
	return config_node_element(parent, item, index);
}

void config_set_error(GError **error, const struct config_node *node, const char *fmt, ...)
{
	va_list args;

	if (error == NULL)
		return;
	va_start(args, fmt);
	char *message = g_strdup_vprintf(fmt, args);
	va_end(args);
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "%s: %s: %s",
		    node->file != NULL ? node->file : "(input)", node->path, message);
	g_free(message);
}

/* ----------------------------------------------------------------------------
 * Keys and suggestions
 * ------------------------------------------------------------------------- */

static void set_type_error(GError **error, const struct config_node *node, const char *expected)
{
	char *got = describe_value(node->json);
	config_set_error(error, node, "expected %s, got %s", expected, got);
	g_free(got);
}

static bool in_list(const char *word, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(word, *list) == 0)
			return true;
	return false;
}

/* "a, b, c" */
static void append_list(GString *out, const char *const *list, bool quoted)
{
	for (const char *const *p = list; *p != NULL; p++) {
		if (p != list)
			g_string_append(out, ", ");
		if (quoted)
			config_append_quoted(out, *p);
		else
			g_string_append(out, *p);
	}
}

bool config_check_keys(const struct config_node *node, const char *const *allowed, GError **error)
{
	if (!cJSON_IsObject(node->json)) {
		set_type_error(error, node, "an object");
		return false;
	}
	for (const cJSON *item = node->json->child; item != NULL; item = item->next) {
		if (in_list(item->string, allowed))
			continue;

		GString *msg = g_string_new("unknown key ");
		config_append_quoted(msg, item->string);
		const char *hint = config_suggest(item->string, allowed);
		if (hint != NULL) {
			g_string_append(msg, " (did you mean ");
			config_append_quoted(msg, hint);
			g_string_append(msg, "?)");
		} else if (allowed[0] == NULL) {
			g_string_append(msg, " (this object takes no keys)");
		} else {
			g_string_append(msg, " (expected one of: ");
			append_list(msg, allowed, false);
			g_string_append_c(msg, ')');
		}
		config_set_error(error, node, "%s", msg->str);
		g_string_free(msg, TRUE);
		return false;
	}
	return true;
}

/* Optimal string alignment distance, ASCII case-insensitive. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *prev2 = g_new(size_t, lb + 1);
	size_t *prev = g_new(size_t, lb + 1);
	size_t *row = g_new(size_t, lb + 1);

	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			char ca = g_ascii_tolower(a[i - 1]), cb = g_ascii_tolower(b[j - 1]);
			size_t best = prev[j - 1] + (ca != cb);
			best = MIN(best, prev[j] + 1);
			best = MIN(best, row[j - 1] + 1);
			if (i > 1 && j > 1 && ca == g_ascii_tolower(b[j - 2]) &&
			    g_ascii_tolower(a[i - 2]) == cb)
				best = MIN(best, prev2[j - 2] + 1);
			row[j] = best;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = row;
		row = t;
	}
	size_t d = prev[lb];
	g_free(prev2);
	g_free(prev);
	g_free(row);
	return d;
}

/* Shorter of @a, @b, if it has >= 3 characters and starts the other (any case). */
static bool is_prefix_match(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t n = MIN(la, lb);
	return n >= 3 && g_ascii_strncasecmp(a, b, n) == 0;
}

const char *config_suggest(const char *word, const char *const *candidates)
{
	const char *best = NULL;
	size_t best_distance = SIZE_MAX;

	if (word == NULL || candidates == NULL)
		return NULL;
	size_t limit = MAX((size_t)1, strlen(word) / 3);
	for (const char *const *c = candidates; *c != NULL; c++) {
		size_t d = edit_distance(word, *c);
		if (d <= limit && d < best_distance) {
			best = *c;
			best_distance = d;
		}
	}
	if (best != NULL)
		return best;

	size_t len = strlen(word);
	for (const char *const *c = candidates; *c != NULL; c++) {
		if (!is_prefix_match(word, *c))
			continue;
		size_t lc = strlen(*c);
		size_t d = lc > len ? lc - len : len - lc;
		if (d < best_distance) {
			best = *c;
			best_distance = d;
		}
	}
	return best;
}

/* ----------------------------------------------------------------------------
 * Typed getters
 * ------------------------------------------------------------------------- */

/*
 * Cursor on member @key of object @node.  False with an error when @node is
 * not an object, or @key is absent and @required; member->json is NULL when
 * @key is absent and optional.
 */
static bool get_member(const struct config_node *node, const char *key, bool required,
		       struct config_node *member, GError **error)
{
	if (!cJSON_IsObject(node->json)) {
		set_type_error(error, node, "an object");
		return false;
	}
	*member = config_child(node, key);
	if (member->json == NULL && required) {
		config_set_error(error, node, "missing required key \"%s\"", key);
		return false;
	}
	return true;
}

/*
 * A number is written plain or as {"value": N, "source": "text"}; *number is
 * the cursor on the plain form or on "value".  Whether it is a number at all
 * is the caller's check, so the message can state the expected range.
 */
static bool unwrap_number(const struct config_node *member, struct config_node *number,
			  GError **error)
{
	static const char *const wrapper_keys[] = {"value", "source", NULL};

	*number = *member;
	if (!cJSON_IsObject(member->json))
		return true;
	if (!config_check_keys(member, wrapper_keys, error))
		return false;
	struct config_node source = config_child(member, "source");
	if (source.json != NULL && !cJSON_IsString(source.json)) {
		set_type_error(error, &source, "a string");
		return false;
	}
	*number = config_child(member, "value");
	if (number->json == NULL) {
		config_set_error(error, member,
				 "missing required key \"value\" (a number with its source is "
				 "written {\"value\": N, \"source\": \"...\"})");
		return false;
	}
	return true;
}

/* Every getter starts here (config_impl.h). */
enum config_lookup config_lookup(const struct config_node *node, const char *key, bool required,
				 bool number, struct config_node *value, GError **error)
{
	struct config_node member;
	if (!get_member(node, key, required, &member, error))
		return LOOKUP_FAILED;
	if (member.json == NULL)
		return LOOKUP_ABSENT;
	if (!number) {
		*value = member;
		return LOOKUP_FOUND;
	}
	return unwrap_number(&member, value, error) ? LOOKUP_FOUND : LOOKUP_FAILED;
}

/* True when @json is an integral number a double holds exactly. */
static bool exact_integer(const cJSON *json, double *value)
{
	if (!cJSON_IsNumber(json))
		return false;
	double v = json->valuedouble;
	if (!isfinite(v) || v > MAX_EXACT_INTEGER || v < -MAX_EXACT_INTEGER)
		return false;
	if ((double)(int64_t)v != v)
		return false;
	*value = v;
	return true;
}

/* "expected an integer in [lo, hi], got X", with a note on inexact big integers. */
static void set_integer_error(GError **error, const struct config_node *number, const char *lo,
			      const char *hi, bool range_reaches_inexact)
{
	char *got = describe_value(number->json);
	const char *note = "";
	if (range_reaches_inexact && cJSON_IsNumber(number->json) &&
	    isfinite(number->json->valuedouble) &&
	    (number->json->valuedouble > MAX_EXACT_INTEGER ||
	     number->json->valuedouble < -MAX_EXACT_INTEGER))
		note = " (integers beyond 2^53 are not exact in JSON numbers)";
	config_set_error(error, number, "expected an integer in [%s, %s], got %s%s", lo, hi, got,
			 note);
	g_free(got);
}

bool config_get_u64(const struct config_node *node, const char *key, bool required, uint64_t min,
		    uint64_t max, uint64_t *out, GError **error)
{
	struct config_node number;
	double v;
	enum config_lookup found = config_lookup(node, key, required, true, &number, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (exact_integer(number.json, &v) && v >= 0) {
		uint64_t u = (uint64_t)v;
		if (u >= min && u <= max) {
			*out = u;
			return true;
		}
	}
	char lo[24], hi[24];
	snprintf(lo, sizeof(lo), "%" PRIu64, min);
	snprintf(hi, sizeof(hi), "%" PRIu64, max);
	set_integer_error(error, &number, lo, hi, (double)max > MAX_EXACT_INTEGER);
	return false;
}

bool config_get_i64(const struct config_node *node, const char *key, bool required, int64_t min,
		    int64_t max, int64_t *out, GError **error)
{
	struct config_node number;
	double v;
	enum config_lookup found = config_lookup(node, key, required, true, &number, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (exact_integer(number.json, &v)) {
		int64_t i = (int64_t)v;
		if (i >= min && i <= max) {
			*out = i;
			return true;
		}
	}
	char lo[24], hi[24];
	snprintf(lo, sizeof(lo), "%" PRId64, min);
	snprintf(hi, sizeof(hi), "%" PRId64, max);
	set_integer_error(error, &number, lo, hi,
			  (double)max > MAX_EXACT_INTEGER || (double)min < -MAX_EXACT_INTEGER);
	return false;
}

bool config_get_double(const struct config_node *node, const char *key, bool required, double min,
		       double max, double *out, GError **error)
{
	struct config_node number;
	enum config_lookup found = config_lookup(node, key, required, true, &number, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (cJSON_IsNumber(number.json)) {
		double v = number.json->valuedouble;
		if (isfinite(v) && v >= min && v <= max) {
			*out = v;
			return true;
		}
	}
	char lo[40], hi[40];
	format_double(lo, sizeof(lo), min);
	format_double(hi, sizeof(hi), max);
	char *got = describe_value(number.json);
	config_set_error(error, &number, "expected a number in [%s, %s], got %s", lo, hi, got);
	g_free(got);
	return false;
}

bool config_get_bool(const struct config_node *node, const char *key, bool required, bool *out,
		     GError **error)
{
	struct config_node member;
	enum config_lookup found = config_lookup(node, key, required, false, &member, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (!cJSON_IsBool(member.json)) {
		set_type_error(error, &member, "true or false");
		return false;
	}
	*out = cJSON_IsTrue(member.json);
	return true;
}

bool config_get_string(const struct config_node *node, const char *key, bool required, char **out,
		       GError **error)
{
	struct config_node member;
	enum config_lookup found = config_lookup(node, key, required, false, &member, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (!cJSON_IsString(member.json)) {
		set_type_error(error, &member, "a string");
		return false;
	}
	*out = g_strdup(member.json->valuestring);
	return true;
}

bool config_get_enum(const struct config_node *node, const char *key, bool required,
		     const char *const *names, int *out, GError **error)
{
	struct config_node member;
	enum config_lookup found = config_lookup(node, key, required, false, &member, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (cJSON_IsString(member.json)) {
		for (int i = 0; names[i] != NULL; i++)
			if (strcmp(member.json->valuestring, names[i]) == 0) {
				*out = i;
				return true;
			}
	}

	GString *msg = g_string_new("expected one of ");
	append_list(msg, names, true);
	g_string_append(msg, ", got ");
	if (cJSON_IsString(member.json)) {
		config_append_quoted(msg, member.json->valuestring);
		const char *hint = config_suggest(member.json->valuestring, names);
		if (hint != NULL) {
			g_string_append(msg, " (did you mean ");
			config_append_quoted(msg, hint);
			g_string_append(msg, "?)");
		}
	} else {
		append_value(msg, member.json);
	}
	config_set_error(error, &member, "%s", msg->str);
	g_string_free(msg, TRUE);
	return false;
}
