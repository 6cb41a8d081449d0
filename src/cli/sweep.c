/*
 * Parameter sweeps (sweep.h): grid expansion, the single
 * run each grid point stands for, and running the grid on a thread pool.
 *
 * Notes:
 * - Determinism: a run's row depends only on its inputs and seed, and rows
 *   are kept per grid point and concatenated in grid order at the end, so the
 *   CSV is the same bytes for any number of threads.
 * - Threads: the calling thread loads every point's inputs (cJSON's parser
 *   sets a global error pointer, so parsing stays on one thread), then
 *   coordinates: it waits for completions, forwards @interrupt to the runs
 *   and draws the progress bar.  A worker owns its job from the pool's pop
 *   to its increment of the completion count, which publishes the job's
 *   results to the coordinator.  The only state the workers share is the
 *   stop flag and the completion count, both atomics.
 * - Stopping: loading polls @interrupt, every run one stop flag between
 *   slices of events (sim.c).
 *   A failed run or the coordinator seeing @interrupt sets it; runs not yet
 *   started then return at once.  Runs that were stopped report
 *   TLBSIM_ERROR_INTERRUPTED; the sweep reports the first other error in
 *   grid order, which is the one that stopped it.
 * - Equivalence with single runs: a point's --set, labels and file names
 *   come from sweep_point_init() alone, which sweep_command() also uses.
 */
#include <string.h>
#include "tlbsim/cli/report.h"
#include "tlbsim/cli/sweep.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

struct sweep_grid {
	GPtrArray *axes;      /* struct sweep_axis * */
	GPtrArray *canonical; /* char *, per axis: the key for duplicate checks */
	size_t size;
};

static void axis_free(gpointer data)
{
	struct sweep_axis *axis = data;
	g_free(axis->key);
	g_free(axis->column);
	g_strfreev(axis->values);
	g_free(axis);
}

struct sweep_grid *sweep_grid_new(void)
{
	struct sweep_grid *grid = g_new0(struct sweep_grid, 1);
	grid->axes = g_ptr_array_new_with_free_func(axis_free);
	grid->canonical = g_ptr_array_new_with_free_func(g_free);
	grid->size = 1;
	return grid;
}

void sweep_grid_free(struct sweep_grid *grid)
{
	if (!grid)
		return;
	g_ptr_array_free(grid->axes, TRUE);
	g_ptr_array_free(grid->canonical, TRUE);
	g_free(grid);
}

unsigned sweep_grid_nr_axes(const struct sweep_grid *grid)
{
	return grid->axes->len;
}

const struct sweep_axis *sweep_grid_axis(const struct sweep_grid *grid, unsigned axis)
{
	g_assert(axis < grid->axes->len);
	return g_ptr_array_index(grid->axes, axis);
}

size_t sweep_grid_size(const struct sweep_grid *grid)
{
	return grid->size;
}

void sweep_grid_point(const struct sweep_grid *grid, size_t index, unsigned *value_index)
{
	g_assert(index < grid->size);
	for (unsigned a = grid->axes->len; a-- > 0;) {
		const struct sweep_axis *axis = g_ptr_array_index(grid->axes, a);
		value_index[a] = (unsigned)(index % axis->nr_values);
		index /= axis->nr_values;
	}
}

/*
 * Split @list at commas outside brackets, braces and JSON strings, so that a
 * JSON value keeps its commas.  An unbalanced bracket or quote makes the
 * rest one value, which --set then takes as a plain string.
 */
static char **split_values(const char *list)
{
	GPtrArray *values = g_ptr_array_new();
	unsigned depth = 0;
	bool in_string = false;
	const char *start = list;
	for (const char *p = list;; p++) {
		if (*p == '\0') {
			g_ptr_array_add(values, g_strndup(start, (gsize)(p - start)));
			break;
		}
		if (in_string) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if ((*p == ']' || *p == '}') && depth > 0) {
			depth--;
		} else if (*p == ',' && depth == 0) {
			g_ptr_array_add(values, g_strndup(start, (gsize)(p - start)));
			start = p + 1;
		}
	}
	g_ptr_array_add(values, NULL);
	return (char **)g_ptr_array_free(values, FALSE);
}

/* Is @key "seed", a known kind, or KIND.PATH with a known kind?  *file_kind:
 * the file kind for a bare kind, else -1. */
