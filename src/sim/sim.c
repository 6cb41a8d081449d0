/*
 * Assembles engine, machine, kernel and interpreter for one run and tears
 * them down.  The only place that knows every layer; each layer below knows
 * only those under it.
 */
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/observe/timeseries.h"
#include "tlbsim/observe/trace.h"
#include "tlbsim/engine/pool.h"
#include "tlbsim/sim/sample.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/error.h"
#include "tlbsim/workload/interp.h"

static bool sim_check_budget(const struct sim_input *input, enum engine_stop_reason why,
			     GError **error)
{
	if (why == ENGINE_EVENT_LIMIT) {
		/* The budget, not the count: the engine dispatches a phase of
		 * independent events whole, and may pass the budget by some; a
		 * single thread would have stopped at it. */
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_LIMIT,
			    "stopped after %" G_GUINT64_FORMAT
			    " events (the event budget, --max-events); the workload may not terminate",
			    input->max_events);
		return false;
	}
	if (why == ENGINE_TIME_LIMIT) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_LIMIT,
			    "stopped at %" G_GUINT64_FORMAT
			    " ns of simulated time (the budget, --max-sim-ns); the workload may not terminate",
			    input->max_sim_ns);
		return false;
	}
	return true;
}

/*
 * How far each CPU's counters go: a CPU that ran its accesses ahead has
 * counted them up to its pending resume (sched.h); others up to now.
 */
static void sim_counted_until(const struct kernel *k, uint64_t *until)
{
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		bool quiet;
		if (!sched_pending_resume(k, &k->machine->cpus[c], &until[c], &quiet))
			until[c] = engine_now(k->engine);
	}
}

/*
 * engine_run() in slices of events, so that a cancel request (a signal) or
 * the wall-time budget (input->stop) can stop a long run between slices, and up to each
 * interval boundary of @series (may be NULL), which reads the counters there.
 * Slicing changes nothing else: a time or event limit dispatches no event of
 * its own, and the engine resumes exactly where it stopped.  @until: room for
 * each CPU's counted-until time (with @series).
 */
static enum engine_stop_reason sim_engine_loop(const struct sim_input *input,
					       const struct kernel *k, struct timeseries *series,
					       uint64_t *until, uint64_t time_limit,
					       uint64_t event_limit)
{
	/* An event may stand for a dispatch of up to 65536 accesses (interp.c),
	 * a few ms of wall time: a slice of 16 stops a spinning workload within
	 * tens of ms, and the check costs nothing measurable. */
	const uint64_t slice = 16;
	struct engine *engine = k->engine;
	for (unsigned samples = 1;; samples++) {
		uint64_t dispatched = engine_events_dispatched(engine);
		uint64_t left = event_limit == ENGINE_NEVER ? ENGINE_NEVER : event_limit - dispatched;
		uint64_t limit = time_limit;
		bool boundary = series && timeseries_boundary(series) - 1 < time_limit;
		if (boundary)
			limit = timeseries_boundary(series) - 1;
		enum engine_stop_reason why = engine_run(engine, limit, MIN(slice, left));
		/* A phase (engine.h) may pass the budget: one that did stops the
		 * run at it, as a single thread would have, even if the queue then
		 * ran dry or the next event lies past a time limit or boundary. */
		if (event_limit != ENGINE_NEVER && engine_events_dispatched(engine) > event_limit)
			return ENGINE_EVENT_LIMIT;
		if (why == ENGINE_TIME_LIMIT && boundary) {
			sim_counted_until(k, until);
			timeseries_sample(series, k->machine, until, engine_next_time(engine));
			/* Many short intervals with few events: check now and then. */
			if (samples % slice == 0 && stop_requested(&input->stop))
				return ENGINE_STOPPED;
			continue;
		}
		if (why != ENGINE_EVENT_LIMIT || left <= slice)
			return why;
		if (stop_requested(&input->stop))
			return ENGINE_STOPPED;
	}
}

static enum engine_stop_reason sim_engine_run(const struct sim_input *input,
					      const struct kernel *k, struct timeseries *series,
					      uint64_t time_limit, uint64_t event_limit)
{
	uint64_t *until = series ? g_new(uint64_t, k->machine->nr_cpus) : NULL;
	enum engine_stop_reason why = sim_engine_loop(input, k, series, until, time_limit,
						      event_limit);
	g_free(until);
	return why;
}

