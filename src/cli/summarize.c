/*
 * tlbsim summarize (summarize.h): a sweep's CSV grouped by grid point, with
 * mean, median, stdev and 95% confidence interval per numeric column.
 *
 * Notes:
 * - Simulate, then report: like cg_annotate, this reads the simulator's
 *   output file and never runs a simulation; any CSV with tlbsim's shape
 *   works, including single runs appended with --append.
 * - Determinism: groups in first-appearance order (a hash table finds a
 *   row's group, an array keeps the order), sums in row order, numbers
 *   through g_ascii_formatd(): the same input gives the same bytes.
 * - The interval assumes the replicates are independent draws of a roughly
 *   normal quantity.  munmap16's op_ns_mean is bimodal (a seed either
 *   widens 512 flushes into full flushes or not), so with few seeds the
 *   interval says how well the mean is known, not where single runs fall.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/summarize.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"
#include "tlbsim/util/stats.h"

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void summarize_sample(const double *x, size_t n, struct summarize_stats *s)
{
	g_assert(n >= 1);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += x[i];
	s->n = n;
	s->mean = sum / (double)n;
	double *sorted = g_memdup2(x, n * sizeof(*x));
	qsort(sorted, n, sizeof(*sorted), compare_doubles);
	s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	g_free(sorted);
	if (n == 1) {
		s->stdev = s->ci95_lo = s->ci95_hi = NAN;
		return;
	}
	/* Two passes: the deviations from the mean, not sum(x^2) - n mean^2,
	 * which cancels catastrophically for large counts that barely vary. */
	double squares = 0;
	for (size_t i = 0; i < n; i++)
		squares += (x[i] - s->mean) * (x[i] - s->mean);
	s->stdev = sqrt(squares / (double)(n - 1));
	double half = stats_t975((unsigned)MIN(n - 1, G_MAXUINT)) * s->stdev / sqrt((double)n);
	s->ci95_lo = s->mean - half;
	s->ci95_hi = s->mean + half;
}

/* --------------------------------------------------------------------------
 * Reading the CSV
 * ------------------------------------------------------------------------ */

struct csv {
	char **header;   /* NULL-terminated */
	unsigned width;  /* fields per row */
	GPtrArray *rows; /* char ** each, width fields */
	GArray *lines;   /* unsigned: the line each row starts on */
};

static void csv_clear(struct csv *c)
{
	g_strfreev(c->header);
	if (c->rows)
		g_ptr_array_free(c->rows, TRUE);
	if (c->lines)
		g_array_free(c->lines, TRUE);
	memset(c, 0, sizeof(*c));
}

/*
 * One record from *@p (RFC 4180: a quoted field may hold commas, doubled
 * quotes and newlines), advancing *@p past its line end and *@line by the
 * lines it spans.  NULL with @error for an unterminated quote.
 */
static char **read_record(const char **p, unsigned *line, const char *name, GError **error)
{
	GPtrArray *fields = g_ptr_array_new_with_free_func(g_free);
	GString *field = g_string_new(NULL);
	unsigned start = *line;
	const char *s = *p;
	for (;;) {
		if (*s == '"') {
			for (s++;; s++) {
				if (*s == '\0') {
					g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
						    "%s:%u: a quoted field is not closed", name,
						    start);
					g_string_free(field, TRUE);
					g_ptr_array_free(fields, TRUE);
					return NULL;
				}
				if (*s == '"' && s[1] != '"')
					break;
				if (*s == '"')
					s++;
				if (*s == '\n')
					(*line)++;
				g_string_append_c(field, *s);
			}
			s++;
		}
		/* Unquoted text, or what follows a closing quote. */
		size_t len = strcspn(s, ",\r\n");
		g_string_append_len(field, s, (gssize)len);
		s += len;
		g_ptr_array_add(fields, g_strdup(field->str));
		g_string_truncate(field, 0);
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '\r')
		s++;
	if (*s == '\n') {
		s++;
		(*line)++;
	}
	*p = s;
	g_string_free(field, TRUE);
	g_ptr_array_add(fields, NULL);
	return (char **)g_ptr_array_free(fields, FALSE);
}

