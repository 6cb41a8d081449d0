/*
 * Tests of src/cli/summarize.c: the statistics against values worked out by
 * hand, the t quantiles, grouping (default and --by, first-appearance order),
 * which columns are summarized, the output's number format, and the input
 * errors with their file:line and column.
 */
#include <math.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/cli/summarize.h"
#include "tlbsim/util/error.h"

#define EPS 1e-9

/* ---- Statistics ------------------------------------------------------------- */

/* x = 2, 4, 4, 4, 5, 5, 7, 9: mean 40/8 = 5, median (4 + 5) / 2 = 4.5, squared
 * deviations 9+1+1+1+0+0+4+16 = 32, sample variance 32/7, stdev 2.1380899;
 * half-width t(0.975, 7) 2.3646243 * 2.1380899 / sqrt(8) = 1.7874879. */
Test(summarize_stats, by_hand)
{
	const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
	struct summarize_stats s;
	summarize_sample(x, 8, &s);
	cr_expect_eq(s.n, 8);
	cr_expect_float_eq(s.mean, 5.0, EPS);
	cr_expect_float_eq(s.median, 4.5, EPS);
	cr_expect_float_eq(s.stdev, sqrt(32.0 / 7), EPS);
	double half = 2.3646242516 * sqrt(32.0 / 7) / sqrt(8.0);
	cr_expect_float_eq(half, 1.7874879, 1e-6);
	cr_expect_float_eq(s.ci95_lo, 5 - half, 1e-9);
	cr_expect_float_eq(s.ci95_hi, 5 + half, 1e-9);
}

/* Odd n: the middle value of the sorted sample, whatever the input order;
 * the input is not reordered. */
Test(summarize_stats, median_of_unsorted_odd_sample)
{
	double x[] = {9, 1, 5};
	struct summarize_stats s;
	summarize_sample(x, 3, &s);
	cr_expect_float_eq(s.median, 5.0, EPS);
	cr_expect_float_eq(s.mean, 5.0, EPS);
	/* deviations 4, -4, 0: variance 32 / 2 = 16, stdev 4, half-width
	 * 4.3026527 * 4 / sqrt(3) = 9.9365. */
	cr_expect_float_eq(s.stdev, 4.0, EPS);
	cr_expect_float_eq(s.ci95_hi - s.mean, 4.3026527297 * 4 / sqrt(3.0), 1e-9);
	cr_expect_float_eq(x[0], 9.0, 0);
	cr_expect_float_eq(x[1], 1.0, 0);
}

Test(summarize_stats, one_value_has_no_spread)
{
	const double x[] = {42.5};
	struct summarize_stats s;
	summarize_sample(x, 1, &s);
	cr_expect_float_eq(s.mean, 42.5, EPS);
	cr_expect_float_eq(s.median, 42.5, EPS);
	cr_expect(isnan(s.stdev));
	cr_expect(isnan(s.ci95_lo));
	cr_expect(isnan(s.ci95_hi));
}

/* Large counts that barely vary: no cancellation (two-pass variance). */
Test(summarize_stats, large_values_small_spread)
{
	const double x[] = {1e12 + 1, 1e12 + 2, 1e12 + 3};
	struct summarize_stats s;
	summarize_sample(x, 3, &s);
	cr_expect_float_eq(s.stdev, 1.0, 1e-6);
}

/* ---- The CSV ---------------------------------------------------------------- */

/* The summary of @text, which must succeed. */
static char *summary_of(const char *text, const char *const *by, char **notes)
{
	GString *out = g_string_new(NULL), *n = g_string_new(NULL);
	GError *error = NULL;
	cr_assert(summarize_csv(text, "in.csv", by, out, n, &error), "%s",
		  error ? error->message : "");
	if (notes)
		*notes = g_strdup(n->str);
	g_string_free(n, TRUE);
	return g_string_free(out, FALSE);
}