static void sim_collect(struct sim_result *r, struct kernel *k, struct interp *ip,
			const struct workload *w)
{
	const struct machine *m = k->machine;
	const struct interp_results *ir = interp_results(ip);
	r->nr_cpus = m->nr_cpus;
	r->per_cpu = g_new0(struct counters, m->nr_cpus);
	r->tlb_occupancy = g_new0(unsigned, m->nr_cpus);
	for (unsigned c = 0; c < m->nr_cpus; c++) {
		r->per_cpu[c] = m->cpus[c].counters;
		counters_add(&r->total, &r->per_cpu[c]);
		r->tlb_occupancy[c] = machine_tlb_occupancy(m, &m->cpus[c]);
	}
	/* The run ends when its last task does; stale timers may fire later. */
	r->sim_cycles = sched_last_exit(k);
	r->events = engine_events_dispatched(k->engine);
	r->nr_phases = ir->nr_phases;
	r->phase_cycles = r->sim_cycles;
	if (w->report_phase >= 0) {
		uint64_t begin = ir->phase_begin[w->report_phase];
		uint64_t end = ir->phase_end[w->report_phase];
		r->phase_cycles = end > begin ? end - begin : 0;
	}
	r->op_cycles = histogram_copy(ir->op_cycles);
	r->accessor_threads = ir->accessor_threads;
	r->tasks = ir->tasks;
	r->access_tasks = ir->access_tasks;
	r->access_tasks_idle = ir->access_tasks_idle;
	r->accesses = ir->accesses;
	r->round_accesses = ir->round_accesses;
	r->nr_stale_reports = machine_stale_reports(m, r->stale);
}

/* Sampled mode: the estimates replace the counts of the scaled counters. */
static void sim_collect_sampled(struct sim_result *r, struct sampler *sampler)
{
	struct sample_estimate est;
	uint64_t simulated = r->total.accesses;
	sampler_finish(sampler, r->sim_cycles, r->per_cpu, &est);
	r->total = (struct counters){0};
	for (unsigned c = 0; c < r->nr_cpus; c++)
		counters_add(&r->total, &r->per_cpu[c]);
	/* Completed rounds: the estimate less the simulated accesses of rounds
	 * left unfinished. */
	uint64_t unfinished = r->accesses - r->round_accesses;
	r->accesses = r->accesses - simulated + r->total.accesses;
	r->round_accesses = r->accesses > unfinished ? r->accesses - unfinished : 0;
	r->sampled = true;
	r->sample_windows = est.windows;
	memcpy(r->sample_error_ppm, est.error_ppm, sizeof(est.error_ppm));
}

/* After the tasks exist (their names), before anything runs. */
static struct trace *sim_trace_new(const struct sim_input *input, const struct kernel *k,
				   const struct interp *ip)
{
	char **tasks = interp_task_labels(ip);
	struct trace_labels labels = {
		.workload = input->workload->name,
		.policy = input->policy->name,
		.seed = input->seed,
		.tasks = (const char *const *)tasks,
	};
	k->policy->arch->names(k->machine->topology, &labels.flush_names);
	struct trace *trace = trace_new(input->trace, k->machine, &labels, input->trace_out);
	g_strfreev(tasks);
	return trace;
}

struct sim_result *sim_run(const struct sim_input *input, GError **error)
{
	struct sim_result *result = NULL;
	if (!policy_check_topology(input->policy, input->topology, error) ||
	    !stop_check(&input->stop, error))
		return NULL;
	struct kernel k;
	struct timeseries *series = NULL;
	struct trace *trace = NULL;
	struct pool *pool = NULL;
	struct engine *engine = engine_new(NR_LANES(topology_nr_cpus(input->topology)));
	struct machine *machine = machine_new(input->topology, engine, smp_deliver_ipi, &k);
	kernel_boot(&k, input->policy, engine, machine);
	/* The rows depend on how far CPUs run ahead (machine.h). */
	machine->per_destination = !input->timeseries_interval_ns;
	if (input->timeseries_interval_ns)
		series = timeseries_new(input->topology, machine->nr_cpus,
					input->timeseries_interval_ns, input->timeseries_key_header,
					input->timeseries_key, input->timeseries_out);