static bool parse_key(const char *arg, const char *key, int *file_kind, bool *seed,
		      GError **error)
{
	static const char *const seed_key[] = {"seed", NULL};
	*seed = strcmp(key, "seed") == 0;
	*file_kind = -1;
	if (*seed)
		return true;
	const char *dot = strchr(key, '.');
	const char *hint = NULL;
	int kind = inputs_key_kind(key, dot ? (size_t)(dot - key) : strlen(key), &hint);
	if (kind < 0) {
		if (!hint && !dot)
			hint = config_suggest(key, seed_key);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: unknown key \"%s\"%s%s%s: expected KIND.PATH as for --set "
			    "(KIND topology, workload or policy), topology, workload or policy "
			    "to vary the input file, or seed",
			    arg, key, hint ? " (did you mean \"" : "", hint ? hint : "",
			    hint ? "\"?)" : "");
		return false;
	}
	if (dot && dot[1] == '\0') {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: \"%s\" has no path after the kind (e.g. workload.threads)",
			    arg, key);
		return false;
	}
	*file_kind = dot ? -1 : kind;
	return true;
}

/* Is @value meant as a range "A..B"?  It holds ".." and starts like a
 * number, so that a path ("../x.json") or a word ("a..b") stays a value. */
static bool is_range(const char *value)
{
	const char *digit = value[0] == '-' || value[0] == '+' ? value + 1 : value;
	return g_ascii_isdigit(*digit) && strstr(value, "..") != NULL;
}

/* One end of a range: an optionally signed decimal integer. */
static bool range_end(const char *arg, const char *range, const char *text, gint64 *out,
		      GError **error)
{
	const char *digits = text[0] == '-' || text[0] == '+' ? text + 1 : text;
	if (*digits && digits[strspn(digits, "0123456789")] == '\0' &&
	    g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, out, NULL))
		return true;
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
		    "--vary %s: range \"%s\": \"%s\" is not a decimal integer (a range A..B "
		    "takes integers, both ends included)",
		    arg, range, text);
	return false;
}

/* Append the integers of @range ("A..B") to @out. */
static bool expand_range(const char *arg, const char *range, GPtrArray *out, GError **error)
{
	const char *dots = strstr(range, "..");
	char *first = g_strndup(range, (gsize)(dots - range));
	gint64 a = 0, b = 0;
	bool ok = range_end(arg, range, first, &a, error) &&
		  range_end(arg, range, dots + 2, &b, error);
	g_free(first);
	if (!ok)
		return false;
	if (b < a) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: range \"%s\" is empty (its end is below its start; "
			    "write %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT ")",
			    arg, range, b, a);
		return false;
	}
	/* The difference as unsigned: no overflow for any two int64 ends. */
	guint64 span = (guint64)b - (guint64)a;
	if (span >= SWEEP_MAX_RUNS) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: range \"%s\" has more values than a sweep may have runs "
			    "(%d)",
			    arg, range, SWEEP_MAX_RUNS);
		return false;
	}
	for (guint64 i = 0; i <= span; i++)
		g_ptr_array_add(out, g_strdup_printf("%" G_GINT64_FORMAT,
						     (gint64)((guint64)a + i)));
	return true;
}

/* Split @list into values (NULL-terminated), ranges expanded unless
 * @file_axis (file names are never ranges). */
static char **axis_values(const char *arg, const char *list, bool file_axis, GError **error)
{
	char **split = split_values(list);
	GPtrArray *values = g_ptr_array_new_with_free_func(g_free);
	bool ok = true;
	for (char **v = split; *v && ok; v++) {
		if (!file_axis && is_range(*v))
			ok = expand_range(arg, *v, values, error);
		else
			g_ptr_array_add(values, g_strdup(*v));
		/* Before the grid's own check: a range list of billions stops here. */
		if (ok && values->len > SWEEP_MAX_RUNS) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--vary %s: more values than a sweep may have runs (%d)", arg,
				    SWEEP_MAX_RUNS);
			ok = false;
		}
	}
	g_strfreev(split);
	if (!ok) {
		g_ptr_array_free(values, TRUE);
		return NULL;
	}
	g_ptr_array_set_free_func(values, NULL);
	g_ptr_array_add(values, NULL);
	return (char **)g_ptr_array_free(values, FALSE);
}