static void expect_error(const char *text, const char *const *by, const char *want)
{
	GString *out = g_string_new(NULL);
	GError *error = NULL;
	cr_assert_not(summarize_csv(text, "in.csv", by, out, NULL, &error), "accepted:\n%s",
		      text);
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
	cr_expect_str_eq(error->message, want);
	cr_expect_str_empty(out->str, "nothing written on error");
	g_error_free(error);
	g_string_free(out, TRUE);
}

/* A sweep's shape: run, an axis, the inputs, seed, numbers, text. */
static const char sweep_csv[] =
	"run,policy_file,topology,workload,policy,seed,op_ns_mean,events,op,tlbsim_version\n"
	"1,b,t,w,pb,1,10,100,munmap,v1\n"
	"2,b,t,w,pb,2,20,100,munmap,v1\n"
	"3,b,t,w,pb,3,30,100,munmap,v1\n"
	"4,a,t,w,pa,1,1.5,7,munmap,v1\n"
	"5,a,t,w,pa,2,2.5,9,munmap,v1\n";

/* Default --by: the axis columns before topology (not run), then the
 * inputs; groups in first-appearance order (b before a); run and seed and
 * text columns are not summarized. */
Test(summarize_csv, default_grouping)
{
	char *notes = NULL;
	char *out = summary_of(sweep_csv, NULL, &notes);
	/* b: 10, 20, 30: mean 20, stdev 10, half 4.3026527297 * 10 / sqrt 3 = 24.841377.
	 * a: 1.5, 2.5: mean 2, stdev sqrt(0.5), half 12.7062047362 * 0.5. */
	cr_expect_str_eq(out,
			 "policy_file,topology,workload,policy,n,"
			 "op_ns_mean_mean,op_ns_mean_median,op_ns_mean_stdev,op_ns_mean_ci95_lo,"
			 "op_ns_mean_ci95_hi,events_mean,events_median,events_stdev,"
			 "events_ci95_lo,events_ci95_hi\n"
			 "b,t,w,pb,3,20,20,10,-4.841377117,44.84137712,100,100,0,100,100\n"
			 "a,t,w,pa,2,2,2,0.7071067812,-4.353102368,8.353102368,8,8,1.414213562,"
			 "-4.706204736,20.70620474\n");
	cr_expect_str_empty(notes);
	g_free(notes);
	g_free(out);
}

Test(summarize_csv, by_columns_in_their_order)
{
	const char *const by[] = {"policy", "seed", NULL};
	char *out = summary_of(sweep_csv, by, NULL);
	char **lines = g_strsplit(out, "\n", -1);
	/* Every row its own group: n = 1, no spread, the value itself. */
	/* policy_file is text: left out. */
	cr_expect_str_eq(lines[0],
			 "policy,seed,n,op_ns_mean_mean,op_ns_mean_median,op_ns_mean_stdev,"
			 "op_ns_mean_ci95_lo,op_ns_mean_ci95_hi,events_mean,events_median,"
			 "events_stdev,events_ci95_lo,events_ci95_hi");
	cr_expect_str_eq(lines[1], "pb,1,1,10,10,,,,100,100,,,");
	cr_expect_str_eq(lines[4], "pa,1,1,1.5,1.5,,,,7,7,,,");
	cr_expect_eq(g_strv_length(lines), 7);
	g_strfreev(lines);
	g_free(out);
}

/* A text column that differs within a group is left out, with a note. */
Test(summarize_csv, varying_text_is_noted)
{
	const char text[] = "topology,workload,policy,seed,x,op\n"
			    "t,w,p,1,1,munmap\n"
			    "t,w,p,2,3,madvise\n";
	char *notes = NULL;
	char *out = summary_of(text, NULL, &notes);
	cr_expect_str_eq(out, "topology,workload,policy,n,x_mean,x_median,x_stdev,x_ci95_lo,"
			      "x_ci95_hi\nt,w,p,2,2,2,1.414213562,-10.70620474,14.70620474\n");
	cr_expect_str_eq(notes, "column \"op\" differs within group 1 (of 2 rows) and is left "
				"out; add it to --by to keep its values apart\n");
	g_free(notes);
	g_free(out);
}

