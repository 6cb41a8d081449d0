/*
 * Tests of src/cli/sweep.c: --vary parsing and its errors, grid order (first axis
 * outermost), the single run each grid point stands for (its --set, labels
 * and file names), the emitted command's arguments, and running small grids
 * in process: rows in grid order whatever the number of threads, errors that
 * name the grid point, budgets and interruption.
 *
 * The in-process sweeps use tests/data/tiny-2cpu.json and e2e-small.json with
 * a few munmaps, so that a grid of several runs takes milliseconds.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "tlbsim/cli/report.h"
#include "tlbsim/cli/sweep.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/error.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define TINY TLBSIM_TEST_DATA "/tiny-2cpu.json"
#define SMALL TLBSIM_TEST_DATA "/e2e-small.json"
#define LINUX45_PATH TLBSIM_SOURCE_DIR "/policies/linux-4.5.json"

static void no_datadir(void)
{
	g_unsetenv("TLBSIM_DATADIR");
}

TestSuite(sweep_vary, .init = no_datadir);
TestSuite(sweep_grid, .init = no_datadir);
TestSuite(sweep_point, .init = no_datadir);
TestSuite(sweep_command, .init = no_datadir);
TestSuite(sweep_run, .init = no_datadir);

/* ---- Helpers ---------------------------------------------------------------- */

/* A grid of the NULL-terminated --vary arguments, which must parse. */
static struct sweep_grid *grid_of(const char *const *varies)
{
	struct sweep_grid *grid = sweep_grid_new();
	for (const char *const *v = varies; *v; v++) {
		GError *error = NULL;
		cr_assert(sweep_grid_add(grid, *v, &error), "--vary %s: %s", *v,
			  error ? error->message : "?");
	}
	return grid;
}

/* The second of @varies fails with TLBSIM_ERROR_INVALID and a message that
 * contains @want; the grid keeps only the first axis. */
static void expect_vary_error(const char *first, const char *arg, const char *want)
{
	struct sweep_grid *grid = grid_of((const char *const[]){first, NULL});
	GError *error = NULL;
	cr_assert_not(sweep_grid_add(grid, arg, &error), "--vary %s was accepted", arg);
	cr_assert_not_null(error);
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
	cr_expect(strstr(error->message, want) != NULL, "\"%s\" lacks \"%s\"", error->message,
		  want);
	cr_expect_eq(sweep_grid_nr_axes(grid), 1);
	g_error_free(error);
	sweep_grid_free(grid);
}

static void expect_values(const struct sweep_axis *axis, const char *const *want)
{
	cr_assert_eq(axis->nr_values, g_strv_length((char **)want));
	for (unsigned i = 0; want[i]; i++)
		cr_expect_str_eq(axis->values[i], want[i]);
	cr_expect_null(axis->values[axis->nr_values]);
}

/* A config for tiny-2cpu, e2e-small and linux-4.5 (NULL where @grid varies
 * the file), with the default budgets. */
static struct sweep_config config_for(const char *const *sets)
{
	return (struct sweep_config){
		.names = {TINY, SMALL, "linux-4.5"},
		.sets = sets,
		.seed = 1,
		.run_ahead = true,
		.max_events = SIM_DEFAULT_MAX_EVENTS,
		.max_sim_ns = SIM_DEFAULT_MAX_SIM_NS,
	};
}

/* e2e-small with 16 munmaps of 8 pages (a 512 KiB file): a run of ~1 ms. */
static const char *const small_sets[] = {"workload.file_size=512K", NULL};

/* ---- --vary parsing ------------------------------------------------------------ */

Test(sweep_vary, key_and_values)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1,2,4", NULL});
	cr_assert_eq(sweep_grid_nr_axes(grid), 1);
	const struct sweep_axis *axis = sweep_grid_axis(grid, 0);
	cr_expect_str_eq(axis->key, "workload.threads");
	cr_expect_str_eq(axis->column, "workload.threads");
	cr_expect_eq(axis->file_kind, -1);
	expect_values(axis, (const char *const[]){"1", "2", "4", NULL});
	cr_expect_eq(sweep_grid_size(grid), 3);
	sweep_grid_free(grid);
}

Test(sweep_vary, one_value_is_an_axis_of_one)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"topology.costs.invlpg=50", NULL});
	expect_values(sweep_grid_axis(grid, 0), (const char *const[]){"50", NULL});
	cr_expect_eq(sweep_grid_size(grid), 1);
	sweep_grid_free(grid);
}