/* Seeds as --seed takes them, rewritten in canonical form ("01" is "1"),
 * so that the duplicate check sees one seed given twice. */
static bool canonical_seeds(const char *arg, char **values, GError **error)
{
	for (char **v = values; *v; v++) {
		guint64 seed = 0;
		if (!*v[0] || (*v)[strspn(*v, "0123456789")] != '\0' ||
		    !g_ascii_string_to_unsigned(*v, 10, 0, G_MAXINT64, &seed, NULL)) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--vary %s: seed \"%s\" is not a non-negative decimal integer "
				    "(at most %" G_GINT64_FORMAT ")",
				    arg, *v, G_MAXINT64);
			return false;
		}
		g_free(*v);
		*v = g_strdup_printf("%" G_GUINT64_FORMAT, seed);
	}
	return true;
}

/* Refuse an empty value, and a value given twice (deterministic runs: the
 * second would repeat the first's row).  A hash set: ranges make long lists. */
static bool check_values(const char *what, char **values, GError **error)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	bool ok = true;
	for (unsigned i = 0; values[i] && ok; i++) {
		if (!*values[i]) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: value %u of the list is empty", what, i + 1);
			ok = false;
		} else if (!g_hash_table_add(seen, values[i])) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: value \"%s\" is given twice", what, values[i]);
			ok = false;
		}
	}
	g_hash_table_destroy(seen);
	return ok;
}

/*
 * Add an axis of @values (taken over, like @key and @canonical, whatever
 * happens) unless its key is already varied or the grid would grow too big.
 */
static bool add_axis(struct sweep_grid *grid, const char *what, char *key, char *canonical,
		     int file_kind, bool seed, char **values, GError **error)
{
	for (unsigned a = 0; a < grid->canonical->len; a++) {
		if (strcmp(g_ptr_array_index(grid->canonical, a), canonical) == 0) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "%s: \"%s\" is already varied by --vary %s", what, key,
				    sweep_grid_axis(grid, a)->key);
			goto out_free;
		}
	}
	if (!check_values(what, values, error))
		goto out_free;
	unsigned n = g_strv_length(values);
	if (grid->size > SWEEP_MAX_RUNS / n) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: the grid would have more than %d points", what,
			    SWEEP_MAX_RUNS);
		goto out_free;
	}
	struct sweep_axis *axis = g_new0(struct sweep_axis, 1);
	axis->key = key;
	axis->column = file_kind >= 0 ? g_strconcat(key, "_file", NULL) : g_strdup(key);
	axis->file_kind = file_kind;
	axis->seed = seed;
	axis->values = values;
	axis->nr_values = n;
	g_ptr_array_add(grid->axes, axis);
	g_ptr_array_add(grid->canonical, canonical);
	grid->size *= n;
	return true;

out_free:
	g_strfreev(values);
	g_free(canonical);
	g_free(key);
	return false;
}

bool sweep_grid_add(struct sweep_grid *grid, const char *arg, GError **error)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: expected KEY=V1,V2,... (e.g. --vary "
			    "workload.threads=1,2,4 or --vary seed=1..10)",
			    arg);
		return false;
	}
	char *key = g_strndup(arg, (gsize)(eq - arg));
	char **values = NULL;
	int file_kind = -1;
	bool seed = false;
	if (!parse_key(arg, key, &file_kind, &seed, error))
		goto out_free;
	if (eq[1] == '\0') {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--vary %s: the list of values is empty", arg);
		goto out_free;
	}
	values = axis_values(arg, eq + 1, file_kind >= 0, error);
	if (!values || (seed && !canonical_seeds(arg, values, error)))
		goto out_free;
	/* "workload.params.threads" and "workload.threads" are one key. */
	char *what = g_strconcat("--vary ", arg, NULL);
	bool ok = add_axis(grid, what, key, inputs_set_key(key, strlen(key)), file_kind, seed,
			   values, error);
	g_free(what);
	return ok;

out_free:
	g_strfreev(values);
	g_free(key);
	return false;
}

