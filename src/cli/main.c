/*
 * tlbsim command line: parse options, load inputs, run, write the CSV and the
 * other outputs all or nothing (output.h).
 * "tlbsim sweep ..." runs a grid of such runs (sweep.h) into one CSV, or
 * prints the equivalent single-run commands.
 * Exit codes: 0 ok, 1 internal error, 2 usage or input error, 3 stale hits
 * with --strict, 4 a run stopped by its event or time budget.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction(), pthread_sigmask() */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>
#include "tlbsim/cli/output.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/cli/sweep.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/error.h"

enum exit_code {
	EXIT_OK = 0,
	EXIT_INTERNAL = 1,
	EXIT_INPUT = 2,
	EXIT_STALE = 3,
	EXIT_BUDGET = 4,
	EXIT_INTERRUPTED = 130, /* 128 + SIGINT, as shells report it */
};

/*
 * Set by SIGINT/SIGTERM; the run stops at its next slice, writing nothing.
 * The one global: a signal handler can reach nothing else.  A lock-free
 * atomic so that a sweep's worker threads may read it too.
 */
static atomic_int interrupted;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal flag must be lock-free");

static void on_signal(int signo)
{
	(void)signo;
	atomic_store(&interrupted, 1);
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * While the outputs are written, a signal waits: no half-renamed file.  The
 * calling thread's mask: a sweep's workers may still exist, and a signal
 * they take only sets the flag, without interrupting this thread's writes.
 */
static void hold_signals(bool hold, sigset_t *saved)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (hold)
		pthread_sigmask(SIG_BLOCK, &set, saved);
	else
		pthread_sigmask(SIG_SETMASK, saved, NULL);
}

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
	gboolean strict;
	gboolean host_time;
	gboolean no_run_ahead;
	gint64 max_events;
	gint64 max_sim_ns;
	double max_wall_seconds;
	gboolean list_topologies;
	gboolean list_workloads;
	gboolean list_policies;
	gboolean version;
	char **labels;
	/* tlbsim sweep */
	char **varies;
	gint jobs;
	gboolean emit_commands;
	char *trace;
	char *trace_window;
	gint64 trace_max_events; /* OPTION_UNSET: not given */
	char *timeseries;
	gint64 interval;         /* OPTION_UNSET: not given */
	guint64 given;           /* bit i: value_options[i] was given */
};

#define OPTION_UNSET G_MININT64

/*
 * The options that take one value go through option_value(), not GLib's own
 * parsers: numbers are decimal only (GLib's take "010" for 8 and "0x10" for
 * 16, and "nan" for a number of seconds), and an option given twice is
 * refused instead of the last one silently winning.
 */
enum value_type {
	VALUE_STRING,  /* char *, g_free()d by main() */
	VALUE_INT64,   /* gint64 in [min, max] */
	VALUE_INT,     /* gint in [min, max] */
	VALUE_SECONDS, /* double, finite and >= 0 */
};

struct value_option {
	const char *name; /* the long name */
	char short_name;  /* or 0 */
	enum value_type type;
	size_t offset; /* of the field in struct options */
	gint64 min, max;
	const char *expected; /* for messages: "--seed takes EXPECTED, not ..." */
};

#define STRING_OPTION(name, short_name, field)                                                     \
	{name, short_name, VALUE_STRING, offsetof(struct options, field), 0, 0, NULL}
#define COUNT_OPTION(name, field, what)                                                            \
	{name, 0, VALUE_INT64, offsetof(struct options, field), 0, G_MAXINT64, what}

static const struct value_option value_options[] = {
	STRING_OPTION("topology", 'T', topology),
	STRING_OPTION("workload", 'w', workload),
	STRING_OPTION("policy", 'p', policy),
	STRING_OPTION("output", 'o', output),
	STRING_OPTION("per-cpu", 0, per_cpu),
	STRING_OPTION("trace", 0, trace),
	STRING_OPTION("trace-window", 0, trace_window),
	STRING_OPTION("timeseries", 0, timeseries),
	COUNT_OPTION("seed", seed, "a non-negative decimal integer"),
	COUNT_OPTION("max-events", max_events, "a non-negative decimal integer (0: no limit)"),
	COUNT_OPTION("max-sim-ns", max_sim_ns, "a non-negative decimal integer (0: no limit)"),
	COUNT_OPTION("trace-max-events", trace_max_events,
		     "a non-negative decimal integer (0: no limit)"),
	{"interval", 0, VALUE_INT64, offsetof(struct options, interval), 1, G_MAXINT64,
	 "a positive decimal integer (simulated ns)"},
	{"max-wall-seconds", 0, VALUE_SECONDS, offsetof(struct options, max_wall_seconds), 0, 0,
	 "a non-negative decimal number of seconds (0: no limit)"},
	{"jobs", 'j', VALUE_INT, offsetof(struct options, jobs), 0, G_MAXINT,
	 "a positive number of threads, or 0 for the online CPUs"},
};
_Static_assert(G_N_ELEMENTS(value_options) <= 64, "struct options' given has 64 bits");