Test(sweep_vary, values_keep_their_own_equals_signs)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.report.summary=a=b,c", NULL});
	expect_values(sweep_grid_axis(grid, 0), (const char *const[]){"a=b", "c", NULL});
	sweep_grid_free(grid);
}

/* Commas inside JSON arrays, objects and strings do not split values. */
Test(sweep_vary, json_values_keep_their_commas)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"topology.tlbs[0].page_sizes=[\"4K\",\"2M\"],[\"4K\"]",
		"workload.report.summary=\"x, y\",z",
		"topology.costs.ipi_latency={\"smt\":1,\"socket\":2,\"remote\":3},{\"smt\":4,\"socket\":5,\"remote\":6}",
		NULL});
	expect_values(sweep_grid_axis(grid, 0),
		      (const char *const[]){"[\"4K\",\"2M\"]", "[\"4K\"]", NULL});
	expect_values(sweep_grid_axis(grid, 1), (const char *const[]){"\"x, y\"", "z", NULL});
	expect_values(sweep_grid_axis(grid, 2),
		      (const char *const[]){"{\"smt\":1,\"socket\":2,\"remote\":3}",
					    "{\"smt\":4,\"socket\":5,\"remote\":6}", NULL});
	sweep_grid_free(grid);
}

/* A quote escaped inside a JSON string does not end it. */
Test(sweep_vary, escaped_quote_inside_a_string)
{
	struct sweep_grid *grid =
		grid_of((const char *const[]){"workload.report.summary=\"a\\\",b\",c", NULL});
	expect_values(sweep_grid_axis(grid, 0), (const char *const[]){"\"a\\\",b\"", "c", NULL});
	sweep_grid_free(grid);
}

Test(sweep_vary, file_axes)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"policy=linux-4.5,linux-3.11", "topology=a.json,b.json", "workload=w", NULL});
	const struct sweep_axis *policy = sweep_grid_axis(grid, 0);
	cr_expect_str_eq(policy->key, "policy");
	cr_expect_str_eq(policy->column, "policy_file");
	cr_expect_eq(policy->file_kind, INPUT_POLICY);
	cr_expect_eq(sweep_grid_axis(grid, 1)->file_kind, INPUT_TOPOLOGY);
	cr_expect_str_eq(sweep_grid_axis(grid, 1)->column, "topology_file");
	cr_expect_eq(sweep_grid_axis(grid, 2)->file_kind, INPUT_WORKLOAD);
	cr_expect_eq(sweep_grid_size(grid), 4);
	sweep_grid_free(grid);
}

Test(sweep_vary, no_equals_sign)
{
	expect_vary_error("workload.threads=1", "workload.tail_ms", "expected KEY=V1,V2,...");
}

Test(sweep_vary, empty_key)
{
	expect_vary_error("workload.threads=1", "=1,2", "expected KEY=V1,V2,...");
}

Test(sweep_vary, empty_list)
{
	expect_vary_error("workload.threads=1", "workload.tail_ms=", "the list of values is empty");
}

Test(sweep_vary, empty_value)
{
	expect_vary_error("workload.threads=1", "workload.tail_ms=1,,2",
			  "value 2 of the list is empty");
	expect_vary_error("workload.threads=1", "workload.tail_ms=1,", "value 2 of the list is empty");
	expect_vary_error("workload.threads=1", "workload.tail_ms=,1", "value 1 of the list is empty");
}

Test(sweep_vary, repeated_value)
{
	expect_vary_error("workload.threads=1", "workload.tail_ms=1,2,1",
			  "value \"1\" is given twice");
}

Test(sweep_vary, unknown_kind_suggests)
{
	expect_vary_error("workload.threads=1", "wokload.tail_ms=1,2",
			  "unknown key \"wokload.tail_ms\" (did you mean \"workload\"?)");
	expect_vary_error("workload.threads=1", "polcy=a,b",
			  "unknown key \"polcy\" (did you mean \"policy\"?)");
	expect_vary_error("workload.threads=1", "sede=1,2",
			  "unknown key \"sede\" (did you mean \"seed\"?)");
	expect_vary_error("workload.threads=1", "seed.x=1,2", "unknown key \"seed.x\"");
}

/* ---- Ranges and seeds ----------------------------------------------------------- */

Test(sweep_vary, ranges_expand_in_a_list)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"workload.threads=1,2,4..6", "policy.tlb_flushall_shift=-1..1", "topology.x=7..7",
		NULL});
	expect_values(sweep_grid_axis(grid, 0),
		      (const char *const[]){"1", "2", "4", "5", "6", NULL});
	expect_values(sweep_grid_axis(grid, 1), (const char *const[]){"-1", "0", "1", NULL});
	expect_values(sweep_grid_axis(grid, 2), (const char *const[]){"7", NULL});
	cr_expect_eq(sweep_grid_size(grid), 15);
	sweep_grid_free(grid);
}

