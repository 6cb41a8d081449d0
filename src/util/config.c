/*
 * Strict JSON input (see include/tlbsim/config.h): parse with positions, read
 * typed fields with the JSON path in every message, refuse unknown keys with a
 * suggestion, apply --set overrides.
 *
 * Notes:
 * - cJSON is more lenient than a machine description may be: it keeps
 *   duplicate keys (a lookup silently returns the first), so parsing walks the
 *   tree once and refuses them.  It also accepts leading zeros ("01") and
 *   numbers that overflow a double (1e400 becomes inf; the getters refuse
 *   non-finite values), and it skips every byte <= ' ' between tokens as
 *   blank, not only the four JSON blanks.
 * - Error positions come from the parse-end pointer of cJSON_ParseWithOpts(),
 *   the same pointer cJSON_GetErrorPtr() returns, read without going through
 *   cJSON's global.  cJSON reports where it stopped, which can be one token
 *   after the real mistake; a stop at the end of the input (a truncated file,
 *   but also {"a": 1,}) shows the text before the end instead.  Columns count
 *   UTF-8 characters from 1, a tab counts as one.
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
 * - config_apply_set() checks the whole path against the tree before it
 *   changes anything, so a failed --set leaves the tree untouched.  It also
 *   takes a leading "$." so that a path copied from a message works.  A value
 *   given as JSON is checked for duplicate keys like a file.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

/* Input files are hand-written descriptions of a few KiB; 16 MiB is a mistake. */
#define CONFIG_MAX_FILE_BYTES ((size_t)16 << 20)
/* Characters of input shown after "invalid JSON near". */
#define SNIPPET_CHARS 20
/* Characters of a string value shown in a message before "...". */
#define SHOWN_STRING_CHARS 40
/* 2^53: every integer up to here is exact in a double, the next one is not. */
#define MAX_EXACT_INTEGER 9007199254740992.0
/* Objects up to this size are checked for duplicate keys pairwise. */
#define DUPLICATE_SCAN_PAIRWISE 16

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
static bool append_escaped(GString *out, const char *s, const char *end, size_t max_chars,
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
static void append_quoted(GString *out, const char *s)
{
	g_string_append_c(out, '"');
	if (append_escaped(out, s, NULL, SHOWN_STRING_CHARS, true))
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

static const char *type_name(const cJSON *json)
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
		append_quoted(out, json->valuestring);
		g_string_append(out, " (a string)");
	} else if (cJSON_IsBool(json)) {
		g_string_append(out, cJSON_IsTrue(json) ? "true (a boolean)" : "false (a boolean)");
	} else {
		g_string_append(out, type_name(json));
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
 * Parsing
 * ------------------------------------------------------------------------- */

/* 1-based line and column (in UTF-8 characters) of byte @offset of @text. */
static void text_position(const char *text, size_t offset, unsigned *line, unsigned *column)
{
	*line = 1;
	*column = 1;
	for (size_t i = 0; i < offset && text[i] != '\0'; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\n') {
			(*line)++;
			*column = 1;
		} else if ((c & 0xc0) != 0x80) {
			(*column)++;
		}
	}
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Start of the last @chars characters of @text before @end, trailing blanks skipped. */
static const char *tail_start(const char *text, const char **end, size_t chars)
{
	const char *stop = *end;
	while (stop > text && is_json_space(stop[-1]))
		stop--;
	*end = stop;
	const char *p = stop;
	for (size_t n = 0; n < chars && p > text; n++) {
		p--;
		while (p > text && ((unsigned char)*p & 0xc0) == 0x80)
			p--;
	}
	return p;
}

static void set_parse_error(GError **error, const char *text, const char *name, const char *stop)
{
	size_t offset = (size_t)(stop - text);
	unsigned line, column;
	GString *snippet = g_string_new(NULL);

	text_position(text, offset, &line, &column);
	if (*stop != '\0') {
		append_escaped(snippet, stop, NULL, SNIPPET_CHARS, false);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: invalid JSON near '%s'", name, line, column, snippet->str);
	} else {
		const char *end = stop;
		const char *start = tail_start(text, &end, SNIPPET_CHARS);
		append_escaped(snippet, start, end, SNIPPET_CHARS, false);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: invalid JSON at the end of the input, after '%s'", name,
			    line, column, snippet->str);
	}
	g_string_free(snippet, TRUE);
}

/* Duplicate key of object @json, or NULL. */
static const char *find_duplicate_key(const cJSON *json)
{
	const char *found = NULL;

	if (cJSON_GetArraySize(json) <= DUPLICATE_SCAN_PAIRWISE) {
		for (const cJSON *a = json->child; a != NULL && found == NULL; a = a->next)
			for (const cJSON *b = json->child; b != a; b = b->next)
				if (strcmp(a->string, b->string) == 0) {
					found = a->string;
					break;
				}
		return found;
	}
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (const cJSON *a = json->child; a != NULL; a = a->next) {
		if (!g_hash_table_add(seen, a->string)) {
			found = a->string;
			break;
		}
	}
	g_hash_table_destroy(seen);
	return found;
}

static struct config_node node_member(const struct config_node *parent, const cJSON *item,
				      const char *key);
static struct config_node node_element(const struct config_node *parent, const cJSON *item,
				       int index);

/*
 * Refuse duplicate keys anywhere below @node.  Recursion depth is bounded by
 * cJSON's nesting limit (CJSON_NESTING_LIMIT, 1000).
 */
static bool check_duplicates(const struct config_node *node, GError **error)
{
	const cJSON *json = node->json;

	if (cJSON_IsObject(json)) {
		const char *dup = find_duplicate_key(json);
		if (dup != NULL) {
			GString *key = g_string_new(NULL);
			append_quoted(key, dup);
			config_set_error(error, node, "duplicate key %s", key->str);
			g_string_free(key, TRUE);
			return false;
		}
		for (const cJSON *item = json->child; item != NULL; item = item->next) {
			struct config_node child = node_member(node, item, item->string);
			if (!check_duplicates(&child, error))
				return false;
		}
	} else if (cJSON_IsArray(json)) {
		int index = 0;
		for (const cJSON *item = json->child; item != NULL; item = item->next, index++) {
			struct config_node child = node_element(node, item, index);
			if (!check_duplicates(&child, error))
				return false;
		}
	}
	return true;
}

/*
 * Where @text (valid JSON) escapes a NUL inside a string, or NULL: cJSON
 * decodes "\u0000" into a C string that ends there, so the rest of the
 * string would vanish unnoticed.
 */
static const char *find_escaped_nul(const char *text)
{
	bool in_string = false;
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '"') {
			in_string = !in_string;
		} else if (in_string && *p == '\\') {
			if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0)
				return p;
			p++; /* the escaped character: never a closing quote */
		}
	}
	return NULL;
}