/* The header and every row, each as wide as the header. */
static bool csv_read(const char *text, const char *name, struct csv *c, GError **error)
{
	memset(c, 0, sizeof(*c));
	if (!*text) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: the file is empty: expected a tlbsim CSV (a header and rows)",
			    name);
		return false;
	}
	unsigned line = 1;
	const char *p = text;
	c->header = read_record(&p, &line, name, error);
	if (!c->header)
		return false;
	c->width = g_strv_length(c->header);
	for (unsigned i = 0; i < c->width; i++) {
		for (unsigned j = 0; j < i; j++) {
			if (strcmp(c->header[i], c->header[j]) == 0) {
				g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
					    "%s:1: the header names column \"%s\" twice", name,
					    c->header[i]);
				return false;
			}
		}
	}
	c->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	c->lines = g_array_new(FALSE, FALSE, sizeof(unsigned));
	while (*p) {
		unsigned at = line;
		char **row = read_record(&p, &line, name, error);
		if (!row)
			return false;
		unsigned n = g_strv_length(row);
		if (n != c->width) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s:%u: %u field%s, but the header has %u", name, at, n,
				    n == 1 ? "" : "s", c->width);
			g_strfreev(row);
			return false;
		}
		g_ptr_array_add(c->rows, row);
		g_array_append_val(c->lines, at);
	}
	if (c->rows->len == 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: a header but no rows: nothing to summarize", name);
		return false;
	}
	return true;
}

static int column_index(const struct csv *c, const char *name)
{
	for (unsigned i = 0; i < c->width; i++)
		if (strcmp(c->header[i], name) == 0)
			return (int)i;
	return -1;
}

/* A decimal number: digits with an optional sign, fraction and exponent;
 * not "nan", "inf" or hexadecimal, which strtod would take. */
static bool parse_number(const char *text, double *out)
{
	const char *digits = text[0] == '-' || text[0] == '+' ? text + 1 : text;
	if (!g_ascii_isdigit(digits[0]) && !(digits[0] == '.' && g_ascii_isdigit(digits[1])))
		return false;
	if (strpbrk(digits, "xXnN"))
		return false;
	char *end = NULL;
	*out = g_ascii_strtod(text, &end);
	return *end == '\0' && isfinite(*out);
}

/* --------------------------------------------------------------------------
 * Grouping
 * ------------------------------------------------------------------------ */

static bool is_group_column(const GArray *by, unsigned col)
{
	for (unsigned j = 0; j < by->len; j++)
		if (g_array_index(by, unsigned, j) == col)
			return true;
	return false;
}

/* The --by columns as indices: @by, or the default (summarize.h). */
static GArray *group_columns(const struct csv *c, const char *name, const char *const *by,
			     GError **error)
{
	GArray *cols = g_array_new(FALSE, FALSE, sizeof(unsigned));
	if (!by) {
		int topology = column_index(c, "topology");
		if (topology < 0) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: no \"topology\" column, so no default grouping: name the "
				    "columns with --by COL,COL,...",
				    name);
			g_array_free(cols, TRUE);
			return NULL;
		}
		for (unsigned i = 0; i < (unsigned)topology; i++)
			if (strcmp(c->header[i], "run") != 0)
				g_array_append_val(cols, i);
		static const char *const inputs[] = {"topology", "workload", "policy"};
		for (size_t k = 0; k < G_N_ELEMENTS(inputs); k++) {
			int i = column_index(c, inputs[k]);
			if (i >= 0)
				g_array_append_val(cols, i);
		}
		return cols;
	}
	for (const char *const *b = by; *b; b++) {
		int i = column_index(c, *b);
		if (i < 0) {
			const char *hint = config_suggest(*b, (const char *const *)c->header);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--by: %s has no column \"%s\"%s%s%s", name, *b,
				    hint ? " (did you mean \"" : "", hint ? hint : "",
				    hint ? "\"?)" : "");
			g_array_free(cols, TRUE);
			return NULL;
		}
		if (is_group_column(cols, (unsigned)i)) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--by: column \"%s\" is named twice", *b);
			g_array_free(cols, TRUE);
			return NULL;
		}
		g_array_append_val(cols, i);
	}
	return cols;
}

/* Column roles: in --by, summarized (numeric), or left out (text, run, seed). */
enum role { ROLE_GROUP, ROLE_STATS, ROLE_TEXT, ROLE_SKIP };