/* Quoted fields (commas, quotes, newlines) are read and written back quoted;
 * CRLF line ends are accepted; an all-empty column is text. */
Test(summarize_csv, quoting_and_crlf)
{
	const char text[] = "k,v,host_seconds\r\n"
			    "\"a,\"\"b\"\"\",1,\r\n"
			    "\"line\nbreak\",2,\n"
			    "\"a,\"\"b\"\"\",3,\n";
	const char *const by[] = {"k", NULL};
	char *out = summary_of(text, by, NULL);
	cr_expect_str_eq(out, "k,n,v_mean,v_median,v_stdev,v_ci95_lo,v_ci95_hi\n"
			      "\"a,\"\"b\"\"\",2,2,2,1.414213562,-10.70620474,14.70620474\n"
			      "\"line\nbreak\",1,2,2,,,\n");
	g_free(out);
}

/* Deterministic bytes: large counts in full, no exponent, no "-0". */
Test(summarize_csv, number_format)
{
	const char text[] = "topology,workload,policy,a,b,c\n"
			    "t,w,p,8160358400,-0.0,0.001\n"
			    "t,w,p,8160358400,0,0.002\n";
	char *out = summary_of(text, NULL, NULL);
	char **lines = g_strsplit(out, "\n", -1);
	cr_expect(g_str_has_prefix(lines[1], "t,w,p,2,8160358400,8160358400,0,8160358400,"
					     "8160358400,0,0,0,0,0,0.0015,0.0015,"),
		  "%s", lines[1]);
	g_strfreev(lines);
	g_free(out);
}

/* ---- Errors ----------------------------------------------------------------- */

Test(summarize_errors, empty_and_header_only)
{
	expect_error("", NULL, "in.csv: the file is empty: expected a tlbsim CSV (a header and "
			       "rows)");
	expect_error("topology,x\n", NULL, "in.csv: a header but no rows: nothing to summarize");
}

Test(summarize_errors, ragged_row)
{
	expect_error("topology,x\nt,1\nt,2,3\n", NULL,
		     "in.csv:3: 3 fields, but the header has 2");
	expect_error("topology,x\nt\n", NULL, "in.csv:2: 1 field, but the header has 2");
}

Test(summarize_errors, not_a_number_in_a_numeric_column)
{
	expect_error("topology,x\nt,1\nt,\"a\nb\"\nt,nan\n", NULL,
		     "in.csv:3: column \"x\": \"a\nb\" is not a number, but the column is numeric "
		     "(\"1\" at line 2)");
	/* Line numbers count the newline inside the quoted field above. */
	expect_error("topology,y,x\nt,\"a\nb\",1\nt,c,inf\n", NULL,
		     "in.csv:4: column \"x\": \"inf\" is not a number, but the column is numeric "
		     "(\"1\" at line 2)");
	expect_error("topology,x\nt,1\nt,\n", NULL,
		     "in.csv:3: column \"x\": an empty value is not a number, but the column is "
		     "numeric (\"1\" at line 2)");
}

Test(summarize_errors, by_columns)
{
	const char *const misspelt[] = {"polcy", NULL};
	expect_error(sweep_csv, misspelt,
		     "--by: in.csv has no column \"polcy\" (did you mean \"policy\"?)");
	const char *const twice[] = {"policy", "policy", NULL};
	expect_error(sweep_csv, twice, "--by: column \"policy\" is named twice");
	expect_error("a,b\n1,2\n", NULL,
		     "in.csv: no \"topology\" column, so no default grouping: name the columns "
		     "with --by COL,COL,...");
}

Test(summarize_errors, malformed_csv)
{
	expect_error("topology,x\nt,\"1\n", NULL, "in.csv:2: a quoted field is not closed");
	expect_error("topology,x,topology\nt,1,t\n", NULL,
		     "in.csv:1: the header names column \"topology\" twice");
}
