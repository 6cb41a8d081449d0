/*
 * Tests of src/sim/inputs.c: bare names and paths resolve, unknown names get a
 * suggestion, the bundled lists are sorted, --set overrides reach the loaded
 * topology, workload and policy (and are validated like the file), and
 * $TLBSIM_DATADIR is searched before the source tree.
 *
 * Every test starts without TLBSIM_DATADIR; the search-order tests set it to
 * a temporary folder of their own (Criterion runs each test in its own
 * process, so setenv() does not leak into other tests).
 */
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define HASWELL_PATH TLBSIM_SOURCE_DIR "/topologies/haswell-i7.json"
#define MUNMAP16_PATH TLBSIM_SOURCE_DIR "/workloads/munmap16.json"
#define LINUX45_PATH TLBSIM_SOURCE_DIR "/policies/linux-4.5.json"

static void no_datadir(void)
{
	g_unsetenv("TLBSIM_DATADIR");
}

TestSuite(inputs_resolve, .init = no_datadir);
TestSuite(inputs_list, .init = no_datadir);
TestSuite(inputs_load, .init = no_datadir);
TestSuite(inputs_set, .init = no_datadir);
TestSuite(inputs_datadir, .init = no_datadir);
TestSuite(inputs_keys, .init = no_datadir);

/* ---- Helpers ---------------------------------------------------------------- */

static char *resolve_ok(enum inputs_kind kind, const char *name)
{
	GError *err = NULL;
	char *path = inputs_resolve(kind, name, &err);
	cr_assert_not_null(path, "%s", err != NULL ? err->message : "?");
	cr_assert_null(err);
	return path;
}

static void expect_resolve_error(enum inputs_kind kind, const char *name, const char *message)
{
	GError *err = NULL;
	char *path = inputs_resolve(kind, name, &err);
	cr_assert_null(path, "resolved %s to %s", name, path);
	cr_assert_not_null(err);
	cr_expect_eq(err->domain, TLBSIM_ERROR);
	cr_expect_eq(err->code, TLBSIM_ERROR_IO);
	cr_expect_str_eq(err->message, message);
	g_error_free(err);
}

/* inputs_load() of the three names with @sets (NULL-terminated or NULL). */
static bool load(const char *topology, const char *workload, const char *policy,
		 const char *const *sets, struct inputs *inputs, GError **err)
{
	struct inputs_request request = {
	    .names =
		{[INPUT_TOPOLOGY] = topology, [INPUT_WORKLOAD] = workload, [INPUT_POLICY] = policy},
	    .sets = sets,
	};
	return inputs_load(&request, inputs, err);
}

/* The bundled haswell-i7 / munmap16 / linux-4.5 with @sets. */
static void load_default_ok(const char *const *sets, struct inputs *inputs)
{
	GError *err = NULL;
	bool ok = load("haswell-i7", "munmap16", "linux-4.5", sets, inputs, &err);
	cr_assert(ok, "%s", err != NULL ? err->message : "?");
	cr_assert_null(err);
}

/* Loading the bundled inputs with the one override @set fails with @message. */
static void expect_set_error(const char *set, const char *message)
{
	const char *const sets[] = {set, NULL};
	struct inputs inputs;
	GError *err = NULL;
	bool ok = load("haswell-i7", "munmap16", "linux-4.5", sets, &inputs, &err);
	cr_assert_not(ok, "loaded with --set %s", set);
	cr_assert_not_null(err);
	cr_expect_eq(err->domain, TLBSIM_ERROR);
	cr_expect_eq(err->code, TLBSIM_ERROR_INVALID, "code %d: %s", err->code, err->message);
	cr_expect_str_eq(err->message, message);
	g_error_free(err);
	/* A failed load leaves nothing behind. */
	cr_expect_null(inputs.topology);
	cr_expect_null(inputs.workload);
	cr_expect_null(inputs.policy);
	cr_expect_null(inputs.paths[INPUT_TOPOLOGY]);
	inputs_clear(&inputs);
}

/* Loading the bundled inputs with @sets fails with @message. */
static void expect_set_error2(const char *const *sets, const char *message)
{
	struct inputs inputs;
	GError *err = NULL;
	bool ok = load("haswell-i7", "munmap16", "linux-4.5", sets, &inputs, &err);
	cr_assert_not(ok, "loaded with --set %s ...", sets[0]);
	cr_expect(g_error_matches(err, TLBSIM_ERROR, TLBSIM_ERROR_INVALID), "%s", err->message);
	cr_expect_str_eq(err->message, message);
	g_error_free(err);
	inputs_clear(&inputs);
}

static int64_t param(const struct workload *w, const char *name)
{
	int64_t v = 0;
	cr_assert(workload_param(w, name, &v), "no parameter %s", name);
	return v;
}

/* @list contains @name. */
static bool has(char *const *list, const char *name)
{
	return g_strv_contains((const char *const *)list, name);
}

/* Strictly increasing, so sorted and without duplicates. */
static void expect_sorted_unique(char *const *list)
{
	for (unsigned i = 0; list[i] != NULL && list[i + 1] != NULL; i++)
		cr_expect_lt(strcmp(list[i], list[i + 1]), 0, "\"%s\" before \"%s\"", list[i],
			     list[i + 1]);
}

/* ---- Resolving names ---------------------------------------------------------- */

Test(inputs_resolve, bare_name_with_and_without_json)
{
	char *a = resolve_ok(INPUT_TOPOLOGY, "haswell-i7");
	char *b = resolve_ok(INPUT_TOPOLOGY, "haswell-i7.json");
	cr_expect_str_eq(a, HASWELL_PATH);
	cr_expect_str_eq(b, HASWELL_PATH);
	g_free(a);
	g_free(b);

	a = resolve_ok(INPUT_WORKLOAD, "munmap16");
	cr_expect_str_eq(a, MUNMAP16_PATH);
	g_free(a);
	a = resolve_ok(INPUT_POLICY, "linux-4.5.json");
	cr_expect_str_eq(a, LINUX45_PATH);
	g_free(a);
}