/* Only a value that starts like a number is a range: paths and words are not. */
Test(sweep_vary, dots_that_are_not_ranges)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"topology=../a.json,1..b.json", "workload.report.summary=a..b,\"1..2\"", NULL});
	expect_values(sweep_grid_axis(grid, 0),
		      (const char *const[]){"../a.json", "1..b.json", NULL});
	expect_values(sweep_grid_axis(grid, 1), (const char *const[]){"a..b", "\"1..2\"", NULL});
	sweep_grid_free(grid);
}

Test(sweep_vary, range_errors)
{
	expect_vary_error("workload.threads=1", "workload.tail_ms=5..3",
			  "range \"5..3\" is empty (its end is below its start; write 3..5)");
	expect_vary_error("workload.threads=1", "workload.tail_ms=1.5..3",
			  "range \"1.5..3\": \"1.5\" is not a decimal integer");
	expect_vary_error("workload.threads=1", "workload.tail_ms=1..x",
			  "range \"1..x\": \"x\" is not a decimal integer");
	expect_vary_error("workload.threads=1", "workload.tail_ms=1..",
			  "range \"1..\": \"\" is not a decimal integer");
	expect_vary_error("workload.threads=1", "workload.tail_ms=0..100000",
			  "has more values than a sweep may have runs (100000)");
	expect_vary_error("workload.threads=1",
			  "workload.tail_ms=-9223372036854775808..9223372036854775807",
			  "has more values than a sweep may have runs (100000)");
	expect_vary_error("workload.threads=1", "workload.tail_ms=3,1..4",
			  "value \"3\" is given twice");
}

/* The grid's own limit counts the expanded values. */
Test(sweep_vary, ranges_count_towards_the_grid_limit)
{
	expect_vary_error("workload.threads=1..1000", "seed=1..101",
			  "the grid would have more than 100000 points");
}

Test(sweep_vary, seed_axis)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"seed=3,007,1..2", NULL});
	const struct sweep_axis *axis = sweep_grid_axis(grid, 0);
	cr_expect(axis->seed);
	cr_expect_eq(axis->file_kind, -1);
	/* Canonical: "007" is seed 7. */
	expect_values(axis, (const char *const[]){"3", "7", "1", "2", NULL});
	sweep_grid_free(grid);
}

Test(sweep_vary, seed_errors)
{
	expect_vary_error("workload.threads=1", "seed=1,x",
			  "seed \"x\" is not a non-negative decimal integer");
	expect_vary_error("workload.threads=1", "seed=-1..1",
			  "seed \"-1\" is not a non-negative decimal integer");
	expect_vary_error("workload.threads=1", "seed=9223372036854775808",
			  "seed \"9223372036854775808\" is not");
	expect_vary_error("workload.threads=1", "seed=1,01", "value \"1\" is given twice");
	expect_vary_error("seed=1", "seed=2", "\"seed\" is already varied by --vary seed");
}

Test(sweep_vary, replicates_are_an_innermost_seed_axis)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1,2", NULL});
	GError *error = NULL;
	cr_assert(sweep_grid_add_replicates(grid, 5, 3, &error), "%s", error ? error->message : "");
	cr_assert_eq(sweep_grid_nr_axes(grid), 2);
	const struct sweep_axis *axis = sweep_grid_axis(grid, 1);
	cr_expect(axis->seed);
	cr_expect_str_eq(axis->key, "seed");
	expect_values(axis, (const char *const[]){"5", "6", "7", NULL});
	cr_expect_eq(sweep_grid_size(grid), 6);
	sweep_grid_free(grid);
}

Test(sweep_vary, replicates_errors)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"seed=1,2", NULL});
	GError *error = NULL;
	cr_expect_not(sweep_grid_add_replicates(grid, 1, 3, &error));
	cr_expect(error && strstr(error->message, "--replicates and --vary seed both give the "
						  "seeds") != NULL,
		  "%s", error ? error->message : "");
	g_clear_error(&error);
	sweep_grid_free(grid);

	grid = grid_of((const char *const[]){NULL});
	cr_expect_not(sweep_grid_add_replicates(grid, G_MAXINT64, 2, &error));
	cr_expect(error && strstr(error->message, "--replicates 2: expected 1 to 100000 runs") !=
				   NULL,
		  "%s", error ? error->message : "");
	g_clear_error(&error);
	cr_expect(sweep_grid_add_replicates(grid, G_MAXINT64, 1, &error));
	sweep_grid_free(grid);
}

