#ifndef TLBSIM_TESTS_NATIVE_DATA_H
#define TLBSIM_TESTS_NATIVE_DATA_H
/* The recorded /proc and tracefs texts of tests/data/native/, for the native
 * parsers' tests (g_free the result). */
#include <criterion/criterion.h>
#include <glib.h>

static inline char *native_data(const char *name)
{
	char *path = g_build_filename(TLBSIM_TEST_DATA, "native", name, NULL), *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
	g_free(path);
	return text;
}

#endif