Test(inputs_resolve, kinds_have_their_own_folders)
{
	cr_expect_str_eq(inputs_folder(INPUT_TOPOLOGY), "topologies");
	cr_expect_str_eq(inputs_folder(INPUT_WORKLOAD), "workloads");
	cr_expect_str_eq(inputs_folder(INPUT_POLICY), "policies");
	/* A topology's name is no workload's: no suggestion, the list instead. */
	GError *err = NULL;
	char *path = inputs_resolve(INPUT_WORKLOAD, "haswell-i7", &err);
	cr_assert_null(path);
	cr_assert_not_null(err);
	cr_expect(
	    g_str_has_prefix(err->message, "no workload named \"haswell-i7\"; bundled ones: "),
	    "%s", err->message);
	cr_expect(strstr(err->message, "munmap16") != NULL, "%s", err->message);
	g_error_free(err);
}

Test(inputs_resolve, path)
{
	char *p = resolve_ok(INPUT_WORKLOAD, TLBSIM_TEST_DATA "/wl-all-ops.json");
	cr_expect_str_eq(p, TLBSIM_TEST_DATA "/wl-all-ops.json");
	g_free(p);
	/* A path is taken as it is: no ".json" added, no folder searched. */
	expect_resolve_error(INPUT_WORKLOAD, TLBSIM_TEST_DATA "/wl-all-ops",
			     TLBSIM_TEST_DATA "/wl-all-ops: no such file");
	expect_resolve_error(INPUT_TOPOLOGY, "topologies/nope.json",
			     "topologies/nope.json: no such file");
}

Test(inputs_resolve, unknown_name_did_you_mean)
{
	expect_resolve_error(INPUT_TOPOLOGY, "haswel-i7",
			     "no topology named \"haswel-i7\" (did you mean \"haswell-i7\"?)");
	expect_resolve_error(INPUT_POLICY, "linux-4.55",
			     "no policy named \"linux-4.55\" (did you mean \"linux-4.5\"?)");
	/* A name that looks like a file says there is no such file, then suggests. */
	expect_resolve_error(INPUT_WORKLOAD, "munmap17.json",
			     "munmap17.json: no such file, nor a bundled workload (did you mean "
			     "\"munmap16\"?)");
}

/* Not "no workload named": the name is there, but as a directory. */
Test(inputs_resolve, directory_is_not_a_file)
{
	expect_resolve_error(INPUT_WORKLOAD, TLBSIM_TEST_DATA,
			     TLBSIM_TEST_DATA ": is a directory");
	char *cwd = g_get_current_dir();
	cr_assert_eq(g_chdir(TLBSIM_SOURCE_DIR), 0);
	/* "tests" is no bundled workload, and a directory here. */
	expect_resolve_error(INPUT_WORKLOAD, "tests",
			     "tests: is a directory (expected a workload file or a bundled name)");
	/* A bundled name wins over a directory of that name. */
	char *path = resolve_ok(INPUT_TOPOLOGY, "haswell-i7");
	cr_expect_str_eq(path, HASWELL_PATH);
	g_free(path);
	cr_assert_eq(g_chdir(cwd), 0);
	g_free(cwd);
}

Test(inputs_resolve, unknown_json_name_is_no_such_file)
{
	GError *err = NULL;
	cr_assert_null(inputs_resolve(INPUT_POLICY, "zzzzzz.json", &err));
	cr_expect(g_str_has_prefix(err->message, "zzzzzz.json: no such file, nor a bundled policy; "
						 "bundled ones: "),
		  "%s", err->message);
	g_error_free(err);
}

Test(inputs_resolve, unknown_name_lists_the_bundled_ones)
{
	GError *err = NULL;
	char *path = inputs_resolve(INPUT_POLICY, "zzzzzz", &err);
	cr_assert_null(path);
	cr_assert_not_null(err);
	cr_expect(g_str_has_prefix(err->message, "no policy named \"zzzzzz\"; bundled ones: "),
		  "%s", err->message);
	cr_expect(strstr(err->message, "linux-3.11, ") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "linux-4.5") != NULL, "%s", err->message);
	g_error_free(err);
}

/* ---- Lists ------------------------------------------------------------------- */

Test(inputs_list, bundled_names_sorted)
{
	char **topologies = inputs_list(INPUT_TOPOLOGY);
	cr_expect(has(topologies, "haswell-i7"));
	cr_expect(has(topologies, "haswell-i7-smt-thread"));
	cr_expect_not(has(topologies, "haswell-i7.json"), "names, not file names");
	expect_sorted_unique(topologies);
	g_strfreev(topologies);

	char **workloads = inputs_list(INPUT_WORKLOAD);
	cr_expect(has(workloads, "munmap16"));
	cr_expect(has(workloads, "munmap"));
	expect_sorted_unique(workloads);
	g_strfreev(workloads);

	char **policies = inputs_list(INPUT_POLICY);
	cr_expect(has(policies, "linux-4.5"));
	cr_expect(has(policies, "linux-3.11"));
	cr_expect(has(policies, "linux-4.5-smt-dedup"));
	expect_sorted_unique(policies);
	g_strfreev(policies);
}

/* ---- Loading ------------------------------------------------------------------- */

Test(inputs_load, bundled_names)
{
	struct inputs inputs;
	load_default_ok(NULL, &inputs);
	cr_expect_str_eq(inputs.paths[INPUT_TOPOLOGY], HASWELL_PATH);
	cr_expect_str_eq(inputs.paths[INPUT_WORKLOAD], MUNMAP16_PATH);
	cr_expect_str_eq(inputs.paths[INPUT_POLICY], LINUX45_PATH);
	cr_expect_str_eq(inputs.names[INPUT_TOPOLOGY], "haswell-i7");
	cr_expect_str_eq(inputs.names[INPUT_WORKLOAD], "munmap16");
	cr_expect_str_eq(inputs.names[INPUT_POLICY], "linux-4.5");
	cr_expect_eq(topology_nr_cpus(inputs.topology), 8);
	cr_expect_eq(inputs.topology->costs.invlpg, 113);
	cr_expect_eq(param(inputs.workload, "threads"), 16);
	cr_expect_eq(param(inputs.workload, "munmaps"), 4096);
	cr_expect_eq(inputs.policy->single_page_flush_ceiling, 33);
	inputs_clear(&inputs);
	cr_expect_null(inputs.topology);
	cr_expect_null(inputs.names[INPUT_POLICY]);
	inputs_clear(&inputs); /* twice is harmless */
}

