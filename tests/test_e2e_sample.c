/*
 * Sampled mode (--sample, src/sim/sample.c), run as a user runs it: what it
 * refuses, the columns it adds, that it is deterministic, and that its
 * estimates hold against the exact run of the same inputs.
 */
#include <math.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_sample, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* e2e-small with a 4 ms tail: about 4.7 ms simulated, 23 periods of the
 * default plan (200 us). */
#define LONG_TAIL "workload.tail_ms=4"

static void run_small_sampled(struct table *t, const char *const *extra)
{
	const char *fixed[] = {"-T", "haswell-i7", "-w", SMALL, "-q", NULL};
	GPtrArray *args = g_ptr_array_new();
	for (const char *const *a = fixed; *a; a++)
		g_ptr_array_add(args, (gpointer)*a);
	for (const char *const *a = extra; *a; a++)
		g_ptr_array_add(args, (gpointer)*a);
	g_ptr_array_add(args, NULL);
	struct run r;
	run_tlbsim_sets(&r, (const char *const *)args->pdata, (const char *const[]){LONG_TAIL, NULL});
	expect_status(&r, 0);
	table_parse(t, r.out);
	cr_assert_eq(t->rows->len, 1);
	run_clear(&r);
	g_ptr_array_free(args, TRUE);
}

static double table_double(const struct table *t, const char *column)
{
	return g_ascii_strtod(table_get(t, 0, column), NULL);
}

Test(e2e_sample, plan_and_option_errors_are_refused)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample-plan", "1000:10:10", NULL);
	expect_input_error(&r, "--sample-plan needs --sample", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--sample-plan", "1000:500:500",
		   NULL);
	expect_input_error(&r, "--sample-plan 1000:500:500", "WARM + WINDOW < PERIOD", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--sample-plan", "1000:10", NULL);
	expect_input_error(&r, "expected PERIOD:WARM:WINDOW", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--no-run-ahead", NULL);
	expect_input_error(&r, "--sample and --no-run-ahead do not go together", NULL);
	run_clear(&r);
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--trace", "t.json", NULL);
	expect_input_error(&r, "--sample does not go with --trace", NULL);
	run_clear(&r);
	/* A plan fine in ns may leave no cycle at the machine's clock: 1 ns at
	 * 0.1 GHz. */
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--sample-plan", "1000:0:1",
		   "--set", "topology.clock_ghz=0.1", NULL);
	expect_input_error(&r, "the sampling plan leaves no measured window", "at 0.100 GHz", NULL);
	run_clear(&r);
	/* A period of 0 ns has no room for anything. */
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--sample", "--sample-plan", "0:0:1", NULL);
	expect_input_error(&r, "--sample-plan 0:0:1", NULL);
	run_clear(&r);
}

/*
 * Without -q, a sampled run says after its summary line what the estimate
 * rests on: its windows and the accesses' interval as the CSV states it
 * (0.000241 there: +/-0.02%), or that two windows give none; and where
 * readers share SMT cores' CPUs, that access figures are good to 3%.  -q
 * says nothing.
 */
