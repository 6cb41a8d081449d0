#ifndef TLBSIM_SUMMARIZE_H
#define TLBSIM_SUMMARIZE_H
/*
 * tlbsim summarize: the replicates of a sweep (rows that differ only in their
 * seed) as one row per grid point, with the mean, median, sample standard
 * deviation and Student-t 95% confidence interval of each numeric column.
 *
 * Grouping: rows with the same values in the --by columns form a group;
 * groups keep the order of their first row.  The default --by is the sweep's
 * axis columns (the columns before "topology", without "run") and topology,
 * workload and policy: a sweep's grid point without its seed.
 *
 * Columns: a column is numeric when its first non-empty value is a decimal
 * number; then every value of it must be one.  The statistics cover every
 * numeric column but the --by columns, "run" and "seed".  Text columns not
 * in --by (op, tlbsim_version) are left out; one that differs within a group
 * is reported as a note, since the group then mixes different things.
 *
 * Numbers are written as %.10g (C locale): counts below 10^10 exactly, no
 * exponent for the values tlbsim writes.  With n = 1 the stdev and the
 * interval are empty fields.
 */
#include <stdbool.h>
#include <stddef.h>
#include <glib.h>

/* The statistics of one column over one group. */
struct summarize_stats {
	size_t n;
	double mean;
	double median;
	double stdev;   /* sample (n - 1); NAN when n == 1 */
	double ci95_lo; /* mean -/+ t(0.975, n - 1) * stdev / sqrt(n); NAN when n == 1 */
	double ci95_hi;
};

/* The statistics of @x[0..@n-1], @n >= 1, in the order given (sums are
 * deterministic); @x is not changed. */
void summarize_sample(const double *x, size_t n, struct summarize_stats *s);

/**
 * summarize_csv() - summarize a tlbsim CSV.
 * @text: the CSV, NUL-terminated (RFC 4180 quoting, '\n' or "\r\n" lines).
 * @name: the file's name, for messages ("-" for standard input).
 * @by: the group columns, NULL-terminated, or NULL for the default.
 * @out: the summary CSV is appended here, header first.
 * @notes: lines for stderr (text columns that differ within a group) are
 *         appended here, each ending in '\n'; may be NULL.
 *
 * Errors (TLBSIM_ERROR_INVALID, led by "@name:LINE:" where a line is to
 * blame): no header or no rows; a header naming a column twice; a row with
 * a different number of fields; an unterminated quote; a --by column the
 * header lacks (with a suggestion) or named twice; no "topology" column for
 * the default --by; a value in a numeric column that is empty or not a
 * number (the column named).  On error @out is unchanged.
 */
bool summarize_csv(const char *text, const char *name, const char *const *by, GString *out,
		   GString *notes, GError **error);

/* "tlbsim summarize FILE.csv [--by COLS] [-o OUT]": @argv[0] is the program.
 * Returns the exit code (cli.h). */
int summarize_main(int argc, char **argv);

#endif