Test(inputs_load, paths_and_cpus_from_the_topology)
{
	struct inputs inputs;
	GError *err = NULL;
	bool ok = load(TLBSIM_TEST_DATA "/tiny-2cpu.json", TLBSIM_TEST_DATA "/wl-all-ops.json",
		       TLBSIM_TEST_DATA "/pol-custom.json", NULL, &inputs, &err);
	cr_assert(ok, "%s", err != NULL ? err->message : "?");
	cr_expect_str_eq(inputs.paths[INPUT_WORKLOAD], TLBSIM_TEST_DATA "/wl-all-ops.json");
	cr_expect_str_eq(inputs.names[INPUT_TOPOLOGY], "tiny-2cpu");
	cr_expect_str_eq(inputs.names[INPUT_WORKLOAD], "all-ops");
	cr_expect_str_eq(inputs.names[INPUT_POLICY], "pol-custom");
	/* wl-all-ops.json: "pages": "$cpus * 2", and the machine has 2 CPUs. */
	cr_expect_eq(param(inputs.workload, "pages"), 4);
	cr_expect_eq(inputs.policy->tlb_flushall_shift, 2);
	inputs_clear(&inputs);
}

Test(inputs_load, errors_name_the_file)
{
	struct inputs inputs;
	GError *err = NULL;
	cr_assert_not(load("haswell-i7", "munmap16", "linux-4.55", NULL, &inputs, &err));
	cr_expect_str_eq(err->message, "no policy named \"linux-4.55\" (did you mean "
				       "\"linux-4.5\"?)");
	g_clear_error(&err);
	cr_expect_null(inputs.topology, "the topology loaded first is freed again");
	inputs_clear(&inputs);

	/* A workload given as the topology: refused with the file's name. */
	cr_assert_not(load(TLBSIM_TEST_DATA "/wl-all-ops.json", "munmap16", "linux-4.5", NULL,
			   &inputs, &err));
	cr_expect(g_str_has_prefix(err->message, TLBSIM_TEST_DATA "/wl-all-ops.json: $: unknown "
								  "key "),
		  "%s", err->message);
	g_clear_error(&err);
	inputs_clear(&inputs);
}

/* ---- --set ------------------------------------------------------------------------ */

Test(inputs_set, topology_cost)
{
	struct inputs plain, inputs;
	load_default_ok(NULL, &plain);
	const char *const sets[] = {"topology.costs.invlpg=200", NULL};
	load_default_ok(sets, &inputs);
	cr_expect_eq(plain.topology->costs.invlpg, 113);
	cr_expect_eq(inputs.topology->costs.invlpg, 200);
	cr_expect_eq(inputs.topology->costs.flush_all, plain.topology->costs.flush_all,
		     "nothing else changes");
	inputs_clear(&plain);
	inputs_clear(&inputs);
}

Test(inputs_set, workload_param_sugar_and_dependents)
{
	const char *const sets[] = {"workload.threads=24", NULL};
	struct inputs inputs;
	load_default_ok(sets, &inputs);
	cr_expect_eq(param(inputs.workload, "threads"), 24);
	cr_assert_eq(inputs.workload->nr_groups, 2);
	cr_expect_eq(inputs.workload->groups[1].count, 24, "\"count\": \"$threads\"");
	inputs_clear(&inputs);

	/* munmaps = $file_size / 4096 / $pages_per_munmap follows. */
	const char *const pages[] = {"workload.pages_per_munmap=8", NULL};
	load_default_ok(pages, &inputs);
	cr_expect_eq(param(inputs.workload, "munmaps"), 32768);
	cr_expect_eq(inputs.workload->regions[1].chunks, 32768);
	cr_expect_eq(inputs.workload->regions[1].chunk_bytes, 8 * 4096);
	inputs_clear(&inputs);

	/* The full path works too, and a top-level key is not taken for a param. */
	const char *const full[] = {"workload.params.threads=5", "workload.name=renamed", NULL};
	load_default_ok(full, &inputs);
	cr_expect_eq(param(inputs.workload, "threads"), 5);
	cr_expect_str_eq(inputs.workload->name, "renamed");
	cr_expect_str_eq(inputs.names[INPUT_WORKLOAD], "renamed");
	inputs_clear(&inputs);
}

Test(inputs_set, policy_knob)
{
	const char *const sets[] = {"policy.single_page_flush_ceiling=1", NULL};
	struct inputs inputs;
	load_default_ok(sets, &inputs);
	cr_expect_eq(inputs.policy->single_page_flush_ceiling, 1);
	inputs_clear(&inputs);

	const char *const targets[] = {"policy.flush_targets=smt_dedup",
				       "policy.sched.latency_ns=12000000", NULL};
	load_default_ok(targets, &inputs);
	cr_expect_eq(inputs.policy->targets, &flush_targets_smt_dedup);
	cr_expect_eq(inputs.policy->sched.latency_ns, 12000000);
	inputs_clear(&inputs);
}

Test(inputs_set, all_kinds_at_once)
{
	const char *const sets[] = {"policy.single_page_flush_ceiling=1",
				    "topology.costs.invlpg=200", "workload.threads=24", NULL};
	struct inputs inputs;
	load_default_ok(sets, &inputs);
	cr_expect_eq(inputs.topology->costs.invlpg, 200);
	cr_expect_eq(inputs.workload->groups[1].count, 24);
	cr_expect_eq(inputs.policy->single_page_flush_ceiling, 1);
	inputs_clear(&inputs);
}

Test(inputs_set, bad_kind)
{
	expect_set_error("topolgy.x=1", "--set topolgy.x=1: unknown kind \"topolgy\" (did you "
					"mean \"topology\"?) (expected topology, workload or "
					"policy)");
	expect_set_error("machine.x=1", "--set machine.x=1: unknown kind \"machine\" (expected "
					"topology, workload or policy)");
}

Test(inputs_set, malformed)
{
	expect_set_error("workload.threads",
			 "--set workload.threads: expected KIND.PATH=VALUE with KIND topology, "
			 "workload or policy (e.g. --set workload.threads=24)");
	expect_set_error("threads=24", "--set threads=24: expected KIND.PATH=VALUE with KIND "
				       "topology, workload or policy (e.g. --set "
				       "workload.threads=24)");
	expect_set_error("topology.tlbs[9].entries=1",
			 "--set topology.tlbs[9].entries=1: index 9 out of range (array has 4 "
			 "elements)");
	expect_set_error("policy.name..x=1",
			 "--set policy.name..x=1: bad path: expected a key of letters, digits, '_' "
			 "or '-' at '.x'");
}

/*
 * A value the reader refuses is blamed on its --set, in front of the file's
 * own message: the file and the JSON path still say where the value went
 * (and where the error shows, for a count computed from a parameter).
 */