static const struct value_option *value_option_named(const char *option_name, unsigned *index)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(value_options); i++) {
		const struct value_option *v = &value_options[i];
		bool is_long = g_str_has_prefix(option_name, "--") &&
			       strcmp(option_name + 2, v->name) == 0;
		bool is_short = v->short_name && option_name[0] == '-' &&
				option_name[1] == v->short_name && option_name[2] == '\0';
		if (is_long || is_short) {
			*index = i;
			return v;
		}
	}
	g_assert_not_reached();
}

/* @text as a decimal number of seconds: digits with an optional fraction
 * and exponent, so neither "nan", "inf", "0x1p3" nor a sign. */
static bool parse_seconds(const char *text, double *out)
{
	if (!g_ascii_isdigit(text[0]) && !(text[0] == '.' && g_ascii_isdigit(text[1])))
		return false;
	for (const char *p = text; *p; p++)
		if (!g_ascii_isdigit(*p) && !strchr(".eE+-", *p))
			return false;
	char *end = NULL;
	*out = g_ascii_strtod(text, &end);
	return *end == '\0' && isfinite(*out);
}

/* The GOptionArgFunc of every option of value_options[]; @data: the options. */
static gboolean option_value(const gchar *option_name, const gchar *value, gpointer data,
			     GError **error)
{
	struct options *o = data;
	unsigned index;
	const struct value_option *v = value_option_named(option_name, &index);
	char *field = (char *)o + v->offset;
	if (o->given & (G_GUINT64_CONSTANT(1) << index)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--%s is given twice (the second time as \"%s\")", v->name, value);
		return FALSE;
	}
	o->given |= G_GUINT64_CONSTANT(1) << index;
	gint64 number = 0;
	bool ok = true;
	switch (v->type) {
	case VALUE_STRING:
		*(char **)(void *)field = g_strdup(value);
		return TRUE;
	case VALUE_SECONDS:
		ok = parse_seconds(value, (double *)(void *)field);
		break;
	case VALUE_INT64:
	case VALUE_INT:
		ok = g_ascii_string_to_signed(value, 10, v->min, v->max, &number, NULL);
		if (v->type == VALUE_INT64)
			*(gint64 *)(void *)field = number;
		else
			*(gint *)(void *)field = (gint)number;
		break;
	}
	if (!ok) {
		/* Digits, not all 0: refused only for being over the maximum (min <= 1). */
		bool too_big = v->type != VALUE_SECONDS &&
			       value[strspn(value, "0123456789")] == '\0' &&
			       value[strspn(value, "0")] != '\0';
		char *limit = too_big ? g_strdup_printf(" (at most %" G_GINT64_FORMAT ")", v->max)
				      : g_strdup("");
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--%s takes %s, not \"%s\"%s", v->name, v->expected, value, limit);
		g_free(limit);
	}
	return ok;
}

/* GLib takes the callback as a data pointer: a function-pointer cast GLib's
 * API leaves no way around, marked so that -Wpedantic accepts it. */
#define OPTION_VALUE G_GNUC_EXTENSION(gpointer) option_value

/* 10^6 events: about 130 MB of JSON, which ui.perfetto.dev still opens quickly;
 * munmap16 on haswell-i7 needs about 0.3 M. */
#define TRACE_MAX_EVENTS_DEFAULT 1000000

static int list_kind(enum inputs_kind kind, bool with_descriptions)
{
	char **names = inputs_list(kind);
	for (char **n = names; *n; n++) {
		if (!with_descriptions) {
			printf("%s\n", *n);
			continue;
		}
		GError *error = NULL;
		char *path = inputs_resolve(kind, *n, &error);
		char *text = NULL;
		const char *description = "";
		cJSON *json = NULL;
		if (path && g_file_get_contents(path, &text, NULL, NULL))
			json = cJSON_Parse(text);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(json, "description");
		if (cJSON_IsString(d))
			description = d->valuestring;
		printf("%-22s %s\n", *n, description);
		cJSON_Delete(json);
		g_free(text);
		g_free(path);
		g_clear_error(&error);
	}
	g_strfreev(names);
	return EXIT_OK;
}

