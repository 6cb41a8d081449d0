/*
 * One run of the tlbsim command (single.h).
 */
#include <string.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/cli/single.h"
#include "tlbsim/cli/stat.h"
#include "tlbsim/sim/sample.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/error.h"

int single_list(enum inputs_kind kind, bool with_descriptions)
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

int single_list_keys(const struct options *o)
{
	if (!o->topology && !o->workload && !o->policy) {
		g_printerr("tlbsim: --list-keys lists the keys of the inputs given by -T, -w or "
			   "-p: name at least one\n");
		return EXIT_INPUT;
	}
	const struct inputs_request request = {
		.names = {o->topology, o->workload, o->policy},
		.sets = (const char *const *)o->sets,
	};
	GError *error = NULL;
	char **keys = inputs_keys(&request, &error);
	if (!keys) {
		g_printerr("tlbsim: %s\n", error->message);
		int code = cli_exit_code(error);
		g_error_free(error);
		return code;
	}
	for (char **k = keys; *k; k++)
		printf("%s\n", *k);
	g_strfreev(keys);
	return EXIT_OK;
}

/*
 * The threads column counts the tasks that made an access (the harness's
 * -t): when that is fewer than the tasks with an access op, what the
 * workload asked for (access_tasks), say why.
 */
static void print_threads_note(const struct sim_result *r)
{
	if (r->accessor_threads >= r->access_tasks)
		return;
	uint64_t none = r->access_tasks - r->accessor_threads, idle = r->access_tasks_idle;
	GString *why = g_string_new(NULL);
	if (none > idle)
		g_string_append_printf(why, "%" G_GUINT64_FORMAT " began their access loop only "
				       "after it had ended (its flag clear, or no rounds)",
				       none - idle);
	if (idle)
		g_string_append_printf(why, "%s%" G_GUINT64_FORMAT " never reached theirs",
				       none > idle ? "; " : "", idle);
	if (r->tasks > r->nr_cpus)
		g_string_append_printf(why, "; %" G_GUINT64_FORMAT " tasks shared %u CPUs, and a "
				       "runnable task waits for the running one's scheduler slice",
				       r->tasks, r->nr_cpus);
	g_printerr("tlbsim: threads is %" G_GUINT64_FORMAT ", not the %" G_GUINT64_FORMAT
		   " tasks with an access op (access_tasks): %s\n",
		   r->accessor_threads, r->access_tasks, why->str);
	g_string_free(why, TRUE);
}

/*
 * A sampled run's figures are estimates: say how many windows they rest on
 * and the accesses' interval, or that there is none (fewer than
 * SAMPLE_MIN_WINDOWS windows), or that nothing was skipped.  On SMT cores
 * whose CPUs readers share, the interval does not cover what sampling
 * moves (docs/performance.md, "Sampled mode"): say so where it applies.
 */
static void print_sample_note(const struct sim_result *r, const struct topology *topo)
{
	if (!r->sampled)
		return;
	if (r->sample_windows == 0) {
		g_printerr("tlbsim: --sample skipped nothing (no settled open-ended access loop): "
			   "every figure is the exact run's\n");
		return;
	}
	uint64_t ppm = r->sample_error_ppm[SAMPLE_ACCESSES];
	if (ppm == SAMPLE_NO_ERROR) {
		g_printerr("tlbsim: --sample estimated from %u window%s: no interval under %u; a "
			   "shorter --sample-plan period gives more\n",
			   r->sample_windows, r->sample_windows == 1 ? "" : "s", SAMPLE_MIN_WINDOWS);
		return;
	}
	uint64_t hundredths = (ppm + 50) / 100; /* of a percent */
	g_printerr("tlbsim: --sample estimated from %u windows: accesses +/-%" G_GUINT64_FORMAT
		   ".%02u%% (95%%; each estimated column's in <column>_rel_ci95)\n",
		   r->sample_windows, hundredths / 100, (unsigned)(hundredths % 100));
	if (topo->threads_per_core > 1 && r->access_tasks > r->nr_cpus)
		g_printerr("tlbsim: readers share SMT cores' CPUs here: their competition for "
			   "the STLB moves access figures by 1-2%% beyond that interval (the "
			   "exact run's too, with the order of same-cycle accesses); read them "
			   "as +/-3%%\n");
}

static void print_stale(const struct sim_result *r, const struct topology *topo,
			const struct policy *policy)
{
	if (r->total.stale_hits)
		g_printerr("tlbsim: %" G_GUINT64_FORMAT
			   " stale TLB hits: a CPU used a translation after the change that "
			   "invalidated it had returned%s\n",
			   r->total.stale_hits,
			   policy->completion == FLUSH_COMPLETION_NONE
				   ? " (this policy's initiators do not wait for their targets: "
				     "only stale_reuse and stale_pwc break what it promises)"
				   : "");
	if (r->total.stale_reuse)
		g_printerr("tlbsim: %" G_GUINT64_FORMAT
			   " of them on a frame allocated again since the entry was filled: "
			   "the CPU reached another page's data (stale_reuse)\n",
			   r->total.stale_reuse);
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
			   "PTE generation %u, change committed at generation %u)%s\n",
			   r->stale[i].cpu, r->stale[i].vaddr,
			   topology_cycles_to_ns(topo, r->stale[i].time), r->stale[i].entry_gen,
			   r->stale[i].committed_gen,
			   r->stale[i].reused ? ", its frame allocated again" : "");
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
 * Every output of a successful run, committed together (output_commit_all()):
 * the per-CPU CSV and the CSV row joined to @files (the trace and the time
 * series, finished), so that no output stays without its run's row, and no
 * row without its outputs.  @stop: a signal stops the commit until the
 * renames, which take no time (a FIFO may wait for its reader for ever).
 */