Test(inputs_set, invalid_value_names_the_set)
{
	expect_set_error("workload.threads=0",
			 "--set workload.threads=0: " MUNMAP16_PATH ": $.tasks[1].count: expected "
			 "a value in [1, 65536], got 0 (from \"$threads\")");
	expect_set_error("policy.single_page_flush_ceiling=-1",
			 "--set policy.single_page_flush_ceiling=-1: " LINUX45_PATH
			 ": $.single_page_flush_ceiling: expected an integer in [0, 1048576], got "
			 "-1");
	expect_set_error("topology.costs.invlpg=-5",
			 "--set topology.costs.invlpg=-5: " HASWELL_PATH ": $.costs.invlpg.value: "
			 "expected an integer in [0, 1000000000], got -5");
	expect_set_error("policy.flush_targets=smt",
			 "--set policy.flush_targets=smt: " LINUX45_PATH ": $.flush_targets: "
			 "expected one of \"mm_cpumask\", \"smt_dedup\", \"abis\", \"numapte\", "
			 "\"directory\", got \"smt\" "
			 "(did you mean \"smt_dedup\"?)");
	expect_set_error("workload.threads=abc",
			 "--set workload.threads=abc: " MUNMAP16_PATH ": $.params.threads: column "
			 "1: expected a number, '$name' or '(' but found 'abc' in \"abc\"");
}

/* An unknown key is reported on its object, and on the option. */
Test(inputs_set, unknown_key_names_the_set)
{
	expect_set_error("policy.single_page_flush_cieling=3",
			 "--set policy.single_page_flush_cieling=3: " LINUX45_PATH
			 ": $: unknown key \"single_page_flush_cieling\" (did you mean "
			 "\"single_page_flush_ceiling\"?)");
	expect_set_error("workload.report.summry=x",
			 "--set workload.report.summry=x: " MUNMAP16_PATH ": $.report: unknown key "
			 "\"summry\" (did you mean \"summary\"?)");
	expect_set_error("topology.costs.invlgp=1",
			 "--set topology.costs.invlgp=1: " HASWELL_PATH ": $.costs: unknown key "
			 "\"invlgp\" (did you mean \"invlpg\"?)");
	expect_set_error("topology.costs.ipi_latency.sockett=5",
			 "--set topology.costs.ipi_latency.sockett=5: " HASWELL_PATH
			 ": $.costs.ipi_latency: unknown key \"sockett\" (did you mean "
			 "\"socket\"?)");
	/* A path copied from a message, with its "$.". */
	expect_set_error("topology.$.costs.invlgp=1",
			 "--set topology.$.costs.invlgp=1: " HASWELL_PATH ": $.costs: unknown key "
			 "\"invlgp\" (did you mean \"invlpg\"?)");
}

/* ---- $TLBSIM_DATADIR ---------------------------------------------------------- */

/* A temporary data folder with topologies/, workloads/ and policies/. */
struct datadir {
	char *root;
	GPtrArray *files; /* created, removed in reverse order with the folders */
};

static void datadir_add(struct datadir *d, const char *folder, const char *file,
			const char *copy_of)
{
	char *text = NULL;
	GError *err = NULL;
	cr_assert(g_file_get_contents(copy_of, &text, NULL, &err), "%s",
		  err != NULL ? err->message : "?");
	char *path = g_build_filename(d->root, folder, file, NULL);
	cr_assert(g_file_set_contents(path, text, -1, &err), "%s",
		  err != NULL ? err->message : "?");
	g_ptr_array_add(d->files, path);
	g_free(text);
}

static void datadir_init(struct datadir *d)
{
	GError *err = NULL;
	d->root = g_dir_make_tmp("tlbsim-test-inputs-XXXXXX", &err);
	cr_assert_not_null(d->root, "%s", err != NULL ? err->message : "?");
	d->files = g_ptr_array_new_with_free_func(g_free);
	for (int k = 0; k < NR_INPUT_KINDS; k++) {
		char *dir = g_build_filename(d->root, inputs_folder((enum inputs_kind)k), NULL);
		cr_assert_eq(g_mkdir(dir, 0700), 0);
		g_free(dir);
	}
	/* Same names as bundled files, other contents: which one wins shows. */
	datadir_add(d, "workloads", "munmap16.json", TLBSIM_TEST_DATA "/wl-tiny.json");
	datadir_add(d, "policies", "linux-4.5.json", TLBSIM_TEST_DATA "/pol-custom.json");
	/* New names. */
	datadir_add(d, "topologies", "aaa-tiny.json", TLBSIM_TEST_DATA "/tiny-2cpu.json");
	datadir_add(d, "workloads", "wl-all-ops.json", TLBSIM_TEST_DATA "/wl-all-ops.json");
	datadir_add(d, "workloads", "README.txt", TLBSIM_TEST_DATA "/wl-tiny.json");
	g_setenv("TLBSIM_DATADIR", d->root, TRUE);
}

static void datadir_remove(struct datadir *d)
{
	for (unsigned i = 0; i < d->files->len; i++)
		cr_expect_eq(g_remove(g_ptr_array_index(d->files, i)), 0);
	for (int k = 0; k < NR_INPUT_KINDS; k++) {
		char *dir = g_build_filename(d->root, inputs_folder((enum inputs_kind)k), NULL);
		cr_expect_eq(g_rmdir(dir), 0);
		g_free(dir);
	}
	cr_expect_eq(g_rmdir(d->root), 0);
	g_ptr_array_free(d->files, TRUE);
	g_free(d->root);
}

Test(inputs_datadir, searched_first)
{
	struct datadir d;
	datadir_init(&d);

	char *want = g_build_filename(d.root, "workloads", "munmap16.json", NULL);
	char *path = resolve_ok(INPUT_WORKLOAD, "munmap16");
	cr_expect_str_eq(path, want);
	g_free(path);
	path = resolve_ok(INPUT_WORKLOAD, "munmap16.json");
	cr_expect_str_eq(path, want);
	g_free(path);
	g_free(want);

	/* Names only in the source tree still resolve there. */
	path = resolve_ok(INPUT_WORKLOAD, "munmap");
	cr_expect_str_eq(path, TLBSIM_SOURCE_DIR "/workloads/munmap.json");
	g_free(path);
	path = resolve_ok(INPUT_TOPOLOGY, "haswell-i7");
	cr_expect_str_eq(path, HASWELL_PATH);
	g_free(path);

	/* And suggestions come from both. */
	expect_resolve_error(INPUT_TOPOLOGY, "aaa-tin",
			     "no topology named \"aaa-tin\" (did you mean \"aaa-tiny\"?)");
	datadir_remove(&d);
}

