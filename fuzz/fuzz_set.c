/*
 * Fuzz target: "--set PATH=VALUE" overrides.  The input is split at its first
 * '=' into a path and a value (no '=': the whole input is the path and the
 * value is empty), applied with config_apply_set() to a copy of the bundled
 * haswell-i7 topology, and the result is validated with topology_from_json(),
 * as inputs_load() does for "--set topology.PATH=VALUE".
 *
 * Also checks config.h's promise that a failed --set leaves the tree
 * untouched.
 */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/config.h"

#ifndef TLBSIM_SOURCE_DATADIR
#error "TLBSIM_SOURCE_DATADIR must be the source tree (tlbsim_core defines it)"
#endif
#define BASE_FILE TLBSIM_SOURCE_DATADIR "/topologies/haswell-i7.json"

/*
 * The tree every input starts from, read once.  A global because libFuzzer
 * offers no context pointer; it is only read after LLVMFuzzerInitialize().
 */
static cJSON *base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	GError *error = NULL;

	(void)argc;
	(void)argv;
	base = config_load_file(BASE_FILE, NULL, &error);
	if (base == NULL) {
		g_printerr("fuzz_set: %s\n", error->message);
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	char *text = fuzz_text(data, size);
	char *eq = strchr(text, '=');
	const char *value = "";

	if (eq != NULL) {
		*eq = '\0';
		value = eq + 1;
	}
	cJSON *tree = cJSON_Duplicate(base, true);
	g_assert(tree != NULL);
	bool ok = config_apply_set(tree, text, value, &error);
	fuzz_check_result(ok, error);
	error = NULL;
	if (!ok) {
		g_assert(cJSON_Compare(tree, base, true));
	} else {
		struct topology *t = topology_from_json(tree, BASE_FILE, &error);
		fuzz_check_result(t != NULL, error);
		topology_free(t);
	}
	cJSON_Delete(tree);
	g_free(text);
	return 0;
}