static bool write_outputs(const struct options *o, const struct report_meta *meta,
			  const char *const *label_names, const struct sim_result *result,
			  struct output_file **files, size_t nr_files, const struct stop *stop,
			  GError **error)
{
	GString *header = g_string_new(NULL);
	GString *row = g_string_new(NULL);
	report_csv_header(header, label_names, meta->sampled);
	report_csv_row(row, meta, result);
	bool ok = true;
	g_assert(nr_files == 4 && !files[0] && !files[3]);
	if (o->per_cpu) {
		GString *per_cpu = g_string_new(NULL);
		report_per_cpu_csv(per_cpu, meta, label_names, result);
		files[0] = prepare_output(o->per_cpu, per_cpu, error);
		ok = files[0] != NULL;
		g_string_free(per_cpu, TRUE);
	}
	ok = ok && (files[3] = cli_csv_output(o->output, o->append,
					      o->no_header ? NULL : header->str, row->str, error));
	ok = ok && output_commit_all(files, nr_files, stop, error);
	g_string_free(header, TRUE);
	g_string_free(row, TRUE);
	return ok;
}

int single_run(const struct options *o, const struct labels *labels,
	       const struct trace_options *trace, const atomic_int *cancel)
{
	GError *error = NULL;
	struct inputs inputs;
	/* The per-CPU CSV, the trace, the time series, the CSV. */
	struct output_file *files[4] = {NULL, NULL, NULL, NULL};
	/* The wall-time budget counts from here: loading can take long too.
	 * Writing the outputs is not in it (a FIFO may wait for its reader). */
	struct stop stop = stop_from_now(cancel, o->max_wall_seconds);
	struct stop interrupt = stop_from_now(cancel, 0);
	struct inputs_request request = {
		.names = {o->topology, o->workload, o->policy},
		.sets = (const char *const *)o->sets,
		.stop = &stop,
	};
	if (!inputs_load(&request, &inputs, &error)) {
		g_printerr("tlbsim: %s\n", error->message);
		int code = cli_exit_code(error);
		g_error_free(error);
		return code;
	}
	struct sim_input input = {
		.topology = inputs.topology,
		.workload = inputs.workload,
		.policy = inputs.policy,
		.workload_file = inputs.paths[INPUT_WORKLOAD],
		.seed = (uint64_t)o->seed,
		.run_ahead = !o->no_run_ahead,
		.threads = o->threads ? (unsigned)o->threads : g_get_num_processors(),
		.max_events = (uint64_t)o->max_events,
		.max_sim_ns = (uint64_t)o->max_sim_ns,
		.stop = stop,
		.trace = o->trace ? trace : NULL,
		.timeseries_interval_ns = o->timeseries ? (uint64_t)o->interval : 0,
	};
	uint64_t plan_ns[3];
	options_sample_plan(o, plan_ns);
	input.sample_period_ns = plan_ns[0];
	input.sample_warm_ns = plan_ns[1];
	input.sample_window_ns = plan_ns[2];
	struct report_meta meta = {
		.topology = inputs.names[INPUT_TOPOLOGY],
		.workload = inputs.names[INPUT_WORKLOAD],
		.policy = inputs.names[INPUT_POLICY],
		.seed = (uint64_t)o->seed,
		.topo = inputs.topology,
		.w = inputs.workload,
		.host_time = o->host_time,
		.sampled = o->sample,
		.label_values = (const char *const *)labels->values->pdata,
	};
	/* The time series' rows start with the run's key, to join its row. */
	GString *key_header = g_string_new(NULL), *key = g_string_new(NULL);
	report_run_key_header(key_header, (const char *const *)labels->names->pdata);
	report_run_key(key, &meta);
	input.timeseries_key_header = key_header->str;
	input.timeseries_key = key->str;
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
		code = cli_exit_code(error);
		g_error_free(error);
		goto out_free_outputs;
	}
	meta.host_seconds = host_seconds;
	bool ok = write_outputs(o, &meta, (const char *const *)labels->names->pdata, result, files,
				G_N_ELEMENTS(files), &interrupt, &error);
	if (!ok) {
		g_printerr("tlbsim: %s\n", error ? error->message : "cannot write the output");
		code = error ? cli_exit_code(error) : EXIT_INPUT;
		g_clear_error(&error);
	} else {
		if (!o->quiet) {
			char *summary = report_summary(&meta, result);
			g_printerr("%s\n", summary);
			g_free(summary);
			print_sample_note(result, inputs.topology);
		}
		print_stale(result, inputs.topology, inputs.policy);
		print_threads_note(result);
		if (o->stat) {
			GString *block = g_string_new(NULL);
			stat_block(block, &meta, result);
			g_printerr("%s", block->str);
			g_string_free(block, TRUE);
		}
		if (o->strict && report_stale_violation(inputs.policy, result))
			code = EXIT_STALE;
	}
	sim_result_free(result);
out_free_outputs:
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		output_free(files[i]);
	g_string_free(key_header, TRUE);
	g_string_free(key, TRUE);
	inputs_clear(&inputs);
	return code;
}
