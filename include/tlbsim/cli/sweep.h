#ifndef TLBSIM_SWEEP_H
#define TLBSIM_SWEEP_H
/*
 * Parameter sweeps: the cartesian product of axes, each given as
 * "--vary KEY=V1,V2,...", run on a pool of threads and written as one CSV in
 * grid order, whatever order the runs finish in.
 *
 * KEY is a --set key (KIND.PATH: "workload.threads",
 * "topology.costs.invlpg"), "topology", "workload" or "policy" to vary the
 * input file itself, or "seed" to vary the runs' --seed (replicates).
 * Values are split at top-level commas only, so a JSON value keeps its own
 * ("topology.x=[1,2],[3,4]" has two values).  A value "A..B" that starts
 * like a number is the integer range A, A+1, ..., B (not on a file axis:
 * "../x.json" is a path).
 *
 * Grid order: the first axis outermost, the last innermost, as nested loops
 * written in the order of the options.  Grid point i (0-based) is run i + 1;
 * its row starts with a "run" column (i + 1) and one column per axis (the
 * key; "<kind>_file" for a file axis, since the run's own "<kind>" column
 * already holds the file's name field; none for the seed axis, since the
 * run's own "seed" column holds it), then the columns of a single run.
 *
 * A grid point is a single run of the tlbsim command line with the sweep's
 * options plus "--set KEY=VALUE" (or "--KIND VALUE") per axis and
 * "--label COLUMN=VALUE" per leading column: struct sweep_point holds exactly
 * that, and both sweep_run() and sweep_command() start from it, so that a
 * sweep run in process and its emitted commands give the same bytes.
 *
 * Runs share no mutable state.  Input files are parsed on the calling thread
 * (cJSON's parser writes a global error pointer); the worker threads only
 * simulate and format rows.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>
#include "tlbsim/sim/inputs.h"

/* Grid points at most: every point's inputs are loaded before the first run
 * starts (so that a bad value fails at once), a few KiB each. */
#define SWEEP_MAX_RUNS 100000

struct sweep_axis {
	char *key;     /* as given: "workload.threads", "policy" */
	char *column;  /* its CSV column: the key, or "<kind>_file" */
	int file_kind; /* the enum inputs_kind a file axis varies, else -1 */
	bool seed;     /* the seed axis: values are canonical decimal seeds */
	char **values; /* NULL-terminated, at least one, no repeats */
	unsigned nr_values;
};

struct sweep_grid;

struct sweep_grid *sweep_grid_new(void);
void sweep_grid_free(struct sweep_grid *grid);

/**
 * sweep_grid_add() - parse one "--vary KEY=V1,V2,..." and add it as the
 * innermost axis so far.
 *
 * Errors (TLBSIM_ERROR_INVALID, the message quotes @arg): no '=', an empty
 * key, a kind other than topology/workload/policy (with a suggestion), an
 * empty list or an empty value, a value given twice, a key already varied
 * ("workload.params.X" and "workload.X" count as one key), a grid of more
 * than SWEEP_MAX_RUNS points; a range whose end is below its start, whose
 * ends are not decimal integers or that has more than SWEEP_MAX_RUNS values;
 * a seed that --seed would not take.  Whether KIND.PATH names something the input
 * file has is only known when the file is loaded: sweep_run() reports it for
 * the first grid point.
 */
bool sweep_grid_add(struct sweep_grid *grid, const char *arg, GError **error);

/**
 * sweep_grid_add_replicates() - --replicates @n: the innermost axis so far
 * varies the seed over @first .. @first + @n - 1, as --vary seed=... would.
 * Errors (TLBSIM_ERROR_INVALID): the grid already varies the seed; @n is 0
 * or the grid grows past SWEEP_MAX_RUNS; the last seed passes G_MAXINT64.
 */
bool sweep_grid_add_replicates(struct sweep_grid *grid, uint64_t first, uint64_t n,
			       GError **error);

