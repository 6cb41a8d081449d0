/*
 * The libFuzzer targets of fuzz/, without libFuzzer: LLVMFuzzerInitialize()
 * once, then LLVMFuzzerTestOneInput() on every file of the target's seed
 * corpus (and, for fuzz_workload, of fuzz/known/), as libFuzzer replays a
 * corpus.  A target aborts on a broken loader contract, which Criterion
 * reports as a crash; so a target that can no longer start (its built-in
 * machine went stale once) or an input that crashes it fails the suite, not
 * only scripts/fuzz.sh.  Built once per target (tests/CMakeLists.txt);
 * FUZZ_INPUTS lists the directories, separated by ':'.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "fuzz.h"

/* Optional in libFuzzer, and only some targets define it. */
#pragma weak LLVMFuzzerInitialize

static unsigned replay_dir(const char *path)
{
	GError *error = NULL;
	GDir *dir = g_dir_open(path, 0, &error);
	cr_assert_not_null(dir, "%s: %s", path, error ? error->message : "?");
	unsigned inputs = 0;
	const char *entry;
	while ((entry = g_dir_read_name(dir)) != NULL) {
		char *file = g_build_filename(path, entry, NULL);
		gchar *data = NULL;
		gsize size = 0;
		cr_assert(g_file_get_contents(file, &data, &size, NULL), "cannot read %s", file);
		cr_assert_eq(LLVMFuzzerTestOneInput((const uint8_t *)data, size), 0, "%s", file);
		inputs++;
		g_free(data);
		g_free(file);
	}
	g_dir_close(dir);
	return inputs;
}

Test(fuzz_replay, every_input_runs)
{
	char *args[] = {"fuzz_replay", NULL};
	char **argv = args;
	int argc = 1;
	if (LLVMFuzzerInitialize != NULL)
		cr_assert_eq(LLVMFuzzerInitialize(&argc, &argv), 0);
	gchar **dirs = g_strsplit(FUZZ_INPUTS, ":", -1);
	unsigned inputs = 0;
	for (gchar **d = dirs; *d != NULL; d++)
		inputs += replay_dir(*d);
	g_strfreev(dirs);
	cr_assert_gt(inputs, 0, "no inputs in %s", FUZZ_INPUTS);
}