	struct interp *ip = interp_new(&k, input->workload, input->workload_file, input->seed,
				       input->run_ahead, &input->stop, error);
	if (!ip)
		goto out_free_kernel;
	if (input->trace) {
		trace = sim_trace_new(input, &k, ip);
		k.tp = &trace_probes;
		k.tp_data = trace;
	}
	struct sampler *sampler = NULL;
	if (input->sample_period_ns) {
		const struct topology *t = input->topology;
		struct machine_sample_plan plan = {
		    .period = topology_ns_to_cycles(t, input->sample_period_ns),
		    .warm = topology_ns_to_cycles(t, input->sample_warm_ns),
		    .window = topology_ns_to_cycles(t, input->sample_window_ns),
		};
		if (!plan.window || plan.warm + plan.window >= plan.period) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
				    "the sampling plan leaves no measured window or nothing to "
				    "skip at %.3f GHz: %" G_GUINT64_FORMAT
				    " cycles warm, %" G_GUINT64_FORMAT
				    " measured in a period of %" G_GUINT64_FORMAT,
				    t->clock_ghz, plan.warm, plan.window, plan.period);
			goto out_free_interp;
		}
		sampler = sampler_new(&k, &plan, input->seed);
	}
	/* A trace's writer sees every event in order, and one run group has
	 * nothing to run beside it.  No more threads than groups: the others
	 * would only spin (a shared pool's loops are capped by the engine). */
	unsigned groups = machine_nr_run_groups(machine);
	unsigned threads = trace ? 1 : MIN(input->threads, groups);
	if (input->shared_pool && !trace && groups > 1) {
		engine_set_pool(engine, input->shared_pool);
	} else if (!input->shared_pool && threads > 1) {
		char *why = NULL;
		pool = pool_new(threads, &why);
		if (!pool) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERNAL, "--threads %u: %s",
				    threads, why);
			g_free(why);
			goto out_free_interp;
		}
		engine_set_pool(engine, pool);
	}
	sched_start(&k);
	uint64_t time_limit = input->max_sim_ns
				      ? topology_ns_to_cycles(input->topology, input->max_sim_ns)
				      : ENGINE_NEVER;
	uint64_t event_limit = input->max_events ? input->max_events : ENGINE_NEVER;
	enum engine_stop_reason why = sim_engine_run(input, &k, series, time_limit, event_limit);
	if (why == ENGINE_STOPPED && !interp_error(ip)) {
		stop_set_error(&input->stop, error);
		goto out_free_interp;
	}
	if (interp_error(ip)) {
		g_set_error(error, interp_error(ip)->domain, interp_error(ip)->code, "%s: %s",
			    input->workload_file, interp_error(ip)->message);
		goto out_free_interp;
	}
	/* A run whose tasks have all exited is complete, even if a stale timer
	 * left in the queue lies past a budget. */
	if (sched_nr_alive(&k) != 0 && !sim_check_budget(input, why, error))
		goto out_free_interp;
	if (sched_nr_alive(&k) != 0) {
		char *who = interp_blocked_summary(ip);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: the run ended with %u task(s) still blocked (waiting on a flag "
			    "nobody will set again?)%s%s",
			    input->workload_file, sched_nr_alive(&k), *who ? ": " : "", who);
		g_free(who);
		goto out_free_interp;
	}
	/* A run that ends within its first slice of events has not looked. */
	if (!stop_check(&input->stop, error) ||
	    (series && !timeseries_finish(series, k.machine, error)))
		goto out_free_interp;
	result = g_new0(struct sim_result, 1);
	sim_collect(result, &k, ip, input->workload);
	if (sampler)
		sim_collect_sampled(result, sampler);
	if (trace && (!trace_finish(trace, result->sim_cycles, error) ||
		      !stop_check(&input->stop, error))) {
		sim_result_free(result);
		result = NULL;
	}

out_free_interp:
	pool_free(pool);
	sampler_free(sampler);
	interp_free(ip);
out_free_kernel:
	kernel_shutdown(&k);
	timeseries_free(series);
	trace_free(trace);
	machine_free(machine);
	engine_free(engine);
	return result;
}

void sim_result_free(struct sim_result *result)
{
	if (!result)
		return;
	g_free(result->per_cpu);
	g_free(result->tlb_occupancy);
	histogram_free(result->op_cycles);
	g_free(result);
}
