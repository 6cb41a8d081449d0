/*
 * The tlbsim command's options (options.h).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/options.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/machine/cache.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/error.h"

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
	STRING_OPTION("sample-plan", 0, sample_plan),
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
	{"threads", 0, VALUE_INT, offsetof(struct options, threads), 0, 1024,
	 "a positive number of host threads, or 0 for the online CPUs"},
	{"replicates", 0, VALUE_INT64, offsetof(struct options, replicates), 1, SWEEP_MAX_RUNS,
	 "a positive decimal integer (runs per grid point, seeds --seed, --seed + 1, ...)"},
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

bool options_given(const struct options *o, const char *name)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(value_options); i++)
		if (strcmp(value_options[i].name, name) == 0)
			return o->given & (G_GUINT64_CONSTANT(1) << i);
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

void options_init(struct options *o)
{
	*o = (struct options){.seed = 1,
			      .max_events = (gint64)SIM_DEFAULT_MAX_EVENTS,
			      .max_sim_ns = (gint64)SIM_DEFAULT_MAX_SIM_NS,
			      .trace_max_events = OPTION_UNSET,
			      .interval = OPTION_UNSET,
			      .replicates = OPTION_UNSET};
}

void options_free(struct options *o)
{
	g_free(o->topology);
	g_free(o->workload);
	g_free(o->policy);
	g_strfreev(o->sets);
	g_free(o->output);
	g_free(o->per_cpu);
	g_strfreev(o->labels);
	g_strfreev(o->varies);
	g_free(o->trace);
	g_free(o->trace_window);
	g_free(o->timeseries);
	g_free(o->sample_plan);
}

void options_labels_free(struct labels *labels)
{
	g_ptr_array_free(labels->names, TRUE);
	g_ptr_array_free(labels->values, TRUE);
}

bool options_labels(char **args, struct labels *labels, GError **error)
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

void options_sweep_config(const struct options *o, struct sweep_config *config)
{
	*config = (struct sweep_config){
		.names = {o->topology, o->workload, o->policy},
		.sets = (const char *const *)o->sets,
		.seed = (uint64_t)o->seed,
		/* With --replicates, --seed is the first replicate's seed. */
		.seed_given = options_given(o, "seed") && o->replicates == OPTION_UNSET,
		.run_ahead = !o->no_run_ahead,
		.max_events = (uint64_t)o->max_events,
		.max_sim_ns = (uint64_t)o->max_sim_ns,
		.max_wall_seconds = o->max_wall_seconds,
		.host_time = o->host_time,
		.threads = (unsigned)o->threads,
	};
	options_sample_plan(o, config->sample_ns);
}

/* "PERIOD:WARM:WINDOW", decimal simulated ns up to 10^15 (in cycles they
 * fit 64 bits at any clock), WINDOW > 0, WARM + WINDOW < PERIOD. */
static bool parse_sample_plan(const char *text, uint64_t plan_ns[3])
{
	char **parts = g_strsplit(text, ":", -1);
	bool ok = g_strv_length(parts) == 3;
	for (unsigned i = 0; ok && i < 3; i++) {
		guint64 v;
		ok = g_ascii_string_to_unsigned(parts[i], 10, 0, UINT64_C(1000000000000000), &v,
						NULL);
		plan_ns[i] = v;
	}
	g_strfreev(parts);
	return ok && plan_ns[2] > 0 && plan_ns[1] + plan_ns[2] < plan_ns[0];
}

void options_sample_plan(const struct options *o, uint64_t plan_ns[3])
{
	plan_ns[0] = plan_ns[1] = plan_ns[2] = 0;
	if (!o->sample)
		return;
	plan_ns[0] = SIM_SAMPLE_PERIOD_NS;
	plan_ns[1] = SIM_SAMPLE_WARM_NS;
	plan_ns[2] = SIM_SAMPLE_WINDOW_NS;
	if (o->sample_plan && !parse_sample_plan(o->sample_plan, plan_ns))
		g_assert_not_reached(); /* options_check_common() refused it */
}

