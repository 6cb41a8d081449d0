/*
 * tlbsim-native: run a workload file for real on this Linux machine and
 * write what the kernel did in tlbsim's CSV columns (docs/native.md).
 * Exit codes as tlbsim's: 0 success, 1 a failure of the measurement (lost
 * trace events, a tracefs write refused), 2 bad input or an op that fails.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "tlbsim/cli/output.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/native/measure.h"
#include "tlbsim/native/procstat.h"
#include "tlbsim/native/runner.h"
#include "tlbsim/native/tracefs.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/error.h"

struct native_options {
	char *workload;
	char **sets;
	gint64 seed;
	char *output;
	char *per_cpu;
	char **labels;
	gboolean quiet;
	gboolean no_trace;
	gboolean no_header;
	double ghz;
	gint trace_buffer_kb;
};

/* What the hooks read around the window. */
struct window_state {
	unsigned nr_cpus;
	struct tracefs *trace; /* NULL: not traced */
	struct procstat before, after, delta;
	struct tracefs_counts counts;
};

static bool hook_before(void *ctx, GError **error)
{
	struct window_state *s = ctx;
	return procstat_read(&s->before, error) && (!s->trace || tracefs_start(s->trace, error));
}

static bool hook_after(void *ctx, GError **error)
{
	struct window_state *s = ctx;
	if (!procstat_read(&s->after, error))
		return false;
	procstat_delta(&s->before, &s->after, &s->delta);
	return !s->trace || tracefs_stop(s->trace, &s->counts, error);
}

static int fail(GError *error, int code)
{
	fprintf(stderr, "tlbsim-native: %s\n", error->message);
	g_error_free(error);
	return code;
}

