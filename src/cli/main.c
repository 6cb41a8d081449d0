/*
 * tlbsim command line: parse options, then run once (single.c), run a grid of
 * runs into one CSV (sweep.h), or print the grid's single-run commands
 * (emit.c); "tlbsim summarize" reads such a CSV (summarize.h); "tlbsim
 * import" makes a workload of a syscall trace (import.h).  Exit codes:
 * cli.h.
 */
#include <locale.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim_commit.h"
#include "tlbsim/cli/emit.h"
#include "tlbsim/cli/import.h"
#include "tlbsim/cli/options.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/cli/single.h"
#include "tlbsim/cli/summarize.h"
#include "tlbsim/cli/sweep.h"

/*
 * Set by SIGINT/SIGTERM; whatever phase the program is in polls it (stop.h)
 * and stops, writing nothing.
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

static int run_sweep(const struct options *o, const struct sweep_grid *grid)
{
	struct sweep_config config;
	options_sweep_config(o, &config);
	GError *error = NULL;
	/* The leading columns are the same at every grid point: take point 0's. */
	struct sweep_point point;
	sweep_point_init(&point, grid, &config, 0);
	GString *header = g_string_new(NULL);
	report_csv_header(header, (const char *const *)point.label_names, config.sample_ns[0] != 0);
	sweep_point_clear(&point);

	GString *rows = g_string_new(NULL);
	struct sweep_stats stats;
	FILE *progress = !o->quiet && isatty(STDERR_FILENO) ? stderr : NULL;
	int code = EXIT_OK;
	if (!sweep_run(grid, &config, (unsigned)o->jobs, &interrupted, progress, rows, &stats,
		       &error)) {
		g_printerr("tlbsim sweep: %s\n", error->message);
		code = cli_exit_code(error);
		g_error_free(error);
		goto out_free;
	}
	struct stop stop = stop_from_now(&interrupted, 0);
	struct output_file *csv = cli_csv_output(
	    o->output, o->append, o->no_header ? NULL : header->str, rows->str, &error);
	bool ok = csv && output_commit_all(&csv, 1, &stop, &error);
	output_free(csv);
	if (!ok) {
		g_printerr("tlbsim sweep: %s\n", error ? error->message : "cannot write the output");
		code = error ? cli_exit_code(error) : EXIT_INPUT;
		g_clear_error(&error);
	} else if (stats.stale_runs) {
		g_printerr("tlbsim sweep: stale TLB hits its policy does not allow in %zu of %zu "
			   "runs (the first: run %zu); see the stale_hits, stale_reuse and "
			   "stale_pwc columns\n",
			   stats.stale_runs, sweep_grid_size(grid), stats.first_stale + 1);
		if (o->strict)
			code = EXIT_STALE;
	}
out_free:
	g_string_free(rows, TRUE);
	g_string_free(header, TRUE);
	return code;
}

static int main_single(struct options *o, int argc, char **argv)
{
	if (o->version) {
		printf("tlbsim %s (%s)\n", TLBSIM_VERSION, TLBSIM_COMMIT);
		return EXIT_OK;
	}
	if (o->list_topologies || o->list_workloads || o->list_policies) {
		if (o->list_topologies)
			single_list(INPUT_TOPOLOGY, true);
		if (o->list_workloads)
			single_list(INPUT_WORKLOAD, true);
		if (o->list_policies)
			single_list(INPUT_POLICY, true);
		return EXIT_OK;
	}
	if (argc > 1)
		return options_unexpected(o, "tlbsim", argv[1]);
	if (o->list_keys)
		return single_list_keys(o);
	if (!o->topology || !o->workload) {
		g_printerr("tlbsim: %s: a run needs --topology (-T) and --workload (-w) "
			   "(see --list-topologies, --list-workloads)\n",
			   !o->topology && !o->workload ? "--topology and --workload are missing"
			   : !o->topology		   ? "--topology is missing"
							   : "--workload is missing");
		return EXIT_INPUT;
	}
	if (!options_check_common(o) || !options_check_outputs(o))
		return EXIT_INPUT;
	struct labels labels;
	GError *error = NULL;
	int code = EXIT_INPUT;
	struct trace_options trace;
	if (!options_labels(o->labels, &labels, &error) ||
	    !options_check_timelines(o, &trace, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		g_error_free(error);
	} else {
		catch_signals();
		code = single_run(o, &labels, &trace, &interrupted);
	}
	options_labels_free(&labels);
	return code;
}

static int main_sweep(struct options *o, int argc, char **argv)
{
	if (argc > 1)
		return options_unexpected(o, "tlbsim sweep", argv[1]);
	if (!options_check_common(o))
		return EXIT_INPUT;
	if (o->stat) {
		/* Blocks of runs done at once would interleave on stderr. */
		g_printerr("tlbsim sweep: --stat is for single runs; the commands of "
			   "--emit-commands take it (tlbsim --stat ...), or compare the sweep's "
			   "CSV rows\n");
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
	if (ok && o->replicates != OPTION_UNSET)
		ok = sweep_grid_add_replicates(grid, (uint64_t)o->seed, (uint64_t)o->replicates,
					       &error);
	/* Without --policy (or --vary policy=) each run takes its machine's default. */
	struct sweep_config config;
	options_sweep_config(o, &config);
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
	struct options o;
	options_init(&o);
	/* Messages carry names and quotes GLib converts to the locale's charset. */
	setlocale(LC_ALL, "");
	if (argc > 1 && strcmp(argv[1], "summarize") == 0) {
		/* Its own options: it reads a CSV and runs nothing. */
		argv[1] = argv[0];
		g_set_prgname("tlbsim summarize");
		return summarize_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "import") == 0) {
		/* A trace in, a workload out: its own options, no run. */
		argv[1] = argv[0];
		g_set_prgname("tlbsim import");
		return import_main(argc - 1, argv + 1);
	}
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
	options_add_common(context, &o);
	if (sweep) {
		options_add_sweep(context, &o);
		g_option_context_set_summary(
			context, "Example: tlbsim sweep -T haswell-i7 -w munmap "
				 "--vary workload.threads=1,2,4 --vary workload.pages_per_munmap=8,64 "
				 "-o sweep.csv");
	} else {
		options_add_single(context, &o);
		g_option_context_set_summary(
			context,
			"Example: tlbsim --topology haswell-i7 --workload munmap16 --policy linux-4.5\n"
			"Sweeps: tlbsim sweep --help; their replicates: tlbsim summarize --help;\n"
			"workloads from syscall traces: tlbsim import --help");
	}
	g_option_context_set_description(context, options_help_notes(sweep));
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
	options_free(&o);
	return code;
}