bool sweep_grid_add_replicates(struct sweep_grid *grid, uint64_t first, uint64_t n,
			       GError **error)
{
	for (unsigned a = 0; a < grid->axes->len; a++) {
		if (sweep_grid_axis(grid, a)->seed) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--replicates and --vary %s both give the seeds: use one",
				    sweep_grid_axis(grid, a)->key);
			return false;
		}
	}
	if (n == 0 || n > SWEEP_MAX_RUNS || first > (uint64_t)G_MAXINT64 - (n - 1)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--replicates %" G_GUINT64_FORMAT ": expected 1 to %d runs per grid "
			    "point, with seeds from --seed up to %" G_GINT64_FORMAT,
			    n, SWEEP_MAX_RUNS, G_MAXINT64);
		return false;
	}
	char **values = g_new0(char *, n + 1);
	for (uint64_t i = 0; i < n; i++)
		values[i] = g_strdup_printf("%" G_GUINT64_FORMAT, first + i);
	char *what = g_strdup_printf("--replicates %" G_GUINT64_FORMAT " (seeds %" G_GUINT64_FORMAT
				     "..%" G_GUINT64_FORMAT ")",
				     n, first, first + n - 1);
	bool ok = add_axis(grid, what, g_strdup("seed"), g_strdup("seed"), -1, true, values, error);
	g_free(what);
	return ok;
}

static bool kind_varied(const struct sweep_grid *grid, int kind)
{
	for (unsigned a = 0; a < grid->axes->len; a++)
		if (sweep_grid_axis(grid, a)->file_kind == kind)
			return true;
	return false;
}

bool sweep_check(const struct sweep_grid *grid, const struct sweep_config *config,
		 GError **error)
{
	if (grid->axes->len == 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "a sweep needs at least one --vary KEY=V1,V2,...");
		return false;
	}
	for (int k = 0; k < NR_INPUT_KINDS; k++) {
		bool varied = kind_varied(grid, k);
		if (varied && config->names[k]) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--%s and --vary %s=... both given", inputs_kind_name(k),
				    inputs_kind_name(k));
			return false;
		}
		/* Without --policy every run takes its machine's default preset. */
		if (!varied && !config->names[k] && k != INPUT_POLICY) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--%s is required (or --vary %s=A,B,...)", inputs_kind_name(k),
				    inputs_kind_name(k));
			return false;
		}
	}
	for (unsigned a = 0; a < grid->axes->len && config->seed_given; a++) {
		if (sweep_grid_axis(grid, a)->seed) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--seed and --vary seed=... both given (the axis gives every "
				    "run's seed)");
			return false;
		}
	}
	if (!inputs_check_sets(config->sets, error))
		return false;
	for (const char *const *s = config->sets; s && *s; s++) {
		const char *eq = strchr(*s, '=');
		char *canonical = inputs_set_key(*s, eq ? (size_t)(eq - *s) : strlen(*s));
		for (unsigned a = 0; a < grid->axes->len; a++) {
			if (strcmp(canonical, g_ptr_array_index(grid->canonical, a)) == 0) {
				g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
					    "--set %s: \"%s\" is also varied by --vary %s", *s,
					    sweep_grid_axis(grid, a)->key,
					    sweep_grid_axis(grid, a)->key);
				g_free(canonical);
				return false;
			}
		}
		g_free(canonical);
	}
	return true;
}

void sweep_point_init(struct sweep_point *point, const struct sweep_grid *grid,
		      const struct sweep_config *config, size_t index)
{
	unsigned nr_axes = grid->axes->len;
	unsigned *value_index = g_new(unsigned, nr_axes ? nr_axes : 1);
	sweep_grid_point(grid, index, value_index);
	memset(point, 0, sizeof(*point));
	point->index = index;
	point->seed = config->seed;
	for (int k = 0; k < NR_INPUT_KINDS; k++)
		point->names[k] = config->names[k];

	GPtrArray *sets = g_ptr_array_new();
	for (const char *const *s = config->sets; s && *s; s++)
		g_ptr_array_add(sets, g_strdup(*s));
	GPtrArray *names = g_ptr_array_new();
	GPtrArray *values = g_ptr_array_new();
	g_ptr_array_add(names, g_strdup("run"));
	g_ptr_array_add(values, g_strdup_printf("%zu", index + 1));
	for (unsigned a = 0; a < nr_axes; a++) {
		const struct sweep_axis *axis = sweep_grid_axis(grid, a);
		const char *value = axis->values[value_index[a]];
		if (axis->seed) {
			/* Canonical digits (sweep_grid_add()); the row's own seed
			 * column holds it, so no leading column. */
			point->seed = g_ascii_strtoull(value, NULL, 10);
			continue;
		}
		if (axis->file_kind >= 0)
			point->names[axis->file_kind] = value;
		else
			g_ptr_array_add(sets, g_strconcat(axis->key, "=", value, NULL));
		g_ptr_array_add(names, g_strdup(axis->column));
		g_ptr_array_add(values, g_strdup(value));
	}
	g_ptr_array_add(sets, NULL);
	g_ptr_array_add(names, NULL);
	g_ptr_array_add(values, NULL);
	point->sets = (char **)g_ptr_array_free(sets, FALSE);
	point->label_names = (char **)g_ptr_array_free(names, FALSE);
	point->label_values = (char **)g_ptr_array_free(values, FALSE);
	g_free(value_index);
}