/* The nesting depth of valid-so-far @text at @stop, strings skipped. */
static unsigned depth_at(const char *text, const char *stop)
{
	unsigned depth = 0;
	bool in_string = false;
	for (const char *p = text; p < stop && *p != '\0'; p++) {
		if (in_string) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && depth > 0) {
			depth--;
		}
	}
	return depth;
}

/* Parse @text (@what: "file" or "input", for the empty-input message). */
static cJSON *parse_text(const char *text, const char *name, const char *what, GError **error)
{
	const char *p = text;
	while (is_json_space(*p))
		p++;
	if (*p == '\0') {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s: empty %s, expected a JSON value", name, what);
		return NULL;
	}

	const char *stop = NULL;
	cJSON *json = cJSON_ParseWithOpts(text, &stop, true);
	if (json == NULL) {
		stop = stop != NULL ? stop : text;
		if (depth_at(text, stop) >= CJSON_NESTING_LIMIT) {
			unsigned line, column;
			text_position(text, (size_t)(stop - text), &line, &column);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
				    "%s:%u:%u: JSON nested deeper than %d levels", name, line, column,
				    CJSON_NESTING_LIMIT);
			return NULL;
		}
		set_parse_error(error, text, name, stop);
		return NULL;
	}
	const char *nul = find_escaped_nul(text);
	if (nul != NULL) {
		unsigned line, column;
		text_position(text, (size_t)(nul - text), &line, &column);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: \\u0000 in a string: a NUL character cannot be part of a "
			    "name or value", name, line, column);
		cJSON_Delete(json);
		return NULL;
	}

	struct config_node root = config_root(json, name);
	if (!check_duplicates(&root, error)) {
		cJSON_Delete(json);
		return NULL;
	}
	return json;
}

cJSON *config_parse_string(const char *text, const char *name, GError **error)
{
	g_assert(text != NULL && name != NULL);
	return parse_text(text, name, "input", error);
}

static void set_io_error(GError **error, const char *path, const char *doing, int errnum)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: cannot %s: %s", path, doing,
		    g_strerror(errnum));
}

/*
 * Read all of @path, refusing more than CONFIG_MAX_FILE_BYTES: regular files
 * by their size before reading, anything else (a pipe) while reading.
 * Returns a NUL-terminated buffer (g_free) and its length.
 */
static char *read_bounded(const char *path, size_t *length, GError **error)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set_io_error(error, path, "open", errno);
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		set_io_error(error, path, "stat", errno);
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > CONFIG_MAX_FILE_BYTES) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "%s: file is %ju bytes, more than the %zu MiB an input file may have",
			    path, (uintmax_t)st.st_size, CONFIG_MAX_FILE_BYTES >> 20);
		goto out_close;
	}

	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	buf = g_malloc(cap + 1);
	for (;;) {
		if (len == cap) {
			cap = MIN(cap * 2, CONFIG_MAX_FILE_BYTES + 1);
			buf = g_realloc(buf, cap + 1);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			set_io_error(error, path, "read", errno);
			goto out_free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_MAX_FILE_BYTES) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "%s: more than the %zu MiB an input file may have", path,
				    CONFIG_MAX_FILE_BYTES >> 20);
			goto out_free_buf;
		}
	}
	buf[len] = '\0';
	close(fd);
	*length = len;
	return buf;

