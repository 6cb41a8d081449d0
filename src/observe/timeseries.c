/*
 * Per-interval counters as long CSV (see timeseries.h).
 *
 * Models: interval k covers simulated nanoseconds [k·I, (k+1)·I), which is
 * cycles [c(k), c(k+1)) with c(k) = topology_ns_to_cycles(k·I).  At a slow
 * clock and a short interval several k may map to the same cycles; such
 * empty intervals are skipped, so the boundary always lies after the open
 * interval's start and the runner's time limit (boundary - 1) never wraps.
 *
 * Run-ahead: at a boundary a CPU may already have counted accesses up to its
 * pending resume, past the boundary (quiet CPUs up to 65536 accesses, about a
 * millisecond).  What its access counters (the ones memory accesses bump)
 * counted over [from, until) is spread evenly over that span: the open
 * interval gets the part before the boundary (integer shares, rounded down),
 * the rest is carried into the next interval, whose span then starts at the
 * boundary.  Work is uniform over such a span (the same access loop), so the
 * rates are right to within one interval.  The other counters count kernel
 * events when they happen, and go to the interval of the sample.
 * Invariant: for each CPU, prev + carry = the counters at the last sample,
 * and the rows written sum to prev, so at the end they sum to the totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/machine/counters.h"
#include "tlbsim/machine/machine.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/observe/timeseries.h"
#include "tlbsim/util/error.h"

struct timeseries {
	const struct topology *topology;
	unsigned nr_cpus;
	uint64_t interval_ns;
	FILE *out;
	char *key;              /* each row's leading columns, "" for none */
	uint64_t k;             /* the open interval */
	struct counters *prev;  /* per CPU: what the rows written so far add up to */
	struct counters *carry; /* per CPU: counted, not yet given to an interval */
	uint64_t *from;         /* per CPU: start of the span @carry covers (cycles) */
	bool *spread;           /* per counter: an access counter */
};

__extension__ typedef unsigned __int128 u128;

/* The counters memory accesses bump (interp.c, machine_translate()). */
static const size_t access_counters[] = {
	offsetof(struct counters, accesses),   offsetof(struct counters, tlb_lookups),
	offsetof(struct counters, tlb_hits),   offsetof(struct counters, tlb_misses),
	offsetof(struct counters, stlb_hits),  offsetof(struct counters, page_walks),
	offsetof(struct counters, stale_hits), offsetof(struct counters, walk_wait_cycles),
	offsetof(struct counters, stale_reuse),
};

static bool is_access_counter(unsigned index)
{
	for (size_t i = 0; i < G_N_ELEMENTS(access_counters); i++)
		if (access_counters[i] == index * sizeof(uint64_t))
			return true;
	return false;
}

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
				  uint64_t interval_ns, const char *key_header, const char *key,
				  FILE *out)
{
	g_assert(interval_ns > 0);
	struct timeseries *ts = g_new0(struct timeseries, 1);
	ts->topology = topology;
	ts->nr_cpus = nr_cpus;
	ts->interval_ns = interval_ns;
	ts->out = out;
	ts->key = g_strdup(key ? key : "");
	ts->prev = g_new0(struct counters, nr_cpus);
	ts->carry = g_new0(struct counters, nr_cpus);
	ts->from = g_new0(uint64_t, nr_cpus);
	ts->spread = g_new(bool, counters_count());
	for (unsigned i = 0; i < counters_count(); i++)
		ts->spread[i] = is_access_counter(i);
	open_interval(ts, 0);
	fprintf(out, "%st_ns,cpu,metric,value\n", key_header ? key_header : "");
	return ts;
}

void timeseries_free(struct timeseries *ts)
{
	if (!ts)
		return;
	g_free(ts->key);
	g_free(ts->prev);
	g_free(ts->carry);
	g_free(ts->from);
	g_free(ts->spread);
	g_free(ts);
}

uint64_t timeseries_boundary(const struct timeseries *ts)
{
	return interval_start(ts, ts->k + 1);
}

/*
 * Rows for the open interval, ending at cycle @end: what each CPU counted
 * in it.  @until[cpu]: the CPU's counters are complete up to there (>= @end
 * when it ran ahead); NULL: up to @end.  Returns whether any CPU still
 * carries counts past @end.
 */
static bool close_interval(struct timeseries *ts, const struct machine *m, uint64_t end,
			   const uint64_t *until)
{
	uint64_t t_ns = ts->k * ts->interval_ns;
	bool carrying = false;
	for (unsigned cpu = 0; cpu < ts->nr_cpus; cpu++) {
		const struct counters *now = &m->cpus[cpu].counters;
		uint64_t from = ts->from[cpu], to = until && until[cpu] > end ? until[cpu] : end;
		ts->from[cpu] = end;
		/* Nothing new, nothing carried: a short interval, or an idle CPU. */
		if (memcmp(now, &ts->prev[cpu], sizeof(*now)) == 0)
			continue;
		uint64_t *carry = (uint64_t *)&ts->carry[cpu], *prev = (uint64_t *)&ts->prev[cpu];
		bool left = false;
		for (unsigned i = 0; i < counters_count(); i++) {
			/* Everything counted and not yet written: the carry, and what
			 * the CPU counted since the last sample. */
			uint64_t open = counters_get(now, i) - prev[i];
			bool spread = to > end && to > from && ts->spread[i];
			uint64_t part = spread ? (uint64_t)((u128)open * (end - from) / (to - from))
					       : open;
			carry[i] = open - part;
			prev[i] += part;
			left = left || carry[i];
			if (part)
				fprintf(ts->out, "%s%" PRIu64 ",%u,%s,%" PRIu64 "\n", ts->key, t_ns,
					cpu, counters_names[i], part);
		}
		carrying = carrying || left;
	}
	return carrying;
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

void timeseries_sample(struct timeseries *ts, const struct machine *m, const uint64_t *until,
		       uint64_t next)
{
	bool carrying = close_interval(ts, m, timeseries_boundary(ts), until);
	/* Intervals without events: skipped, unless a CPU's run-ahead spans them. */
	bool skip = !carrying && next != ENGINE_NEVER;
	open_interval(ts, skip ? interval_of(ts, next) : ts->k + 1);
}

bool timeseries_finish(struct timeseries *ts, const struct machine *m, GError **error)
{
	close_interval(ts, m, UINT64_MAX, NULL);
	if (fflush(ts->out) != 0 || ferror(ts->out)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write the time series: %s",
			    g_strerror(errno));
		return false;
	}
	return true;
}