Test(inputs_datadir, load_takes_the_first_match)
{
	struct datadir d;
	datadir_init(&d);

	struct inputs inputs;
	GError *err = NULL;
	bool ok = load("aaa-tiny", "munmap16", "linux-4.5", NULL, &inputs, &err);
	cr_assert(ok, "%s", err != NULL ? err->message : "?");
	cr_expect_str_eq(inputs.names[INPUT_TOPOLOGY], "tiny-2cpu");
	cr_expect_str_eq(inputs.names[INPUT_WORKLOAD], "wl-tiny", "the DATADIR copy, not munmap16");
	cr_expect_str_eq(inputs.names[INPUT_POLICY], "pol-custom");
	cr_expect(g_str_has_prefix(inputs.paths[INPUT_WORKLOAD], d.root));
	cr_expect_eq(inputs.workload->nr_groups, 1);
	inputs_clear(&inputs);

	/* --set applies to the file found. */
	const char *const sets[] = {"workload.threads=3", NULL};
	ok = load("aaa-tiny", "munmap16", "linux-4.5", sets, &inputs, &err);
	cr_assert(ok, "%s", err != NULL ? err->message : "?");
	cr_expect_eq(inputs.workload->groups[0].count, 3);
	inputs_clear(&inputs);
	datadir_remove(&d);
}

Test(inputs_datadir, list_merges_sorted_and_deduplicated)
{
	struct datadir d;
	datadir_init(&d);

	char **workloads = inputs_list(INPUT_WORKLOAD);
	cr_expect(has(workloads, "munmap16"));
	cr_expect(has(workloads, "munmap"));
	cr_expect(has(workloads, "wl-all-ops"));
	cr_expect_not(has(workloads, "README"));
	cr_expect_not(has(workloads, "README.txt"));
	expect_sorted_unique(workloads);
	g_strfreev(workloads);

	char **topologies = inputs_list(INPUT_TOPOLOGY);
	cr_assert_not_null(topologies[0]);
	cr_expect_str_eq(topologies[0], "aaa-tiny");
	cr_expect(has(topologies, "haswell-i7"));
	expect_sorted_unique(topologies);
	g_strfreev(topologies);
	datadir_remove(&d);
}

Test(inputs_datadir, empty_or_missing_is_ignored)
{
	g_setenv("TLBSIM_DATADIR", "", TRUE);
	char *path = resolve_ok(INPUT_WORKLOAD, "munmap16");
	cr_expect_str_eq(path, MUNMAP16_PATH);
	g_free(path);

	g_setenv("TLBSIM_DATADIR", "/nonexistent/tlbsim-data", TRUE);
	path = resolve_ok(INPUT_WORKLOAD, "munmap16");
	cr_expect_str_eq(path, MUNMAP16_PATH);
	g_free(path);
	char **list = inputs_list(INPUT_POLICY);
	cr_expect(has(list, "linux-4.5"));
	g_strfreev(list);
}

Test(inputs_set, misspelt_workload_parameter_gets_a_suggestion)
{
	expect_set_error("workload.treads=3",
			 "--set workload.treads=3: the workload has no parameter or key \"treads\" "
			 "(did you mean \"threads\"?)");
}

/* The long form of a parameter is checked like the short one: a new
 * parameter would be read by nothing. */
Test(inputs_set, misspelt_parameter_in_the_long_form)
{
	expect_set_error("workload.params.threadz=3",
			 "--set workload.params.threadz=3: the workload has no parameter "
			 "\"threadz\" (did you mean \"threads\"?)");
	expect_set_error("workload.$.params.threadz=3",
			 "--set workload.$.params.threadz=3: the workload has no parameter "
			 "\"threadz\" (did you mean \"threads\"?)");
	/* The whole object may still be replaced (munmap16's, smaller). */
	const char *const sets[] = {"workload.params={\"threads\": 2, \"pages_per_munmap\": 64, "
				    "\"accessed_pages\": 512, \"file_size\": \"1M\", "
				    "\"munmaps\": \"$file_size / 4096 / $pages_per_munmap\", "
				    "\"write\": 0, \"tail_ms\": 1, \"access_cycles\": 3}",
				    NULL};
	struct inputs inputs;
	load_default_ok(sets, &inputs);
	cr_expect_eq(param(inputs.workload, "threads"), 2);
	cr_expect_eq(param(inputs.workload, "munmaps"), 4);
	inputs_clear(&inputs);
}

/* The last of several --set options is not blamed for another's mistake. */
Test(inputs_set, the_guilty_set_among_several)
{
	expect_set_error2((const char *const[]){"topology.costs.invlpg=200",
						 "topology.costs.ipi_latency.sockett=5",
						 "topology.costs.flush_all=1000",
						 "workload.threads=3", NULL},
			  "--set topology.costs.ipi_latency.sockett=5: " HASWELL_PATH
			  ": $.costs.ipi_latency: unknown key \"sockett\" (did you mean "
			  "\"socket\"?)");
	expect_set_error2((const char *const[]){"workload.threads=0", "workload.tail_ms=2",
						 NULL},
			  "--set workload.threads=0: " MUNMAP16_PATH ": $.tasks[1].count: "
			  "expected a value in [1, 65536], got 0 (from \"$threads\")");
}

/* A mistake in the file stays the file's, whatever --set options are given. */
Test(inputs_set, error_of_the_file_itself_names_the_file)
{
	char *text = NULL;
	cr_assert(g_file_get_contents(TLBSIM_TEST_DATA "/tiny-2cpu.json", &text, NULL, NULL));
	cJSON *json = cJSON_Parse(text);
	cr_assert_not_null(json);
	cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(json, "costs"), "invlgp", 1);
	char *broken_text = cJSON_Print(json);
	char *dir = g_dir_make_tmp("tlbsim-test-inputs-XXXXXX", NULL);
	cr_assert_not_null(dir);
	char *broken = g_build_filename(dir, "broken.json", NULL);
	cr_assert(g_file_set_contents(broken, broken_text, -1, NULL));

	const char *const sets[] = {"topology.costs.invlpg=5", NULL};
	struct inputs inputs;
	GError *err = NULL;
	cr_assert_not(load(broken, TLBSIM_TEST_DATA "/wl-all-ops.json", "linux-4.5", sets,
			   &inputs, &err));
	char *want = g_strconcat(broken, ": $.costs: unknown key \"invlgp\"", NULL);
	cr_expect(g_str_has_prefix(err->message, want), "%s", err->message);
	g_error_free(err);
	inputs_clear(&inputs);

	g_free(want);
	g_remove(broken);
	g_rmdir(dir);
	g_free(broken);
	g_free(dir);
	cJSON_free(broken_text);
	cJSON_Delete(json);
	g_free(text);
}

