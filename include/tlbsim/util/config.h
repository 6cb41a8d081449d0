#ifndef TLBSIM_CONFIG_H
#define TLBSIM_CONFIG_H
/*
 * Strict JSON input: parse with positions in errors, read typed fields with the
 * JSON path in errors, refuse unknown keys with a "did you mean", and apply
 * --set overrides to a parsed tree before it is read.
 *
 * Every message names the file and the JSON path, e.g.
 *   topologies/x.json: $.tlbs[1].ways: expected an integer in [1, 64], got 0
 *   topologies/x.json: $.tlbs[1]: unknown key "entrees" (did you mean "entries"?)
 *   topologies/x.json:12:7: invalid JSON near '}, "ways"'
 *
 * A number may be written plain (12) or with its provenance
 * ({"value": 12, "source": "Intel Opt. Manual table 2-x"}); readers accept both.
 */
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <glib.h>

struct stop;

/*
 * Parsed file; cJSON_Delete() it.  @name is used in messages.  Text that is
 * not UTF-8 is refused with its line and column: every name and string of
 * an input may reach a message, a CSV or a JSON trace.
 */
cJSON *config_parse_string(const char *text, const char *name, GError **error);
/*
 * config_parse_string() of the file at @path, of at most 16 MiB.  @stop (may
 * be NULL) is polled while the file is read (a FIFO may never send
 * anything) and between the parse and its checks; a stop fails with
 * stop_check()'s error.  The parse itself runs at ~100 MB/s (docs/limits.md).
 */
cJSON *config_load_file(const char *path, const struct stop *stop, GError **error);

/*
 * A cursor on one JSON object: the file name and the JSON path of the object
 * ("$", "$.tlbs[1]") for messages.  Cheap to copy; config_child() derives the
 * cursor of a member.
 */
struct config_node {
	const cJSON *json;
	const char *file;
	char path[256];
};

struct config_node config_root(const cJSON *json, const char *file);
/* Cursor on member @key of an object or element @index of an array. */
struct config_node config_child(const struct config_node *parent, const char *key);
struct config_node config_index(const struct config_node *parent, int index);
/*
 * Cursors on a member or an element already in hand: @item is member @key of
 * @parent, or its element number @index.  A loop over an array walks its
 * items (item = item->next) with config_node_element(), which is linear;
 * config_index() finds element @index from the first each time.
 */
struct config_node config_node_member(const struct config_node *parent, const cJSON *item,
				      const char *key);
struct config_node config_node_element(const struct config_node *parent, const cJSON *item,
				       int index);

/*
 * Refuse any key of @node that is not in the NULL-terminated @allowed list.
 * Fails too when @node is not an object.
 */
bool config_check_keys(const struct config_node *node, const char *const *allowed,
		       GError **error);

/* Best match for @word among NULL-terminated @candidates, or NULL when none is close. */
const char *config_suggest(const char *word, const char *const *candidates);

/*
 * Typed getters.  When @key is absent: with @required an error, otherwise *out
 * keeps the value the caller put there (the default).  Present values must have
 * the right type and lie in [min, max]; the error names the path and the range.
 */
bool config_get_u64(const struct config_node *node, const char *key, bool required,
		    uint64_t min, uint64_t max, uint64_t *out, GError **error);
bool config_get_i64(const struct config_node *node, const char *key, bool required,
		    int64_t min, int64_t max, int64_t *out, GError **error);
bool config_get_double(const struct config_node *node, const char *key, bool required,
		       double min, double max, double *out, GError **error);
bool config_get_bool(const struct config_node *node, const char *key, bool required,
		     bool *out, GError **error);
/* *out is a new string (g_free) on success; untouched when absent and optional. */
bool config_get_string(const struct config_node *node, const char *key, bool required,
		       char **out, GError **error);
/* String member that must be one of NULL-terminated @names; *out is its index. */
bool config_get_enum(const struct config_node *node, const char *key, bool required,
		     const char *const *names, int *out, GError **error);

/**
 * config_get_cycles() - a time in cycles, plain or with a unit.
 * @clock_khz: the clock that turns ns, us and ms into cycles, in kHz (> 0).
 *
 * A number (plain or {"value": N, "source": ...}) is cycles and is read as
 * config_get_u64() reads it.  A string (also as "value") is a time with a
 * unit: digits, an optional fraction (".5"), at most one space, then
 * "cycles", "ns", "us" or "ms" ("350ns", "1.5 us", "2000cycles"); cycles
 * must be whole.  ns, us and ms become cycles at @clock_khz in exact integer
 * arithmetic, rounded to the nearest cycle, a half rounding up.  [min, max]
 * is checked on the cycles, and the message shows the conversion
 * ("\"350ns\" = 1190 cycles at 3400 MHz: above the limit of ...").
 */
bool config_get_cycles(const struct config_node *node, const char *key, bool required,
		       uint64_t min, uint64_t max, uint64_t clock_khz, uint64_t *out,
		       GError **error);

/* Error helper: "<file>: <path>: <formatted message>". */
void config_set_error(GError **error, const struct config_node *node, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

/**
 * config_apply_set() - apply one "--set path=value" override to @root.
 * @path: dotted keys with optional [index], relative to @root ("threads",
 *        "tlbs[2].entries", "costs.ipi_send").
 * @value: parsed as JSON when it is valid JSON (numbers, true, "quoted", {...});
 *         any other text is taken as a string.
 * Missing intermediate objects are created; indexing past an array's end is an
 * error.  Replacing a number that carries {"value", "source"} replaces "value"
 * only.  Unknown final keys are accepted here and refused by the reader, so the
 * message carries the file's context and a suggestion.
 */
bool config_apply_set(cJSON *root, const char *path, const char *value, GError **error);

#endif
