#ifndef TLBSIM_SAMPLE_H
#define TLBSIM_SAMPLE_H
/*
 * Sampled mode (tlbsim --sample): the bookkeeping side of the plan that
 * struct machine_sample (machine.h, "Sampling") holds.
 *
 * At each window's start and end and at each period's end, an event on the
 * global lane, which bounds every CPU's run-ahead, snapshots the per-CPU
 * counters: a window counts exactly what the CPUs did inside it.  Of a
 * window only the accesses of settled loops count (access.c: past the cold
 * start and any refill; machine_sample_note() keeps their sums), since a
 * skipped span is settled.  When a period closes, a CPU that skipped
 * accesses in it adds, for the counters accesses drive, its last window's
 * settled count per cycle of settled accesses over the cycles it skipped,
 * to what it simulated.  Every other counter (flushes and the
 * entries they take, IPIs, syscalls, locks, stale hits) is what was
 * simulated: a flush in a skipped span finds the TLBs as the settled loop
 * left them, and the refill after it is simulated.
 *
 * The 95% interval of each scaled total treats each period's estimate as
 * one draw of the windows' rate, whose variance the successive differences
 * of the periods' rates give (robust to a slow trend), with Student's t
 * for the few windows (sample_interval_ppm()).  It covers the
 * sampling, not the divergence of a run whose schedule a skipped span's
 * slightly different timing changes (docs/performance.md, "Sampled mode").
 */
#include <stdint.h>
#include "tlbsim/machine/counters.h"
#include "tlbsim/machine/machine.h"

/* The counters accesses drive: what a CPU that skips accesses does not
 * count.  (counter, CSV column) */
#define SAMPLE_SCALED(X)                                                                       \
	X(accesses, accesses)                                                                  \
	X(tlb_lookups, tlb_lookups)                                                            \
	X(tlb_hits, tlb_hits)                                                                  \
	X(tlb_misses, tlb_misses)                                                              \
	X(stlb_hits, stlb_hits)                                                                \
	X(page_walks, page_walks)                                                              \
	X(walk_wait_cycles, walk_wait_ns)                                                      \
	X(walk_loads, walk_loads)                                                              \
	X(walk_load_cycles, walk_load_ns)
#define SAMPLE_NR_SCALED 9
/* accesses' index in SAMPLE_SCALED's order (sample.c asserts it). */
#define SAMPLE_ACCESSES 0

struct kernel;
struct sampler;

/* Starts the plan's boundary events on @k's engine (plan->period > 0); the
 * spans' offsets are drawn from @seed. */
struct sampler *sampler_new(struct kernel *k, const struct machine_sample_plan *plan,
			    uint64_t seed);
void sampler_free(struct sampler *s);

#define SAMPLE_NO_ERROR UINT64_MAX
/* Windows an interval needs: two rates give one difference, a spread of
 * no substance (docs/decisions.md). */
#define SAMPLE_MIN_WINDOWS 3

struct sample_estimate {
	unsigned windows;  /* periods whose estimate used a window */
	/* Each scaled total's relative 95% half-width, in millionths, in
	 * SAMPLE_SCALED's order; SAMPLE_NO_ERROR: one or two windows, no
	 * interval. */
	uint64_t error_ppm[SAMPLE_NR_SCALED];
};

/*
 * The factor of a 95% interval from @windows (>= SAMPLE_MIN_WINDOWS)
 * periods' rates, in millionths: Student's t for the degrees of freedom of
 * their successive-difference variance, 2 (n - 1)^2 / (3n - 4).
 */
uint64_t sample_t975_ppm(unsigned windows);

/* What one period adds to the interval of each scaled field: the cycles it
 * estimated (summed over the CPUs that skipped) and the rate the estimate
 * used (their windows' counts per cycle, summed, 32 fractional bits). */
struct sample_period {
	uint64_t estimated;
	uint64_t rate[SAMPLE_NR_SCALED];
};

/*
 * The relative 95% half-width, in millionths, of scaled field @field's
 * total @total estimated over @n (>= SAMPLE_MIN_WINDOWS) @periods:
 * t * sqrt(sum u_k^2) * s / total, u_k period k's estimated cycles,
 * s^2 = sum (r_k - r_{k-1})^2 / (2 (n - 1)) over its rates r_k, and t
 * sample_t975_ppm(n): with few windows s itself is uncertain, and 1.96
 * would state too narrow an interval.
 */
uint64_t sample_interval_ppm(const struct sample_period *periods, unsigned n, unsigned field,
			     uint64_t total);

/*
 * Closes the last period at @end (the run's end) and replaces the scaled
 * counters of @per_cpu (one per CPU, the machine's final counters) by their
 * estimates.  Call once.
 */
void sampler_finish(struct sampler *s, uint64_t end, struct counters *per_cpu,
		    struct sample_estimate *out);

#endif
