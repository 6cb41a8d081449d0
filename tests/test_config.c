/*
 * Tests of src/util/config.c: parse errors with positions, duplicate and unknown
 * keys, typed getters and their messages, --set overrides, suggestions.
 * Messages are compared whole: their wording is part of the interface.
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"
#include "tlbsim/util/stop.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif

/* Assert *@err is set with @code and exactly @message, then clear it. */
static void check_error(GError **err, int code, const char *message)
{
	cr_assert_not_null(*err, "expected error: %s", message);
	cr_expect_eq((*err)->domain, TLBSIM_ERROR);
	cr_expect_eq((*err)->code, code, "code %d for: %s", (*err)->code, (*err)->message);
	cr_expect_str_eq((*err)->message, message);
	g_clear_error(err);
}

static cJSON *parse_ok(const char *text)
{
	GError *err = NULL;
	cJSON *json = config_parse_string(text, "t.json", &err);
	cr_assert_not_null(json, "parse failed: %s", err != NULL ? err->message : "?");
	return json;
}

/* Parsing @text fails with @code and @message. */
static void check_parse_error_code(const char *text, int code, const char *message)
{
	GError *err = NULL;
	cJSON *json = config_parse_string(text, "t.json", &err);
	cr_assert_null(json, "parsed: %s", text);
	check_error(&err, code, message);
}

static void check_parse_error(const char *text, const char *message)
{
	check_parse_error_code(text, TLBSIM_ERROR_PARSE, message);
}

/* Duplicate keys are well-formed JSON, so they are TLBSIM_ERROR_INVALID. */
static void check_duplicate_error(const char *text, const char *message)
{
	check_parse_error_code(text, TLBSIM_ERROR_INVALID, message);
}

/* --------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------ */

Test(config_parse, valid_object)
{
	cJSON *json = parse_ok("{\"a\": 1, \"b\": [true, \"x\"], \"c\": {\"d\": null}}");
	cr_expect(cJSON_IsObject(json));
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(json, "a")->valuedouble, 1.0);
	cJSON_Delete(json);
}

Test(config_parse, syntax_error_line_and_column)
{
	/* The second ',' on line 3 is column 14; cJSON stops there. */
	check_parse_error("{\n  \"a\": 1,\n  \"b\": [1, 2,, 3]\n}",
			  "t.json:3:14: invalid JSON near ', 3]\\n}': two commas in a row: a value "
			  "is missing between them");
}

Test(config_parse, syntax_error_on_later_line)
{
	check_parse_error("{\n\t\"a\": 1,\n\t\"b\": 2,\n\t\"c\" 3\n}",
			  "t.json:4:6: invalid JSON near '3\\n}': a ':' is missing after the key "
			  "before this value");
}

Test(config_parse, column_counts_utf8_characters)
{
	/* "é" is two bytes but one column: 't' of "tru" is column 7. */
	check_parse_error("{\"\xc3\xa9\": tru}", "t.json:1:7: invalid JSON near 'tru}'");
}

Test(config_parse, snippet_is_cut_at_20_characters)
{
	check_parse_error("[1, 2, x23456789012345678901234567890]",
			  "t.json:1:8: invalid JSON near 'x2345678901234567890'");
}

Test(config_parse, trailing_garbage)
{
	check_parse_error(
	    "{\"a\": 1}\n  xyz",
	    "t.json:2:3: invalid JSON near 'xyz': text after the end of the JSON value");
}

/* The usual mistakes of hand-written JSON are named, where they are. */
Test(config_parse, trailing_comma_is_named)
{
	check_parse_error("{\n  \"a\": 1,\n}",
			  "t.json:3:1: invalid JSON near '}': a comma before a "
			  "closing bracket: JSON allows no trailing comma");
	check_parse_error("[1, 2,]", "t.json:1:7: invalid JSON near ']': a comma before a closing "
					 "bracket: JSON allows no trailing comma");
}

Test(config_parse, missing_comma_is_named)
{
	check_parse_error("{\"a\": {\"b\": 1}\n \"c\": 2}",
			  "t.json:2:2: invalid JSON near '\"c\": 2}': a ',' is missing before this "
			  "value");
	check_parse_error("[1 2]",
			  "t.json:1:4: invalid JSON near '2]': a ',' is missing before this value");
}

Test(config_parse, quotes_and_comments_are_named)
{
	check_parse_error("{'a': 1}", "t.json:1:2: invalid JSON near ''a': 1}': JSON strings take "
					  "double quotes, not single ones");
	check_parse_error("{\"a\": 1 // why\n}",
			  "t.json:1:9: invalid JSON near '// why\\n}': JSON has no comments (a "
			  "\"comment\" key holds notes)");
	/* Inside a string they are text. */
	cJSON *json = parse_ok("{\"a\": \"it's // not /* a comment\"}");
	cJSON_Delete(json);
}

Test(config_parse, truncated_input)
{
	check_parse_error(
	    "{\n  \"a\": [1, 2\n",
	    "t.json:3:1: invalid JSON at the end of the input, after '{\\n  \"a\": [1, 2'");
}

Test(config_parse, control_characters_are_escaped)
{
	/* cJSON skips every byte <= ' ' as blank, so put one inside a token. */
	check_parse_error("[tru\x01"
			  "e]",
			  "t.json:1:2: invalid JSON near 'tru\\x01e]'");
}

/* cJSON would decode it into a string cut short at the NUL. */
Test(config_parse, escaped_nul_is_refused)
{
	check_parse_error("{\n  \"name\": \"x\\u0000y\"}",
			  "t.json:2:13: \\u0000 in a string: a NUL character cannot be part of "
			  "a name or value");
	/* An escaped backslash before "u0000" is not a NUL. */
	GError *err = NULL;
	cJSON *json = config_parse_string("{\"name\": \"x\\\\u0000y\"}", "t.json", &err);
	cr_assert_not_null(json, "%s", err ? err->message : "");
	cr_expect_str_eq(cJSON_GetObjectItem(json, "name")->valuestring, "x\\u0000y");
	cJSON_Delete(json);
}

Test(config_parse, nesting_beyond_the_limit_says_so)
{
	GString *deep = g_string_new(NULL);
	for (int i = 0; i < 1200; i++)
		g_string_append(deep, "[");
	GError *err = NULL;
	cr_assert_null(config_parse_string(deep->str, "t.json", &err));
	cr_expect_str_eq(err->message, "t.json:1:1001: JSON nested deeper than 1000 levels");
	g_error_free(err);
	g_string_free(deep, TRUE);
}