void sweep_point_clear(struct sweep_point *point)
{
	g_strfreev(point->sets);
	g_strfreev(point->label_names);
	g_strfreev(point->label_values);
	memset(point, 0, sizeof(*point));
}

char *sweep_point_describe(const struct sweep_point *point, const struct sweep_grid *grid)
{
	unsigned nr_axes = grid->axes->len;
	unsigned *value_index = g_new(unsigned, nr_axes ? nr_axes : 1);
	sweep_grid_point(grid, point->index, value_index);
	GString *out = g_string_new(NULL);
	g_string_append_printf(out, "run %zu of %zu (", point->index + 1, grid->size);
	for (unsigned a = 0; a < nr_axes; a++) {
		const struct sweep_axis *axis = sweep_grid_axis(grid, a);
		g_string_append_printf(out, "%s%s=%s", a ? ", " : "", axis->key,
				       axis->values[value_index[a]]);
	}
	g_string_append_c(out, ')');
	g_free(value_index);
	return g_string_free(out, FALSE);
}

static void add_pair(GPtrArray *argv, const char *option, char *value)
{
	g_ptr_array_add(argv, g_strdup(option));
	g_ptr_array_add(argv, value);
}

char **sweep_command(const struct sweep_grid *grid, const struct sweep_config *config,
		     size_t index, GError **error)
{
	struct sweep_point point;
	sweep_point_init(&point, grid, config, index);
	GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
	bool ok = true;
	for (int k = 0; k < NR_INPUT_KINDS && ok; k++) {
		if (!point.names[k])
			continue; /* the machine's default policy, as in-process */
		/* Absolute, so that the command runs from any directory (a batch
		 * job's, another host's with the same file system). */
		char *path = inputs_resolve(k, point.names[k], error);
		ok = path != NULL;
		if (ok) {
			g_ptr_array_add(argv, g_strconcat("--", inputs_kind_name(k), NULL));
			g_ptr_array_add(argv, g_canonicalize_filename(path, NULL));
		}
		g_free(path);
	}
	if (!ok) {
		char *where = sweep_point_describe(&point, grid);
		g_prefix_error(error, "%s: ", where);
		g_free(where);
		sweep_point_clear(&point);
		g_ptr_array_free(argv, TRUE);
		return NULL;
	}
	add_pair(argv, "--seed", g_strdup_printf("%" G_GUINT64_FORMAT, point.seed));
	if (config->max_events != SIM_DEFAULT_MAX_EVENTS)
		add_pair(argv, "--max-events",
			 g_strdup_printf("%" G_GUINT64_FORMAT, config->max_events));
	if (config->max_sim_ns != SIM_DEFAULT_MAX_SIM_NS)
		add_pair(argv, "--max-sim-ns",
			 g_strdup_printf("%" G_GUINT64_FORMAT, config->max_sim_ns));
	if (config->max_wall_seconds > 0) {
		char buf[G_ASCII_DTOSTR_BUF_SIZE];
		add_pair(argv, "--max-wall-seconds",
			 g_strdup(g_ascii_dtostr(buf, sizeof(buf), config->max_wall_seconds)));
	}
	if (!config->run_ahead)
		g_ptr_array_add(argv, g_strdup("--no-run-ahead"));
	if (config->host_time)
		g_ptr_array_add(argv, g_strdup("--host-time"));
	/* Given: each command gets it whole (GNU parallel's -j or Slurm's
	 * allocation shares the host); not given: each its online CPUs. */
	if (config->threads)
		add_pair(argv, "--threads", g_strdup_printf("%u", config->threads));
	if (config->sample_ns[0]) {
		g_ptr_array_add(argv, g_strdup("--sample"));
		const uint64_t *plan = config->sample_ns;
		add_pair(argv, "--sample-plan",
			 g_strdup_printf("%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT
					 ":%" G_GUINT64_FORMAT,
					 plan[0], plan[1], plan[2]));
	}
	for (char **s = point.sets; *s; s++)
		add_pair(argv, "--set", g_strdup(*s));
	for (unsigned i = 0; point.label_names[i]; i++)
		add_pair(argv, "--label",
			 g_strconcat(point.label_names[i], "=", point.label_values[i], NULL));
	sweep_point_clear(&point);
	g_ptr_array_set_free_func(argv, NULL);
	g_ptr_array_add(argv, NULL);
	return (char **)g_ptr_array_free(argv, FALSE);
}