unsigned sweep_grid_nr_axes(const struct sweep_grid *grid);
const struct sweep_axis *sweep_grid_axis(const struct sweep_grid *grid, unsigned axis);
/* Grid points: the product of the axes' value counts (1 with no axis). */
size_t sweep_grid_size(const struct sweep_grid *grid);
/* The value index of each axis at grid point @index: mixed radix, the last
 * axis fastest.  @value_index holds sweep_grid_nr_axes() entries. */
void sweep_grid_point(const struct sweep_grid *grid, size_t index, unsigned *value_index);

/* What every run of the sweep shares: the single-run options. */
struct sweep_config {
	const char *names[NR_INPUT_KINDS]; /* input names or paths; NULL for a file axis */
	const char *const *sets;           /* --set before each point's own; may be NULL */
	uint64_t seed;   /* of every run, unless an axis varies it */
	bool seed_given; /* --seed gives every run's seed: refused with a seed axis */
	bool run_ahead;
	uint64_t max_events; /* budgets per run, as struct sim_input's */
	uint64_t max_sim_ns;
	double max_wall_seconds;
	bool host_time;
	uint64_t sample_ns[3]; /* --sample's period, warm, window (options_sample_plan()) */
	unsigned threads;      /* host threads for the whole sweep; 0: the online CPUs */
};

/**
 * sweep_check() - the grid and the config fit together: at least one axis;
 * each input either named in @config or varied by an axis, not both; no axis
 * key also given with --set, and no key given with --set twice
 * (inputs_check_sets()); not both --seed and a seed axis.  Errors: TLBSIM_ERROR_INVALID.
 */
bool sweep_check(const struct sweep_grid *grid, const struct sweep_config *config, GError **error);

/* One grid point as a single run's options.  Strings are owned, except
 * names[], which point into the grid and the config. */
struct sweep_point {
	size_t index;                      /* 0-based; the run column holds index + 1 */
	uint64_t seed;                     /* the seed axis's value, else the config's */
	const char *names[NR_INPUT_KINDS]; /* the config's, or a file axis's value */
	char **sets;                       /* the config's, then one per KIND.PATH axis */
	char **label_names;                /* "run", then each axis's column but seed's */
	char **label_values;               /* index + 1, then those axes' values */
};

void sweep_point_init(struct sweep_point *point, const struct sweep_grid *grid,
		      const struct sweep_config *config, size_t index);
void sweep_point_clear(struct sweep_point *point);
/* "run 3 (workload.threads=4, policy=linux-3.11)", for messages (g_free). */
char *sweep_point_describe(const struct sweep_point *point, const struct sweep_grid *grid);

/**
 * sweep_command() - the arguments of the single tlbsim run of grid point
 * @index (without the program name), NULL-terminated (g_strfreev): input
 * files as absolute paths, --seed, the budgets that differ from the defaults,
 * --no-run-ahead and --host-time if set, every --set, the point's --set and
 * its --label options.  Output options (-q, -o, --append, --no-header) are
 * the caller's.  Errors: an input name that does not resolve to a file.
 */
char **sweep_command(const struct sweep_grid *grid, const struct sweep_config *config, size_t index,
		     GError **error);

struct sweep_stats {
	size_t stale_runs;  /* runs with stale TLB hits */
	size_t first_stale; /* the first of them (0-based), if any */
};

/**
 * sweep_run() - run every grid point on @jobs threads and append one CSV row
 * per point to @rows, in grid order (no header: see sweep_point's
 * label_names and report_csv_header()).
 * @interrupt: non-zero stops the sweep (e.g. set by a signal); may be NULL.
 * @progress: where to draw a progress bar (a terminal), or NULL.
 *
 * Every point's inputs are loaded first, in grid order; the first that fails
 * fails the sweep before any run starts.  A run that fails stops the others.
 * Errors keep the failed run's domain and code (TLBSIM_ERROR_LIMIT for a
 * budget, TLBSIM_ERROR_INTERRUPTED for @interrupt) and name its grid point.
 * On error @rows is unchanged.
 */
bool sweep_run(const struct sweep_grid *grid, const struct sweep_config *config, unsigned jobs,
	       const atomic_int *interrupt, FILE *progress, GString *rows,
	       struct sweep_stats *stats, GError **error);

#endif