Test(config_parse, empty_input)
{
	check_parse_error("", "t.json: empty input, expected a JSON value");
	check_parse_error(" \n\t ", "t.json: empty input, expected a JSON value");
}

Test(config_parse, duplicate_key_top_level)
{
	check_duplicate_error("{\"a\": 1, \"b\": 2, \"a\": 3}", "t.json: $: duplicate key \"a\"");
}

Test(config_parse, duplicate_key_nested)
{
	GError *err = NULL;
	cJSON *json = config_parse_string(
	    "{\"tlbs\": [{\"name\": \"l1d\"}, {\"name\": \"x\", \"ways\": 1, \"ways\": 2}]}",
	    "t.json", &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.tlbs[1]: duplicate key \"ways\"");

	json = config_parse_string("{\"a\": {\"b\": {\"c\": 1, \"c\": 1}}}", "t.json", &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.a.b: duplicate key \"c\"");
}

Test(config_parse, duplicate_key_in_large_object)
{
	GString *text = g_string_new("{");
	for (int i = 0; i < 100; i++)
		g_string_append_printf(text, "\"k%d\": %d, ", i, i);
	g_string_append(text, "\"k57\": 0}");
	check_duplicate_error(text->str, "t.json: $: duplicate key \"k57\"");
	g_string_free(text, TRUE);

	/* Same size without a duplicate parses. */
	text = g_string_new("{");
	for (int i = 0; i < 100; i++)
		g_string_append_printf(text, "%s\"k%d\": %d", i ? ", " : "", i, i);
	g_string_append(text, "}");
	cJSON_Delete(parse_ok(text->str));
	g_string_free(text, TRUE);
}

Test(config_parse, case_differing_keys_are_not_duplicates)
{
	cJSON_Delete(parse_ok("{\"a\": 1, \"A\": 2}"));
}

/* --------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------ */

Test(config_file, loads_fixture)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA "/config-valid.json", NULL, &err);
	cr_assert_not_null(json, "%s", err != NULL ? err->message : "?");
	cr_expect(cJSON_IsObject(json));
	cJSON_Delete(json);
}

Test(config_file, syntax_error_names_file)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA "/config-syntax-error.json", NULL, &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_PARSE,
		    TLBSIM_TEST_DATA "/config-syntax-error.json:4:15: invalid JSON near "
				     "'}\\n}\\n'");
}

Test(config_file, duplicate_key_names_file)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA "/config-duplicate-key.json", NULL, &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_INVALID,
		    TLBSIM_TEST_DATA "/config-duplicate-key.json: $.costs: duplicate key "
				     "\"invlpg\"");
}

Test(config_file, empty_file)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA "/config-empty.json", NULL, &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_PARSE,
		    TLBSIM_TEST_DATA "/config-empty.json: empty file, expected a JSON value");
}

Test(config_file, missing_file)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA "/no-such-file.json", NULL, &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_IO,
		    TLBSIM_TEST_DATA "/no-such-file.json: cannot open: No such file or directory");
}

Test(config_file, directory)
{
	GError *err = NULL;
	cJSON *json = config_load_file(TLBSIM_TEST_DATA, NULL, &err);
	cr_assert_null(json);
	check_error(&err, TLBSIM_ERROR_IO, TLBSIM_TEST_DATA ": cannot read: Is a directory");
}

/* A temporary file holding @content, padded with blanks to @total bytes. */
static char *temp_file(const char *content, size_t content_len, long total)
{
	GError *err = NULL;
	char *path = NULL;
	int fd = g_file_open_tmp("tlbsim-config-XXXXXX.json", &path, &err);
	cr_assert(fd >= 0, "%s", err != NULL ? err->message : "?");
	g_close(fd, NULL);
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(content, 1, content_len, f), content_len);
	static char blanks[65536];
	memset(blanks, ' ', sizeof(blanks));
	for (long left = total - (long)content_len; left > 0; left -= (long)sizeof(blanks)) {
		size_t n = left < (long)sizeof(blanks) ? (size_t)left : sizeof(blanks);
		cr_assert_eq(fwrite(blanks, 1, n, f), n);
	}
	cr_assert_eq(fclose(f), 0);
	return path;
}

Test(config_file, too_large_is_refused_before_reading)
{
	GError *err = NULL;
	char *path = temp_file("{}", 2, (16L << 20) + 1);
	cJSON *json = config_load_file(path, NULL, &err);
	cr_expect_null(json);
	char *expected = g_strdup_printf(
	    "%s: file is 16777217 bytes, more than the 16 MiB an input file may have", path);
	check_error(&err, TLBSIM_ERROR_IO, expected);
	g_free(expected);
	g_unlink(path);
	g_free(path);
}

Test(config_file, exactly_16_mib_is_accepted)
{
	GError *err = NULL;
	char *path = temp_file("{}", 2, 16L << 20);
	cJSON *json = config_load_file(path, NULL, &err);
	cr_expect_not_null(json, "%s", err != NULL ? err->message : "?");
	cJSON_Delete(json);
	g_clear_error(&err);
	g_unlink(path);
	g_free(path);
}

Test(config_file, nul_byte)
{
	GError *err = NULL;
	char *path = temp_file("{\n \"a\": 1\0}", 11, 0);
	cJSON *json = config_load_file(path, NULL, &err);
	cr_expect_null(json);
	char *expected = g_strdup_printf("%s:2:8: NUL byte in the file (not a text file?)", path);
	check_error(&err, TLBSIM_ERROR_PARSE, expected);
	g_free(expected);
	g_unlink(path);
	g_free(path);
}

/* --------------------------------------------------------------------------
 * Cursors and paths
 * ------------------------------------------------------------------------ */

Test(config_node, paths)
{
	cJSON *json = parse_ok("{\"tlbs\": [{\"ways\": 4}, {\"ways\": 8}], \"odd key\": 1}");
	struct config_node root = config_root(json, "t.json");
	cr_expect_str_eq(root.path, "$");
	cr_expect_eq(root.json, json);

	struct config_node tlbs = config_child(&root, "tlbs");
	cr_expect_str_eq(tlbs.path, "$.tlbs");
	cr_expect(cJSON_IsArray(tlbs.json));
	struct config_node second = config_index(&tlbs, 1);
	cr_expect_str_eq(second.path, "$.tlbs[1]");
	struct config_node ways = config_child(&second, "ways");
	cr_expect_str_eq(ways.path, "$.tlbs[1].ways");
	cr_expect_eq(ways.json->valuedouble, 8.0);
	cr_expect_str_eq(ways.file, "t.json");

	struct config_node odd = config_child(&root, "odd key");
	cr_expect_str_eq(odd.path, "$[\"odd key\"]");
	cr_expect_not_null(odd.json);

	/* Absent members and elements: a path, no value. */
	struct config_node missing = config_index(&tlbs, 5);
	cr_expect_str_eq(missing.path, "$.tlbs[5]");
	cr_expect_null(missing.json);
	struct config_node not_array = config_index(&root, 0);
	cr_expect_null(not_array.json);
	struct config_node below_missing = config_child(&missing, "x");
	cr_expect_str_eq(below_missing.path, "$.tlbs[5].x");
	cr_expect_null(below_missing.json);
	cJSON_Delete(json);
}