/* What single runs and sweeps both take. */
void options_add_common(GOptionContext *context, struct options *o)
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
		{"strict", 0, 0, G_OPTION_ARG_NONE, &o->strict,
		 "Exit with 3 on a stale hit on a reused frame or a stale PDE, or on any stale "
		 "hit under a policy that waits for its targets",
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
		{"no-run-ahead", 0, 0, G_OPTION_ARG_NONE, &o->no_run_ahead,
		 "One memory access per event: the same results, slowly (checks run-ahead)", NULL},
		{"threads", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Host threads per run (default: the online CPUs, shared among a sweep's --jobs); "
		 "the results are the same for any N",
		 "N"},
		{"sample", 0, 0, G_OPTION_ARG_NONE, &o->sample,
		 "Simulate a sample of the readers' accesses and estimate the rest, with a 95% "
		 "interval (columns sample_windows, <column>_rel_ci95)",
		 NULL},
		{"sample-plan", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "--sample's period, warming and measured window in simulated ns "
		 "(default 200000:20000:5000)",
		 "PERIOD:WARM:WINDOW"},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

void options_add_single(GOptionContext *context, struct options *o)
{
	const GOptionEntry entries[] = {
		{"per-cpu", 0, G_OPTION_FLAG_FILENAME, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Write per-CPU counters as CSV to FILE", "FILE"},
		{"stat", 0, 0, G_OPTION_ARG_NONE, &o->stat,
		 "Print the run's counters like perf stat on stderr (also with -q)", NULL},
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
		{"list-keys", 0, 0, G_OPTION_ARG_NONE, &o->list_keys,
		 "List the keys --set can change in the inputs -T, -w, -p name", NULL},
		{"version", 'V', 0, G_OPTION_ARG_NONE, &o->version, "Print the version", NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

void options_add_sweep(GOptionContext *context, struct options *o)
{
	const GOptionEntry entries[] = {
		{"vary", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->varies,
		 "Run every value of KEY (a --set key, topology, workload, policy or seed; "
		 "A..B is a range of integers); repeatable: the grid is the product, the first "
		 "--vary outermost",
		 "KEY=V1,V2,..."},
		{"replicates", 0, 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Run each grid point N times, seeds --seed .. --seed+N-1 (an innermost "
		 "--vary seed); summarize the CSV with tlbsim summarize",
		 "N"},
		{"jobs", 'j', 0, G_OPTION_ARG_CALLBACK, OPTION_VALUE,
		 "Run N simulations at once (default: the online CPUs)", "N"},
		{"emit-commands", 0, 0, G_OPTION_ARG_NONE, &o->emit_commands,
		 "Print one tlbsim command per run instead of running (for GNU parallel, Slurm)",
		 NULL},
		/* Known, to be refused with a reason (main.c) rather than as unknown. */
		{"stat", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &o->stat, NULL, NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	g_option_context_add_main_entries(context, entries, NULL);
}

/* The first of @args (--set or --vary values) without '=', or NULL. */
static const char *without_value(char **args)
{
	for (char **a = args; a && *a; a++)
		if (!strchr(*a, '='))
			return *a;
	return NULL;
}

int options_unexpected(const struct options *o, const char *prog, const char *extra)
{
	const char *set = without_value(o->sets), *vary = without_value(o->varies);
	if (set || vary) {
		const char *option = set ? "--set" : "--vary";
		const char *key = set ? set : vary;
		g_printerr("%s: %s %s has no value and \"%s\" is left over: write %s %s=%s "
			   "(KEY=VALUE, one word)\n",
			   prog, option, key, extra, option, key, extra);
	} else {
		g_printerr("%s: unexpected argument \"%s\": every input is given by an option "
			   "(see %s --help)\n",
			   prog, extra, prog);
	}
	return EXIT_INPUT;
}

const char *options_help_notes(bool sweep)
{
	static const char notes[] =
	    "Needs: --append needs --output; --timeseries and --interval go together;\n"
	    "--trace-window and --trace-max-events need --trace.\n"
	    "\n"
	    "Bare names (-T haswell-i7) are looked up in $TLBSIM_DATADIR/<kind>/, then in\n"
	    "../share/tlbsim/<kind>/ beside the binary, then in the source tree tlbsim was\n"
	    "built from, then in <prefix>/share/tlbsim/<kind>/;\n"
	    "<kind> is topologies, workloads or policies.  A name with a '/' is a path.\n"
	    "\n"
	    "TLBSIM_SIMD=avx512|avx2|sse2|none caps the vector instructions of the data\n"
	    "caches' set operations (default: the host's widest); results are the same.\n"
	    "\n"
	    "Exit codes: 0 success; 1 internal error; 2 usage or input error; 3 stale TLB hits\n"
	    "under --strict; 4 a budget (--max-events, --max-sim-ns, --max-wall-seconds) ran\n"
	    "out; 130 interrupted by SIGINT or SIGTERM.  Nothing is written unless the run\n"
	    "succeeds.\n";
	static const char sweep_notes[] =
		"Each --vary KEY=V1,V2,... is an axis; the grid is their product, the first\n"
		"--vary outermost.  A value A..B is every integer from A to B (--vary\n"
		"seed=1..10, --vary workload.threads=1,2,4..6).  --emit-commands with --output\n"
		"needs --append.\n"
		"\n"
		"Exit codes: as a single run's (2 usage or input error, 3 stale hits under\n"
		"--strict, 4 a budget, 130 interrupted); nothing is written unless every run\n"
		"succeeds.\n";
	return sweep ? sweep_notes : notes;
}

/* Checks both modes share; prints the complaint. */
bool options_check_common(const struct options *o)
{
	const char *simd = g_getenv("TLBSIM_SIMD");
	if (simd && !cache_simd_valid(simd)) {
		/* A typo would otherwise time the wrong code without a word. */
		g_autofree char *choices = cache_simd_choices();
		g_printerr("tlbsim: TLBSIM_SIMD=%s: expected %s (the most the data caches' set "
			   "operations may use), or unset\n",
			   simd, choices);
		return false;
	}
	if (o->append && !o->output) {
		/* Not silently to stdout: a sweep script would lose its rows. */
		g_printerr("tlbsim: --append needs --output FILE\n");
		return false;
	}
	uint64_t plan_ns[3];
	if (o->sample_plan && !o->sample) {
		g_printerr("tlbsim: --sample-plan needs --sample\n");
		return false;
	}
	if (o->sample_plan && !parse_sample_plan(o->sample_plan, plan_ns)) {
		g_printerr("tlbsim: --sample-plan %s: expected PERIOD:WARM:WINDOW in simulated ns, "
			   "WINDOW > 0 and WARM + WINDOW < PERIOD (e.g. 1000000:10000:10000)\n",
			   o->sample_plan);
		return false;
	}
	if (o->sample && o->no_run_ahead) {
		/* Skipping is a way of running ahead. */
		g_printerr("tlbsim: --sample and --no-run-ahead do not go together: sampling "
			   "skips accesses when a CPU runs ahead\n");
		return false;
	}
	return true;
}

/*
 * No two outputs to one file: one would silently replace the other (or, with
 * --append, the CSV would get the per-CPU rows).  Compared by inode where the
 * files exist, by path where they do not (output_same_file()).
 */
bool options_check_outputs(const struct options *o)
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
bool options_check_timelines(const struct options *o, struct trace_options *trace,
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
	if (o->sample && (o->trace || o->timeseries)) {
		/* They would show skipped spans as time the CPU spent doing nothing. */
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--sample does not go with %s: a timeline of a sampled run would show "
			    "the skipped accesses as missing",
			    o->trace ? "--trace" : "--timeseries");
		return false;
	}
	if (!o->timeseries != (o->interval == OPTION_UNSET)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--timeseries FILE and --interval NS go together");
		return false;
	}
	return true;
}