static int exit_code_for(const GError *error)
{
	if (error->domain != TLBSIM_ERROR)
		return EXIT_INTERNAL;
	switch (error->code) {
	case TLBSIM_ERROR_LIMIT:
		return EXIT_BUDGET;
	case TLBSIM_ERROR_INTERRUPTED:
		return EXIT_INTERRUPTED;
	case TLBSIM_ERROR_INTERNAL:
		return EXIT_INTERNAL;
	default:
		return EXIT_INPUT;
	}
}

static void print_stale(const struct sim_result *r, const struct topology *topo)
{
	if (r->total.stale_hits)
		g_printerr("tlbsim: %" G_GUINT64_FORMAT
			   " stale TLB hits: a CPU used a translation after the change that "
			   "invalidated it had returned\n",
			   r->total.stale_hits);
	if (r->total.stale_entries)
		g_printerr("tlbsim: %" G_GUINT64_FORMAT
			   " TLB entries were older than a PTE change when its syscall returned "
			   "(stale translations a CPU could still use; stale_entries)\n",
			   r->total.stale_entries);
	if (r->total.stale_pwc)
		g_printerr("tlbsim: %" G_GUINT64_FORMAT
			   " stale paging-structure cache entries: a CPU with the mm loaded still "
			   "cached a page-table page after it was freed\n",
			   r->total.stale_pwc);
	for (unsigned i = 0; i < r->nr_stale_reports; i++)
		if (r->stale[i].freed_table)
			g_printerr("  cpu %u, PTE page of 0x%" G_GINT64_MODIFIER
				   "x freed at %.0f ns while its PDE was cached\n",
				   r->stale[i].cpu, r->stale[i].vaddr,
				   topology_cycles_to_ns(topo, r->stale[i].time));
		else
			g_printerr("  cpu %u, address 0x%" G_GINT64_MODIFIER "x, at %.0f ns (entry from "
			   "PTE generation %u, change committed at generation %u)\n",
			   r->stale[i].cpu, r->stale[i].vaddr,
			   topology_cycles_to_ns(topo, r->stale[i].time), r->stale[i].entry_gen,
			   r->stale[i].committed_gen);
}

/*
 * The CSV to --output (replaced atomically, or appended under a lock) or to
 * stdout; @header is left out under --no-header.  Call with signals held.
 */
static bool write_csv(const struct options *o, const char *header, const char *rows,
		      GError **error)
{
	if (o->no_header)
		header = NULL;
	if (o->output && o->append)
		return output_append(o->output, header, rows, error);
	char *all = g_strconcat(header ? header : "", rows, NULL);
	bool ok;
	if (o->output)
		ok = output_write(o->output, all, strlen(all), error);
	else if (!(ok = output_write_fd(STDOUT_FILENO, all, strlen(all))))
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "cannot write the CSV to standard output: %s", g_strerror(errno));
	g_free(all);
	return ok;
}

/* --label NAME=VALUE options, split: leading columns of the row. */
struct labels {
	GPtrArray *names;  /* char *, NULL-terminated */
	GPtrArray *values; /* char *, NULL-terminated */
};

static void labels_free(struct labels *labels)
{
	g_ptr_array_free(labels->names, TRUE);
	g_ptr_array_free(labels->values, TRUE);
}

static bool labels_parse(char **args, struct labels *labels, GError **error)
{
	labels->names = g_ptr_array_new_with_free_func(g_free);
	labels->values = g_ptr_array_new_with_free_func(g_free);
	for (char **a = args; a && *a; a++) {
		const char *eq = strchr(*a, '=');
		if (!eq) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--label %s: expected NAME=VALUE", *a);
			return false;
		}
		char *name = g_strndup(*a, (gsize)(eq - *a));
		bool seen = false;
		for (unsigned i = 0; i < labels->names->len && !seen; i++)
			seen = strcmp(g_ptr_array_index(labels->names, i), name) == 0;
		if (seen) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--label %s: column \"%s\" is labelled twice", *a, name);
			g_free(name);
			return false;
		}
		if (!report_check_label(name, error)) {
			g_prefix_error(error, "--label %s: ", *a);
			g_free(name);
			return false;
		}
		g_ptr_array_add(labels->names, name);
		g_ptr_array_add(labels->values, g_strdup(eq + 1));
	}
	g_ptr_array_add(labels->names, NULL);
	g_ptr_array_add(labels->values, NULL);
	return true;
}

/*
 * After the run: flush the trace and time-series streams.  A failed write
 * makes the run fail too ("cannot write the trace"), but only the stream
 * knows the file and the errno: its error then replaces the run's.
 */
