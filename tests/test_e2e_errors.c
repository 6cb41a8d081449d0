/*
 * Input errors (exit 2, a message naming the place, nothing on stdout) and
 * the event and simulated-time budgets (exit 4, a message naming the budget,
 * no CSV).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_errors, .init = tmp_dir_make, .fini = tmp_dir_remove);

Test(e2e_errors, invalid_json_names_file_line_column)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-syntax-error.json", NULL);
	/* The missing comma is noticed at "pages", line 6 column 5. */
	expect_input_error(&r, TLBSIM_TEST_DATA "/e2e-syntax-error.json:6:5: invalid JSON", NULL);
	run_clear(&r);
}

Test(e2e_errors, set_value_checked_like_the_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "topology.tlbs[0].ways=3", NULL);
	expect_input_error(&r, "haswell-i7.json", "$.tlbs[0].ways", "divide", NULL);
	run_clear(&r);
}

Test(e2e_errors, misspelt_parameter_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-typo-param.json", NULL);
	/* "treads" defines $treads; the task count uses $threads. */
	expect_input_error(&r, "e2e-typo-param.json", "$.tasks[1].count", "$threads",
			   "did you mean", "$treads", NULL);
	run_clear(&r);
}

/* Address spaces are numbered in 15 bits (line tags, frames): a workload that
 * needs more is refused before it runs, not wrapped around. */
Test(e2e_errors, too_many_address_spaces_are_refused)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "fork-exit", "--set",
		   "workload.tasks[0].count=32767", NULL);
	expect_input_error(&r, "fork-exit.json", "32768 address spaces", "32767 forking tasks",
			   "at most 32767", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "fork-exit", "--set",
		   "workload.tasks[0].count=32766", "--max-events", "1000", NULL);
	cr_expect_neq(r.status, 2, "32767 address spaces are allowed: %s", r.err);
	run_clear(&r);
}

Test(e2e_errors, unknown_key_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", TLBSIM_TEST_DATA "/e2e-typo-key.json", NULL);
	expect_input_error(&r, "e2e-typo-key.json", "$.tasks[1]", "unknown key \"cout\"",
			   "did you mean \"count\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_topology_name_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswel-i7", "-w", SMALL, NULL);
	expect_input_error(&r, "\"haswel-i7\"", "did you mean \"haswell-i7\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, unknown_policy_name_suggests)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.55", NULL);
	expect_input_error(&r, "policy", "\"linux-4.55\"", "did you mean \"linux-4.5\"", NULL);
	run_clear(&r);
}

Test(e2e_errors, zero_cpus)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "topology.sockets=0", NULL);
	expect_input_error(&r, "haswell-i7.json", "$.sockets", "[1, 64]", "got 0", NULL);
	run_clear(&r);
}

Test(e2e_errors, pinned_to_missing_cpu)
{
	struct run r;
	run_tlbsim(&r, "-T", TINY, "-w", TLBSIM_TEST_DATA "/e2e-pinned-cpu9.json", NULL);
	expect_input_error(&r, "e2e-pinned-cpu9.json", "$.tasks[1].cpu", "CPU 9", "CPUs 0-1", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_topology)
{
	struct run r;
	run_tlbsim(&r, "-w", SMALL, NULL);
	expect_input_error(&r, "--topology is missing", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_workload)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", NULL);
	expect_input_error(&r, "--workload is missing", NULL);
	run_clear(&r);
}

Test(e2e_errors, missing_file)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", "./no-such-workload.json", NULL);
	expect_input_error(&r, "./no-such-workload.json", "no such file", NULL);
	run_clear(&r);
}

Test(e2e_errors, unexpected_positional_argument)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "extra", NULL);
	expect_input_error(&r, "unexpected argument \"extra\"", NULL);
	run_clear(&r);
}

/* "--set KEY VALUE" leaves VALUE over: the message points at the missing '='. */
Test(e2e_errors, set_without_equals_names_the_fix)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "workload.threads", "8", NULL);
	expect_input_error(&r, "--set workload.threads has no value",
			   "write --set workload.threads=8", NULL);
	run_clear(&r);
	run_tlbsim(&r, "sweep", "-T", "haswell-i7", "-w", SMALL, "--vary", "workload.threads",
		   "1,2", NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "tlbsim sweep: --vary workload.threads has no value") &&
			  strstr(r.err, "write --vary workload.threads=1,2"),
		  "stderr: %s", r.err);
	run_clear(&r);
}

