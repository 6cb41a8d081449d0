/*
 * tlbsim command line: parse options, load inputs, run, write CSV atomically
 * (and the trace and time series, through temporary files renamed at the end).
 * "tlbsim sweep ..." runs a grid of such runs (sweep.h) into one CSV, or
 * prints the equivalent single-run commands.
 * Exit codes: 0 ok, 1 internal error, 2 usage or input error, 3 stale hits
 * with --strict, 4 a run stopped by its event or time budget.
 */
#define _GNU_SOURCE /* flock(), O_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlbsim/error.h"
#include "tlbsim/inputs.h"
#include "tlbsim/report.h"
#include "tlbsim/sim.h"
#include "tlbsim/sweep.h"

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

/*
 * Write @data to a device or a FIFO in place (-o /dev/stdout, a pipe):
 * renaming a temporary file over it would replace the node itself, and as
 * root "-o /dev/null" would replace /dev/null with a regular file.
 */
static bool write_in_place(const char *path, const char *data, size_t len, GError **error)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0;
	while (ok && len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		if (ok) {
			data += n;
			len -= (size_t)n;
		}
	}
	if (!ok)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path,
			    g_strerror(errno));
	if (fd >= 0 && close(fd) != 0 && ok) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path,
			    g_strerror(errno));
		ok = false;
	}
	return ok;
}

/*
 * Write @data to @path through a temporary file and rename(2): all or nothing.
 * The rename replaces whatever @path names, so a device or a FIFO is written
 * in place, and a symbolic link to a file is followed and its target
 * replaced (the link stays).
 */
static bool write_atomically(const char *path, const char *data, size_t len, GError **error)
{
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return write_in_place(path, data, len, error);
	char *target = NULL;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		target = realpath(path, NULL); /* NULL if dangling: then replace the link */
	GError *local = NULL;
	bool written = g_file_set_contents(target ? target : path, data, (gssize)len, &local);
	free(target);
	if (!written) {
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
		return append_locked(o->output, header, rows, error);
	if (o->output) {
		char *all = g_strconcat(header ? header : "", rows, NULL);
		bool ok = write_atomically(o->output, all, strlen(all), error);
		g_free(all);
		return ok;
	}
	printf("%s%s", header ? header : "", rows);
	return fflush(stdout) == 0;
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

static int run(const struct options *o, const struct labels *labels,
	       const struct trace_options *trace)
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
		.label_values = (const char *const *)labels->values->pdata,
	};
	GString *header = g_string_new(NULL);
	GString *row = g_string_new(NULL);
	report_csv_header(header, (const char *const *)labels->names->pdata);
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
	if (ok)
		ok = write_csv(o, header->str, row->str, &error);
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
	if (code == EXIT_OK) {
		fputs(all->str, stdout);
		if (fflush(stdout) != 0) {
			g_printerr("tlbsim sweep: cannot write the commands\n");
			code = EXIT_INPUT;
		}
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
		{"topology", 'T', 0, G_OPTION_ARG_STRING, &o->topology,
		 "Machine: a path or a bundled name (see --list-topologies)", "NAME"},
		{"workload", 'w', 0, G_OPTION_ARG_STRING, &o->workload,
		 "Workload: a path or a bundled name (see --list-workloads)", "NAME"},
		{"policy", 'p', 0, G_OPTION_ARG_STRING, &o->policy,
		 "Flush policy preset or file (default by the machine's architecture: "
		 "linux-4.5, riscv-6.8 or arm64-6.5)",
		 "NAME"},
		{"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o->sets,
		 "Override one JSON field, e.g. workload.threads=24 (repeatable)", "KIND.PATH=VALUE"},
		{"seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Random seed (default 1)", "N"},
		{"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output,
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
		{"max-events", 0, 0, G_OPTION_ARG_INT64, &o->max_events,
		 "Stop with exit code 4 after N events (default 2000000000; 0: no limit)", "N"},
		{"max-sim-ns", 0, 0, G_OPTION_ARG_INT64, &o->max_sim_ns,
		 "Stop with exit code 4 after N ns of simulated time (default 3600 s; 0: no limit)",
		 "N"},
		{"max-wall-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o->max_wall_seconds,
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
		{"per-cpu", 0, 0, G_OPTION_ARG_FILENAME, &o->per_cpu,
		 "Write per-CPU counters as CSV to FILE", "FILE"},
		{"label", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->labels,
		 "Prepend a column NAME holding VALUE (repeatable; what sweep commands use)",
		 "NAME=VALUE"},
		{"trace", 0, 0, G_OPTION_ARG_FILENAME, &o->trace,
		 "Write a Chrome/Perfetto trace of the run (JSON) to FILE", "FILE"},
		{"trace-window", 0, 0, G_OPTION_ARG_STRING, &o->trace_window,
		 "Trace only simulated time START..END ns (END may be empty)", "START:END"},
		{"trace-max-events", 0, 0, G_OPTION_ARG_INT64, &o->trace_max_events,
		 "Cut the trace after about N events (default 1000000; 0: no limit)", "N"},
		{"timeseries", 0, 0, G_OPTION_ARG_FILENAME, &o->timeseries,
		 "Write counters per --interval as CSV t_ns,cpu,metric,value to FILE", "FILE"},
		{"interval", 0, 0, G_OPTION_ARG_INT64, &o->interval,
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
		{"jobs", 'j', 0, G_OPTION_ARG_INT, &o->jobs,
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
	if (o->seed < 0 || o->max_events < 0 || o->max_sim_ns < 0 || o->max_wall_seconds < 0) {
		g_printerr("tlbsim: --seed, --max-events, --max-sim-ns and --max-wall-seconds take "
			   "non-negative numbers\n");
		return false;
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
	if (!check_common(o))
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
	if (o->jobs < 0) {
		g_printerr("tlbsim sweep: --jobs takes a positive number\n");
		return EXIT_INPUT;
	}
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