static struct sim_result *finish_streams(struct sim_result *result, struct output_file *trace,
					 struct output_file *series, GError **error)
{
	GError *stream_error = NULL;
	if ((!trace || output_finish(trace, &stream_error)) &&
	    (!series || output_finish(series, &stream_error)))
		return result;
	if (result || g_error_matches(*error, TLBSIM_ERROR, TLBSIM_ERROR_IO)) {
		sim_result_free(result);
		result = NULL;
		g_clear_error(error);
		g_propagate_error(error, stream_error);
	} else {
		g_error_free(stream_error);
	}
	return result;
}

/* @data in a finished temporary file for @path, to commit later; NULL on error. */
static struct output_file *prepare_output(const char *path, const GString *data,
					   GError **error)
{
	struct output_file *file = output_open(path, error);
	if (file) {
		fwrite(data->str, 1, data->len, output_stream(file));
		if (!output_finish(file, error)) {
			output_free(file);
			file = NULL;
		}
	}
	return file;
}

/*
 * Every output of a successful run, with signals held: the per-CPU CSV, the
 * trace and the time series first, then the CSV row.  If any fails, the
 * files already renamed into place are removed again: no output without its
 * run's row (data written into a device or a FIFO cannot be taken back).
 */
static bool write_outputs(const struct options *o, const struct report_meta *meta,
			  const char *const *label_names, const struct sim_result *result,
			  struct output_file **files, size_t nr_files, GError **error)
{
	GString *header = g_string_new(NULL);
	GString *row = g_string_new(NULL);
	report_csv_header(header, label_names);
	report_csv_row(row, meta, result);
	bool ok = true;
	if (o->per_cpu) {
		GString *per_cpu = g_string_new(NULL);
		report_per_cpu_csv(per_cpu, meta, result);
		files[0] = prepare_output(o->per_cpu, per_cpu, error);
		ok = files[0] != NULL;
		g_string_free(per_cpu, TRUE);
	}
	for (size_t i = 0; ok && i < nr_files; i++)
		ok = !files[i] || output_commit(files[i], error);
	ok = ok && write_csv(o, header->str, row->str, error);
	for (size_t i = 0; !ok && i < nr_files; i++)
		if (files[i])
			output_revert(files[i]);
	g_string_free(header, TRUE);
	g_string_free(row, TRUE);
	return ok;
}

static int run(const struct options *o, const struct labels *labels,
	       const struct trace_options *trace)
{
	GError *error = NULL;
	struct inputs inputs;
	/* The per-CPU CSV, the trace, the time series: committed in this order. */
	struct output_file *files[3] = {NULL, NULL, NULL};
	struct inputs_request request = {
		.names = {o->topology, o->workload, o->policy},
		.sets = (const char *const *)o->sets,
	};
	if (!inputs_load(&request, &inputs, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
		return EXIT_INPUT;
	}
	struct sim_input input = {
		.topology = inputs.topology,
		.workload = inputs.workload,
		.policy = inputs.policy,
		.workload_file = inputs.paths[INPUT_WORKLOAD],
		.seed = (uint64_t)o->seed,
		.run_ahead = !o->no_run_ahead,
		.max_events = (uint64_t)o->max_events,
		.max_sim_ns = (uint64_t)o->max_sim_ns,
		.max_wall_seconds = o->max_wall_seconds,
		.cancel = &interrupted,
		.trace = o->trace ? trace : NULL,
		.timeseries_interval_ns = o->timeseries ? (uint64_t)o->interval : 0,
	};
	int code = EXIT_OK;
	/* Before the run: a path that cannot be written fails in no time. */
	if ((o->trace && !(files[1] = output_open(o->trace, &error))) ||
	    (o->timeseries && !(files[2] = output_open(o->timeseries, &error)))) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
		code = EXIT_INPUT;
		goto out_free_outputs;
	}
	input.trace_out = files[1] ? output_stream(files[1]) : NULL;
	input.timeseries_out = files[2] ? output_stream(files[2]) : NULL;
	gint64 start = g_get_monotonic_time();
	struct sim_result *result = sim_run(&input, &error);
	double host_seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	result = finish_streams(result, files[1], files[2], &error);
	if (!result) {
		g_printerr("tlbsim: %s\n", error->message);
		code = exit_code_for(error);
		g_error_free(error);
		goto out_free_outputs;
	}
	struct report_meta meta = {
		.topology = inputs.names[INPUT_TOPOLOGY],
		.workload = inputs.names[INPUT_WORKLOAD],
		.policy = inputs.names[INPUT_POLICY],
		.seed = (uint64_t)o->seed,
		.topo = inputs.topology,
		.w = inputs.workload,
		.host_time = o->host_time,
		.host_seconds = host_seconds,
		.label_values = (const char *const *)labels->values->pdata,
	};
	sigset_t saved;
	hold_signals(true, &saved);
	bool ok = write_outputs(o, &meta, (const char *const *)labels->names->pdata, result, files,
				G_N_ELEMENTS(files), &error);
	hold_signals(false, &saved);
	if (!ok) {
		g_printerr("tlbsim: %s\n", error ? error->message : "cannot write the output");
		g_clear_error(&error);
		code = EXIT_INPUT;
	} else {
		if (!o->quiet) {
			char *summary = report_summary(&meta, result);
			g_printerr("%s\n", summary);
			g_free(summary);
		}
		print_stale(result, inputs.topology);
		if (o->strict && (result->total.stale_hits || result->total.stale_pwc))
			code = EXIT_STALE;
	}
	sim_result_free(result);
out_free_outputs:
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		output_free(files[i]);
	inputs_clear(&inputs);
	return code;
}