Test(sweep_vary, kind_without_path)
{
	expect_vary_error("workload.threads=1", "workload.=1,2", "has no path after the kind");
}

Test(sweep_vary, duplicate_key)
{
	expect_vary_error("workload.threads=1,2", "workload.threads=4",
			  "\"workload.threads\" is already varied by --vary workload.threads");
	expect_vary_error("policy=a,b", "policy=c", "already varied");
}

/* "workload.params.X" and "workload.X" name one parameter (inputs.c). */
Test(sweep_vary, duplicate_key_in_its_other_spelling)
{
	expect_vary_error("workload.threads=1,2", "workload.params.threads=4",
			  "already varied by --vary workload.threads");
	expect_vary_error("workload.params.threads=1,2", "workload.threads=4",
			  "already varied by --vary workload.params.threads");
}

Test(sweep_vary, too_many_points)
{
	/* 1000 values: the second such axis makes 10^6 > SWEEP_MAX_RUNS. */
	GString *arg = g_string_new("workload.tail_ms=");
	for (int i = 0; i < 1000; i++)
		g_string_append_printf(arg, "%s%d", i ? "," : "", i);
	char *second = g_strdup(arg->str);
	second[strlen("workload.")] = 'T'; /* workload.Tail_ms: another key */
	struct sweep_grid *grid = grid_of((const char *const[]){arg->str, NULL});
	GError *error = NULL;
	cr_assert_not(sweep_grid_add(grid, second, &error));
	cr_expect(strstr(error->message, "more than 100000 points") != NULL, "%s", error->message);
	cr_expect_eq(sweep_grid_size(grid), 1000);
	g_error_free(error);
	sweep_grid_free(grid);
	g_free(second);
	g_string_free(arg, TRUE);
}

/* ---- Grid order and checks ---------------------------------------------------- */

/* Nested loops in the order of the options: the last axis moves fastest. */
Test(sweep_grid, first_axis_outermost)
{
	struct sweep_grid *grid = grid_of(
		(const char *const[]){"workload.a=1,2,3", "workload.b=x,y", "policy=p,q", NULL});
	cr_assert_eq(sweep_grid_size(grid), 12);
	unsigned i = 0;
	for (unsigned a = 0; a < 3; a++)
		for (unsigned b = 0; b < 2; b++)
			for (unsigned p = 0; p < 2; p++, i++) {
				unsigned got[3];
				sweep_grid_point(grid, i, got);
				cr_expect(got[0] == a && got[1] == b && got[2] == p,
					  "point %u is (%u,%u,%u), expected (%u,%u,%u)", i, got[0],
					  got[1], got[2], a, b, p);
			}
	sweep_grid_free(grid);
}

static void expect_check_error(const char *const *varies, struct sweep_config config,
			       const char *want)
{
	struct sweep_grid *grid = grid_of(varies);
	GError *error = NULL;
	cr_assert_not(sweep_check(grid, &config, &error), "accepted");
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
	cr_expect(strstr(error->message, want) != NULL, "\"%s\" lacks \"%s\"", error->message,
		  want);
	g_error_free(error);
	sweep_grid_free(grid);
}

Test(sweep_grid, check_accepts_a_plain_grid)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1,2", NULL});
	struct sweep_config config = config_for(small_sets);
	GError *error = NULL;
	cr_expect(sweep_check(grid, &config, &error), "%s", error ? error->message : "");
	sweep_grid_free(grid);
}

Test(sweep_grid, check_needs_an_axis)
{
	expect_check_error((const char *const[]){NULL}, config_for(NULL),
			   "a sweep needs at least one --vary");
}

Test(sweep_grid, check_seed_given_and_varied)
{
	struct sweep_config config = config_for(NULL);
	config.seed_given = true;
	expect_check_error((const char *const[]){"seed=1..3", NULL}, config,
			   "--seed and --vary seed=... both given");
}

Test(sweep_grid, check_file_named_and_varied)
{
	expect_check_error((const char *const[]){"policy=linux-4.5,linux-3.11", NULL},
			   config_for(NULL), "--policy and --vary policy=... both given");
}

Test(sweep_grid, check_file_neither_named_nor_varied)
{
	struct sweep_config config = config_for(NULL);
	config.names[INPUT_TOPOLOGY] = NULL;
	expect_check_error((const char *const[]){"workload.threads=1,2", NULL}, config,
			   "--topology is required (or --vary topology=A,B,...)");
}

