#ifndef TLBSIM_OPTIONS_H
#define TLBSIM_OPTIONS_H
/*
 * The tlbsim command's options: the GLib option entries of single runs and
 * sweeps, values that are decimal only and given at most once, and the
 * checks that take several options together.  Messages name the option.
 */
#include <stdbool.h>
#include <glib.h>
#include "tlbsim/cli/sweep.h"
#include "tlbsim/observe/trace.h"

struct options {
	char *topology;
	char *workload;
	char *policy;
	char **sets;
	gint64 seed;
	char *output;
	gboolean append;
	gboolean no_header;
	char *per_cpu;
	gboolean quiet;
	gboolean stat; /* perf-stat-like block on stderr (single runs only) */
	gboolean strict;
	gboolean host_time;
	gboolean no_run_ahead;
	gboolean sample;
	char *sample_plan; /* PERIOD:WARM:WINDOW in simulated ns, or NULL */
	gint64 max_events;
	gint64 max_sim_ns;
	double max_wall_seconds;
	gboolean list_topologies;
	gboolean list_workloads;
	gboolean list_policies;
	gboolean list_keys;
	gboolean version;
	char **labels;
	/* tlbsim sweep */
	char **varies;
	gint jobs;
	gint threads; /* 0: the online CPUs */
	gboolean emit_commands;
	gint64 replicates;       /* OPTION_UNSET: not given */
	char *trace;
	char *trace_window;
	gint64 trace_max_events; /* OPTION_UNSET: not given */
	char *timeseries;
	gint64 interval;         /* OPTION_UNSET: not given */
	guint64 given;           /* bit i: value_options[i] was given */
};

#define OPTION_UNSET G_MININT64

/* --sample's plan in simulated ns: period, warm, window; all 0 without
 * --sample.  After options_check_common(). */
void options_sample_plan(const struct options *o, uint64_t plan_ns[3]);

/* 10^6 events: about 130 MB of JSON, which ui.perfetto.dev still opens quickly;
 * munmap16 on haswell-i7 needs about 0.3 M. */
#define TRACE_MAX_EVENTS_DEFAULT 1000000

/* --label NAME=VALUE options, split: leading columns of the row. */
struct labels {
	GPtrArray *names;  /* char *, NULL-terminated */
	GPtrArray *values; /* char *, NULL-terminated */
};

/* Was the value option --@name given? (@name must be one.) */
bool options_given(const struct options *o, const char *name);

/* The defaults: seed 1, the budgets of sim.h, nothing else given. */
void options_init(struct options *o);
void options_free(struct options *o);

/* The entries of single runs and sweeps (common), single runs, and sweeps. */
void options_add_common(GOptionContext *context, struct options *o);
void options_add_single(GOptionContext *context, struct options *o);
void options_add_sweep(GOptionContext *context, struct options *o);

/*
 * A word left over after the options (@extra): said with its likely cause,
 * a --set or --vary whose value lacks its "=VALUE" ("--set workload.threads
 * 8"), as "@prog: ...".  Returns the exit code for a usage error.
 */
int options_unexpected(const struct options *o, const char *prog, const char *extra);
/* The text after the options in --help: exit codes, where bare names are
 * looked up, which options need which. */
const char *options_help_notes(bool sweep);

/* Checks both modes share; each prints its complaint and returns false. */
bool options_check_common(const struct options *o);
/* No two outputs to one file (compared by inode where the files exist). */
bool options_check_outputs(const struct options *o);
/* The trace and time-series options, into @trace. */
bool options_check_timelines(const struct options *o, struct trace_options *trace,
			     GError **error);
/* --label NAME=VALUE options into @labels; options_labels_free() after,
 * whatever it returned. */
bool options_labels(char **args, struct labels *labels, GError **error);
void options_labels_free(struct labels *labels);
/* What a sweep's runs take from the options. */
void options_sweep_config(const struct options *o, struct sweep_config *config);

#endif