/* Characters a shell word may hold unquoted: emitted commands stay readable. */
static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!g_ascii_isalnum(*p) && !strchr("_./=:,+@%-", *p))
			return false;
	return true;
}

static void append_word(GString *line, const char *word)
{
	if (line->len)
		g_string_append_c(line, ' ');
	if (shell_safe(word)) {
		g_string_append(line, word);
	} else {
		char *quoted = g_shell_quote(word);
		g_string_append(line, quoted);
		g_free(quoted);
	}
}

/* This program's absolute path, for commands that run elsewhere. */
static char *program_path(const char *argv0)
{
	char *self = g_file_read_link("/proc/self/exe", NULL);
	if (self)
		return self;
	char *found = strchr(argv0, '/') ? g_strdup(argv0) : g_find_program_in_path(argv0);
	char *path = g_canonicalize_filename(found ? found : argv0, NULL);
	g_free(found);
	return path;
}

static void sweep_config_from(const struct options *o, struct sweep_config *config)
{
	*config = (struct sweep_config){
		.names = {o->topology, o->workload, o->policy},
		.sets = (const char *const *)o->sets,
		.seed = (uint64_t)o->seed,
		.run_ahead = !o->no_run_ahead,
		.max_events = (uint64_t)o->max_events,
		.max_sim_ns = (uint64_t)o->max_sim_ns,
		.max_wall_seconds = o->max_wall_seconds,
		.host_time = o->host_time,
	};
}

/*
 * --emit-commands: one single-run command per grid point, in grid order.
 * To stdout, the first run prints the header and the others --no-header, so
 * that "parallel -k :::: jobs.txt" prints the sweep's CSV.  With --append -o
 * FILE, every command appends to FILE and whichever comes first writes the
 * header (append_locked()).  Built whole before printing: an error prints
 * nothing.
 */
static int emit_commands(const struct options *o, const struct sweep_grid *grid,
			 const char *argv0)
{
	struct sweep_config config;
	sweep_config_from(o, &config);
	GError *error = NULL;
	char *self = program_path(argv0);
	char *output = o->output ? g_canonicalize_filename(o->output, NULL) : NULL;
	GString *all = g_string_new(NULL);
	GString *line = g_string_new(NULL);
	int code = EXIT_OK;
	for (size_t i = 0; i < sweep_grid_size(grid); i++) {
		char **args = sweep_command(grid, &config, i, &error);
		if (!args) {
			g_printerr("tlbsim sweep: %s\n", error->message);
			code = exit_code_for(error);
			g_error_free(error);
			break;
		}
		g_string_truncate(line, 0);
		append_word(line, self);
		for (char **a = args; *a; a++)
			append_word(line, *a);
		g_strfreev(args);
		append_word(line, "-q");
		if (o->strict)
			append_word(line, "--strict");
		if (output) {
			append_word(line, "--append");
			append_word(line, "-o");
			append_word(line, output);
		}
		if (o->no_header || (!output && i > 0))
			append_word(line, "--no-header");
		g_string_append_len(all, line->str, (gssize)line->len);
		g_string_append_c(all, '\n');
	}
	if (code == EXIT_OK && !output_write_fd(STDOUT_FILENO, all->str, all->len)) {
		g_printerr("tlbsim sweep: cannot write the commands to standard output: %s\n",
			   g_strerror(errno));
		code = EXIT_INPUT;
	}
	g_string_free(line, TRUE);
	g_string_free(all, TRUE);
	g_free(output);
	g_free(self);
	return code;
}