/* One setting given twice: the second would silently win, so it is refused,
 * in either spelling, as --vary refuses a key varied twice. */
Test(inputs_set, same_key_twice_is_refused)
{
	expect_set_error2((const char *const[]){"workload.threads=2", "workload.threads=3", NULL},
			  "--set workload.threads=3: \"workload.threads\" is already set by --set "
			  "workload.threads=2");
	expect_set_error2((const char *const[]){"workload.params.threads=2",
						 "topology.costs.invlpg=5", "workload.threads=3",
						 NULL},
			  "--set workload.threads=3: \"workload.threads\" is already set by --set "
			  "workload.params.threads=2");
	expect_set_error2((const char *const[]){"topology.costs.invlpg=2",
						 "topology.$.costs.invlpg=3", NULL},
			  "--set topology.$.costs.invlpg=3: \"topology.$.costs.invlpg\" is already "
			  "set by --set topology.costs.invlpg=2");
	/* Different settings, even nested ones, are not the same key. */
	GError *err = NULL;
	cr_expect(inputs_check_sets((const char *const[]){"topology.costs={\"invlpg\": 1}",
							   "topology.costs.invlpg=2",
							   "policy.costs.invlpg=2", NULL},
				    &err),
		  "%s", err ? err->message : "");
	cr_expect(inputs_check_sets(NULL, &err));
}

Test(inputs_set, key_of_a_setting)
{
	const struct {
		const char *arg, *key;
	} cases[] = {
		{"workload.threads=3", "workload.threads"},
		{"workload.params.threads=3", "workload.threads"},
		{"workload.$.params.threads=3", "workload.threads"},
		{"topology.$.costs.invlpg=3", "topology.costs.invlpg"},
		{"policy.params.x=1", "policy.params.x"},
		{"workload.params=3", "workload.params"},
		{"topology", "topology"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		const char *eq = strchr(cases[i].arg, '=');
		size_t len = eq ? (size_t)(eq - cases[i].arg) : strlen(cases[i].arg);
		char *key = inputs_set_key(cases[i].arg, len);
		cr_expect_str_eq(key, cases[i].key, "%s", cases[i].arg);
		g_free(key);
	}
}

/* ---- Keys --set can change ------------------------------------------------------- */

static char **keys_ok(const char *topology, const char *workload, const char *policy)
{
	const struct inputs_request request = {.names = {topology, workload, policy}};
	GError *err = NULL;
	char **keys = inputs_keys(&request, &err);
	cr_assert_not_null(keys, "%s", err ? err->message : "?");
	return keys;
}

Test(inputs_keys, of_the_named_inputs)
{
	char **keys = keys_ok("haswell-i7", "munmap16", NULL);
	unsigned first = 0;
	while (keys[first] && !g_str_has_prefix(keys[first], "workload."))
		first++;
	cr_expect_str_eq(keys[0], "topology.sockets", "the topology's first, in file order");
	cr_expect_str_eq(keys[first], "workload.threads", "parameters first, in the short form");
	cr_expect(has(keys, "workload.file_size"));
	cr_expect(has(keys, "workload.regions[0].size"));
	cr_expect(has(keys, "topology.caches.resident_cycles"), "a sourced number");
	cr_expect(has(keys, "policy.single_page_flush_ceiling"), "the default policy's");
	cr_expect_not(has(keys, "topology.name"));
	cr_expect_not(has(keys, "workload.description"));
	cr_expect_not(has(keys, "workload.params.threads"));
	cr_expect_not(has(keys, "topology.caches.resident_cycles.value"));
	for (char **k = keys; *k; k++)
		cr_expect_not(strstr(*k, "comment"), "%s", *k);
	g_strfreev(keys);

	keys = keys_ok(NULL, "munmap16", NULL);
	for (char **k = keys; *k; k++)
		cr_expect(g_str_has_prefix(*k, "workload."), "only the workload's: %s", *k);
	g_strfreev(keys);
}

Test(inputs_keys, refused_inputs)
{
	const char *const bad_set[] = {"workload.thraeds=2", NULL};
	const struct inputs_request requests[] = {
		{.names = {"haswell-i8", NULL, NULL}},
		{.names = {NULL, "munmap16", NULL}, .sets = bad_set},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(requests); i++) {
		GError *err = NULL;
		char **keys = inputs_keys(&requests[i], &err);
		cr_expect_null(keys);
		cr_assert_not_null(err);
		cr_expect(strstr(err->message, "did you mean"), "%s", err->message);
		g_error_free(err);
	}
}

/* The value at @key ("workload.threads", "topology.tlbs[0].ways") in @json,
 * @kind's file: a sourced number's "value". */
static const cJSON *value_at(const cJSON *json, enum inputs_kind kind, const char *key)
{
	const char *p = key + strlen(inputs_kind_name(kind)) + 1;
	char *first = g_strndup(p, strcspn(p, ".["));
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(json, "params");
	if (kind == INPUT_WORKLOAD && !cJSON_GetObjectItemCaseSensitive(json, first))
		json = params;
	g_free(first);
	while (json && *p) {
		if (*p == '[') {
			json = cJSON_GetArrayItem(json, atoi(p + 1));
			p = strchr(p, ']') + 1;
		} else {
			p += *p == '.';
			size_t len = strcspn(p, ".[");
			char *name = g_strndup(p, len);
			json = cJSON_GetObjectItemCaseSensitive(json, name);
			g_free(name);
			p += len;
		}
	}
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(json, "value");
	return cJSON_IsObject(json) && value ? value : json;
}

/* Every key listed is one --set takes: set to its own value, the inputs load. */
Test(inputs_keys, each_is_a_set_key)
{
	const char *paths[NR_INPUT_KINDS] = {HASWELL_PATH, MUNMAP16_PATH, LINUX45_PATH};
	cJSON *files[NR_INPUT_KINDS];
	for (int k = 0; k < NR_INPUT_KINDS; k++)
		files[k] = config_load_file(paths[k], NULL, NULL);
	char **keys = keys_ok("haswell-i7", "munmap16", "linux-4.5");
	unsigned n = 0;
	for (char **key = keys; *key; key++, n++) {
		const char *kind_end = strchr(*key, '.');
		const char *hint = NULL;
		int kind = inputs_key_kind(*key, (size_t)(kind_end - *key), &hint);
		cr_assert_geq(kind, 0, "%s", *key);
		const cJSON *value = value_at(files[kind], kind, *key);
		cr_assert_not_null(value, "%s is not in the file", *key);
		char *text = cJSON_PrintUnformatted(value);
		char *set = g_strconcat(*key, "=", text, NULL);
		const char *sets[] = {set, NULL};
		const struct inputs_request request = {.names = {HASWELL_PATH, MUNMAP16_PATH,
								 LINUX45_PATH},
						       .sets = sets};
		struct inputs inputs;
		GError *err = NULL;
		cr_expect(inputs_load(&request, &inputs, &err), "--set %s: %s", set,
			  err ? err->message : "");
		g_clear_error(&err);
		inputs_clear(&inputs);
		g_free(set);
		g_free(text);
	}
	cr_expect_gt(n, 100, "%u keys", n);
	g_strfreev(keys);
	for (int k = 0; k < NR_INPUT_KINDS; k++)
		cJSON_Delete(files[k]);
}

/* ---- "extends" ------------------------------------------------------------------ */

TestSuite(inputs_extends, .init = no_datadir);

/* A temporary folder of topologies written from text. */
struct scratch {
	char *root;
	GPtrArray *files;
};

static char *scratch_add(struct scratch *s, const char *name, const char *text)
{
	GError *err = NULL;
	if (!s->root) {
		s->root = g_dir_make_tmp("tlbsim-test-extends-XXXXXX", &err);
		cr_assert_not_null(s->root, "%s", err != NULL ? err->message : "?");
		s->files = g_ptr_array_new_with_free_func(g_free);
	}
	char *path = g_build_filename(s->root, name, NULL);
	cr_assert(g_file_set_contents(path, text, -1, &err), "%s", err ? err->message : "?");
	g_ptr_array_add(s->files, path);
	return g_strdup(path);
}

static void scratch_remove(struct scratch *s)
{
	for (unsigned i = 0; i < s->files->len; i++)
		cr_expect_eq(g_remove(g_ptr_array_index(s->files, i)), 0);
	cr_expect_eq(g_rmdir(s->root), 0);
	g_ptr_array_free(s->files, TRUE);
	g_free(s->root);
}

static cJSON *tree_ok(const char *path)
{
	GError *err = NULL;
	cJSON *json = inputs_load_tree(INPUT_TOPOLOGY, path, NULL, &err);
	cr_assert_not_null(json, "%s", err != NULL ? err->message : "?");
	return json;
}

/* inputs_load_tree() of @path fails with "@path: " @message. */
static void expect_tree_error(const char *path, const char *message)
{
	GError *err = NULL;
	cJSON *json = inputs_load_tree(INPUT_TOPOLOGY, path, NULL, &err);
	cr_assert_null(json, "%s loaded", path);
	char *want = g_strdup_printf("%s: %s", path, message);
	cr_expect_str_eq(err->message, want);
	g_free(want);
	g_error_free(err);
}

static double number_at(const cJSON *json, const char *a, const char *b, const char *c)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(json, a);
	if (b)
		n = cJSON_GetObjectItemCaseSensitive(n, b);
	if (c)
		n = cJSON_GetObjectItemCaseSensitive(n, c);
	if (cJSON_IsObject(n))
		n = cJSON_GetObjectItemCaseSensitive(n, "value");
	cr_assert(cJSON_IsNumber(n), "no number at %s.%s.%s", a, b ? b : "", c ? c : "");
	return n->valuedouble;
}