Test(sweep_grid, check_set_of_a_varied_key)
{
	expect_check_error((const char *const[]){"workload.threads=1,2", NULL},
			   config_for((const char *const[]){"workload.params.threads=3", NULL}),
			   "--set workload.params.threads=3: \"workload.threads\" is also varied");
}

/* ---- Grid points -------------------------------------------------------------- */

Test(sweep_point, sets_labels_and_names)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"workload.threads=1,2", "policy=linux-4.5,linux-3.11", "topology.costs.invlpg=50,60",
		NULL});
	struct sweep_config config = config_for(small_sets);
	config.names[INPUT_POLICY] = NULL;
	struct sweep_point p;
	sweep_point_init(&p, grid, &config, 6); /* (1, 1, 0): threads=2, linux-3.11, 50 */
	cr_expect_eq(p.index, 6);
	cr_expect_str_eq(p.names[INPUT_TOPOLOGY], TINY);
	cr_expect_str_eq(p.names[INPUT_WORKLOAD], SMALL);
	cr_expect_str_eq(p.names[INPUT_POLICY], "linux-3.11");
	char *sets = g_strjoinv(" ", p.sets);
	cr_expect_str_eq(sets, "workload.file_size=512K workload.threads=2 topology.costs.invlpg=50");
	char *names = g_strjoinv(",", p.label_names);
	cr_expect_str_eq(names, "run,workload.threads,policy_file,topology.costs.invlpg");
	char *values = g_strjoinv(",", p.label_values);
	cr_expect_str_eq(values, "7,2,linux-3.11,50");
	char *where = sweep_point_describe(&p, grid);
	cr_expect_str_eq(where,
			 "run 7 of 8 (workload.threads=2, policy=linux-3.11, topology.costs.invlpg=50)");
	g_free(where);
	g_free(values);
	g_free(names);
	g_free(sets);
	sweep_point_clear(&p);
	sweep_grid_free(grid);
}

/* The leading column names are what report_check_label() accepts. */
Test(sweep_point, label_names_are_valid_columns)
{
	struct sweep_grid *grid = grid_of((const char *const[]){
		"workload.threads=1", "policy=linux-4.5", "topology=" TINY, "workload=" SMALL, NULL});
	struct sweep_config config = config_for(NULL);
	config.names[INPUT_TOPOLOGY] = config.names[INPUT_WORKLOAD] =
		config.names[INPUT_POLICY] = NULL;
	struct sweep_point p;
	sweep_point_init(&p, grid, &config, 0);
	for (char **n = p.label_names; *n; n++) {
		GError *error = NULL;
		cr_expect(report_check_label(*n, &error), "%s", error ? error->message : "");
		g_clear_error(&error);
	}
	sweep_point_clear(&p);
	sweep_grid_free(grid);
}

/* The seed axis sets the point's seed; the row's own seed column shows it,
 * so it has no leading column. */
Test(sweep_point, seed_axis_sets_the_seed_not_a_label)
{
	struct sweep_grid *grid =
		grid_of((const char *const[]){"workload.threads=1,2", "seed=4..6", NULL});
	struct sweep_config config = config_for(NULL);
	config.seed = 99;
	struct sweep_point p;
	sweep_point_init(&p, grid, &config, 4); /* (1, 1): threads=2, seed 5 */
	cr_expect_eq(p.seed, 5);
	char *names = g_strjoinv(",", p.label_names);
	cr_expect_str_eq(names, "run,workload.threads");
	char *values = g_strjoinv(",", p.label_values);
	cr_expect_str_eq(values, "5,2");
	char *sets = g_strjoinv(" ", p.sets);
	cr_expect_str_eq(sets, "workload.threads=2");
	char *where = sweep_point_describe(&p, grid);
	cr_expect_str_eq(where, "run 5 of 6 (workload.threads=2, seed=5)");
	g_free(where);
	g_free(sets);
	g_free(values);
	g_free(names);
	sweep_point_clear(&p);
	sweep_point_init(&p, grid, &config, 0);
	cr_expect_eq(p.seed, 4);
	sweep_point_clear(&p);
	sweep_grid_free(grid);

	/* Without a seed axis, every point has the config's seed. */
	grid = grid_of((const char *const[]){"workload.threads=1,2", NULL});
	sweep_point_init(&p, grid, &config, 1);
	cr_expect_eq(p.seed, 99);
	sweep_point_clear(&p);
	sweep_grid_free(grid);
}