static int run_sweep(const struct options *o, const struct sweep_grid *grid)
{
	struct sweep_config config;
	sweep_config_from(o, &config);
	GError *error = NULL;
	/* The leading columns are the same at every grid point: take point 0's. */
	struct sweep_point point;
	sweep_point_init(&point, grid, &config, 0);
	GString *header = g_string_new(NULL);
	report_csv_header(header, (const char *const *)point.label_names);
	sweep_point_clear(&point);

	GString *rows = g_string_new(NULL);
	struct sweep_stats stats;
	FILE *progress = !o->quiet && isatty(STDERR_FILENO) ? stderr : NULL;
	int code = EXIT_OK;
	if (!sweep_run(grid, &config, (unsigned)o->jobs, &interrupted, progress, rows, &stats,
		       &error)) {
		g_printerr("tlbsim sweep: %s\n", error->message);
		code = exit_code_for(error);
		g_error_free(error);
		goto out_free;
	}
	sigset_t saved;
	hold_signals(true, &saved);
	bool ok = write_csv(o, header->str, rows->str, &error);
	hold_signals(false, &saved);
	if (!ok) {
		g_printerr("tlbsim sweep: %s\n", error ? error->message : "cannot write the output");
		g_clear_error(&error);
		code = EXIT_INPUT;
	} else if (stats.stale_runs) {
		g_printerr("tlbsim sweep: stale TLB hits in %zu of %zu runs (the first: run %zu); see "
			   "the stale_hits column\n",
			   stats.stale_runs, sweep_grid_size(grid), stats.first_stale + 1);
		if (o->strict)
			code = EXIT_STALE;
	}
out_free:
	g_string_free(rows, TRUE);
	g_string_free(header, TRUE);
	return code;
}

