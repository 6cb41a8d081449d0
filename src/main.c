/*
 * tlbsim command line: parse options, load inputs, run, write CSV atomically
 * (and the trace and time series, through temporary files renamed at the end).
 * Exit codes: 0 ok, 1 internal error, 2 usage or input error, 3 stale hits
 * with --strict, 4 a run stopped by its event or time budget.
 */
#define _GNU_SOURCE /* flock(), O_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>
#include "tlbsim/error.h"
#include "tlbsim/inputs.h"
#include "tlbsim/report.h"
#include "tlbsim/sim.h"

enum exit_code {
	EXIT_OK = 0,
	EXIT_INTERNAL = 1,
	EXIT_INPUT = 2,
	EXIT_STALE = 3,
	EXIT_BUDGET = 4,
	EXIT_INTERRUPTED = 130, /* 128 + SIGINT, as shells report it */
};

/* Set by SIGINT/SIGTERM; the run stops at its next slice, writing nothing. */
static volatile sig_atomic_t interrupted;

static void on_signal(int signo)
{
	(void)signo;
	interrupted = 1;
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* While the outputs are written, a signal waits: no half-renamed file. */
static void hold_signals(bool hold, sigset_t *saved)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (hold)
		sigprocmask(SIG_BLOCK, &set, saved);
	else
		sigprocmask(SIG_SETMASK, saved, NULL);
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
	char *trace;
	char *trace_window;
	gint64 trace_max_events; /* OPTION_UNSET: not given */
	char *timeseries;
	gint64 interval;         /* OPTION_UNSET: not given */
};

#define OPTION_UNSET G_MININT64
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

/* Write @data to @path through a temporary file and rename(2): all or nothing. */
static bool write_atomically(const char *path, const char *data, size_t len, GError **error)
{
	GError *local = NULL;
	if (!g_file_set_contents(path, data, (gssize)len, &local)) {
		/* GLib's message names its temporary file; the user knows @path. */
		const char *why = "I/O error";
		if (local->code == G_FILE_ERROR_NOENT || local->code == G_FILE_ERROR_NOTDIR)
			why = "no such directory";
		else if (local->code == G_FILE_ERROR_ACCES || local->code == G_FILE_ERROR_PERM)
			why = "permission denied";
		else if (local->code == G_FILE_ERROR_NOSPC)
			why = "no space left on the device";
		else if (local->code == G_FILE_ERROR_ISDIR)
			why = "it is a directory";
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path, why);
		g_error_free(local);
		return false;
	}
	return true;
}

/*
 * Append one block under an exclusive lock, writing the header only if the
 * file is empty, in a single write(2): concurrent runs appending to one CSV
 * never interleave or duplicate the header.
 */
static bool append_locked(const char *path, const char *header, const char *row,
			  GError **error)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: %s", path, g_strerror(errno));
		return false;
	}
	bool ok = false;
	if (flock(fd, LOCK_EX) == 0) {
		off_t size = lseek(fd, 0, SEEK_END);
		char *block = g_strconcat(size == 0 && header ? header : "", row, NULL);
		size_t len = strlen(block);
		ok = write(fd, block, len) == (ssize_t)len;
		g_free(block);
	}
	if (!ok)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: %s", path, g_strerror(errno));
	close(fd);
	return ok;
}

/*
 * An output file written during the run: a temporary file in the target's
 * directory, renamed over the target only when everything succeeded, as
 * g_file_set_contents() does for the CSV.
 */
struct pending_file {
	const char *path; /* NULL: not requested */
	char *tmp;
	FILE *fp;
};

static const char *io_reason(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return "no such directory";
	case EACCES:
	case EPERM:
		return "permission denied";
	case ENOSPC:
		return "no space left on the device";
	case EISDIR:
		return "it is a directory";
	default:
		return g_strerror(err);
	}
}

static bool pending_open(struct pending_file *f, const char *path, GError **error)
{
	f->path = path;
	if (!path)
		return true;
	if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path,
			    io_reason(EISDIR));
		return false;
	}
	f->tmp = g_strdup_printf("%s.XXXXXX", path);
	int fd = g_mkstemp_full(f->tmp, O_WRONLY | O_CLOEXEC, 0666);
	if (fd >= 0)
		f->fp = fdopen(fd, "w");
	if (!f->fp) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path,
			    io_reason(errno));
		if (fd >= 0)
			close(fd);
		g_free(f->tmp);
		f->tmp = NULL;
		return false;
	}
	return true;
}

/* Close the stream; false (and the reason) if any write failed. */
static bool pending_close(struct pending_file *f, GError **error)
{
	if (!f->fp)
		return true;
	bool ok = !ferror(f->fp);
	ok = fclose(f->fp) == 0 && ok;
	f->fp = NULL;
	if (!ok)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", f->path,
			    io_reason(errno));
	return ok;
}

static bool pending_commit(struct pending_file *f, GError **error)
{
	if (!f->tmp)
		return true;
	if (rename(f->tmp, f->path) != 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", f->path,
			    io_reason(errno));
		return false;
	}
	g_free(f->tmp);
	f->tmp = NULL;
	return true;
}

