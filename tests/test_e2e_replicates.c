/*
 * Replicates through the binary: "tlbsim sweep --replicates N" and
 * "--vary seed=A..B" (each row its run's seed, the same bytes at -j1 and -j2,
 * --emit-commands giving each --seed), integer ranges in --vary, and
 * "tlbsim summarize" of the sweep's CSV, with its usage and input errors.
 *
 * The workload is munmap16 shrunk to 4 readers, 2 munmaps (512 KiB) and no
 * tail: a run of ~10 ms.  It keeps munmap16's ASLR placement, which is what
 * makes the seed matter: seed 2 places the small region so that a munmap
 * frees a page-table page and its flush widens (20 more single-page flushes
 * than seeds 1 and 3 on haswell-i7 with linux-4.5).
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_replicates, .init = tmp_dir_make, .fini = tmp_dir_remove);

#define SHRUNK                                                                                     \
	"-T", "haswell-i7", "-w", "munmap16", "-p", "linux-4.5", "--set",                          \
		"workload.file_size=512K", "--set", "workload.tail_ms=0", "--set",                 \
		"workload.threads=4"

/* The sweep's CSV into @name, which must succeed; returns the table. */
static void sweep_to(struct table *t, const char *name, const char *jobs, const char *arg,
		     const char *value)
{
	struct run r;
	run_tlbsim(&r, "sweep", SHRUNK, "-q", "-j", jobs, "-o", name, arg, value, NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	char *text = read_tmp(name);
	table_parse(t, text);
	g_free(text);
	run_clear(&r);
}

/* Seeds 1..3 in order, each row its own run's seed, and the seed shows: the
 * rows are not all the same. */
Test(e2e_replicates, seeds_in_order_and_rows_differ)
{
	struct table t;
	sweep_to(&t, "r.csv", "2", "--replicates", "3");
	cr_assert_eq(t.rows->len, 3);
	cr_expect_str_eq(t.header[0], "run");
	cr_expect_str_eq(t.header[1], "topology", "no leading column for the seed axis");
	for (unsigned i = 0; i < 3; i++) {
		cr_expect_eq(table_u64(&t, i, "run"), i + 1);
		cr_expect_eq(table_u64(&t, i, "seed"), i + 1);
	}
	/* Seed 2 widens one flush (see the top of this file). */
	cr_expect_eq(table_u64(&t, 0, "nr_tlb_local_flush_one"), 1);
	cr_expect_eq(table_u64(&t, 1, "nr_tlb_local_flush_one"), 21);
	cr_expect_str_neq((char *)table_get(&t, 0, "op_ns_mean"),
			  (char *)table_get(&t, 1, "op_ns_mean"));
	table_clear(&t);
}

/* A row of --replicates is the single run with that --seed. */
Test(e2e_replicates, row_is_the_single_run_with_its_seed)
{
	struct run sweep, single;
	run_tlbsim(&sweep, "sweep", SHRUNK, "-q", "--seed", "7", "--replicates", "2",
		   "--no-header", NULL);
	expect_status(&sweep, 0);
	run_tlbsim(&single, SHRUNK, "-q", "--no-header", "--seed", "8", "--label", "run=2", NULL);
	expect_status(&single, 0);
	char **lines = g_strsplit(sweep.out, "\n", -1);
	char *row = g_strconcat(lines[1], "\n", NULL);
	cr_expect_str_eq(row, single.out);
	g_free(row);
	g_strfreev(lines);
	run_clear(&single);
	run_clear(&sweep);
}

Test(e2e_replicates, same_bytes_at_one_and_two_jobs)
{
	struct table t1, t2;
	sweep_to(&t1, "j1.csv", "1", "--vary", "seed=1..4");
	sweep_to(&t2, "j2.csv", "2", "--vary", "seed=1..4");
	char *a = read_tmp("j1.csv"), *b = read_tmp("j2.csv");
	cr_expect_str_eq(a, b);
	g_free(a);
	g_free(b);
	table_clear(&t1);
	table_clear(&t2);
}

/* Ranges in a --vary list; the seed axis innermost as --replicates puts it. */
Test(e2e_replicates, ranges_and_grid_order)
{
	struct run r;
	run_tlbsim(&r, "sweep", "-T", "haswell-i7", "-w", "munmap16", "--set",
		   "workload.file_size=512K", "--set", "workload.tail_ms=0", "-q", "--vary",
		   "workload.threads=1,3..4", "--replicates", "2", NULL);
	expect_status(&r, 0);
	struct table t;
	table_parse(&t, r.out);
	cr_assert_eq(t.rows->len, 6);
	static const char *const threads[] = {"1", "1", "3", "3", "4", "4"};
	for (unsigned i = 0; i < 6; i++) {
		cr_expect_str_eq((char *)table_get(&t, i, "workload.threads"), (char *)threads[i]);
		cr_expect_eq(table_u64(&t, i, "seed"), i % 2 + 1);
	}
	table_clear(&t);
	run_clear(&r);
}

/* Each emitted command carries its run's --seed, and no seed label. */
Test(e2e_replicates, emitted_commands_carry_the_seed)
{
	struct run r;
	run_tlbsim(&r, "sweep", SHRUNK, "--seed", "5", "--replicates", "3", "--emit-commands",
		   NULL);
	expect_status(&r, 0);
	char **lines = g_strsplit(r.out, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 4, "%s", r.out);
	for (unsigned i = 0; i < 3; i++) {
		char *seed = g_strdup_printf(" --seed %u ", 5 + i);
		cr_expect(strstr(lines[i], seed) != NULL, "%s", lines[i]);
		cr_expect(strstr(lines[i], "--label seed") == NULL, "%s", lines[i]);
		g_free(seed);
	}
	g_strfreev(lines);
	run_clear(&r);
}

/* summarize of the sweep: one row, n = 3, the mean inside its interval and
 * the interval's width from the rows' spread. */
Test(e2e_replicates, summarize_the_sweep)
{
	struct table t;
	sweep_to(&t, "r.csv", "2", "--replicates", "3");
	table_clear(&t);
	struct run r;
	run_tlbsim(&r, "summarize", "r.csv", "-o", "s.csv", NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.out);
	cr_expect_str_empty(r.err);
	char *text = read_tmp("s.csv");
	table_parse(&t, text);
	cr_assert_eq(t.rows->len, 1);
	cr_expect_str_eq(t.header[0], "topology");
	cr_expect_str_eq(t.header[3], "n");
	cr_expect_eq(table_u64(&t, 0, "n"), 3);
	cr_expect_str_eq((char *)table_get(&t, 0, "policy"), "linux-4.5");
	cr_expect_eq(table_column(&t, "seed_mean"), -1, "seed is not summarized");
	cr_expect_eq(table_column(&t, "run_mean"), -1, "run is not summarized");
	/* nr_tlb_local_flush_one is 1, 21, 1: mean 23/3, median 1, stdev
	 * sqrt(800/3 / 2) = 11.547, half-width 4.3026527 * 11.547 / sqrt 3. */
	double mean = g_ascii_strtod(table_get(&t, 0, "nr_tlb_local_flush_one_mean"), NULL);
	double lo = g_ascii_strtod(table_get(&t, 0, "nr_tlb_local_flush_one_ci95_lo"), NULL);
	double hi = g_ascii_strtod(table_get(&t, 0, "nr_tlb_local_flush_one_ci95_hi"), NULL);
	cr_expect_float_eq(mean, 23.0 / 3, 1e-6);
	cr_expect_str_eq((char *)table_get(&t, 0, "nr_tlb_local_flush_one_median"), "1");
	cr_expect_lt(lo, mean);
	cr_expect_gt(hi, mean);
	cr_expect_float_eq(hi - mean, 4.3026527297 * 11.547005384 / 1.7320508076, 1e-5);
	table_clear(&t);
	g_free(text);
	run_clear(&r);

	/* The same from standard input, to stdout. */
	char *expected = read_tmp("s.csv");
	char *cmd = g_strdup_printf("cd '%s' && '%s' summarize - < r.csv > s2.csv", tmp_dir,
				    TLBSIM_BINARY);
	cr_assert_eq(system(cmd), 0);
	char *piped = read_tmp("s2.csv");
	cr_expect_str_eq(piped, expected);
	g_free(piped);
	g_free(cmd);
	g_free(expected);
}

/* An error of summarize: exit 2, the message, and no output file. */
static void expect_summarize_error(const char *const *args, const char *want)
{
	struct run r;
	run_tlbsim_argv(&r, args);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(g_str_has_prefix(r.err, "tlbsim summarize: "), "%s", r.err);
	cr_expect(strstr(r.err, want) != NULL, "stderr lacks \"%s\": %s", want, r.err);
	run_clear(&r);
}

Test(e2e_replicates, summarize_errors)
{
	write_tmp("ok.csv", "topology,workload,policy,seed,x\nt,w,p,1,1\nt,w,p,2,2\n");
	write_tmp("bad.csv", "topology,workload,policy,seed,x\nt,w,p,1,1\nt,w,p,2,two\n");
	write_tmp("ragged.csv", "topology,workload,policy,seed,x\nt,w,p,1\n");
	write_tmp("empty.csv", "");
	expect_summarize_error((const char *const[]){"summarize", "ok.csv", "--by", "polcy", "-o",
						     "out.csv", NULL},
			       "--by: ok.csv has no column \"polcy\" (did you mean \"policy\"?)");
	expect_summarize_error((const char *const[]){"summarize", "bad.csv", "-o", "out.csv",
						     NULL},
			       "bad.csv:3: column \"x\": \"two\" is not a number");
	expect_summarize_error((const char *const[]){"summarize", "ragged.csv", NULL},
			       "ragged.csv:2: 4 fields, but the header has 5");
	expect_summarize_error((const char *const[]){"summarize", "empty.csv", NULL},
			       "empty.csv: the file is empty");
	expect_summarize_error((const char *const[]){"summarize", "missing.csv", NULL},
			       "cannot read missing.csv: No such file or directory");
	expect_summarize_error((const char *const[]){"summarize", NULL}, "which CSV?");
	expect_summarize_error((const char *const[]){"summarize", "ok.csv", "ok.csv", NULL},
			       "give one FILE.csv");
	expect_summarize_error((const char *const[]){"summarize", "ok.csv", "--by", "", NULL},
			       "--by : an empty column name");
	expect_summarize_error((const char *const[]){"summarize", "ok.csv", "--by", "policy,",
						     NULL},
			       "--by policy,: an empty column name");
	expect_summarize_error((const char *const[]){"summarize", "ok.csv", "--bye", "x", NULL},
			       "Unknown option --bye");
	/* Nothing half-written. */
	expect_tmp_listing("bad.csv empty.csv ok.csv ragged.csv");
}

/* Sweep errors of the new options: exit 2 and the message, before any run. */
static void expect_sweep_error(const char *arg, const char *value, const char *extra,
			       const char *want)
{
	struct run r;
	run_tlbsim(&r, "sweep", SHRUNK, arg, value, extra, extra ? "1" : NULL, NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, want) != NULL, "stderr lacks \"%s\": %s", want, r.err);
	run_clear(&r);
}