/* --------------------------------------------------------------------------
 * Running the grid
 * ------------------------------------------------------------------------ */

struct sweep_job {
	struct sweep_point point;
	struct inputs inputs; /* loaded by the coordinator, freed by the worker */
	gint64 load_us;       /* how long loading took: the run's budget covers it */
	/* Set by the worker; read by the coordinator once the completion count
	 * says every job is done. */
	GString *row;
	GError *error;
	bool stale;
};

struct sweep_state {
	const struct sweep_config *config;
	struct sweep_job *jobs;
	size_t n;
	/* The runs' host threads, shared: --threads beyond --jobs are helpers
	 * any run's phases may take, and a job thread with no run left to
	 * start lends itself to the runs still going.  NULL with one thread:
	 * each run on its job's thread. */
	struct pool *pool;
	atomic_int started;  /* jobs a worker has taken */
	atomic_int finished; /* every job is done: lent threads go home */
	atomic_int workers;  /* job threads still in sweep_worker() */
	atomic_int stop;     /* every run's cancel flag */
	/*
	 * The hand-offs, in C11 terms: every job is loaded before @loaded is
	 * released, and a worker acquires it before touching its job; a worker
	 * releases its results with its increment of @done, and the coordinator
	 * acquires them with the load that sees the count reach n; a job
	 * thread releases its last use of @pool with its decrement of
	 * @workers, and the coordinator frees the pool once it has acquired
	 * 0.  The thread pool and the mutex below order the same things, but
	 * with futexes
	 * that ThreadSanitizer cannot see; these atomics let a TSan build check
	 * that runs share nothing else.
	 */
	atomic_int loaded;
	atomic_size_t done;
	GMutex lock; /* with @completed: only to sleep until a job completes */
	GCond completed;
};

static void sweep_simulate(struct sweep_state *s, struct sweep_job *job)
{
	const struct sweep_config *c = s->config;
	struct sim_input input = {
		.topology = job->inputs.topology,
		.workload = job->inputs.workload,
		.policy = job->inputs.policy,
		.workload_file = job->inputs.paths[INPUT_WORKLOAD],
		.seed = job->point.seed,
		.run_ahead = c->run_ahead,
		.max_events = c->max_events,
		.max_sim_ns = c->max_sim_ns,
		.stop = stop_from_now(&s->stop, c->max_wall_seconds),
		.sample_period_ns = c->sample_ns[0],
		.sample_warm_ns = c->sample_ns[1],
		.sample_window_ns = c->sample_ns[2],
		.threads = 1,
		.shared_pool = s->pool,
	};
	if (input.stop.deadline)
		input.stop.deadline -= job->load_us;
	gint64 start = g_get_monotonic_time();
	struct sim_result *result = sim_run(&input, &job->error);
	double host_seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	if (!result)
		return;
	/* The same meta as a single run's (main.c), plus the labels. */
	struct report_meta meta = {
		.topology = job->inputs.names[INPUT_TOPOLOGY],
		.workload = job->inputs.names[INPUT_WORKLOAD],
		.policy = job->inputs.names[INPUT_POLICY],
		.seed = job->point.seed,
		.topo = job->inputs.topology,
		.w = job->inputs.workload,
		.host_time = c->host_time,
		.host_seconds = host_seconds,
		.sampled = c->sample_ns[0] != 0,
		.label_values = (const char *const *)job->point.label_values,
	};
	job->row = g_string_new(NULL);
	report_csv_row(job->row, &meta, result);
	job->stale = report_stale_violation(job->inputs.policy, result);
	sim_result_free(result);
}