/* Nothing of @f is left behind. */
static void pending_discard(struct pending_file *f)
{
	if (f->fp)
		fclose(f->fp);
	f->fp = NULL;
	if (f->tmp)
		unlink(f->tmp);
	g_free(f->tmp);
	f->tmp = NULL;
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

static int run(const struct options *o, const struct trace_options *trace)
{
	GError *error = NULL;
	struct inputs inputs;
	struct pending_file trace_file = {0}, series_file = {0};
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
	if (!pending_open(&trace_file, o->trace, &error) ||
	    !pending_open(&series_file, o->timeseries, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
		code = EXIT_INPUT;
		goto out_discard;
	}
	input.trace_out = trace_file.fp;
	input.timeseries_out = series_file.fp;
	gint64 start = g_get_monotonic_time();
	struct sim_result *result = sim_run(&input, &error);
	double host_seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	if (result && (!pending_close(&trace_file, &error) ||
		       !pending_close(&series_file, &error))) {
		sim_result_free(result);
		result = NULL;
	}
	if (!result) {
		g_printerr("tlbsim: %s\n", error->message);
		code = exit_code_for(error);
		g_error_free(error);
		goto out_discard;
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
	};
	GString *header = g_string_new(NULL);
	GString *row = g_string_new(NULL);
	report_csv_header(header);
	report_csv_row(row, &meta, result);
	bool ok = true, per_cpu_written = false;
	sigset_t saved;
	hold_signals(true, &saved);
	if (o->per_cpu) {
		GString *per_cpu = g_string_new(NULL);
		report_per_cpu_csv(per_cpu, &meta, result);
		ok = per_cpu_written =
			write_atomically(o->per_cpu, per_cpu->str, per_cpu->len, &error);
		g_string_free(per_cpu, TRUE);
	}
	if (ok && o->output && o->append) {
		ok = append_locked(o->output, o->no_header ? NULL : header->str, row->str, &error);
	} else if (ok && o->output) {
		GString *all = g_string_new(o->no_header ? "" : header->str);
		g_string_append(all, row->str);
		ok = write_atomically(o->output, all->str, all->len, &error);
		g_string_free(all, TRUE);
	} else if (ok) {
		printf("%s%s", o->no_header ? "" : header->str, row->str);
		ok = fflush(stdout) == 0;
	}
	ok = ok && pending_commit(&trace_file, &error) && pending_commit(&series_file, &error);
	hold_signals(false, &saved);
	if (!ok) {
		g_printerr("tlbsim: %s\n", error ? error->message : "cannot write the output");
		g_clear_error(&error);
		code = EXIT_INPUT;
		/* All or nothing: no per-CPU file without its run's row. */
		if (per_cpu_written)
			unlink(o->per_cpu);
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
	g_string_free(header, TRUE);
	g_string_free(row, TRUE);
	sim_result_free(result);
out_discard:
	pending_discard(&trace_file);
	pending_discard(&series_file);
	inputs_clear(&inputs);
	return code;
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
	if (o->trace_max_events != OPTION_UNSET) {
		if (o->trace_max_events < 0) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "--trace-max-events %" G_GINT64_FORMAT
				    ": expected a number of events (0: no limit)",
				    o->trace_max_events);
			return false;
		}
		trace->max_events = (uint64_t)o->trace_max_events;
	}
	if (!o->timeseries != (o->interval == OPTION_UNSET)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--timeseries FILE and --interval NS go together");
		return false;
	}
	if (o->timeseries && o->interval <= 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "--interval %" G_GINT64_FORMAT
			    ": expected a positive number of simulated nanoseconds",
			    o->interval);
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct options o = {.policy = NULL, .seed = 1, .trace_max_events = OPTION_UNSET,
			    .interval = OPTION_UNSET};
	struct trace_options trace;
	/* Messages carry names and quotes GLib converts to the locale's charset. */
	setlocale(LC_ALL, "");
	GOptionEntry entries[] = {
		{"topology", 'T', 0, G_OPTION_ARG_STRING, &o.topology,
		 "Machine: a path or a bundled name (see --list-topologies)", "NAME"},
		{"workload", 'w', 0, G_OPTION_ARG_STRING, &o.workload,
		 "Workload: a path or a bundled name (see --list-workloads)", "NAME"},
		{"policy", 'p', 0, G_OPTION_ARG_STRING, &o.policy,
		 "Flush policy preset or file (default linux-4.5)", "NAME"},
		{"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o.sets,
		 "Override one JSON field, e.g. workload.threads=24 (repeatable)", "KIND.PATH=VALUE"},
		{"seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Random seed (default 1)", "N"},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output,
		 "Write the CSV here instead of stdout (atomically)", "FILE"},
		{"append", 'a', 0, G_OPTION_ARG_NONE, &o.append,
		 "Append to --output; the header only if the file is empty", NULL},
		{"no-header", 0, 0, G_OPTION_ARG_NONE, &o.no_header, "Omit the CSV header", NULL},
		{"per-cpu", 0, 0, G_OPTION_ARG_FILENAME, &o.per_cpu,
		 "Write per-CPU counters as CSV to FILE", "FILE"},
		{"quiet", 'q', 0, G_OPTION_ARG_NONE, &o.quiet, "No summary line on stderr", NULL},
		{"strict", 0, 0, G_OPTION_ARG_NONE, &o.strict, "Exit with 3 if any stale TLB hit", NULL},
		{"host-time", 0, 0, G_OPTION_ARG_NONE, &o.host_time,
		 "Fill host_seconds (makes the CSV host-dependent)", NULL},
		{"max-events", 0, 0, G_OPTION_ARG_INT64, &o.max_events,
		 "Stop with exit code 4 after N events (default 2000000000; 0: no limit)", "N"},
		{"max-sim-ns", 0, 0, G_OPTION_ARG_INT64, &o.max_sim_ns,
		 "Stop with exit code 4 after N ns of simulated time (default 3600 s; 0: no limit)",
		 "N"},
		{"max-wall-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o.max_wall_seconds,
		 "Stop with exit code 4 after S seconds of wall time (default: no limit)", "S"},
		{"no-run-ahead", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &o.no_run_ahead,
		 "One memory access per event (slow; for checking run-ahead)", NULL},
		{"list-topologies", 0, 0, G_OPTION_ARG_NONE, &o.list_topologies,
		 "List bundled topologies", NULL},
		{"list-workloads", 0, 0, G_OPTION_ARG_NONE, &o.list_workloads,
		 "List bundled workloads", NULL},
		{"list-policies", 0, 0, G_OPTION_ARG_NONE, &o.list_policies,
		 "List bundled policy presets", NULL},
		{"trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace,
		 "Write a Chrome/Perfetto trace of the run (JSON) to FILE", "FILE"},
		{"trace-window", 0, 0, G_OPTION_ARG_STRING, &o.trace_window,
		 "Trace only simulated time START..END ns (END may be empty)", "START:END"},
		{"trace-max-events", 0, 0, G_OPTION_ARG_INT64, &o.trace_max_events,
		 "Cut the trace after about N events (default 1000000; 0: no limit)", "N"},
		{"timeseries", 0, 0, G_OPTION_ARG_FILENAME, &o.timeseries,
		 "Write counters per --interval as CSV t_ns,cpu,metric,value to FILE", "FILE"},
		{"interval", 0, 0, G_OPTION_ARG_INT64, &o.interval,
		 "Interval of --timeseries in simulated ns", "NS"},
		{"version", 'V', 0, G_OPTION_ARG_NONE, &o.version, "Print the version", NULL},
		{NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	o.max_events = 2000000000;
	o.max_sim_ns = INT64_C(3600) * 1000000000;
	GOptionContext *context = g_option_context_new("- simulate TLB shootdowns");
	g_option_context_set_summary(
		context, "Example: tlbsim --topology haswell-i7 --workload munmap16 --policy linux-4.5");
	g_option_context_add_main_entries(context, entries, NULL);
	GError *error = NULL;
	int code = EXIT_OK;
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("tlbsim: %s (see --help)\n", error->message);
		g_error_free(error);
		code = EXIT_INPUT;
		goto out;
	}
	if (o.version) {
		printf("tlbsim %s\n", TLBSIM_VERSION);
	} else if (o.list_topologies || o.list_workloads || o.list_policies) {
		if (o.list_topologies)
			list_kind(INPUT_TOPOLOGY, true);
		if (o.list_workloads)
			list_kind(INPUT_WORKLOAD, true);
		if (o.list_policies)
			list_kind(INPUT_POLICY, true);
	} else if (argc > 1) {
		g_printerr("tlbsim: unexpected argument \"%s\" (see --help)\n", argv[1]);
		code = EXIT_INPUT;
	} else if (!o.topology || !o.workload) {
		g_printerr("tlbsim: --topology and --workload are required (see --help)\n");
		code = EXIT_INPUT;
	} else if (o.append && !o.output) {
		/* Not silently to stdout: a sweep script would lose its rows. */
		g_printerr("tlbsim: --append needs --output FILE\n");
		code = EXIT_INPUT;
	} else if (o.seed < 0 || o.max_events < 0 || o.max_sim_ns < 0 || o.max_wall_seconds < 0) {
		g_printerr("tlbsim: --seed, --max-events, --max-sim-ns and --max-wall-seconds take "
			   "non-negative numbers\n");
		code = EXIT_INPUT;
	} else if (!check_timelines(&o, &trace, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
		code = EXIT_INPUT;
	} else {
		catch_signals();
		code = run(&o, &trace);
	}
out:
	g_option_context_free(context);
	g_free(o.topology);
	g_free(o.workload);
	g_free(o.policy);
	g_strfreev(o.sets);
	g_free(o.output);
	g_free(o.per_cpu);
	g_free(o.trace);
	g_free(o.trace_window);
	g_free(o.timeseries);
	return code;
}