out_free_buf:
	g_free(buf);
out_close:
	close(fd);
	return NULL;
}

cJSON *config_load_file(const char *path, GError **error)
{
	size_t len;
	cJSON *json = NULL;

	g_assert(path != NULL);
	char *text = read_bounded(path, &len, error);
	if (text == NULL)
		return NULL;

	size_t nul = strlen(text);
	if (nul != len) {
		unsigned line, column;
		text_position(text, nul, &line, &column);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: NUL byte in the file (not a text file?)", path, line,
			    column);
		goto out_free_text;
	}
	json = parse_text(text, path, "file", error);

out_free_text:
	g_free(text);
	return json;
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

/* @path = @parent + @suffix, cut at a character boundary with "..." if too long. */
static void set_path(char *path, size_t size, const char *parent, const char *suffix)
{
	int n = snprintf(path, size, "%s%s", parent, suffix);
	if (n >= 0 && (size_t)n < size)
		return;
	size_t cut = size - 4;
	while (cut > 0 && ((unsigned char)path[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(path + cut, "...", 4);
}

struct config_node config_root(const cJSON *json, const char *file)
{
	struct config_node node = {.json = json, .file = file};
	strcpy(node.path, "$");
	return node;
}

static struct config_node node_member(const struct config_node *parent, const cJSON *item,
				      const char *key)
{
	struct config_node node = {.json = item, .file = parent->file};
	GString *suffix = g_string_new(NULL);

	if (is_plain_key(key)) {
		g_string_append_printf(suffix, ".%s", key);
	} else {
		g_string_append_c(suffix, '[');
		append_quoted(suffix, key);
		g_string_append_c(suffix, ']');
	}
	set_path(node.path, sizeof(node.path), parent->path, suffix->str);
	g_string_free(suffix, TRUE);
	return node;
}

static struct config_node node_element(const struct config_node *parent, const cJSON *item,
				       int index)
{
	struct config_node node = {.json = item, .file = parent->file};
	char suffix[24];

	snprintf(suffix, sizeof(suffix), "[%d]", index);
	set_path(node.path, sizeof(node.path), parent->path, suffix);
	return node;
}

struct config_node config_child(const struct config_node *parent, const char *key)
{
	const cJSON *item = NULL;
	if (cJSON_IsObject(parent->json))
		item = cJSON_GetObjectItemCaseSensitive(parent->json, key);
	return node_member(parent, item, key);
}

struct config_node config_index(const struct config_node *parent, int index)
{
	const cJSON *item = NULL;
	if (cJSON_IsArray(parent->json) && index >= 0)
		item = cJSON_GetArrayItem(parent->json, index);
	return node_element(parent, item, index);
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
			append_quoted(out, *p);
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
		append_quoted(msg, item->string);
		const char *hint = config_suggest(item->string, allowed);
		if (hint != NULL) {
			g_string_append(msg, " (did you mean ");
			append_quoted(msg, hint);
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

/* Finds member @key and unwraps it; number->json NULL when absent and optional. */
static bool get_number_node(const struct config_node *node, const char *key, bool required,
			    struct config_node *number, GError **error)
{
	struct config_node member;

	if (!get_member(node, key, required, &member, error))
		return false;
	if (member.json == NULL) {
		*number = member;
		return true;
	}
	return unwrap_number(&member, number, error);
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

	if (!get_number_node(node, key, required, &number, error))
		return false;
	if (number.json == NULL)
		return true;
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

	if (!get_number_node(node, key, required, &number, error))
		return false;
	if (number.json == NULL)
		return true;
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

	if (!get_number_node(node, key, required, &number, error))
		return false;
	if (number.json == NULL)
		return true;
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

	if (!get_member(node, key, required, &member, error))
		return false;
	if (member.json == NULL)
		return true;
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

	if (!get_member(node, key, required, &member, error))
		return false;
	if (member.json == NULL)
		return true;
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

	if (!get_member(node, key, required, &member, error))
		return false;
	if (member.json == NULL)
		return true;
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
		append_quoted(msg, member.json->valuestring);
		const char *hint = config_suggest(member.json->valuestring, names);
		if (hint != NULL) {
			g_string_append(msg, " (did you mean ");
			append_quoted(msg, hint);
			g_string_append(msg, "?)");
		}
	} else {
		append_value(msg, member.json);
	}
	config_set_error(error, &member, "%s", msg->str);
	g_string_free(msg, TRUE);
	return false;
}

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
			set_path_error(error, path, "the root is %s, not %s", type_name(json),
				       kind);
		else
			set_path_error(error, path, "\"%.*s\" is %s, not %s", (int)steps[i - 1].end,
				       path, type_name(json), kind);
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
	cJSON *json = cJSON_ParseWithOpts(value, NULL, true);
	if (json == NULL)
		return cJSON_CreateString(value);

	char *what = g_strdup_printf("--set %s", path);
	struct config_node node = config_root(json, what);
	strcpy(node.path, "value");
	bool ok = check_duplicates(&node, error);
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
