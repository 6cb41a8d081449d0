/*
 * Per-interval counters as long CSV (see timeseries.h).
 *
 * Models: interval k covers simulated nanoseconds [k·I, (k+1)·I), which is
 * cycles [c(k), c(k+1)) with c(k) = topology_ns_to_cycles(k·I).  At a slow
 * clock and a short interval several k may map to the same cycles; such
 * empty intervals are skipped, so the boundary always lies after the open
 * interval's start and the runner's time limit (boundary - 1) never wraps.
 * Invariant: prev[] holds each CPU's counters at the start of the open
 * interval, so the rows of all intervals sum to the final counters.
 */
#include <errno.h>
#include <inttypes.h>
#include "tlbsim/counters.h"
#include "tlbsim/engine.h"
#include "tlbsim/error.h"
#include "tlbsim/machine.h"
#include "tlbsim/timeseries.h"
#include "tlbsim/topology.h"

struct timeseries {
	const struct topology *topology;
	unsigned nr_cpus;
	uint64_t interval_ns;
	FILE *out;
	uint64_t k;             /* the open interval */
	struct counters *prev;  /* per CPU, at the open interval's start */
};

static uint64_t interval_start(const struct timeseries *ts, uint64_t k)
{
	/* k·I overflows only past 584 years of simulated time: saturate. */
	if (k > UINT64_MAX / ts->interval_ns)
		return UINT64_MAX;
	return topology_ns_to_cycles(ts->topology, k * ts->interval_ns);
}

/* Open interval @k, or the first non-empty one after it. */
static void open_interval(struct timeseries *ts, uint64_t k)
{
	while (interval_start(ts, k + 1) <= interval_start(ts, k) &&
	       interval_start(ts, k + 1) != UINT64_MAX)
		k++;
	ts->k = k;
}

struct timeseries *timeseries_new(const struct topology *topology, unsigned nr_cpus,
				  uint64_t interval_ns, FILE *out)
{
	g_assert(interval_ns > 0);
	struct timeseries *ts = g_new0(struct timeseries, 1);
	ts->topology = topology;
	ts->nr_cpus = nr_cpus;
	ts->interval_ns = interval_ns;
	ts->out = out;
	ts->prev = g_new0(struct counters, nr_cpus);
	open_interval(ts, 0);
	fputs("t_ns,cpu,metric,value\n", out);
	return ts;
}

void timeseries_free(struct timeseries *ts)
{
	if (!ts)
		return;
	g_free(ts->prev);
	g_free(ts);
}

uint64_t timeseries_boundary(const struct timeseries *ts)
{
	return interval_start(ts, ts->k + 1);
}

/* Rows for the open interval: what each counter of each CPU gained in it. */
static void close_interval(struct timeseries *ts, const struct machine *m)
{
	uint64_t t_ns = ts->k * ts->interval_ns;
	for (unsigned cpu = 0; cpu < ts->nr_cpus; cpu++) {
		const struct counters *now = &m->cpus[cpu].counters;
		for (unsigned i = 0; i < counters_count(); i++) {
			uint64_t delta = counters_get(now, i) - counters_get(&ts->prev[cpu], i);
			if (delta)
				fprintf(ts->out, "%" PRIu64 ",%u,%s,%" PRIu64 "\n", t_ns, cpu,
					counters_names[i], delta);
		}
		ts->prev[cpu] = *now;
	}
}

/* The interval holding cycle @time, at or after the open one. */
static uint64_t interval_of(const struct timeseries *ts, uint64_t time)
{
	double ns = topology_cycles_to_ns(ts->topology, time);
	uint64_t k = ns / (double)ts->interval_ns >= (double)UINT64_MAX
			     ? UINT64_MAX / ts->interval_ns
			     : (uint64_t)(ns / (double)ts->interval_ns);
	/* The estimate may be off by one either way after rounding. */
	while (k > ts->k && interval_start(ts, k) > time)
		k--;
	while (interval_start(ts, k + 1) <= time && interval_start(ts, k + 1) != UINT64_MAX)
		k++;
	return k > ts->k ? k : ts->k + 1;
}

void timeseries_sample(struct timeseries *ts, const struct machine *m, uint64_t next)
{
	close_interval(ts, m);
	open_interval(ts, next == ENGINE_NEVER ? ts->k + 1 : interval_of(ts, next));
}

bool timeseries_finish(struct timeseries *ts, const struct machine *m, GError **error)
{
	close_interval(ts, m);
	if (fflush(ts->out) != 0 || ferror(ts->out)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write the time series: %s",
			    g_strerror(errno));
		return false;
	}
	return true;
}
