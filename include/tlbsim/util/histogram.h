#ifndef TLBSIM_HISTOGRAM_H
#define TLBSIM_HISTOGRAM_H
/*
 * A histogram of uint64_t values (an op's latencies in cycles) in bounded
 * memory, for nearest-rank percentiles, with an exact count, sum, minimum
 * and maximum.
 *
 * Exact while at most HISTOGRAM_EXACT_VALUES distinct values have been
 * added: a percentile is then the very value a sort of every value gives.
 * Past that, every value (those added before too) is kept to its
 * HISTOGRAM_BITS leading bits, HdrHistogram's log-linear buckets: a
 * percentile is then the lower end of its value's bucket, below the value by
 * less than 2^-(HISTOGRAM_BITS - 1) of it (0.098%), and values below
 * 2^HISTOGRAM_BITS stay exact.  The count, sum, minimum and maximum are
 * always exact.  Memory: a table of at most 2 MiB, whatever the number of
 * values.
 *
 * The order of the values changes nothing but the fingerprint
 * (histogram_fingerprint()): in particular, which values came before the
 * buckets took over does not change a percentile.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Distinct values kept exactly; about 1 MiB of table. */
#define HISTOGRAM_EXACT_VALUES 65536
/* Leading bits a value keeps once the table is bucketed: 56320 buckets
 * (2^11 values below 2^11, then 2^10 per power of two up to 2^64). */
#define HISTOGRAM_BITS 11

struct histogram;

struct histogram *histogram_new(void);
void histogram_free(struct histogram *h); /* NULL: no-op */
struct histogram *histogram_copy(const struct histogram *h);

void histogram_add(struct histogram *h, uint64_t value);

uint64_t histogram_count(const struct histogram *h);
/* The exact sum of the values: @hi * 2^64 + @lo. */
void histogram_sum(const struct histogram *h, uint64_t *hi, uint64_t *lo);
uint64_t histogram_min(const struct histogram *h); /* 0 when empty */
uint64_t histogram_max(const struct histogram *h); /* 0 when empty */
/* Are the values still kept exactly (see above)? */
bool histogram_exact(const struct histogram *h);
/* The memory @h holds now, in bytes. */
size_t histogram_bytes(const struct histogram *h);

/*
 * The nearest-rank @pct-th percentile (1-100): the smallest value at least
 * ceil(n * @pct / 100) of the n values are not above; 0 when empty.  In
 * bucketed mode, the lower end of that value's bucket (see above).
 */
uint64_t histogram_percentile(const struct histogram *h, unsigned pct);

/*
 * A fingerprint of the values in the order they were added, so that two
 * runs can be compared call by call (run-ahead against stepping) without
 * keeping every value.
 */
uint64_t histogram_fingerprint(const struct histogram *h);

#endif