Test(e2e_replicates, sweep_errors)
{
	expect_sweep_error("--vary", "seed=3..1", NULL,
			   "range \"3..1\" is empty (its end is below its start; write 1..3)");
	expect_sweep_error("--vary", "seed=1..x", NULL, "\"x\" is not a decimal integer");
	expect_sweep_error("--vary", "workload.tail_ms=1..200000", NULL,
			   "has more values than a sweep may have runs (100000)");
	expect_sweep_error("--vary", "seed=1..3", "--seed",
			   "--seed and --vary seed=... both given");
	expect_sweep_error("--vary", "seed=1..3", "--replicates",
			   "--replicates and --vary seed both give the seeds");
	expect_sweep_error("--replicates", "0", NULL, "--replicates takes a positive decimal");
	expect_sweep_error("--vary", "sede=1,2", NULL, "(did you mean \"seed\"?)");
}

/* The help texts name the new options and the summary's columns. */
Test(e2e_replicates, help_texts)
{
	struct run r;
	run_tlbsim(&r, "summarize", "--help", NULL);
	expect_status(&r, 0);
	cr_expect(strstr(r.out, "--by") && strstr(r.out, "C_ci95_lo") &&
			  strstr(r.out, "Student t") && strstr(r.out, "Default --by"),
		  "%s", r.out);
	run_clear(&r);
	run_tlbsim(&r, "sweep", "--help", NULL);
	expect_status(&r, 0);
	cr_expect(strstr(r.out, "--replicates=N") && strstr(r.out, "seed=1..10"), "%s", r.out);
	run_clear(&r);
}