/* One job of the grid, run and counted done. */
static void sweep_do_job(struct sweep_state *s, struct sweep_job *job)
{
	if (!atomic_load_explicit(&s->stop, memory_order_relaxed))
		sweep_simulate(s, job);
	inputs_clear(&job->inputs);
	bool failed = job->error && !g_error_matches(job->error, TLBSIM_ERROR,
						     TLBSIM_ERROR_INTERRUPTED);
	if (failed)
		atomic_store(&s->stop, 1);
	g_mutex_lock(&s->lock);
	size_t done = atomic_fetch_add_explicit(&s->done, 1, memory_order_release) + 1;
	g_cond_signal(&s->completed);
	g_mutex_unlock(&s->lock);
	if (done == s->n && s->pool) {
		atomic_store(&s->finished, 1);
		pool_wake(s->pool);
	}
}

/*
 * A job thread: takes the next job in grid order until none is left, then
 * lends itself to the runs still going until every job is done.
 */
static void sweep_worker(gpointer data, gpointer user_data)
{
	(void)data;
	struct sweep_state *s = user_data;
	g_assert(atomic_load_explicit(&s->loaded, memory_order_acquire));
	size_t next;
	while ((next = (size_t)atomic_fetch_add(&s->started, 1)) < s->n)
		sweep_do_job(s, &s->jobs[next]);
	if (s->pool)
		pool_lend(s->pool, &s->finished);
	/* Done with the pool: it may be freed (see sweep_state). */
	atomic_fetch_sub_explicit(&s->workers, 1, memory_order_release);
}

/* What the progress bar shows, to redraw it only when that changes. */
struct progress {
	FILE *out; /* NULL: no bar */
	gint64 start;
	size_t shown_done;
	gint64 shown_seconds; /* -1: nothing drawn yet */
};

/* "[#######.......................] 7/24 runs, 0:13" on one terminal line. */
static void progress_draw(struct progress *p, size_t done, size_t n)
{
	enum { WIDTH = 30 };
	gint64 seconds = (g_get_monotonic_time() - p->start) / G_USEC_PER_SEC;
	if (!p->out || (done == p->shown_done && seconds == p->shown_seconds))
		return;
	p->shown_done = done;
	p->shown_seconds = seconds;
	unsigned filled = (unsigned)(done * WIDTH / n);
	char bar[WIDTH + 1];
	memset(bar, '#', filled);
	memset(bar + filled, '.', WIDTH - filled);
	bar[WIDTH] = '\0';
	fprintf(p->out, "\r[%s] %zu/%zu runs, %" G_GINT64_FORMAT ":%02d", bar, done, n,
		seconds / 60, (int)(seconds % 60));
	fflush(p->out);
}

/* Load every point's inputs in grid order, on this thread, each within its
 * run's wall-time budget. */
static bool sweep_load(const struct sweep_grid *grid, struct sweep_state *s,
		       const atomic_int *interrupt, GError **error)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sweep_job *job = &s->jobs[i];
		sweep_point_init(&job->point, grid, s->config, i);
		struct stop stop = stop_from_now(interrupt, s->config->max_wall_seconds);
		struct inputs_request request = {
			.names = {job->point.names[0], job->point.names[1], job->point.names[2]},
			.sets = (const char *const *)job->point.sets,
			.stop = &stop,
		};
		gint64 start = g_get_monotonic_time();
		bool loaded = inputs_load(&request, &job->inputs, error);
		job->load_us = g_get_monotonic_time() - start;
		if (!loaded && g_error_matches(*error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED))
			return false;
		if (!loaded) {
			char *where = sweep_point_describe(&job->point, grid);
			g_prefix_error(error, "%s: ", where);
			g_free(where);
			return false;
		}
	}
	return true;
}

