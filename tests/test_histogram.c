/*
 * Tests of src/util/histogram.c: exact percentiles (as a sort gives them)
 * while at most HISTOGRAM_EXACT_VALUES distinct values were added, bounded
 * error and memory past that, exact count, sum, minimum and maximum, and
 * a fingerprint that sees the order.
 */
#include <stdlib.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/util/histogram.h"

/* Nearest rank over a sorted copy: what report.c computed before. */
static uint64_t sorted_percentile(const uint64_t *values, size_t n, unsigned pct)
{
	uint64_t *sorted = g_memdup2(values, n * sizeof(uint64_t));
	for (size_t i = 1; i < n; i++) /* insertion sort: n is small here */
		for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			uint64_t t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	uint64_t rank = (n * pct + 99) / 100;
	uint64_t v = sorted[rank - 1];
	g_free(sorted);
	return v;
}

Test(histogram, empty)
{
	struct histogram *h = histogram_new();
	cr_expect_eq(histogram_count(h), 0);
	cr_expect_eq(histogram_percentile(h, 50), 0);
	cr_expect_eq(histogram_min(h), 0);
	cr_expect_eq(histogram_max(h), 0);
	cr_expect(histogram_exact(h));
	histogram_free(h);
	histogram_free(NULL);
}

/* Random values with repeats, every percentile against a sort. */
Test(histogram, exact_percentiles_match_a_sort)
{
	enum { N = 3000 };
	uint64_t values[N];
	GRand *rand = g_rand_new_with_seed(7);
	struct histogram *h = histogram_new();
	for (size_t i = 0; i < N; i++) {
		values[i] = (uint64_t)g_rand_int_range(rand, 0, 500) * 977 + (i % 3 == 0 ? 1 : 0);
		histogram_add(h, values[i]);
	}
	cr_assert(histogram_exact(h));
	for (unsigned pct = 1; pct <= 100; pct++)
		cr_expect_eq(histogram_percentile(h, pct), sorted_percentile(values, N, pct),
			     "p%u", pct);
	g_rand_free(rand);
	histogram_free(h);
}

/* Sums past 2^64, extremes, and a copy that is its own. */
Test(histogram, count_sum_min_max_exact)
{
	struct histogram *h = histogram_new();
	histogram_add(h, UINT64_MAX);
	histogram_add(h, 3);
	histogram_add(h, UINT64_MAX);
	uint64_t hi, lo;
	histogram_sum(h, &hi, &lo);
	cr_expect_eq(hi, 2);
	cr_expect_eq(lo, 1); /* 2 * (2^64 - 1) + 3 = 2 * 2^64 + 1 */
	cr_expect_eq(histogram_min(h), 3);
	cr_expect_eq(histogram_max(h), UINT64_MAX);
	struct histogram *copy = histogram_copy(h);
	histogram_add(h, 1);
	cr_expect_eq(histogram_count(copy), 3);
	cr_expect_eq(histogram_count(h), 4);
	cr_expect_eq(histogram_percentile(copy, 1), 3);
	cr_expect_eq(histogram_percentile(h, 1), 1);
	histogram_free(copy);
	histogram_free(h);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Past HISTOGRAM_EXACT_VALUES distinct values: every percentile at most
 * 2^-(HISTOGRAM_BITS - 1) below the sort's, and the same whether a value
 * came before the buckets took over or after.
 */
Test(histogram, buckets_bound_the_error)
{
	enum { N = HISTOGRAM_EXACT_VALUES * 3 };
	uint64_t *values = g_new(uint64_t, N);
	struct histogram *h = histogram_new(), *reversed = histogram_new();
	for (size_t i = 0; i < N; i++)
		values[i] = (uint64_t)i * 7919 % 5000000 + 1;
	for (size_t i = 0; i < N; i++) {
		histogram_add(h, values[i]);
		histogram_add(reversed, values[N - 1 - i]);
	}
	cr_assert_not(histogram_exact(h));
	qsort(values, N, sizeof(uint64_t), compare_u64);
	for (unsigned pct = 1; pct <= 100; pct++) {
		uint64_t want = values[((uint64_t)N * pct + 99) / 100 - 1];
		uint64_t got = histogram_percentile(h, pct);
		cr_expect_leq(got, want, "p%u", pct);
		cr_expect_lt((want - got) << (HISTOGRAM_BITS - 1), want, "p%u: %lu for %lu", pct,
			     (unsigned long)got, (unsigned long)want);
		cr_expect_eq(got, histogram_percentile(reversed, pct), "p%u: the order mattered",
			     pct);
	}
	cr_expect_eq(histogram_max(h), values[N - 1], "the maximum stays exact");
	g_free(values);
	histogram_free(h);
	histogram_free(reversed);
}

/* Values below 2^HISTOGRAM_BITS keep every bit, buckets or not. */
Test(histogram, small_values_stay_exact)
{
	enum { N = 2 * HISTOGRAM_EXACT_VALUES + 2 };
	uint64_t *values = g_new(uint64_t, N);
	struct histogram *h = histogram_new();
	for (uint64_t v = 0; v < N; v++) {
		/* Half below 2000, half distinct values above 2^40. */
		values[v] = v % 2 ? 1000 + v % 1000 : UINT64_C(1) << 40 | v;
		histogram_add(h, values[v]);
	}
	cr_assert_not(histogram_exact(h));
	qsort(values, N, sizeof(uint64_t), compare_u64);
	for (unsigned pct = 1; pct <= 50; pct++)
		cr_expect_eq(histogram_percentile(h, pct),
			     values[((uint64_t)N * pct + 99) / 100 - 1], "p%u", pct);
	g_free(values);
	histogram_free(h);
}

/* Memory: a table of 2 MiB at most, for any number of distinct values. */
Test(histogram, memory_is_bounded)
{
	struct histogram *h = histogram_new();
	size_t most = 0;
	for (uint64_t i = 0; i < 4000000; i++) {
		histogram_add(h, i * UINT64_C(0x9e3779b97f4a7c15));
		most = MAX(most, histogram_bytes(h));
	}
	cr_expect_leq(most, ((size_t)2 << 20) + 256, "%zu bytes", most);
	histogram_free(h);
}

/* Two runs giving the same latencies in another order differ. */
Test(histogram, fingerprint_sees_the_order)
{
	struct histogram *a = histogram_new(), *b = histogram_new(), *c = histogram_new();
	const uint64_t values[] = {5, 9, 9, 1};
	for (size_t i = 0; i < G_N_ELEMENTS(values); i++) {
		histogram_add(a, values[i]);
		histogram_add(b, values[i]);
		histogram_add(c, values[G_N_ELEMENTS(values) - 1 - i]);
	}
	cr_expect_eq(histogram_fingerprint(a), histogram_fingerprint(b));
	cr_expect_neq(histogram_fingerprint(a), histogram_fingerprint(c));
	cr_expect_eq(histogram_percentile(a, 50), histogram_percentile(c, 50));
	histogram_free(a);
	histogram_free(b);
	histogram_free(c);
}