/* ---- Emitted commands --------------------------------------------------------- */

Test(sweep_command, seed_of_the_point)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"seed=10..11", NULL});
	struct sweep_config config = config_for(NULL);
	char **argv = sweep_command(grid, &config, 1, NULL);
	cr_assert_not_null(argv);
	char *line = g_strjoinv(" ", argv);
	cr_expect(strstr(line, " --seed 11 ") != NULL, "%s", line);
	cr_expect(g_str_has_suffix(line, " --label run=2"), "%s", line);
	g_free(line);
	g_strfreev(argv);
	sweep_grid_free(grid);
}

Test(sweep_command, arguments_of_a_point)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1,2", NULL});
	struct sweep_config config = config_for(small_sets);
	config.seed = 7;
	GError *error = NULL;
	char **argv = sweep_command(grid, &config, 1, &error);
	cr_assert_not_null(argv, "%s", error ? error->message : "");
	char *line = g_strjoinv(" ", argv);
	cr_expect_str_eq(line, "--topology " TINY " --workload " SMALL " --policy " LINUX45_PATH
			       " --seed 7 --set workload.file_size=512K --set workload.threads=2"
			       " --label run=2 --label workload.threads=2");
	g_free(line);
	g_strfreev(argv);
	sweep_grid_free(grid);
}

Test(sweep_command, budgets_and_flags_when_not_the_defaults)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1", NULL});
	struct sweep_config config = config_for(NULL);
	config.max_events = 1000;
	config.max_sim_ns = 0;
	config.max_wall_seconds = 2.5;
	config.run_ahead = false;
	config.host_time = true;
	char **argv = sweep_command(grid, &config, 0, NULL);
	cr_assert_not_null(argv);
	char *line = g_strjoinv(" ", argv);
	cr_expect(strstr(line, " --max-events 1000 --max-sim-ns 0 --max-wall-seconds 2.5"
			       " --no-run-ahead --host-time ") != NULL,
		  "%s", line);
	g_free(line);
	g_strfreev(argv);
	sweep_grid_free(grid);
}

/* Relative paths become absolute: the command runs from any directory. */
Test(sweep_command, paths_are_absolute)
{
	cr_assert_eq(g_chdir(TLBSIM_TEST_DATA), 0);
	struct sweep_grid *grid =
		grid_of((const char *const[]){"topology=tiny-2cpu.json,tiny-smt.json", NULL});
	struct sweep_config config = config_for(NULL);
	config.names[INPUT_TOPOLOGY] = NULL;
	char **argv = sweep_command(grid, &config, 1, NULL);
	cr_assert_not_null(argv);
	cr_expect_str_eq(argv[0], "--topology");
	cr_expect_str_eq(argv[1], TLBSIM_TEST_DATA "/tiny-smt.json");
	/* The label keeps the value as given, as the in-process sweep's row does. */
	char *line = g_strjoinv(" ", argv);
	cr_expect(g_str_has_suffix(line, "--label run=2 --label topology_file=tiny-smt.json"),
		  "%s", line);
	g_free(line);
	g_strfreev(argv);
	sweep_grid_free(grid);
}

Test(sweep_command, unknown_file_names_its_point)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"policy=linux-4.5,linux-9.9", NULL});
	struct sweep_config config = config_for(NULL);
	config.names[INPUT_POLICY] = NULL;
	GError *error = NULL;
	cr_assert_null(sweep_command(grid, &config, 1, &error));
	cr_expect(g_str_has_prefix(error->message, "run 2 of 2 (policy=linux-9.9): no policy named"),
		  "%s", error->message);
	g_error_free(error);
	sweep_grid_free(grid);
}

/* ---- Running in process ------------------------------------------------------- */

struct outcome {
	bool ok;
	GString *rows;
	struct sweep_stats stats;
	GError *error;
};

static struct outcome run_grid(const char *const *varies, const char *const *sets,
			       unsigned jobs, const atomic_int *interrupt)
{
	struct sweep_grid *grid = grid_of(varies);
	struct sweep_config config = config_for(sets);
	struct outcome o = {.rows = g_string_new(NULL)};
	o.ok = sweep_run(grid, &config, jobs, interrupt, NULL, o.rows, &o.stats, &o.error);
	sweep_grid_free(grid);
	return o;
}

static void outcome_clear(struct outcome *o)
{
	g_string_free(o->rows, TRUE);
	g_clear_error(&o->error);
}

static const char *const grid_2x3[] = {"workload.threads=1,2", "workload.pages_per_munmap=1,8,32",
				       NULL};