/* Run the loaded jobs on @jobs threads; false if the pool cannot start. */
static bool sweep_execute(struct sweep_state *s, unsigned jobs, const atomic_int *interrupt,
			  FILE *progress, GError **error)
{
	unsigned threads = s->config->threads ? s->config->threads : g_get_num_processors();
	if (threads > 1) {
		char *why = NULL;
		s->pool = pool_new_shared(threads > jobs ? threads - jobs : 0, jobs, &why);
		if (!s->pool) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERNAL, "--threads %u: %s",
				    threads, why);
			g_free(why);
			return false;
		}
	}
	GThreadPool *pool = g_thread_pool_new(sweep_worker, s, (gint)jobs, TRUE, error);
	if (!pool) {
		pool_free(s->pool);
		s->pool = NULL;
		return false;
	}
	atomic_store(&s->workers, (int)jobs);
	atomic_store_explicit(&s->loaded, 1, memory_order_release);
	/* One task per thread: each takes jobs in grid order (sweep_worker()). */
	for (unsigned i = 0; i < jobs; i++)
		g_thread_pool_push(pool, s, NULL);
	struct progress bar = {.out = progress, .start = g_get_monotonic_time(), .shown_seconds = -1};
	g_mutex_lock(&s->lock);
	size_t done;
	while ((done = atomic_load_explicit(&s->done, memory_order_acquire)) < s->n) {
		progress_draw(&bar, done, s->n);
		/* Wake up now and then to forward @interrupt (set by a signal
		 * handler, which cannot signal the condition) and tick the bar. */
		g_cond_wait_until(&s->completed, &s->lock,
				  g_get_monotonic_time() + G_USEC_PER_SEC / 20);
		if (interrupt && atomic_load(interrupt))
			atomic_store(&s->stop, 1);
	}
	g_mutex_unlock(&s->lock);
	if (progress) {
		progress_draw(&bar, s->n, s->n);
		fputc('\n', progress);
	}
	g_thread_pool_free(pool, FALSE, TRUE);
	while (atomic_load_explicit(&s->workers, memory_order_acquire))
		g_thread_yield();
	pool_free(s->pool);
	s->pool = NULL;
	return true;
}

/* The sweep's error: an interruption, else the first failed run in grid order
 * (runs stopped because of it report TLBSIM_ERROR_INTERRUPTED). */
static bool sweep_outcome(const struct sweep_grid *grid, struct sweep_state *s,
			  const atomic_int *interrupt, GError **error)
{
	if (interrupt && atomic_load(interrupt)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED, "interrupted");
		return false;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sweep_job *job = &s->jobs[i];
		if (job->error &&
		    !g_error_matches(job->error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED)) {
			char *where = sweep_point_describe(&job->point, grid);
			g_propagate_prefixed_error(error, job->error, "%s: ", where);
			job->error = NULL;
			g_free(where);
			return false;
		}
	}
	/* Stopped, yet nobody failed and no interrupt: cannot happen. */
	for (size_t i = 0; i < s->n; i++)
		g_assert(s->jobs[i].row);
	return true;
}

bool sweep_run(const struct sweep_grid *grid, const struct sweep_config *config, unsigned jobs,
	       const atomic_int *interrupt, FILE *progress, GString *rows,
	       struct sweep_stats *stats, GError **error)
{
	struct sweep_state s = {.config = config, .n = grid->size};
	s.jobs = g_new0(struct sweep_job, s.n);
	atomic_init(&s.stop, 0);
	atomic_init(&s.loaded, 0);
	atomic_init(&s.done, 0);
	atomic_init(&s.started, 0);
	atomic_init(&s.finished, 0);
	atomic_init(&s.workers, 0);
	g_mutex_init(&s.lock);
	g_cond_init(&s.completed);
	if (jobs == 0)
		jobs = g_get_num_processors();
	jobs = (unsigned)MIN(jobs, s.n);

	bool ok = sweep_check(grid, config, error) && sweep_load(grid, &s, interrupt, error) &&
		  sweep_execute(&s, jobs, interrupt, progress, error) &&
		  sweep_outcome(grid, &s, interrupt, error);
	if (ok) {
		memset(stats, 0, sizeof(*stats));
		for (size_t i = 0; i < s.n; i++) {
			g_string_append_len(rows, s.jobs[i].row->str, (gssize)s.jobs[i].row->len);
			if (s.jobs[i].stale && stats->stale_runs++ == 0)
				stats->first_stale = i;
		}
	}
	for (size_t i = 0; i < s.n; i++) {
		struct sweep_job *job = &s.jobs[i];
		sweep_point_clear(&job->point);
		inputs_clear(&job->inputs);
		if (job->row)
			g_string_free(job->row, TRUE);
		g_clear_error(&job->error);
	}
	g_free(s.jobs);
	g_mutex_clear(&s.lock);
	g_cond_clear(&s.completed);
	return ok;
}