/*
 * The conversion of haswell-i7-smt-thread to "extends" changed nothing: its
 * merged tree is haswell-i7's but for the keys it gives itself.
 */
Test(inputs_extends, smt_thread_is_haswell_but_for_its_own_keys)
{
	cJSON *thread =
	    tree_ok(TLBSIM_SOURCE_DIR "/topologies/haswell-i7-smt-thread.json");
	GError *err = NULL;
	cJSON *haswell = config_load_file(HASWELL_PATH, NULL, &err);
	cr_assert_not_null(haswell);
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(thread, "extends"));
	static const char *const own[] = {"name", "description", "comment", "$schema",
					  "smt_invalidation"};
	for (unsigned i = 0; i < G_N_ELEMENTS(own); i++) {
		cJSON_DeleteItemFromObjectCaseSensitive(thread, own[i]);
		cJSON_DeleteItemFromObjectCaseSensitive(haswell, own[i]);
	}
	cr_expect(cJSON_Compare(thread, haswell, true));
	cJSON_Delete(thread);
	cJSON_Delete(haswell);

	struct inputs in;
	cr_assert(load("haswell-i7-smt-thread", "munmap16", "linux-4.5", NULL, &in, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(in.names[INPUT_TOPOLOGY], "haswell-i7-smt-thread");
	cr_expect_eq(in.topology->smt_invalidation, SMT_INVALIDATE_THREAD);
	cr_expect(strstr(in.topology->description, "SDM") != NULL);
	inputs_clear(&in);
}

/* Objects merge key by key; numbers with a source, scalars and arrays replace whole. */
Test(inputs_extends, objects_merge_values_replace)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "m.json",
				 "{\"name\": \"m\", \"extends\": \"haswell-i7\", \"sockets\": 2,"
				 " \"costs\": {\"ipi_latency\": {\"smt\": {\"value\": 999}}},"
				 " \"caches\": {\"levels\": []}}");
	cJSON *json = tree_ok(path);
	cr_expect_eq(number_at(json, "sockets", NULL, NULL), 2);
	cr_expect_eq(number_at(json, "costs", "ipi_latency", "smt"), 999);
	const cJSON *smt = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(json, "costs"),
					     "ipi_latency"),
	    "smt");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(smt, "source"),
		       "the base's source stayed on a new value");
	cr_expect_eq(number_at(json, "costs", "ipi_latency", "socket"), 1500);
	cr_expect_eq(number_at(json, "costs", "invlpg", NULL), 113);
	cr_expect_eq(number_at(json, "caches", "line_bytes", NULL), 64);
	const cJSON *levels = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(json, "caches"), "levels");
	cr_expect_eq(cJSON_GetArraySize(levels), 0, "an array replaces the base's whole");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(json, "description"),
		       "the base's description is its own");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(json, "extends"));
	cJSON_Delete(json);
	g_free(path);
	scratch_remove(&s);
}