/* One row per point, in grid order, each led by its run index and values. */
Test(sweep_run, rows_in_grid_order)
{
	struct outcome o = run_grid(grid_2x3, small_sets, 2, NULL);
	cr_assert(o.ok, "%s", o.error ? o.error->message : "");
	char **lines = g_strsplit(o.rows->str, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 7, "six rows and \"\":\n%s", o.rows->str);
	const char *want[] = {"1,1,1,", "2,1,8,", "3,1,32,", "4,2,1,", "5,2,8,", "6,2,32,"};
	for (unsigned i = 0; i < 6; i++)
		cr_expect(g_str_has_prefix(lines[i], want[i]), "row %u: %s", i, lines[i]);
	cr_expect_str_eq(lines[6], "");
	cr_expect_eq(o.stats.stale_runs, 0);
	g_strfreev(lines);
	outcome_clear(&o);
}

Test(sweep_run, same_bytes_for_any_number_of_threads)
{
	struct outcome one = run_grid(grid_2x3, small_sets, 1, NULL);
	struct outcome two = run_grid(grid_2x3, small_sets, 2, NULL);
	struct outcome many = run_grid(grid_2x3, small_sets, 5, NULL);
	cr_assert(one.ok && two.ok && many.ok);
	cr_expect_str_eq(two.rows->str, one.rows->str);
	cr_expect_str_eq(many.rows->str, one.rows->str);
	outcome_clear(&one);
	outcome_clear(&two);
	outcome_clear(&many);
}

/* Appends: what @rows held before stays in front. */
Test(sweep_run, appends_to_rows)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1", NULL});
	struct sweep_config config = config_for(small_sets);
	GString *rows = g_string_new("before\n");
	struct sweep_stats stats;
	cr_assert(sweep_run(grid, &config, 1, NULL, NULL, rows, &stats, NULL));
	cr_expect(g_str_has_prefix(rows->str, "before\n1,1,tiny-2cpu,e2e-small,"), "%s", rows->str);
	g_string_free(rows, TRUE);
	sweep_grid_free(grid);
}

/* A bad value fails at load, before any run, and names its grid point. */
Test(sweep_run, load_error_names_the_point)
{
	struct outcome o = run_grid(
		(const char *const[]){"workload.threads=1,2", "topology.costs.invlpg=5,-1", NULL},
		small_sets, 2, NULL);
	cr_assert_not(o.ok);
	cr_expect_str_empty(o.rows->str);
	cr_expect(g_error_matches(o.error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID), "%s",
		  o.error->message);
	cr_expect(g_str_has_prefix(o.error->message, "run 2 of 4 (workload.threads=1, "
						      "topology.costs.invlpg=-1): "),
		  "%s", o.error->message);
	outcome_clear(&o);
}

/* A key the file does not have is found on loading the first point. */
Test(sweep_run, unknown_parameter_names_the_point)
{
	struct outcome o =
		run_grid((const char *const[]){"workload.thredas=1,2", NULL}, NULL, 2, NULL);
	cr_assert_not(o.ok);
	cr_expect(strstr(o.error->message, "run 1 of 2 (workload.thredas=1): --set "
					   "workload.thredas=1: the workload has no parameter") ==
			  o.error->message,
		  "%s", o.error->message);
	cr_expect(strstr(o.error->message, "did you mean \"threads\"") != NULL, "%s",
		  o.error->message);
	outcome_clear(&o);
}

/* A run-time error (here a negative sleep) fails the sweep with its code. */
Test(sweep_run, run_error_names_the_point)
{
	struct outcome o = run_grid((const char *const[]){"workload.tail_ms=1,-1,2", NULL},
				    small_sets, 1, NULL);
	cr_assert_not(o.ok);
	cr_expect_str_empty(o.rows->str);
	cr_expect(g_error_matches(o.error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID), "%s",
		  o.error->message);
	cr_expect(g_str_has_prefix(o.error->message, "run 2 of 3 (workload.tail_ms=-1): "), "%s",
		  o.error->message);
	outcome_clear(&o);
}

/* Budgets hold per run: a budget stop is TLBSIM_ERROR_LIMIT (exit code 4). */
Test(sweep_run, budget_per_run)
{
	struct sweep_grid *grid = grid_of((const char *const[]){"workload.threads=1,2", NULL});
	struct sweep_config config = config_for(small_sets);
	config.max_events = 50;
	GString *rows = g_string_new(NULL);
	struct sweep_stats stats;
	GError *error = NULL;
	cr_assert_not(sweep_run(grid, &config, 2, NULL, NULL, rows, &stats, &error));
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_LIMIT), "%s", error->message);
	cr_expect(g_str_has_prefix(error->message, "run "), "%s", error->message);
	cr_expect(strstr(error->message, "--max-events") != NULL, "%s", error->message);
	cr_expect_str_empty(rows->str);
	g_error_free(error);
	g_string_free(rows, TRUE);
	sweep_grid_free(grid);
}