Test(config_node, long_paths_are_truncated)
{
	struct config_node node = config_root(NULL, "t.json");
	char key[100];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	for (int i = 0; i < 5; i++)
		node = config_child(&node, key);
	size_t len = strlen(node.path);
	cr_expect_eq(len, sizeof(node.path) - 1);
	cr_expect(g_str_has_suffix(node.path, "..."), "%s", node.path);
	cr_expect(g_str_has_prefix(node.path, "$.kkkk"));
}

/* --------------------------------------------------------------------------
 * Unknown keys and suggestions
 * ------------------------------------------------------------------------ */

static const char *const tlb_keys[] = {"name", "level", "entries", "ways", "page_sizes", NULL};

Test(config_keys, all_known)
{
	GError *err = NULL;
	cJSON *json = parse_ok("{\"name\": \"l1d\", \"ways\": 4}");
	struct config_node root = config_root(json, "t.json");
	cr_expect(config_check_keys(&root, tlb_keys, &err));
	cr_expect_null(err);
	cJSON_Delete(json);
}

Test(config_keys, unknown_with_suggestion)
{
	GError *err = NULL;
	cJSON *json = parse_ok("{\"tlbs\": [{}, {\"name\": \"stlb\", \"entrees\": 64}]}");
	struct config_node root = config_root(json, "t.json");
	struct config_node tlbs = config_child(&root, "tlbs");
	struct config_node tlb = config_index(&tlbs, 1);
	cr_expect_not(config_check_keys(&tlb, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.tlbs[1]: unknown key \"entrees\" (did you mean \"entries\"?)");
	cJSON_Delete(json);
}

Test(config_keys, unknown_without_suggestion)
{
	GError *err = NULL;
	cJSON *json = parse_ok("{\"ways\": 4, \"colour\": \"red\"}");
	struct config_node root = config_root(json, "t.json");
	cr_expect_not(config_check_keys(&root, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $: unknown key \"colour\" (expected one of: name, level, entries, "
		    "ways, page_sizes)");
	cJSON_Delete(json);
}

Test(config_keys, no_keys_allowed)
{
	static const char *const none[] = {NULL};
	GError *err = NULL;
	cJSON *json = parse_ok("{\"x\": 1}");
	struct config_node root = config_root(json, "t.json");
	cr_expect_not(config_check_keys(&root, none, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $: unknown key \"x\" (this object takes no keys)");
	cJSON_Delete(json);
}

Test(config_keys, not_an_object)
{
	GError *err = NULL;
	cJSON *json = parse_ok("{\"a\": [1], \"b\": 3, \"c\": \"s\"}");
	struct config_node root = config_root(json, "t.json");
	struct config_node a = config_child(&root, "a");
	cr_expect_not(config_check_keys(&a, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.a: expected an object, got an array");
	struct config_node b = config_child(&root, "b");
	cr_expect_not(config_check_keys(&b, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.b: expected an object, got 3");
	struct config_node c = config_child(&root, "c");
	cr_expect_not(config_check_keys(&c, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.c: expected an object, got \"s\" (a string)");
	struct config_node d = config_child(&root, "d");
	cr_expect_not(config_check_keys(&d, tlb_keys, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.d: expected an object, got nothing");
	cJSON_Delete(json);
}

Test(config_suggest, cases)
{
	static const char *const keys[] = {
	    "sockets",     "cores_per_socket", "threads_per_core", "ipi_send",
	    "ipi_latency", "tlb_lld_4k",       "entries",          "ways",
	    NULL};
	cr_expect_str_eq(config_suggest("entrees", keys), "entries");
	cr_expect_str_eq(config_suggest("ENTRIES", keys), "entries");
	cr_expect_str_eq(config_suggest("sokcets", keys), "sockets"); /* transposition */
	cr_expect_str_eq(config_suggest("way", keys), "ways");
	cr_expect_str_eq(config_suggest("cores_per_sockt", keys), "cores_per_socket");
	cr_expect_str_eq(config_suggest("threads_per_cores", keys), "threads_per_core");
	cr_expect_null(config_suggest("colour", keys));
	cr_expect_null(config_suggest("", keys));
	cr_expect_null(config_suggest("wxyz", keys)); /* 3 edits from "ways", limit 1 */
	cr_expect_null(config_suggest(NULL, keys));
	/* Prefix rule: shorter side >= 3 characters; closest length, ties first. */
	cr_expect_str_eq(config_suggest("ipi", keys), "ipi_send");
	cr_expect_str_eq(config_suggest("tlb_lld", keys), "tlb_lld_4k");
	cr_expect_str_eq(config_suggest("entries_per_way", keys), "entries");
	cr_expect_null(config_suggest("ip", keys));
	/* Distance wins over prefix; ties go to the first candidate. */
	static const char *const animals[] = {"cat", "bat", "category", NULL};
	cr_expect_str_eq(config_suggest("hat", animals), "cat");
	cr_expect_str_eq(config_suggest("catego", animals), "category");
	static const char *const none[] = {NULL};
	cr_expect_null(config_suggest("x", none));
	/* Short words still get one edit. */
	static const char *const sizes[] = {"4K", "2M", "1G", NULL};
	cr_expect_str_eq(config_suggest("4k", sizes), "4K");
	cr_expect_str_eq(config_suggest("2MB", sizes), "2M");
}

/* --------------------------------------------------------------------------
 * Getters
 * ------------------------------------------------------------------------ */

/* Root cursor of "t.json" over @text; *json must be cJSON_Delete()d. */
static struct config_node root_of(const char *text, cJSON **json)
{
	*json = parse_ok(text);
	return config_root(*json, "t.json");
}

Test(config_get, u64_plain_and_sourced)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"a\": 12, \"b\": {\"value\": 30, \"source\": \"Hansen 2014\"},"
		    " \"c\": {\"value\": 7}, \"d\": 9007199254740992, \"e\": -0.0}",
		    &json);
	uint64_t v = 0;
	cr_expect(config_get_u64(&root, "a", true, 0, 100, &v, &err));
	cr_expect_eq(v, 12);
	cr_expect(config_get_u64(&root, "b", true, 0, 100, &v, &err));
	cr_expect_eq(v, 30);
	cr_expect(config_get_u64(&root, "c", true, 0, 100, &v, &err));
	cr_expect_eq(v, 7);
	cr_expect(config_get_u64(&root, "d", true, 0, UINT64_MAX, &v, &err));
	cr_expect_eq(v, UINT64_C(9007199254740992));
	cr_expect(config_get_u64(&root, "e", true, 0, 1, &v, &err));
	cr_expect_eq(v, 0);
	/* Absent and optional: the default stays. */
	v = 77;
	cr_expect(config_get_u64(&root, "zz", false, 0, 100, &v, &err));
	cr_expect_eq(v, 77);
	cr_expect_null(err);
	cJSON_Delete(json);
}

/* Expect config_get_u64(@key) on @text to fail with @message. */
static void check_u64_error(const char *text, const char *key, uint64_t min, uint64_t max,
			    const char *message)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root = root_of(text, &json);
	uint64_t v = 5;
	cr_expect_not(config_get_u64(&root, key, true, min, max, &v, &err), "%s", text);
	cr_expect_eq(v, 5, "output changed on error");
	check_error(&err, TLBSIM_ERROR_INVALID, message);
	cJSON_Delete(json);
}

Test(config_get, u64_errors_name_path_and_range)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root = root_of("{\"tlbs\": [{}, {\"ways\": 0}]}", &json);
	struct config_node tlbs = config_child(&root, "tlbs");
	struct config_node tlb = config_index(&tlbs, 1);
	uint64_t v;
	cr_expect_not(config_get_u64(&tlb, "ways", true, 1, 4096, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.tlbs[1].ways: expected an integer in [1, 4096], got 0");
	cJSON_Delete(json);

	check_u64_error("{\"w\": \"abc\"}", "w", 1, 4096,
			"t.json: $.w: expected an integer in [1, 4096], got \"abc\" (a string)");
	check_u64_error("{\"w\": 2.5}", "w", 1, 4096,
			"t.json: $.w: expected an integer in [1, 4096], got 2.5");
	check_u64_error("{\"w\": 1e30}", "w", 1, 4096,
			"t.json: $.w: expected an integer in [1, 4096], got 1e+30");
	check_u64_error("{\"w\": 1e30}", "w", 0, UINT64_MAX,
			"t.json: $.w: expected an integer in [0, 18446744073709551615], got "
			"1e+30 (integers beyond 2^53 are not exact in JSON numbers)");
	check_u64_error("{\"w\": 9007199254740994}", "w", 0, UINT64_MAX,
			"t.json: $.w: expected an integer in [0, 18446744073709551615], got "
			"9007199254740994 (integers beyond 2^53 are not exact in JSON numbers)");
	check_u64_error("{\"w\": 1e400}", "w", 0, 10,
			"t.json: $.w: expected an integer in [0, 10], got inf");
	check_u64_error("{\"w\": -1}", "w", 0, 10,
			"t.json: $.w: expected an integer in [0, 10], got -1");
	check_u64_error("{\"w\": 4097}", "w", 1, 4096,
			"t.json: $.w: expected an integer in [1, 4096], got 4097");
	check_u64_error("{\"w\": true}", "w", 0, 10,
			"t.json: $.w: expected an integer in [0, 10], got true (a boolean)");
	check_u64_error("{\"w\": null}", "w", 0, 10,
			"t.json: $.w: expected an integer in [0, 10], got null");
	check_u64_error("{\"w\": [1]}", "w", 0, 10,
			"t.json: $.w: expected an integer in [0, 10], got an array");
	check_u64_error("{\"x\": 1}", "w", 0, 10, "t.json: $: missing required key \"w\"");
}

Test(config_get, sourced_number_errors)
{
	check_u64_error("{\"w\": {\"value\": 3, \"sorce\": \"x\"}}", "w", 0, 10,
			"t.json: $.w: unknown key \"sorce\" (did you mean \"source\"?)");
	check_u64_error("{\"w\": {\"value\": 3, \"unit\": \"ns\"}}", "w", 0, 10,
			"t.json: $.w: unknown key \"unit\" (expected one of: value, source)");
	check_u64_error("{\"w\": {\"source\": \"x\"}}", "w", 0, 10,
			"t.json: $.w: missing required key \"value\" (a number with its source is "
			"written {\"value\": N, \"source\": \"...\"})");
	check_u64_error("{\"w\": {}}", "w", 0, 10,
			"t.json: $.w: missing required key \"value\" (a number with its source is "
			"written {\"value\": N, \"source\": \"...\"})");
	check_u64_error("{\"w\": {\"value\": 3, \"source\": 4}}", "w", 0, 10,
			"t.json: $.w.source: expected a string, got 4");
	check_u64_error("{\"w\": {\"value\": \"3\"}}", "w", 0, 10,
			"t.json: $.w.value: expected an integer in [0, 10], got \"3\" (a string)");
	check_u64_error("{\"w\": {\"value\": {\"value\": 3}}}", "w", 0, 10,
			"t.json: $.w.value: expected an integer in [0, 10], got an object");
	check_u64_error("{\"w\": {\"value\": 11, \"source\": \"guess\"}}", "w", 0, 10,
			"t.json: $.w.value: expected an integer in [0, 10], got 11");
}

Test(config_get, i64)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"s\": -1, \"t\": {\"value\": 16, \"source\": \"x\"}, \"u\": -2, "
		    "\"v\": 0.5}",
		    &json);
	int64_t v = 0;
	cr_expect(config_get_i64(&root, "s", true, -1, 16, &v, &err));
	cr_expect_eq(v, -1);
	cr_expect(config_get_i64(&root, "t", true, -1, 16, &v, &err));
	cr_expect_eq(v, 16);
	v = 3;
	cr_expect(config_get_i64(&root, "missing", false, -1, 16, &v, &err));
	cr_expect_eq(v, 3);
	cr_expect_not(config_get_i64(&root, "u", true, -1, 16, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.u: expected an integer in [-1, 16], got -2");
	cr_expect_not(config_get_i64(&root, "v", true, -1, 16, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.v: expected an integer in [-1, 16], got 0.5");
	cr_expect_not(config_get_i64(&root, "missing", true, -1, 16, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $: missing required key \"missing\"");
	cJSON_Delete(json);
}

Test(config_get, double)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"clock_ghz\": {\"value\": 3.4, \"source\": \"ark\"}, \"p\": 2, "
		    "\"hi\": 20, \"s\": \"fast\", \"inf\": 1e400, \"lo\": 0.05}",
		    &json);
	double v = 0;
	cr_expect(config_get_double(&root, "clock_ghz", true, 0.1, 10, &v, &err));
	cr_expect_eq(v, 3.4);
	cr_expect(config_get_double(&root, "p", true, 0.1, 10, &v, &err));
	cr_expect_eq(v, 2.0);
	v = 1.5;
	cr_expect(config_get_double(&root, "absent", false, 0.1, 10, &v, &err));
	cr_expect_eq(v, 1.5);
	cr_expect_not(config_get_double(&root, "hi", true, 0.1, 10, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.hi: expected a number in [0.1, 10], got 20");
	cr_expect_not(config_get_double(&root, "lo", true, 0.1, 10, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.lo: expected a number in [0.1, 10], got 0.05");
	cr_expect_not(config_get_double(&root, "s", true, 0.1, 10, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.s: expected a number in [0.1, 10], got \"fast\" (a string)");
	cr_expect_not(config_get_double(&root, "inf", true, 0, 1e308, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.inf: expected a number in [0, 1e+308], got inf");
	cr_expect_eq(v, 1.5);
	cJSON_Delete(json);
}

Test(config_get, bool_and_string)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"per_core\": true, \"off\": false, \"yes\": \"yes\", \"name\": \"hsw\","
		    " \"num\": 3, \"wrapped\": {\"value\": true}}",
		    &json);
	bool b = false;
	cr_expect(config_get_bool(&root, "per_core", true, &b, &err));
	cr_expect(b);
	cr_expect(config_get_bool(&root, "off", true, &b, &err));
	cr_expect_not(b);
	b = true;
	cr_expect(config_get_bool(&root, "absent", false, &b, &err));
	cr_expect(b);
	cr_expect_not(config_get_bool(&root, "yes", true, &b, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.yes: expected true or false, got \"yes\" (a string)");
	cr_expect_not(config_get_bool(&root, "wrapped", true, &b, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.wrapped: expected true or false, got an object");

	char *s = NULL;
	cr_expect(config_get_string(&root, "name", true, &s, &err));
	cr_expect_str_eq(s, "hsw");
	g_free(s);
	s = NULL;
	cr_expect(config_get_string(&root, "absent", false, &s, &err));
	cr_expect_null(s);
	cr_expect_not(config_get_string(&root, "num", true, &s, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $.num: expected a string, got 3");
	cr_expect_not(config_get_string(&root, "per_core", true, &s, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.per_core: expected a string, got true (a boolean)");
	cr_expect_not(config_get_string(&root, "absent", true, &s, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $: missing required key \"absent\"");
	cr_expect_null(s);
	cJSON_Delete(json);
}

Test(config_get, enum)
{
	static const char *const modes[] = {"core", "thread", NULL};
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"a\": \"thread\", \"b\": \"cor\", \"c\": \"xyz\", \"d\": 1, "
		    "\"e\": \"Core\"}",
		    &json);
	int v = -1;
	cr_expect(config_get_enum(&root, "a", true, modes, &v, &err));
	cr_expect_eq(v, 1);
	v = 7;
	cr_expect(config_get_enum(&root, "absent", false, modes, &v, &err));
	cr_expect_eq(v, 7);
	cr_expect_not(config_get_enum(&root, "b", true, modes, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.b: expected one of \"core\", \"thread\", got \"cor\" (did you mean "
		    "\"core\"?)");
	cr_expect_not(config_get_enum(&root, "c", true, modes, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.c: expected one of \"core\", \"thread\", got \"xyz\"");
	cr_expect_not(config_get_enum(&root, "d", true, modes, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.d: expected one of \"core\", \"thread\", got 1");
	/* Matching is exact; the suggestion is not. */
	cr_expect_not(config_get_enum(&root, "e", true, modes, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.e: expected one of \"core\", \"thread\", got \"Core\" (did you "
		    "mean \"core\"?)");
	cr_expect_not(config_get_enum(&root, "absent", true, modes, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "t.json: $: missing required key \"absent\"");
	cr_expect_eq(v, 7);
	cJSON_Delete(json);
}

Test(config_get, on_a_non_object)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root = root_of("{\"costs\": [1, 2]}", &json);
	struct config_node costs = config_child(&root, "costs");
	uint64_t v;
	cr_expect_not(config_get_u64(&costs, "invlpg", false, 0, 10, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.costs: expected an object, got an array");
	cJSON_Delete(json);
}

Test(config_get, long_strings_are_cut_in_messages)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root =
	    root_of("{\"w\": \"0123456789012345678901234567890123456789012345\\\"\"}", &json);
	uint64_t v;
	cr_expect_not(config_get_u64(&root, "w", true, 0, 1, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.w: expected an integer in [0, 1], got "
		    "\"0123456789012345678901234567890123456789...\" (a string)");
	cJSON_Delete(json);
}

Test(config_get, set_error_format)
{
	cJSON *json;
	GError *err = NULL;
	struct config_node root = root_of("{\"tlbs\": [{\"ways\": 3}]}", &json);
	struct config_node tlbs = config_child(&root, "tlbs");
	struct config_node tlb = config_index(&tlbs, 0);
	config_set_error(&err, &tlb, "ways %d does not divide entries %d", 3, 64);
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.tlbs[0]: ways 3 does not divide entries 64");
	config_set_error(NULL, &tlb, "ignored %d", 1);
	cJSON_Delete(json);
}

/* --------------------------------------------------------------------------
 * --set
 * ------------------------------------------------------------------------ */

static const char *const base_json =
    "{\"threads\": 4, \"name\": \"x\","
    " \"tlbs\": [{\"entries\": 64}, {\"entries\": 32}, {\"entries\": 1024}],"
    " \"costs\": {\"x\": 1, \"invlpg\": {\"value\": 113, \"source\": \"Hansen\"}}}";

/* Apply one --set to base_json; return the tree printed unformatted. */
static char *set_ok(const char *path, const char *value)
{
	GError *err = NULL;
	cJSON *json = parse_ok(base_json);
	cr_assert(config_apply_set(json, path, value, &err), "--set %s=%s: %s", path, value,
		  err != NULL ? err->message : "?");
	char *text = cJSON_PrintUnformatted(json);
	char *copy = g_strdup(text);
	cJSON_free(text);
	cJSON_Delete(json);
	return copy;
}

/* Apply one failing --set to base_json and check the tree did not change. */
static void check_set_error(const char *path, const char *value, const char *message)
{
	GError *err = NULL;
	cJSON *json = parse_ok(base_json);
	cJSON *before = cJSON_Duplicate(json, true);
	cr_expect_not(config_apply_set(json, path, value, &err), "--set %s=%s", path, value);
	check_error(&err, TLBSIM_ERROR_INVALID, message);
	cr_expect(cJSON_Compare(json, before, true), "tree changed by a failed --set");
	cJSON_Delete(before);
	cJSON_Delete(json);
}

/* Value at @path of the tree after one --set, printed unformatted. */
static char *set_and_print(const char *path, const char *value, const char *member_path)
{
	char *text = set_ok(path, value);
	cJSON *json = parse_ok(text);
	g_free(text);
	const cJSON *item = json;
	char **parts = g_strsplit(member_path, ".", -1);
	for (char **p = parts; *p != NULL && item != NULL; p++) {
		char *end;
		long index = strtol(*p, &end, 10);
		if (*end == '\0')
			item = cJSON_GetArrayItem(item, (int)index);
		else
			item = cJSON_GetObjectItemCaseSensitive(item, *p);
	}
	g_strfreev(parts);
	cr_assert_not_null(item, "%s missing", member_path);
	char *printed = cJSON_PrintUnformatted(item);
	char *copy = g_strdup(printed);
	cJSON_free(printed);
	cJSON_Delete(json);
	return copy;
}

static void check_set(const char *path, const char *value, const char *member_path,
		      const char *expected)
{
	char *got = set_and_print(path, value, member_path);
	cr_expect_str_eq(got, expected, "--set %s=%s", path, value);
	g_free(got);
}

Test(config_set, values)
{
	check_set("threads", "8", "threads", "8");
	check_set("threads", "-2.5", "threads", "-2.5");
	check_set("name", "haswell", "name", "\"haswell\"");   /* not JSON: a string */
	check_set("name", "\"quoted\"", "name", "\"quoted\""); /* JSON string */
	check_set("name", "", "name", "\"\"");                 /* empty string */
	check_set("name", "3abc", "name", "\"3abc\"");
	check_set("name", "true", "name", "true");
	check_set("name", "null", "name", "null");
	check_set("name", "[1, 2]", "name", "[1,2]");
	check_set("name", "{\"a\": 1}", "name", "{\"a\":1}");
}

Test(config_set, array_index_and_new_keys)
{
	check_set("tlbs[1].entries", "16", "tlbs.1.entries", "16");
	check_set("tlbs[2]", "{\"entries\": 8}", "tlbs.2", "{\"entries\":8}");
	check_set("tlbs[0].ways", "4", "tlbs.0", "{\"entries\":64,\"ways\":4}");
	check_set("newkey", "1", "newkey", "1");
	/* Missing intermediate objects are created. */
	check_set("costs.ipi_latency.smt", "1200", "costs.ipi_latency", "{\"smt\":1200}");
	check_set("a.b.c", "x", "a", "{\"b\":{\"c\":\"x\"}}");
	/* A path copied from a message. */
	check_set("$.tlbs[1].entries", "8", "tlbs.1.entries", "8");
}

Test(config_set, through_sourced_number)
{
	check_set("costs.invlpg", "200", "costs.invlpg", "{\"value\":200,\"source\":\"Hansen\"}");
	check_set("costs.invlpg", "\"abc\"", "costs.invlpg",
		  "{\"value\":\"abc\",\"source\":\"Hansen\"}");
	check_set("costs.invlpg.source", "mine", "costs.invlpg",
		  "{\"value\":113,\"source\":\"mine\"}");
	/* An object replaces the whole thing. */
	check_set("costs.invlpg", "{\"value\": 1}", "costs.invlpg", "{\"value\":1}");
}

Test(config_set, the_whole_tree_is_untouched_elsewhere)
{
	char *text = set_ok("costs.x", "2");
	cr_expect_str_eq(text, "{\"threads\":4,\"name\":\"x\",\"tlbs\":[{\"entries\":64},"
			       "{\"entries\":32},{\"entries\":1024}],\"costs\":{\"x\":2,"
			       "\"invlpg\":{\"value\":113,\"source\":\"Hansen\"}}}");
	g_free(text);
}

Test(config_set, errors)
{
	check_set_error("tlbs[9].entries", "1",
			"--set tlbs[9].entries: index 9 out of range (array has 3 elements)");
	check_set_error("tlbs[3]", "1",
			"--set tlbs[3]: index 3 out of range (array has 3 elements)");
	check_set_error("costs.x.y", "1",
			"--set costs.x.y: \"costs.x\" is a number, not an object");
	check_set_error("costs.x.y.z", "1",
			"--set costs.x.y.z: \"costs.x\" is a number, not an object");
	check_set_error("costs[0]", "1", "--set costs[0]: \"costs\" is an object, not an array");
	check_set_error("tlbs.entries", "1",
			"--set tlbs.entries: \"tlbs\" is an array, not an object");
	check_set_error("name[0]", "1", "--set name[0]: \"name\" is a string, not an array");
	check_set_error("nothing.here[0]", "1",
			"--set nothing.here[0]: \"nothing.here\" does not exist (only objects are "
			"created, not arrays)");
	check_set_error("nothing[0].x", "1",
			"--set nothing[0].x: \"nothing\" does not exist (only objects are created, "
			"not arrays)");
	check_set_error("", "1", "--set : empty path (expected e.g. costs.ipi_send)");
	check_set_error("$.", "1", "--set $.: empty path (expected e.g. costs.ipi_send)");
	check_set_error("tlbs[x].entries", "1",
			"--set tlbs[x].entries: bad path: expected an array index: digits and ']' "
			"at 'x].entries'");
	check_set_error(
	    "tlbs[1", "1",
	    "--set tlbs[1: bad path: expected an array index: digits and ']' at the end");
	check_set_error(
	    "costs..x", "1",
	    "--set costs..x: bad path: expected a key of letters, digits, '_' or '-' at "
	    "'.x'");
	check_set_error("costs.", "1",
			"--set costs.: bad path: expected a key of letters, digits, '_' or '-' at "
			"the end");
	check_set_error(
	    "[0]", "1",
	    "--set [0]: bad path: expected a key of letters, digits, '_' or '-' at '[0]'");
	check_set_error("a b", "1", "--set a b: bad path: expected '.' or '[' at ' b'");
	check_set_error("tlbs[0]x", "1", "--set tlbs[0]x: bad path: expected '.' or '[' at 'x'");
	check_set_error("tlbs[99999999999999999999999]", "1",
			"--set tlbs[99999999999999999999999]: index 99999999999999999999999 out of "
			"range (array has 3 elements)");
	check_set_error("costs", "{\"a\": 1, \"a\": 2}", "--set costs: value: duplicate key \"a\"");
}

Test(config_set, root_must_be_an_object)
{
	GError *err = NULL;
	cJSON *json = parse_ok("[1, 2]");
	cr_expect_not(config_apply_set(json, "a", "1", &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "--set a: the root is an array, not an object");
	cJSON_Delete(json);
}

Test(config_set, singular_element)
{
	GError *err = NULL;
	cJSON *json = parse_ok("{\"a\": [0]}");
	cr_expect_not(config_apply_set(json, "a[1]", "1", &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "--set a[1]: index 1 out of range (array has 1 element)");
	cJSON_Delete(json);
}

Test(config_set, then_read_with_getter)
{
	GError *err = NULL;
	cJSON *json = parse_ok(base_json);
	cr_assert(config_apply_set(json, "costs.invlpg", "abc", &err));
	struct config_node root = config_root(json, "t.json");
	struct config_node costs = config_child(&root, "costs");
	uint64_t v;
	cr_expect_not(config_get_u64(&costs, "invlpg", true, 0, 1000, &v, &err));
	check_error(&err, TLBSIM_ERROR_INVALID,
		    "t.json: $.costs.invlpg.value: expected an integer in [0, 1000], got \"abc\" "
		    "(a string)");
	cJSON_Delete(json);
}

/* --------------------------------------------------------------------------
 * UTF-8 text and stopping (issue 26)
 * ------------------------------------------------------------------------ */

/* A name that is not UTF-8 would make a trace invalid JSON: refused where
 * its first bad byte is. */
Test(config_parse, text_must_be_utf8)
{
	GError *err = NULL;
	cr_assert_null(config_parse_string("{\"a\": 1,\n \"name\": \"caf\xe9\"}", "t.json", &err));
	check_error(&err, TLBSIM_ERROR_PARSE,
		    "t.json:2:14: not UTF-8 (byte 0xe9): names and strings must be UTF-8 text");
	/* An overlong form of '/' is not UTF-8 either. */
	cr_assert_null(config_parse_string("[\"\xc0\xaf\"]", "t.json", &err));
	check_error(&err, TLBSIM_ERROR_PARSE,
		    "t.json:1:3: not UTF-8 (byte 0xc0): names and strings must be UTF-8 text");
	cJSON_Delete(parse_ok("{\"name\": \"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\"}"));
}

Test(config_set, value_must_be_utf8)
{
	cJSON *json = parse_ok("{\"name\": \"x\"}");
	GError *err = NULL;
	cr_assert_not(config_apply_set(json, "name", "caf\xe9", &err));
	check_error(&err, TLBSIM_ERROR_INVALID, "--set name: the value is not UTF-8 text");
	cJSON_Delete(json);
}

/* A stop already requested: a small file and one parsed on a thread of
 * its own (1 MiB or more) alike. */
Test(config_file, stop_interrupts_loading)
{
	atomic_int cancel = 1;
	struct stop stop = stop_from_now(&cancel, 0);
	char *small = temp_file("{}", 2, 0);
	char *large = temp_file("[1", 2, 2L << 20);
	for (int i = 0; i < 2; i++) {
		GError *err = NULL;
		cr_expect_null(config_load_file(i ? large : small, &stop, &err));
		check_error(&err, TLBSIM_ERROR_INTERRUPTED, "interrupted");
	}
	/* Not stopped, the thread's parse is the result. */
	char *text = g_strnfill(2 << 20, ' ');
	memcpy(text, "[7]", 3);
	cr_assert(g_file_set_contents(large, text, -1, NULL));
	atomic_store(&cancel, 0);
	GError *err = NULL;
	cJSON *json = config_load_file(large, &stop, &err);
	cr_assert_not_null(json, "%s", err ? err->message : "?");
	cr_expect_eq(cJSON_GetArrayItem(json, 0)->valueint, 7);
	cJSON_Delete(json);
	g_free(text);
	g_unlink(small);
	g_unlink(large);
	g_free(small);
	g_free(large);
}

/*
 * A stop that comes while a large file is parsed returns at once: the parse
 * goes on in the background and frees what it made.  Deadlines past, then a
 * flag set mid-parse: both within far less than the parse.
 */
Test(config_file, stop_during_a_parse_on_a_thread)
{
	/* 1 Mi numbers: a parse of about a second, far beyond the stop's
	 * millisecond. */
	GString *json = g_string_new("[");
	for (int i = 0; i < (1 << 20) - 1; i++)
		g_string_append(json, "1,");
	g_string_append(json, "1]");
	char *path = temp_file(json->str, json->len, 0);
	g_string_free(json, TRUE);
	struct stop stop = stop_from_now(NULL, 1e-3);
	GError *err = NULL;
	cr_expect_null(config_load_file(path, &stop, &err));
	cr_assert_not_null(err);
	cr_expect_eq(err->code, TLBSIM_ERROR_LIMIT, "%s", err->message);
	g_clear_error(&err);
	/* And the file parses when nobody stops it. */
	cJSON *whole = config_load_file(path, NULL, &err);
	cr_assert_not_null(whole, "%s", err ? err->message : "?");
	cr_expect_eq(cJSON_GetArraySize(whole), 1 << 20);
	cJSON_Delete(whole);
	g_unlink(path);
	g_free(path);
}

/* --------------------------------------------------------------------------
 * Times in cycles (config_get_cycles())
 * ------------------------------------------------------------------------ */

/* config_get_cycles() of {"t": @value} at @khz in [0, @max]; asserts success. */
static uint64_t cycles_of(const char *value, uint64_t khz, uint64_t max)
{
	cJSON *json;
	GError *err = NULL;
	char *text = g_strdup_printf("{\"t\": %s}", value);
	struct config_node root = root_of(text, &json);
	uint64_t v = 0;
	cr_assert(config_get_cycles(&root, "t", true, 0, max, khz, &v, &err), "%s: %s", value,
		  err != NULL ? err->message : "?");
	cJSON_Delete(json);
	g_free(text);
	return v;
}

/* config_get_cycles() of {"t": @value} at @khz in [@min, @max] fails with @message. */
static void check_cycles_error(const char *value, uint64_t khz, uint64_t min, uint64_t max,
			       const char *message)
{
	cJSON *json;
	GError *err = NULL;
	char *text = g_strdup_printf("{\"t\": %s}", value);
	struct config_node root = root_of(text, &json);
	uint64_t v = 5;
	cr_expect_not(config_get_cycles(&root, "t", true, min, max, khz, &v, &err), "%s", value);
	cr_expect_eq(v, 5, "output changed on error");
	check_error(&err, TLBSIM_ERROR_INVALID, message);
	cJSON_Delete(json);
	g_free(text);
}

Test(config_cycles, numbers_are_cycles)
{
	cr_expect_eq(cycles_of("1500", 3400000, 1000000000), 1500);
	cr_expect_eq(cycles_of("{\"value\": 1500, \"source\": \"x\"}", 3400000, 1000000000), 1500);
	cr_expect_eq(cycles_of("\"2000cycles\"", 3400000, 1000000000), 2000);
	cr_expect_eq(cycles_of("\"2000 cycles\"", 3400000, 1000000000), 2000);
	/* Whole cycles may carry a zero fraction. */
	cr_expect_eq(cycles_of("\"7.00cycles\"", 3400000, 1000000000), 7);
}

Test(config_cycles, units_convert_at_the_clock)
{
	cr_expect_eq(cycles_of("\"350ns\"", 3400000, 1000000000), 1190);
	cr_expect_eq(cycles_of("\"350 ns\"", 3400000, 1000000000), 1190);
	cr_expect_eq(cycles_of("\"1.5us\"", 3400000, 1000000000), 5100);
	cr_expect_eq(cycles_of("\"2ms\"", 3400000, 1000000000), 6800000);
	cr_expect_eq(cycles_of("\"0ns\"", 3400000, 1000000000), 0);
	/* 1.848 GHz: 100 ns = 184.8 cycles -> 185; 0.25 us = 462. */
	cr_expect_eq(cycles_of("\"100ns\"", 1848000, 1000000000), 185);
	cr_expect_eq(cycles_of("\"0.25us\"", 1848000, 1000000000), 462);
	cr_expect_eq(cycles_of("{\"value\": \"350ns\", \"source\": \"x\"}", 3400000, 1000000000),
		     1190);
	/* Decimals are exact, not binary fractions: 0.1 us at 3 GHz is 300, not 299. */
	cr_expect_eq(cycles_of("\"0.1us\"", 3000000, 1000000000), 300);
	cr_expect_eq(cycles_of("\"0.000000001ms\"", 1000000, 1000000000), 0);
}

Test(config_cycles, rounds_to_nearest_half_up)
{
	/* 2.5 GHz: 1 ns = 2.5 -> 3; 0.2 ns = 0.5 -> 1; 0.1 ns = 0.25 -> 0; 0.3 ns = 0.75 -> 1. */
	cr_expect_eq(cycles_of("\"1ns\"", 2500000, 1000000000), 3);
	cr_expect_eq(cycles_of("\"0.2ns\"", 2500000, 1000000000), 1);
	cr_expect_eq(cycles_of("\"0.1ns\"", 2500000, 1000000000), 0);
	cr_expect_eq(cycles_of("\"0.3ns\"", 2500000, 1000000000), 1);
	/* Just under a half rounds down: 0.19999 ns = 0.499975 cycles. */
	cr_expect_eq(cycles_of("\"0.19999ns\"", 2500000, 1000000000), 0);
}

Test(config_cycles, errors_name_path_and_what_was_expected)
{
	const char *expected = "expected an integer in [0, 1000] (cycles) or a time string such "
			       "as \"350ns\" (digits, an optional fraction, then cycles, ns, us "
			       "or ms), got ";
	char *m;

	check_cycles_error("\"350ns\"", 3400000, 0, 1000,
			   "t.json: $.t: \"350ns\" = 1190 cycles at 3400 MHz: above the limit of "
			   "1000 cycles");
	check_cycles_error("{\"value\": \"1ns\", \"source\": \"x\"}", 2500500, 5, 1000,
			   "t.json: $.t.value: \"1ns\" = 3 cycles at 2500.5 MHz: below the "
			   "minimum of 5 cycles");
	check_cycles_error("\"2000cycles\"", 3400000, 0, 1000,
			   "t.json: $.t: \"2000cycles\" = 2000 cycles: above the limit of 1000 "
			   "cycles");
	check_cycles_error("\"350xs\"", 3400000, 0, 1000,
			   "t.json: $.t: unknown unit \"xs\": expected cycles, ns, us or ms (did "
			   "you mean \"ns\"?)");
	m = g_strconcat("t.json: $.t: a time cannot be negative: ", expected, "\"-350ns\"", NULL);
	check_cycles_error("\"-350ns\"", 3400000, 0, 1000, m);
	g_free(m);
	m = g_strconcat("t.json: $.t: no unit: ", expected, "\"350\"", NULL);
	check_cycles_error("\"350\"", 3400000, 0, 1000, m);
	g_free(m);
	m = g_strconcat("t.json: $.t: not a time: ", expected, "\"ns\"", NULL);
	check_cycles_error("\"ns\"", 3400000, 0, 1000, m);
	g_free(m);
	m = g_strconcat("t.json: $.t: not a time: ", expected, "\"1.ns\"", NULL);
	check_cycles_error("\"1.ns\"", 3400000, 0, 1000, m);
	g_free(m);
	m = g_strconcat("t.json: $.t: a number of cycles is whole: ", expected, "\"1.5cycles\"",
			NULL);
	check_cycles_error("\"1.5cycles\"", 3400000, 0, 1000, m);
	g_free(m);
	m = g_strconcat("t.json: $.t: more than 19 significant digits: ", expected,
			"\"0.12345678901234567890ns\"", NULL);
	check_cycles_error("\"0.12345678901234567890ns\"", 3400000, 0, 1000, m);
	g_free(m);
	/* Too large for 64 bits once converted: the exact figure is still shown. */
	check_cycles_error("\"9999999999999999999ms\"", 10000000, 0, 1000,
			   "t.json: $.t: \"9999999999999999999ms\" = 99999999999999999990000000 "
			   "cycles at 10000 MHz: above the limit of 1000 cycles");
	/* Plain numbers keep config_get_u64()'s message. */
	check_cycles_error("-5", 3400000, 0, 1000,
			   "t.json: $.t: expected an integer in [0, 1000], got -5");
	check_cycles_error("true", 3400000, 0, 1000,
			   "t.json: $.t: expected an integer in [0, 1000], got true (a boolean)");
}
