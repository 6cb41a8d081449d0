#ifndef TLBSIM_BENCH_H
#define TLBSIM_BENCH_H
/*
 * Helpers shared by the benchmark programs in bench/: a CPU-time clock, the
 * median and spread of repetitions, and Markdown table rows.
 *
 * Times are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not wall
 * time: the benchmarks are single-threaded and meant to run on a shared,
 * noisy machine, where wall time also counts the slices other processes take.
 * CPU time still sees what they do to the caches, so repetitions are
 * interleaved between the variants being compared and the figure reported is
 * the median with its min-max spread.
 *
 * Header-only (static inline) so that each benchmark stays one .c file.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime() under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds of CPU time used by this thread. */
static inline double bench_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The median, minimum and maximum of some repetitions. */
struct bench_stats {
	double median, min, max;
};

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts @v in place.  An even count takes the lower middle value. */
static inline struct bench_stats bench_stats_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return (struct bench_stats){.median = v[(n - 1) / 2], .min = v[0], .max = v[n - 1]};
}

/* "12.3 (11.0–13.1)": median and spread, @digits decimals. */
static inline void bench_print_stats(const struct bench_stats *s, int digits)
{
	printf("%.*f (%.*f–%.*f)", digits, s->median, digits, s->min, digits, s->max);
}

#endif