Test(sweep_run, interrupt_stops_everything)
{
	atomic_int interrupt;
	atomic_init(&interrupt, 1);
	struct outcome o = run_grid(grid_2x3, small_sets, 2, &interrupt);
	cr_assert_not(o.ok);
	cr_expect(g_error_matches(o.error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED), "%s",
		  o.error->message);
	cr_expect_str_empty(o.rows->str);
	outcome_clear(&o);
}

/* Each run simulates with its point's seed, and its seed column says so. */
Test(sweep_run, seed_axis_rows)
{
	const char *const sets[] = {"workload.file_size=512K", NULL};
	struct outcome o = run_grid((const char *const[]){"seed=3..4", NULL}, sets, 2, NULL);
	cr_assert(o.ok, "%s", o.error ? o.error->message : "");
	char **lines = g_strsplit(o.rows->str, "\n", -1);
	cr_expect(g_str_has_prefix(lines[0], "1,tiny-2cpu,e2e-small,linux-4.5,3,"), "%s", lines[0]);
	cr_expect(g_str_has_prefix(lines[1], "2,tiny-2cpu,e2e-small,linux-4.5,4,"), "%s", lines[1]);
	g_strfreev(lines);
	outcome_clear(&o);
}

/* A file axis: each point loads its own policy; the row names it twice (the
 * value as given, and the file's name field). */
Test(sweep_run, file_axis)
{
	struct sweep_grid *grid =
		grid_of((const char *const[]){"policy=linux-4.5,linux-3.11", NULL});
	struct sweep_config config = config_for(small_sets);
	config.names[INPUT_POLICY] = NULL;
	GString *rows = g_string_new(NULL);
	struct sweep_stats stats;
	GError *error = NULL;
	cr_assert(sweep_run(grid, &config, 2, NULL, NULL, rows, &stats, &error), "%s",
		  error ? error->message : "");
	char **lines = g_strsplit(rows->str, "\n", -1);
	cr_expect(g_str_has_prefix(lines[0], "1,linux-4.5,tiny-2cpu,e2e-small,linux-4.5,"), "%s",
		  lines[0]);
	cr_expect(g_str_has_prefix(lines[1], "2,linux-3.11,tiny-2cpu,e2e-small,linux-3.11,"),
		  "%s", lines[1]);
	g_strfreev(lines);
	g_string_free(rows, TRUE);
	sweep_grid_free(grid);
}

/* One --set key given twice is refused before anything loads, as a key
 * varied twice is (inputs_check_sets()). */
Test(sweep_grid, check_set_twice)
{
	const char *const sets[] = {"workload.threads=1", "workload.params.threads=2", NULL};
	expect_check_error((const char *const[]){"workload.tail_ms=1,2", NULL}, config_for(sets),
			   "--set workload.params.threads=2: \"workload.params.threads\" is "
			   "already set by --set workload.threads=1");
}

/* A misspelt parameter in the long form would give identical rows: refused,
 * with a suggestion, like the short form. */
Test(sweep_run, misspelt_parameter_in_the_long_form)
{
	struct outcome o =
		run_grid((const char *const[]){"workload.params.threadz=1,2", NULL}, NULL, 2, NULL);
	cr_assert_not(o.ok);
	cr_expect_str_empty(o.rows->str);
	cr_expect_str_eq(o.error->message,
			 "run 1 of 2 (workload.params.threadz=1): --set "
			 "workload.params.threadz=1: the workload has no parameter \"threadz\" "
			 "(did you mean \"threads\"?)");
	outcome_clear(&o);
}

/* A value the reader refuses names the axis's --set, then the file. */
Test(sweep_run, unknown_key_names_the_set)
{
	struct outcome o =
		run_grid((const char *const[]){"topology.costs.invlgp=1,2", NULL}, NULL, 2, NULL);
	cr_assert_not(o.ok);
	cr_expect_str_eq(o.error->message,
			 "run 1 of 2 (topology.costs.invlgp=1): --set topology.costs.invlgp=1: "
			 TINY ": $.costs: unknown key \"invlgp\" (did you mean \"invlpg\"?)");
	outcome_clear(&o);
}
