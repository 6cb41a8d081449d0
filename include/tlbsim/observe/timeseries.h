#ifndef TLBSIM_TIMESERIES_H
#define TLBSIM_TIMESERIES_H
/*
 * Counters per interval of simulated time, as a long CSV
 * `t_ns,cpu,metric,value` (after the run's key columns, if given): for each
 * interval (t_ns = its start, a multiple of the interval), each CPU and each
 * counter of COUNTERS_FOREACH in declaration order, how much the counter grew
 * in that interval.  Rows whose value is 0 are left out (a missing row means
 * 0), so a long run with a short interval stays small.  Summed over intervals and CPUs, each counter gives the run's
 * total.
 *
 * The runner reads the counters when simulated time reaches a boundary: it
 * runs the engine up to the boundary (a time limit, which dispatches no extra
 * event) and calls timeseries_sample().  Sampling never perturbs the run.
 * A CPU that ran ahead of the engine (run-ahead, README) has counted work past
 * the boundary; what it counted is spread evenly over the simulated time it
 * covers.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>

struct machine;
struct topology;

/*
 * @topology is borrowed; rows go to @out (borrowed) as intervals close.
 * @key_header and @key: leading columns of the header and of every row,
 * each field followed by its comma, e.g. "run,topology," and "3,haswell-i7,"
 * (the run's key, so that the rows join the run's CSV); NULL: none; copied.
 */
struct timeseries *timeseries_new(const struct topology *topology, unsigned nr_cpus,
				  uint64_t interval_ns, const char *key_header, const char *key,
				  FILE *out);
void timeseries_free(struct timeseries *ts);

/* The first cycle after the open interval (>= 1): the engine may run every
 * event before it, then call timeseries_sample(). */
uint64_t timeseries_boundary(const struct timeseries *ts);

/*
 * Close the open interval with @m's counters as they are now, and open the
 * one holding @next, the time of the next pending event (ENGINE_NEVER: none);
 * the intervals in between saw no event and get no rows.  @until[cpu]: the
 * simulated time (cycles) up to which that CPU's counters are complete, its
 * pending resume when it ran ahead; may be NULL (up to the boundary).
 */
void timeseries_sample(struct timeseries *ts, const struct machine *m, const uint64_t *until,
		       uint64_t next);

/* The run is over: close the open interval.  Errors: a failed write. */
bool timeseries_finish(struct timeseries *ts, const struct machine *m, GError **error);

#endif
