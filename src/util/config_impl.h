#ifndef TLBSIM_UTIL_CONFIG_IMPL_H
#define TLBSIM_UTIL_CONFIG_IMPL_H
/*
 * What the parts of the strict JSON reader share (config.c, config_parse.c,
 * config_set.c); private to util/.
 */
#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include "tlbsim/util/config.h"

/*
 * Append at most @max_chars characters of @s (up to @end, or its NUL when @end
 * is NULL) to @out, escaping control characters and invalid UTF-8 so that the
 * message stays one readable, valid UTF-8 line.  @json_string also escapes '"'
 * and '\\' (for text shown inside double quotes).  Returns true when @s was
 * cut short.
 */
bool config_append_escaped(GString *out, const char *s, const char *end, size_t max_chars,
			   bool json_string);
/* "@s", escaped and cut short for a message. */
void config_append_quoted(GString *out, const char *s);
/* What a message calls the type of @json ("a string", "an object", ...). */
const char *config_type_name(const cJSON *json);
/* cJSON_ParseWithOpts(@text, @end, true), one parse at a time in the
 * process (config_parse.c). */
cJSON *config_cjson_parse(const char *text, const char **end);
/* Refuse a key given twice in any object of @node's tree. */
bool config_check_duplicates(const struct config_node *node, GError **error);
/*
 * The value of member @key of @node, unwrapped from {"value", "source"} if
 * @number: LOOKUP_FOUND, LOOKUP_ABSENT (optional and not there: the getter
 * leaves its default) or LOOKUP_FAILED with the error set.  Every getter
 * starts here.
 */
enum config_lookup { LOOKUP_FAILED, LOOKUP_ABSENT, LOOKUP_FOUND };
enum config_lookup config_lookup(const struct config_node *node, const char *key, bool required,
				 bool number, struct config_node *value, GError **error);

#endif