Test(inputs_extends, key_the_base_lacks_is_refused)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "m.json",
				 "{\"name\": \"m\", \"extends\": \"haswell-i7\","
				 " \"costs\": {\"invlgp\": 1}}");
	expect_tree_error(path, "$.costs: the base \"haswell-i7\" has no key \"invlgp\" (did "
				"you mean \"invlpg\"?)");
	g_free(path);
	scratch_remove(&s);
}

Test(inputs_extends, unknown_base_gets_a_suggestion)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "m.json", "{\"name\": \"m\", \"extends\": \"haswell-i8\"}");
	expect_tree_error(
	    path, "$.extends: no topology named \"haswell-i8\" (did you mean \"haswell-i7\"?)");
	g_free(path);
	scratch_remove(&s);
}

/* A chain through a path relative to the extending file, then --set on the merge. */
Test(inputs_extends, chain_by_path_then_set)
{
	struct scratch s = {0};
	char *b = scratch_add(&s, "b.json",
			      "{\"name\": \"b\", \"extends\": \"haswell-i7\", \"sockets\": 2,"
			      " \"description\": \"two sockets\"}");
	char *a = scratch_add(&s, "a.json",
			      "{\"name\": \"a\", \"extends\": \"b.json\", \"cores_per_socket\": 8,"
			      " \"description\": \"two sockets of eight\"}");
	struct inputs in;
	GError *err = NULL;
	cr_assert(load(a, "munmap16", "linux-4.5", NULL, &in, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(in.names[INPUT_TOPOLOGY], "a");
	cr_expect_eq(in.topology->sockets, 2);
	cr_expect_eq(in.topology->cores_per_socket, 8);
	cr_expect_eq(in.topology->threads_per_core, 2);
	inputs_clear(&in);
	const char *const sets[] = {"topology.sockets=3", NULL};
	cr_assert(load(a, "munmap16", "linux-4.5", sets, &in, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(in.topology->sockets, 3, "--set applies after the merge");
	inputs_clear(&in);
	g_free(a);
	g_free(b);
	scratch_remove(&s);
}

Test(inputs_extends, cycle_is_refused)
{
	struct scratch s = {0};
	char *a = scratch_add(&s, "a.json", "{\"name\": \"a\", \"extends\": \"b.json\"}");
	char *b = scratch_add(&s, "b.json", "{\"name\": \"b\", \"extends\": \"a.json\"}");
	GError *err = NULL;
	cr_assert_null(inputs_load_tree(INPUT_TOPOLOGY, a, NULL, &err));
	cr_expect(g_str_has_prefix(err->message, a), "%s", err->message);
	cr_expect(strstr(err->message, "$.extends: a cycle of bases: ") != NULL, "%s",
		  err->message);
	g_error_free(err);
	g_free(a);
	g_free(b);
	scratch_remove(&s);
}

Test(inputs_extends, extends_must_be_a_name)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "m.json", "{\"name\": \"m\", \"extends\": 3}");
	expect_tree_error(path, "$.extends: expected the name or path of a base topology");
	g_free(path);
	scratch_remove(&s);
}

/* A value from the base that the reader refuses is reported on the extending file. */
Test(inputs_extends, reader_errors_name_the_extending_file)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "m.json",
				 "{\"name\": \"m\", \"extends\": \"haswell-i7\","
				 " \"description\": \"one\", \"threads_per_core\": 0}");
	struct inputs in;
	GError *err = NULL;
	cr_assert_not(load(path, "munmap16", "linux-4.5", NULL, &in, &err));
	cr_expect(g_str_has_prefix(err->message, path), "%s", err->message);
	cr_expect(strstr(err->message, "$.threads_per_core") != NULL, "%s", err->message);
	g_error_free(err);
	g_free(path);
	scratch_remove(&s);
}

/* Policies extend the same way: linux-4.19 without PCIDs in three lines. */
Test(inputs_extends, policy_extends_a_bundled_preset)
{
	struct scratch s = {0};
	char *path = scratch_add(&s, "p.json",
				 "{\"name\": \"no-pcid\", \"extends\": \"linux-4.19\","
				 " \"description\": \"4.19 without PCIDs\", \"pcid\": false}");
	GError *err = NULL;
	cJSON *json = inputs_load_tree(INPUT_POLICY, path, NULL, &err);
	cr_assert_not_null(json, "%s", err ? err->message : "?");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(json, "pcid")));
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(json, "lazy_tlb")->valuestring, "pcid");
	cJSON_Delete(json);
	struct inputs in;
	cr_assert(load("haswell-i7", "munmap16", path, NULL, &in, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(in.names[INPUT_POLICY], "no-pcid");
	inputs_clear(&in);
	g_free(path);
	scratch_remove(&s);
}

/* tlbsim-native's load: the workload alone, $cpus the machine's given count,
 * its --set applied and blamed as inputs_load() does. */
Test(inputs_load_workload, without_a_topology)
{
	const char *const sets[] = {"workload.threads=3", NULL};
	struct inputs_request request = {.names = {[INPUT_WORKLOAD] = "tlb_flush2"},
					 .sets = sets};
	struct inputs inputs;
	GError *err = NULL;
	cr_assert(inputs_load_workload(&request, 5, &inputs, &err), "%s", err ? err->message : "");
	cr_expect_null(inputs.topology);
	cr_expect_str_eq(inputs.names[INPUT_WORKLOAD], "tlb_flush2");
	cr_expect_eq(inputs.workload->groups[0].count, 3);
	inputs_clear(&inputs);

	/* threads defaults to $cpus: the count given. */
	request.sets = NULL;
	cr_assert(inputs_load_workload(&request, 5, &inputs, &err));
	cr_expect_eq(inputs.workload->groups[0].count, 5);
	inputs_clear(&inputs);

	const char *const bad[] = {"workload.pages=0", NULL};
	request.sets = bad;
	cr_assert_not(inputs_load_workload(&request, 5, &inputs, &err));
	cr_expect(g_str_has_prefix(err->message, "--set workload.pages=0: "), "%s", err->message);
	g_error_free(err);
}