/* Each column's role; numeric columns have every value checked. */
static enum role *column_roles(const struct csv *c, const char *name, const GArray *by,
			       GError **error)
{
	enum role *roles = g_new(enum role, c->width ? c->width : 1);
	for (unsigned col = 0; col < c->width; col++) {
		if (is_group_column(by, col)) {
			roles[col] = ROLE_GROUP;
			continue;
		}
		if (strcmp(c->header[col], "run") == 0 || strcmp(c->header[col], "seed") == 0) {
			roles[col] = ROLE_SKIP;
			continue;
		}
		/* Numeric iff the first non-empty value is a number. */
		roles[col] = ROLE_TEXT;
		unsigned first = 0;
		for (unsigned r = 0; r < c->rows->len && roles[col] == ROLE_TEXT; r++) {
			const char *v = ((char **)g_ptr_array_index(c->rows, r))[col];
			double x;
			if (*v && parse_number(v, &x)) {
				roles[col] = ROLE_STATS;
				first = r;
			} else if (*v) {
				break;
			}
		}
		for (unsigned r = 0; r < c->rows->len && roles[col] == ROLE_STATS; r++) {
			const char *v = ((char **)g_ptr_array_index(c->rows, r))[col];
			double x;
			if (parse_number(v, &x))
				continue;
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s:%u: column \"%s\": %s%s%s is not a number, but the column "
				    "is numeric (\"%s\" at line %u)",
				    name, g_array_index(c->lines, unsigned, r), c->header[col],
				    *v ? "\"" : "", *v ? v : "an empty value", *v ? "\"" : "",
				    ((char **)g_ptr_array_index(c->rows, first))[col],
				    g_array_index(c->lines, unsigned, first));
			g_free(roles);
			return NULL;
		}
	}
	return roles;
}

struct group {
	char **key;   /* the --by values, borrowed from the first row */
	GArray *rows;   /* unsigned row indices, in file order */
};

static void group_free(gpointer data)
{
	struct group *g = data;
	g_free(g->key);
	g_array_free(g->rows, TRUE);
	g_free(g);
}

/* Rows into groups by their --by values, in first-appearance order. */
static GPtrArray *group_rows(const struct csv *c, const GArray *by)
{
	GPtrArray *groups = g_ptr_array_new_with_free_func(group_free);
	GHashTable *index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	GString *key = g_string_new(NULL);
	for (unsigned r = 0; r < c->rows->len; r++) {
		char **row = g_ptr_array_index(c->rows, r);
		g_string_truncate(key, 0);
		/* Length-prefixed: no field's bytes can fake a boundary. */
		for (unsigned j = 0; j < by->len; j++) {
			const char *v = row[g_array_index(by, unsigned, j)];
			g_string_append_printf(key, "%zu:%s", strlen(v), v);
		}
		gpointer found;
		struct group *g;
		if (g_hash_table_lookup_extended(index, key->str, NULL, &found)) {
			g = g_ptr_array_index(groups, GPOINTER_TO_UINT(found));
		} else {
			g = g_new0(struct group, 1);
			g->key = g_new(char *, by->len + 1);
			for (unsigned j = 0; j < by->len; j++)
				g->key[j] = row[g_array_index(by, unsigned, j)];
			g->key[by->len] = NULL;
			g->rows = g_array_new(FALSE, FALSE, sizeof(unsigned));
			g_hash_table_insert(index, g_strdup(key->str),
					    GUINT_TO_POINTER(groups->len));
			g_ptr_array_add(groups, g);
		}
		g_array_append_val(g->rows, r);
	}
	g_string_free(key, TRUE);
	g_hash_table_destroy(index);
	return groups;
}

/* --------------------------------------------------------------------------
 * Writing the summary
 * ------------------------------------------------------------------------ */

/* ",%.10g", or "," alone for NAN (no value). */
static void put_number(GString *out, double x)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];
	g_string_append_c(out, ',');
	if (isnan(x))
		return;
	/* -0 from a mean of zeros with a negative sign bit would print "-0". */
	g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.10g", x == 0 ? 0.0 : x));
}

static const char *const stat_names[] = {"mean", "median", "stdev", "ci95_lo", "ci95_hi"};

static void put_header(GString *out, const struct csv *c, const GArray *by,
		       const enum role *roles)
{
	for (unsigned j = 0; j < by->len; j++) {
		report_csv_field(out, c->header[g_array_index(by, unsigned, j)]);
		g_string_append_c(out, ',');
	}
	g_string_append(out, "n");
	for (unsigned col = 0; col < c->width; col++) {
		for (size_t k = 0; roles[col] == ROLE_STATS && k < G_N_ELEMENTS(stat_names); k++) {
			char *stat = g_strconcat(c->header[col], "_", stat_names[k], NULL);
			g_string_append_c(out, ',');
			report_csv_field(out, stat);
			g_free(stat);
		}
	}
	g_string_append_c(out, '\n');
}