/* --help says what a user otherwise has to find in README. */
Test(e2e_errors, help_lists_exit_codes_lookup_and_dependencies)
{
	struct run r;
	run_tlbsim(&r, "--help", NULL);
	expect_status(&r, 0);
	cr_expect(strstr(r.out, "Exit codes: 0 success") && strstr(r.out, "130 interrupted"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "$TLBSIM_DATADIR/<kind>/") && strstr(r.out, "share/tlbsim"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "--timeseries and --interval go together"), "%s", r.out);
	cr_expect(strstr(r.out, "--no-run-ahead"), "%s", r.out);
	run_clear(&r);
}

Test(e2e_errors, unknown_option)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--bogus", NULL);
	expect_input_error(&r, "--bogus", NULL);
	run_clear(&r);
}

Test(e2e_errors, negative_seed)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--seed", "-1", NULL);
	expect_input_error(&r, "--seed", "non-negative", NULL);
	run_clear(&r);
}

Test(e2e_errors, bad_set_syntax)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set", "threads=2", NULL);
	expect_input_error(&r, "--set threads=2", "KIND.PATH=VALUE", NULL);
	run_clear(&r);
}

Test(e2e_errors, event_budget)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-events", "1000", NULL);
	expect_status(&r, 4);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "budget") && strstr(r.err, "--max-events"), "stderr: %s", r.err);
	run_clear(&r);
}

Test(e2e_errors, time_budget)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-sim-ns", "1000", NULL);
	expect_status(&r, 4);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, "budget") && strstr(r.err, "--max-sim-ns"), "stderr: %s", r.err);
	run_clear(&r);
}

/* A machine that extends haswell-i7: runs with its own numbers and --set on
 * top, and a key haswell-i7 lacks is refused with the place and a suggestion. */
Test(e2e_errors, extends_merges_and_refuses_a_key_the_base_lacks)
{
	char *good = tmp_path("two.json");
	cr_assert(g_file_set_contents(good,
				      "{\"name\": \"two\", \"extends\": \"haswell-i7\","
				      " \"description\": \"haswell-i7 on two sockets\","
				      " \"sockets\": 2}",
				      -1, NULL));
	struct table t;
	run_row(&t, good, SMALL, "linux-4.5", "1", NULL);
	cr_expect_str_eq(table_get(&t, 0, "topology"), "two");
	cr_expect_eq(table_u64(&t, 0, "cpus"), 16);
	table_clear(&t);
	run_row(&t, good, SMALL, "linux-4.5", "1", "--set", "topology.sockets=1", NULL);
	cr_expect_eq(table_u64(&t, 0, "cpus"), 8, "--set applies to the merged machine");
	table_clear(&t);

	char *bad = tmp_path("bad.json");
	cr_assert(g_file_set_contents(bad,
				      "{\"name\": \"bad\", \"extends\": \"haswell-i7\","
				      " \"costs\": {\"ipi_latency\": {\"sockett\": 5}}}",
				      -1, NULL));
	struct run r;
	run_tlbsim(&r, "-T", bad, "-w", SMALL, NULL);
	expect_input_error(&r, "bad.json", "$.costs.ipi_latency",
			   "the base \"haswell-i7\" has no key \"sockett\"",
			   "did you mean \"socket\"", NULL);
	run_clear(&r);
	g_free(good);
	g_free(bad);
}

/* A time with a unit (a string to --set: "350ns" is not JSON) gives the CSV
 * of its cycles (350 ns at 3.4 GHz = 1190); a bad one names the place. */
Test(e2e_errors, set_time_with_unit_runs_as_its_cycles)
{
	struct run cycles, ns;
	run_tlbsim(&cycles, "-T", "haswell-i7", "-w", SMALL, "--seed", "1", "--set",
		   "topology.costs.ipi_latency.socket=1190", NULL);
	expect_status(&cycles, 0);
	run_tlbsim(&ns, "-T", "haswell-i7", "-w", SMALL, "--seed", "1", "--set",
		   "topology.costs.ipi_latency.socket=350ns", NULL);
	expect_status(&ns, 0);
	cr_expect_str_eq(ns.out, cycles.out);
	run_clear(&cycles);
	run_clear(&ns);

	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--set",
		   "topology.costs.ipi_latency.socket=1000ms", NULL);
	expect_input_error(&r, "haswell-i7.json", "$.costs.ipi_latency.socket.value",
			   "\"1000ms\" = 3400000000 cycles at 3400 MHz: above the limit of "
			   "1000000000 cycles",
			   NULL);
	run_clear(&r);
}