/* Only workload.* keys mean something here: no topology, no policy. */
static bool check_sets(char **sets, GError **error)
{
	for (char **s = sets; s && *s; s++) {
		if (!g_str_has_prefix(*s, "workload.")) {
			g_set_error(
			    error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--set %s: only workload.* keys apply natively (the machine and "
			    "the kernel are the real ones, not a topology or a policy file)",
			    *s);
			return false;
		}
	}
	return true;
}

/* --label NAME=VALUE into names and values (g_strfreev both). */
static bool split_labels(char **labels, char ***names, char ***values, GError **error)
{
	GPtrArray *n = g_ptr_array_new(), *v = g_ptr_array_new();
	bool ok = true;
	for (char **l = labels; ok && l && *l; l++) {
		const char *eq = strchr(*l, '=');
		char *name = eq ? g_strndup(*l, (gsize)(eq - *l)) : NULL;
		if (!eq)
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--label %s: expected NAME=VALUE", *l);
		ok = eq && report_check_label(name, error);
		g_ptr_array_add(n, name);
		g_ptr_array_add(v, g_strdup(eq ? eq + 1 : ""));
	}
	g_ptr_array_add(n, NULL);
	g_ptr_array_add(v, NULL);
	*names = (char **)g_ptr_array_free(n, FALSE);
	*values = (char **)g_ptr_array_free(v, FALSE);
	return ok;
}

static char *kernel_policy(void)
{
	struct utsname u;
	return g_strdup_printf("linux-%s", uname(&u) == 0 ? u.release : "unknown");
}

static bool write_outputs(const struct native_options *o, const struct measure *m,
			  char **label_names, GError **error)
{
	GString *csv = g_string_new(NULL);
	if (!o->no_header)
		report_csv_header(csv, (const char *const *)label_names, false);
	measure_csv_row(csv, m);
	bool ok = true;
	if (o->per_cpu) {
		GString *per_cpu = g_string_new(NULL);
		measure_per_cpu_csv(per_cpu, m, (const char *const *)label_names);
		ok = output_write(o->per_cpu, per_cpu->str, per_cpu->len, error);
		g_string_free(per_cpu, TRUE);
	}
	if (ok && o->output)
		ok = output_write(o->output, csv->str, csv->len, error);
	else if (ok && !(ok = output_write_fd(STDOUT_FILENO, csv->str, csv->len)))
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write standard output");
	g_string_free(csv, TRUE);
	return ok;
}

static void summary(const struct measure *m, const struct runner_result *r)
{
	fprintf(stderr, "%s on %s: ", m->workload, m->policy);
	if (m->op)
		fprintf(stderr, "%s x%" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT " ns mean; ", m->op,
			r->op_count, r->op_count ? r->op_ns_sum / r->op_count : 0);
	fprintf(stderr,
		"%" G_GUINT64_FORMAT " accesses by %" G_GUINT64_FORMAT
		" threads; %" G_GUINT64_FORMAT " ms",
		r->accesses, r->threads, r->window_ns / 1000000);
	if (m->trace)
		fprintf(stderr, "; %" G_GUINT64_FORMAT " tlb_flush events", m->trace->total.events);
	fputc('\n', stderr);
}

/* Load, check, run, write; the exit code. */
static int run(const struct native_options *o, unsigned nr_cpus, struct window_state *s,
	       char **label_names, char **label_values)
{
	GError *error = NULL;
	struct inputs in;
	struct inputs_request req = {.names = {[INPUT_WORKLOAD] = o->workload},
				     .sets = (const char *const *)o->sets};
	if (!inputs_load_workload(&req, nr_cpus, &in, &error))
		return fail(error, 2);
	const struct workload *w = in.workload;
	const char *file = in.paths[INPUT_WORKLOAD];
	int code = 0;
	if (!runner_check(w, file, nr_cpus, &error)) {
		code = 2;
		goto out_clear;
	}
	GError *trace_error = NULL;
	if (!o->no_trace &&
	    !(s->trace = tracefs_open(nr_cpus, (unsigned)o->trace_buffer_kb, &trace_error))) {
		if (!o->quiet)
			fprintf(stderr, "tlbsim-native: not tracing: %s\n", trace_error->message);
		g_error_free(trace_error);
	}
	struct runner_options ro = {.seed = (uint64_t)o->seed,
				    .nr_cpus = nr_cpus,
				    .ghz_milli = (unsigned)(o->ghz * 1000 + 0.5)};
	struct runner_hooks hooks = {.before = hook_before, .after = hook_after, .ctx = s};
	struct runner_result r;
	if (!runner_run(w, file, &ro, &hooks, &r, &error)) {
		/* A failed op is the input's (2); a failed measurement (tracefs,
		 * /proc) is 1, like tlbsim's internal errors. */
		code = error->domain == TLBSIM_ERROR && error->code == TLBSIM_ERROR_INVALID ? 2 : 1;
		goto out_clear;
	}
	char *policy = kernel_policy();
	struct measure m = {.workload = in.names[INPUT_WORKLOAD],
			    .policy = policy,
			    .seed = (uint64_t)o->seed,
			    .nr_cpus = nr_cpus,
			    .op =
				w->report_op < NR_OP_KINDS ? workload_op_name(w->report_op) : NULL,
			    .threads = r.threads,
			    .access_tasks = r.access_tasks,
			    .window_ns = r.window_ns,
			    .phase_ns = r.phase_ns,
			    .op_count = r.op_count,
			    .op_ns_sum = r.op_ns_sum,
			    .accesses = r.accesses,
			    .round_accesses = r.round_accesses,
			    .ghz_milli = ro.ghz_milli,
			    .proc = &s->delta,
			    .trace = s->trace ? &s->counts : NULL,
			    .label_values = (const char *const *)label_values};
	if (!write_outputs(o, &m, label_names, &error))
		code = 1;
	else if (!o->quiet)
		summary(&m, &r);
	g_free(policy);
out_clear:
	tracefs_close(s->trace);
	s->trace = NULL;
	inputs_clear(&in);
	return code ? fail(error, code) : 0;
}

static const char *const notes =
    "Runs the workload's tasks as real threads (one process per mm), its ops as\n"
    "real system calls, and writes tlbsim's CSV header with the columns it\n"
    "measured filled (docs/native.md). Tracing tlb:tlb_flush needs root and tracefs.\n"
    "\n"
    "Exit codes: 0 success; 1 the measurement failed (trace events lost, tracefs\n"
    "refused); 2 usage or input error, or an op that failed. Nothing is written\n"
    "unless the run succeeds.";

static bool parse_options(int *argc, char ***argv, struct native_options *o, GError **error)
{
	GOptionEntry entries[] = {
	    {"workload", 'w', 0, G_OPTION_ARG_FILENAME, &o->workload,
	     "Workload: a path or a bundled name", "NAME"},
	    {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o->sets,
	     "Override one workload field, e.g. workload.threads=4 (repeatable)",
	     "workload.PATH=VALUE"},
	    {"seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Random seed (default 1)", "N"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output,
	     "Write the CSV here instead of stdout (atomically)", "FILE"},
	    {"no-header", 0, 0, G_OPTION_ARG_NONE, &o->no_header, "Omit the CSV header", NULL},
	    {"per-cpu", 0, 0, G_OPTION_ARG_FILENAME, &o->per_cpu,
	     "Write per-CPU counts as CSV to FILE", "FILE"},
	    {"label", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->labels,
	     "Prepend a column NAME holding VALUE (repeatable)", "NAME=VALUE"},
	    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "No summary line on stderr", NULL},
	    {"no-trace", 0, 0, G_OPTION_ARG_NONE, &o->no_trace,
	     "Do not use tracefs (the tlb_flush columns stay empty)", NULL},
	    {"trace-buffer-kb", 0, 0, G_OPTION_ARG_INT, &o->trace_buffer_kb,
	     "Trace ring buffer per CPU in KiB (default 8192)", "N"},
	    {"ghz", 0, 0, G_OPTION_ARG_DOUBLE, &o->ghz,
	     "Clock at which compute ops' cycles become wall time (default 2.0)", "G"},
	    G_OPTION_ENTRY_NULL};
	GOptionContext *context = g_option_context_new("- run a tlbsim workload on this Linux");
	g_option_context_add_main_entries(context, entries, NULL);
	g_option_context_set_description(context, notes);
	bool ok = g_option_context_parse(context, argc, argv, error);
	g_option_context_free(context);
	if (!ok)
		return false;
	const char *why = NULL;
	if (*argc > 1)
		why = "unexpected argument (give the workload with -w)";
	else if (!o->workload)
		why = "--workload is required";
	else if (o->ghz < 0.001 || o->ghz > 100)
		why = "--ghz must be in [0.001, 100]";
	else if (o->trace_buffer_kb < 64)
		why = "--trace-buffer-kb must be at least 64";
	if (why)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "%s%s%s", why,
			    *argc > 1 ? ": " : "", *argc > 1 ? (*argv)[1] : "");
	return !why && check_sets(o->sets, error);
}

int main(int argc, char **argv)
{
	struct native_options o = {.seed = 1, .ghz = 2.0, .trace_buffer_kb = 8192};
	GError *error = NULL;
	char **label_names = NULL, **label_values = NULL;
	int code = 2;
	if (!parse_options(&argc, &argv, &o, &error) ||
	    !split_labels(o.labels, &label_names, &label_values, &error)) {
		code = fail(error, 2);
		goto out;
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct window_state s = {.nr_cpus = (unsigned)(online > 0 ? online : 1)};
	procstat_init(&s.before, s.nr_cpus);
	procstat_init(&s.after, s.nr_cpus);
	procstat_init(&s.delta, s.nr_cpus);
	tracefs_counts_init(&s.counts, s.nr_cpus);
	code = run(&o, s.nr_cpus, &s, label_names, label_values);
	procstat_clear(&s.before);
	procstat_clear(&s.after);
	procstat_clear(&s.delta);
	tracefs_counts_clear(&s.counts);
out:
	g_strfreev(label_names);
	g_strfreev(label_values);
	g_free(o.workload);
	g_strfreev(o.sets);
	g_free(o.output);
	g_free(o.per_cpu);
	g_strfreev(o.labels);
	return code;
}