static void put_group(GString *out, const struct csv *c, const struct group *g,
		      const enum role *roles)
{
	for (char **k = g->key; *k; k++) {
		report_csv_field(out, *k);
		g_string_append_c(out, ',');
	}
	g_string_append_printf(out, "%u", g->rows->len);
	double *x = g_new(double, g->rows->len);
	for (unsigned col = 0; col < c->width; col++) {
		if (roles[col] != ROLE_STATS)
			continue;
		for (unsigned i = 0; i < g->rows->len; i++) {
			char **row =
			    g_ptr_array_index(c->rows, g_array_index(g->rows, unsigned, i));
			parse_number(row[col], &x[i]); /* checked by column_roles() */
		}
		struct summarize_stats s;
		summarize_sample(x, g->rows->len, &s);
		put_number(out, s.mean);
		put_number(out, s.median);
		put_number(out, s.stdev);
		put_number(out, s.ci95_lo);
		put_number(out, s.ci95_hi);
	}
	g_free(x);
	g_string_append_c(out, '\n');
}

/* A note per text column that differs within a group (its first such group). */
static void check_text(GString *notes, const struct csv *c, const GPtrArray *groups,
		       const enum role *roles)
{
	for (unsigned col = 0; col < c->width && notes; col++) {
		for (unsigned gi = 0; roles[col] == ROLE_TEXT && gi < groups->len; gi++) {
			const struct group *g = g_ptr_array_index(groups, gi);
			const char *first = NULL;
			bool differs = false;
			for (unsigned i = 0; i < g->rows->len && !differs; i++) {
				char **row = g_ptr_array_index(c->rows,
							       g_array_index(g->rows, unsigned, i));
				differs = first && strcmp(first, row[col]) != 0;
				first = row[col];
			}
			if (differs) {
				g_string_append_printf(
				    notes,
				    "column \"%s\" differs within group %u (of "
				    "%u rows) and is left out; add it to --by to "
				    "keep its values apart\n",
				    c->header[col], gi + 1, g->rows->len);
				break;
			}
		}
	}
}

bool summarize_csv(const char *text, const char *name, const char *const *by, GString *out,
		   GString *notes, GError **error)
{
	struct csv c;
	GArray *cols = NULL;
	enum role *roles = NULL;
	bool ok = csv_read(text, name, &c, error) &&
		  (cols = group_columns(&c, name, by, error)) != NULL &&
		  (roles = column_roles(&c, name, cols, error)) != NULL;
	if (ok) {
		GPtrArray *groups = group_rows(&c, cols);
		put_header(out, &c, cols, roles);
		for (unsigned gi = 0; gi < groups->len; gi++)
			put_group(out, &c, g_ptr_array_index(groups, gi), roles);
		check_text(notes, &c, groups, roles);
		g_ptr_array_free(groups, TRUE);
	}
	g_free(roles);
	if (cols)
		g_array_free(cols, TRUE);
	csv_clear(&c);
	return ok;
}

/* --------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------ */

/* All of standard input; NULL with @error if reading fails. */
static char *read_stdin(size_t *len, GError **error)
{
	GString *text = g_string_new(NULL);
	char buf[65536];
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "cannot read standard input: %s", g_strerror(errno));
			g_string_free(text, TRUE);
			return NULL;
		}
		if (n == 0)
			break;
		g_string_append_len(text, buf, n);
	}
	*len = text->len;
	return g_string_free(text, FALSE);
}

static char *read_input(const char *path, GError **error)
{
	size_t len = 0;
	char *text = NULL;
	if (strcmp(path, "-") == 0) {
		text = read_stdin(&len, error);
	} else if (!g_file_get_contents(path, &text, &len, NULL)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot read %s: %s", path,
			    g_strerror(errno));
		return NULL;
	}
	if (text && strlen(text) != len) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: holds a NUL byte: not a CSV", path);
		g_clear_pointer(&text, g_free);
	}
	return text;
}