Test(e2e_sample, the_summary_says_what_the_estimate_rests_on)
{
	const char *sets[] = {LONG_TAIL, NULL};
	struct run r;
	run_tlbsim_sets(&r, (const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--sample", NULL},
			sets);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	char *note = g_strdup_printf("tlbsim: --sample estimated from %s windows: accesses +/-",
				     table_get(&t, 0, "sample_windows"));
	cr_expect(strstr(r.err, note), "stderr: %s", r.err);
	/* The CSV's fraction in hundredths of a percent, rounded. */
	double ci = g_ascii_strtod(table_get(&t, 0, "accesses_rel_ci95"), NULL);
	char *percent = g_strdup_printf("+/-%.2f%% (95%%", 100 * ci);
	cr_expect(strstr(r.err, percent), "%s in: %s", percent, r.err);
	/* 4 readers on haswell-i7's 8 CPUs share no CPU: no SMT caveat. */
	cr_expect(!strstr(r.err, "read them as +/-3%"), "stderr: %s", r.err);
	g_free(note);
	g_free(percent);
	table_clear(&t);
	run_clear(&r);

	/* 12 readers on its 8 CPUs (4 SMT cores) share them: the caveat. */
	run_tlbsim_sets(&r, (const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--sample", NULL},
			(const char *const[]){LONG_TAIL, "workload.threads=12", NULL});
	expect_status(&r, 0);
	cr_expect(strstr(r.err, "readers share SMT cores' CPUs here"), "stderr: %s", r.err);
	cr_expect(strstr(r.err, "read them as +/-3%"), "stderr: %s", r.err);
	run_clear(&r);

	run_tlbsim_sets(&r, (const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--sample",
						  "--sample-plan", "4000000:20000:5000", NULL},
			sets);
	expect_status(&r, 0);
	table_parse(&t, r.out);
	cr_expect_str_eq(table_get(&t, 0, "sample_windows"), "2");
	cr_expect_str_eq(table_get(&t, 0, "accesses_rel_ci95"), "");
	cr_expect(strstr(r.err, "--sample estimated from 2 windows: no interval under 3"),
		  "stderr: %s", r.err);
	table_clear(&t);
	run_clear(&r);

	run_tlbsim_sets(&r, (const char *const[]){"-T", "haswell-i7", "-w", SMALL, "--sample", "-q",
						  NULL},
			sets);
	expect_status(&r, 0);
	cr_expect(!strstr(r.err, "--sample estimated"), "stderr: %s", r.err);
	run_clear(&r);
}

Test(e2e_sample, adds_its_columns_after_the_run_columns)
{
	struct table exact, sampled;
	run_small_sampled(&exact, (const char *const[]){NULL});
	run_small_sampled(&sampled, (const char *const[]){"--sample", NULL});
	cr_assert_eq(sampled.nr_fields, exact.nr_fields + 10);
	cr_expect_eq(table_column(&sampled, "sample_windows"), (int)exact.nr_fields);
	cr_expect_eq(table_column(&sampled, "accesses_rel_ci95"), (int)exact.nr_fields + 1);
	cr_expect_eq(table_column(&sampled, "walk_load_ns_rel_ci95"),
		     (int)exact.nr_fields + 9);
	cr_expect_eq(table_column(&exact, "sample_windows"), -1);
	/* Windows: one per period in which a reader skipped, at most one per
	 * 200 us of simulated time. */
	uint64_t windows = table_u64(&sampled, 0, "sample_windows");
	double sim_ns = table_double(&sampled, "sim_ns");
	cr_expect(windows >= 2 && windows <= (uint64_t)ceil(sim_ns / 200000), "%lu windows in %.0f ns",
		  (unsigned long)windows, sim_ns);
	table_clear(&exact);
	table_clear(&sampled);
}

Test(e2e_sample, same_seed_same_row_other_seed_other_windows)
{
	struct table a, b, c;
	run_small_sampled(&a, (const char *const[]){"--sample", NULL});
	run_small_sampled(&b, (const char *const[]){"--sample", NULL});
	run_small_sampled(&c, (const char *const[]){"--sample", "--seed", "2", NULL});
	for (unsigned i = 0; i < a.nr_fields; i++) {
		const char *name = a.header[i];
		if (strcmp(name, "tlbsim_version") != 0 && strcmp(name, "host_seconds") != 0)
			cr_expect_str_eq(table_get(&a, 0, name), table_get(&b, 0, name), "%s", name);
	}
	cr_expect_str_neq(table_get(&a, 0, "accesses"), table_get(&c, 0, "accesses"));
	table_clear(&a);
	table_clear(&b);
	table_clear(&c);
}

/*
 * The criterion, on the counters accesses drive: each estimate
 * within 1% of the exact run's count or inside its own stated interval;
 * and what is simulated in full (the munmaps, the flushes, the IPIs) within
 * 1% or equal.
 */
Test(e2e_sample, estimates_hold_against_the_exact_run)
{
	struct table exact, sampled;
	run_small_sampled(&exact, (const char *const[]){NULL});
	run_small_sampled(&sampled, (const char *const[]){"--sample", NULL});
	static const char *const estimated[] = {"accesses", "tlb_misses", "page_walks",
						"walk_loads", "walk_wait_ns"};
	for (size_t i = 0; i < G_N_ELEMENTS(estimated); i++) {
		double e = table_double(&exact, estimated[i]);
		double s = table_double(&sampled, estimated[i]);
		char *ci = g_strconcat(estimated[i], "_rel_ci95", NULL);
		double bound = fmax(0.01, table_double(&sampled, ci));
		cr_expect(fabs(s - e) <= bound * e, "%s: exact %.0f, sampled %.0f, bound %.4f",
			  estimated[i], e, s, bound);
		g_free(ci);
	}
	cr_expect_eq(table_u64(&sampled, 0, "nr_tlb_remote_flush"),
		     table_u64(&exact, 0, "nr_tlb_remote_flush"));
	cr_expect_eq(table_u64(&sampled, 0, "nr_tlb_remote_flush_received"),
		     table_u64(&exact, 0, "nr_tlb_remote_flush_received"));
	double e = table_double(&exact, "op_ns_mean"), s = table_double(&sampled, "op_ns_mean");
	cr_expect(fabs(s - e) <= 0.01 * e, "op_ns_mean: exact %.1f, sampled %.1f", e, s);
	table_clear(&exact);
	table_clear(&sampled);
}