/* What single runs and sweeps both take. */
static void add_common_entries(GOptionContext *context, struct options *o)
{
	const GOptionEntry entries[] = {
		{"topology", 'T', 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Machine: a path or a bundled name (see --list-topologies)", "NAME"},
		{"workload", 'w', 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Workload: a path or a bundled name (see --list-workloads)", "NAME"},
		{"policy", 'p', 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Flush policy preset or file (default by the machine's architecture: "
		 "linux-4.5, riscv-6.8 or arm64-6.5)",
		 "NAME"},
		{"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o->sets,
		 "Override one JSON field, e.g. workload.threads=24 (repeatable)", "KIND.PATH=VALUE"},
		{"seed", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE, "Random seed (default 1)", "N"},
		{"output", 'o', G_OPTION_FLAG_FILENAME, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Write the CSV here instead of stdout (atomically)", "FILE"},
		{"append", 'a', 0, G_OPTION_ARG_NONE, &o->append,
		 "Append to --output; the header only if the file is empty", NULL},
		{"no-header", 0, 0, G_OPTION_ARG_NONE, &o->no_header, "Omit the CSV header", NULL},
		{"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet,
		 "No summary line (sweep: no progress bar) on stderr", NULL},
		{"strict", 0, 0, G_OPTION_ARG_NONE, &o->strict, "Exit with 3 if any stale TLB hit",
		 NULL},
		{"host-time", 0, 0, G_OPTION_ARG_NONE, &o->host_time,
		 "Fill host_seconds (makes the CSV host-dependent)", NULL},
		{"max-events", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Stop with exit code 4 after N events (default 2000000000; 0: no limit)", "N"},
		{"max-sim-ns", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Stop with exit code 4 after N ns of simulated time (default 3600 s; 0: no limit)",
		 "N"},
		{"max-wall-seconds", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Stop with exit code 4 after S seconds of wall time (default: no limit)", "S"},
		{"no-run-ahead", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &o->no_run_ahead,
		 "One memory access per event (slow; for checking run-ahead)", NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

static void add_single_entries(GOptionContext *context, struct options *o)
{
	const GOptionEntry entries[] = {
		{"per-cpu", 0, G_OPTION_FLAG_FILENAME, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Write per-CPU counters as CSV to FILE", "FILE"},
		{"label", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->labels,
		 "Prepend a column NAME holding VALUE (repeatable; what sweep commands use)",
		 "NAME=VALUE"},
		{"trace", 0, G_OPTION_FLAG_FILENAME, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Write a Chrome/Perfetto trace of the run (JSON) to FILE", "FILE"},
		{"trace-window", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Trace only simulated time START..END ns (END may be empty)", "START:END"},
		{"trace-max-events", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Cut the trace after about N events (default 1000000; 0: no limit)", "N"},
		{"timeseries", 0, G_OPTION_FLAG_FILENAME, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Write counters per --interval as CSV t_ns,cpu,metric,value to FILE", "FILE"},
		{"interval", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Interval of --timeseries in simulated ns", "NS"},
		{"list-topologies", 0, 0, G_OPTION_ARG_NONE, &o->list_topologies,
		 "List bundled topologies", NULL},
		{"list-workloads", 0, 0, G_OPTION_ARG_NONE, &o->list_workloads,
		 "List bundled workloads", NULL},
		{"list-policies", 0, 0, G_OPTION_ARG_NONE, &o->list_policies,
		 "List bundled policy presets", NULL},
		{"version", 'V', 0, G_OPTION_ARG_NONE, &o->version, "Print the version", NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

static void add_sweep_entries(GOptionContext *context, struct options *o)
{
	const GOptionEntry entries[] = {
		{"vary", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->varies,
		 "Run every value of KEY (a --set key, or topology, workload or policy); "
		 "repeatable: the grid is the product, the first --vary outermost",
		 "KEY=V1,V2,..."},
		{"jobs", 'j', 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Run N simulations at once (default: the online CPUs)", "N"},
		{"emit-commands", 0, 0, G_OPTION_ARG_NONE, &o->emit_commands,
		 "Print one tlbsim command per run instead of running (for GNU parallel, Slurm)",
		 NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

/* Checks both modes share; prints the complaint. */
static bool check_common(const struct options *o)
{
	if (o->append && !o->output) {
		/* Not silently to stdout: a sweep script would lose its rows. */
		g_printerr("tlbsim: --append needs --output FILE\n");
		return false;
	}
	return true;
}

/*
 * No two outputs to one file: one would silently replace the other (or, with
 * --append, the CSV would get the per-CPU rows).  Compared by inode where the
 * files exist, by path where they do not (output_same_file()).
 */
static bool check_outputs(const struct options *o)
{
	const struct {
		const char *option, *path;
	} outputs[] = {
		{"--output", o->output},
		{"--per-cpu", o->per_cpu},
		{"--trace", o->trace},
		{"--timeseries", o->timeseries},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(outputs); i++) {
		for (size_t j = i + 1; outputs[i].path && j < G_N_ELEMENTS(outputs); j++) {
			if (outputs[j].path && output_same_file(outputs[i].path, outputs[j].path)) {
				g_printerr("tlbsim: %s %s and %s %s are the same file: one output "
					   "would replace the other\n",
					   outputs[i].option, outputs[i].path, outputs[j].option,
					   outputs[j].path);
				return false;
			}
		}
	}
	return true;
}

/* "START:END" or "START:" in simulated ns. */
static bool parse_window(const char *text, struct trace_options *trace, GError **error)
{
	const char *colon = strchr(text, ':');
	char *end = NULL;
	errno = 0;
	if (colon && g_ascii_isdigit(text[0])) {
		guint64 start = g_ascii_strtoull(text, &end, 10);
		if (end == colon && errno != ERANGE) {
			trace->window_start_ns = start;
			trace->window_end_ns = UINT64_MAX;
			if (colon[1] == '\0')
				return true;
			if (g_ascii_isdigit(colon[1])) {
				errno = 0;
				guint64 stop = g_ascii_strtoull(colon + 1, &end, 10);
				if (*end == '\0' && errno != ERANGE && stop > start) {
					trace->window_end_ns = stop;
					return true;
				}
				if (*end == '\0' && errno != ERANGE) {
					g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
						    "--trace-window %s: END must be after START "
						    "(simulated ns)", text);
					return false;
				}
			}
		}
	}
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
		    "--trace-window %s: expected START:END or START: in simulated ns "
		    "(e.g. 1000000:2000000)", text);
	return false;
}

/* The trace and time-series options, checked before anything runs. */
static bool check_timelines(const struct options *o, struct trace_options *trace,
			    GError **error)
{
	*trace = (struct trace_options){.window_end_ns = UINT64_MAX,
					.max_events = TRACE_MAX_EVENTS_DEFAULT};
	if (!o->trace && (o->trace_window || o->trace_max_events != OPTION_UNSET)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--trace-window and --trace-max-events need --trace FILE");
		return false;
	}
	if (o->trace_window && !parse_window(o->trace_window, trace, error))
		return false;
	/* option_value() took only non-negative --trace-max-events, positive --interval. */
	if (o->trace_max_events != OPTION_UNSET)
		trace->max_events = (uint64_t)o->trace_max_events;
	if (!o->timeseries != (o->interval == OPTION_UNSET)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--timeseries FILE and --interval NS go together");
		return false;
	}
	return true;
}

static int main_single(struct options *o, int argc, char **argv)
{
	if (o->version) {
		printf("tlbsim %s\n", TLBSIM_VERSION);
		return EXIT_OK;
	}
	if (o->list_topologies || o->list_workloads || o->list_policies) {
		if (o->list_topologies)
			list_kind(INPUT_TOPOLOGY, true);
		if (o->list_workloads)
			list_kind(INPUT_WORKLOAD, true);
		if (o->list_policies)
			list_kind(INPUT_POLICY, true);
		return EXIT_OK;
	}
	if (argc > 1) {
		g_printerr("tlbsim: unexpected argument \"%s\" (see --help)\n", argv[1]);
		return EXIT_INPUT;
	}
	if (!o->topology || !o->workload) {
		g_printerr("tlbsim: --topology and --workload are required (see --help)\n");
		return EXIT_INPUT;
	}
	if (!check_common(o) || !check_outputs(o))
		return EXIT_INPUT;
	struct labels labels;
	GError *error = NULL;
	int code = EXIT_INPUT;
	struct trace_options trace;
	if (!labels_parse(o->labels, &labels, &error) || !check_timelines(o, &trace, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
	} else {
		catch_signals();
		code = run(o, &labels, &trace);
	}
	labels_free(&labels);
	return code;
}

static int main_sweep(struct options *o, int argc, char **argv)
{
	if (argc > 1) {
		g_printerr("tlbsim sweep: unexpected argument \"%s\" (see tlbsim sweep --help)\n",
			   argv[1]);
		return EXIT_INPUT;
	}
	if (!check_common(o))
		return EXIT_INPUT;
	if (o->emit_commands && o->output && !o->append) {
		/* Every command writing the same file would keep only the last row. */
		g_printerr("tlbsim sweep: --emit-commands with --output needs --append (each "
			   "command appends its row); without --output the commands print to "
			   "stdout\n");
		return EXIT_INPUT;
	}
	GError *error = NULL;
	struct sweep_grid *grid = sweep_grid_new();
	int code = EXIT_INPUT;
	bool ok = true;
	for (char **v = o->varies; v && *v && ok; v++)
		ok = sweep_grid_add(grid, *v, &error);
	/* Without --policy (or --vary policy=) each run takes its machine's default. */
	struct sweep_config config;
	sweep_config_from(o, &config);
	if (ok)
		ok = sweep_check(grid, &config, &error);
	if (!ok) {
		g_printerr("tlbsim sweep: %s\n", error->message);
		g_error_free(error);
	} else if (o->emit_commands) {
		code = emit_commands(o, grid, argv[0]);
	} else {
		catch_signals();
		code = run_sweep(o, grid);
	}
	sweep_grid_free(grid);
	return code;
}

int main(int argc, char **argv)
{
	struct options o = {.policy = NULL, .seed = 1, .trace_max_events = OPTION_UNSET,
			    .interval = OPTION_UNSET};
	/* Messages carry names and quotes GLib converts to the locale's charset. */
	setlocale(LC_ALL, "");
	o.max_events = (gint64)SIM_DEFAULT_MAX_EVENTS;
	o.max_sim_ns = (gint64)SIM_DEFAULT_MAX_SIM_NS;
	/* "tlbsim sweep ...": drop the word, keep argv[0] for messages. */
	bool sweep = argc > 1 && strcmp(argv[1], "sweep") == 0;
	if (sweep) {
		argv[1] = argv[0];
		argv++;
		argc--;
		g_set_prgname("tlbsim sweep"); /* for --help's usage line */
	}
	GOptionContext *context = g_option_context_new(
		sweep ? "- run a grid of simulations into one CSV" : "- simulate TLB shootdowns");
	/* The options reach option_value() as the main group's user data. */
	g_option_context_set_main_group(context, g_option_group_new(NULL, NULL, NULL, &o, NULL));
	add_common_entries(context, &o);
	if (sweep) {
		add_sweep_entries(context, &o);
		g_option_context_set_summary(
			context, "Example: tlbsim sweep -T haswell-i7 -w munmap "
				 "--vary workload.threads=1,2,4 --vary workload.pages_per_munmap=8,64 "
				 "-o sweep.csv");
	} else {
		add_single_entries(context, &o);
		g_option_context_set_summary(
			context,
			"Example: tlbsim --topology haswell-i7 --workload munmap16 --policy linux-4.5\n"
			"Sweeps: tlbsim sweep --help");
	}
	GError *error = NULL;
	int code = EXIT_OK;
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("tlbsim: %s (see %s--help)\n", error->message, sweep ? "tlbsim sweep " : "");
		g_error_free(error);
		code = EXIT_INPUT;
	} else {
		code = sweep ? main_sweep(&o, argc, argv) : main_single(&o, argc, argv);
	}
	g_option_context_free(context);
	g_free(o.topology);
	g_free(o.workload);
	g_free(o.policy);
	g_strfreev(o.sets);
	g_free(o.output);
	g_free(o.per_cpu);
	g_strfreev(o.labels);
	g_strfreev(o.varies);
	g_free(o.trace);
	g_free(o.trace_window);
	g_free(o.timeseries);
	return code;
}