/* --by values, each a comma-separated list, as one NULL-terminated list. */
static char **split_by(char **args, GError **error)
{
	GPtrArray *all = g_ptr_array_new_with_free_func(g_free);
	for (char **a = args; *a; a++) {
		/* g_strsplit() makes nothing of "": give it one empty part. */
		char **parts = **a ? g_strsplit(*a, ",", -1) : g_strsplit(",", ",", 2);
		for (char **p = parts; *p; p++) {
			if (!**p) {
				g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
					    "--by %s: an empty column name", *a);
				g_strfreev(parts);
				g_ptr_array_free(all, TRUE);
				return NULL;
			}
			g_ptr_array_add(all, g_strdup(*p));
		}
		g_strfreev(parts);
	}
	g_ptr_array_set_free_func(all, NULL);
	g_ptr_array_add(all, NULL);
	return (char **)g_ptr_array_free(all, FALSE);
}

static int summarize_file(const char *path, char **by_args, const char *output)
{
	GError *error = NULL;
	char **by = by_args ? split_by(by_args, &error) : NULL;
	char *text = by_args && !by ? NULL : read_input(path, &error);
	GString *out = g_string_new(NULL), *notes = g_string_new(NULL);
	const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
	bool ok = text && summarize_csv(text, name, (const char *const *)by, out, notes, &error);
	if (ok) {
		struct output_file *csv = cli_csv_output(output, false, NULL, out->str, &error);
		ok = csv && output_commit_all(&csv, 1, NULL, &error);
		output_free(csv);
	}
	/* Notes after the write: the summary is there, and these say what to
	 * keep in mind about it. */
	if (notes->len) {
		char **lines = g_strsplit(notes->str, "\n", -1);
		for (char **l = lines; *l && **l; l++)
			g_printerr("tlbsim summarize: note: %s\n", *l);
		g_strfreev(lines);
	}
	int code = ok ? EXIT_OK : EXIT_INPUT;
	if (!ok)
		g_printerr("tlbsim summarize: %s\n", error->message);
	g_clear_error(&error);
	g_string_free(notes, TRUE);
	g_string_free(out, TRUE);
	g_free(text);
	g_strfreev(by);
	return code;
}

static const char summarize_notes[] =
	"Reads a tlbsim CSV (a sweep's, or single runs appended with --append; - for\n"
	"standard input) and writes one row per group of rows with equal --by values,\n"
	"in the order groups first appear: the --by columns, n, and for each numeric\n"
	"column C but run, seed and the --by columns: C_mean, C_median, C_stdev\n"
	"(sample, n-1), C_ci95_lo, C_ci95_hi (Student t, two-sided 95%).  With n = 1\n"
	"the stdev and interval are empty.  Numbers: %.10g.\n"
	"\n"
	"Default --by: the sweep's axis columns (those before topology, without run)\n"
	"and topology, workload, policy: each grid point of a --replicates sweep.\n"
	"Text columns not in --by are left out (a note says when one differs within\n"
	"a group).\n"
	"\n"
	"Exit codes: 0 success; 2 usage or input error (nothing is written).\n";

int summarize_main(int argc, char **argv)
{
	char **by = NULL;
	char *output = NULL;
	const GOptionEntry entries[] = {
		{"by", 0, 0, G_OPTION_ARG_STRING_ARRAY, &by,
		 "Group by these columns (comma-separated; repeatable)", "COL,COL,..."},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
		 "Write the summary here instead of stdout (atomically)", "FILE"},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	GOptionContext *context = g_option_context_new(
		"FILE.csv - mean, median, stdev and 95% confidence interval per grid point");
	g_option_context_add_main_entries(context, entries, NULL);
	g_option_context_set_summary(
		context, "Example: tlbsim sweep -T haswell-i7 -w munmap16 "
			 "--vary policy=linux-4.5,linux-4.5-smt-dedup --replicates 10 -o r.csv\n"
			 "         tlbsim summarize r.csv -o r-summary.csv");
	g_option_context_set_description(context, summarize_notes);
	GError *error = NULL;
	int code = EXIT_INPUT;
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("tlbsim summarize: %s (see tlbsim summarize --help)\n", error->message);
		g_error_free(error);
	} else if (argc != 2) {
		g_printerr("tlbsim summarize: %s (see tlbsim summarize --help)\n",
			   argc < 2 ? "which CSV? give one FILE.csv, or - for standard input"
				    : "give one FILE.csv: summarize one sweep at a time (cat them "
				      "into one if they belong together)");
	} else {
		code = summarize_file(argv[1], by, output);
	}
	g_option_context_free(context);
	g_strfreev(by);
	g_free(output);
	return code;
}
