/*
 * Tests of src/util/rng.c.  The pinned values below were computed once with an
 * independent Python transcription of splitmix64 and xoshiro256** (Blackman &
 * Vigna's reference code); the splitmix64 state for seed 1 is also the
 * published test vector.  If one of them changes, every simulated run changes:
 * that is a product bug (determinism across machines), not a test to update.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/util/rng.h"

__extension__ typedef unsigned __int128 u128;

Test(rng, seed_1_state_is_splitmix64)
{
	static const uint64_t want[4] = {
	    UINT64_C(0x910a2dec89025cc1),
	    UINT64_C(0xbeeb8da1658eec67),
	    UINT64_C(0xf893a2eefb32555e),
	    UINT64_C(0x71c18690ee42c90b),
	};
	struct rng rng;

	rng_seed(&rng, 1);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(rng.s[i], want[i], "s[%d] = %#llx", i, (unsigned long long)rng.s[i]);
}

Test(rng, seed_1_first_outputs)
{
	static const uint64_t want[] = {
	    UINT64_C(0xb3f2af6d0fc710c5), UINT64_C(0x853b559647364cea),
	    UINT64_C(0x92f89756082a4514), UINT64_C(0x642e1c7bc266a3a7),
	    UINT64_C(0xb27a48e29a233673), UINT64_C(0x24c123126ffda722),
	};
	struct rng rng;

	rng_seed(&rng, 1);
	for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
		uint64_t got = rng_next(&rng);
		cr_expect_eq(got, want[i], "output %zu = %#llx", i, (unsigned long long)got);
	}
}

Test(rng, seed_0_first_outputs)
{
	static const uint64_t want[] = {
	    UINT64_C(0x99ec5f36cb75f2b4),
	    UINT64_C(0xbf6e1f784956452a),
	    UINT64_C(0x1a5f849d4933e6e0),
	};
	struct rng rng;

	rng_seed(&rng, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
		cr_expect_eq(rng_next(&rng), want[i], "output %zu", i);
}

Test(rng, stream_first_outputs)
{
	static const uint64_t want[2][3] = {
	    {UINT64_C(0xee127fe613436e33), UINT64_C(0xd6dad8d34a1874ea),
	     UINT64_C(0x2a52c16cec1116a9)},
	    {UINT64_C(0x550e4e55a37114cc), UINT64_C(0xa645791d18940fdd),
	     UINT64_C(0xebededf9628ebf4c)},
	};

	for (unsigned index = 0; index < 2; index++) {
		struct rng rng;
		rng_seed_stream(&rng, 1, index);
		for (unsigned i = 0; i < 3; i++)
			cr_expect_eq(rng_next(&rng), want[index][i], "stream %u output %u", index,
				     i);
	}
}

Test(rng, same_seed_and_index_repeat)
{
	struct rng a, b;

	rng_seed_stream(&a, 12345, 7);
	rng_seed_stream(&b, 12345, 7);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(rng_next(&a), rng_next(&b), "draw %d", i);

	rng_seed(&a, 99);
	rng_seed(&b, 99);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(rng_below(&a, 1000), rng_below(&b, 1000), "draw %d", i);
}

/*
 * Streams of one seed differ from each other (and from other seeds' streams),
 * and a stream does not depend on which others were seeded before it.
 */
Test(rng, streams_differ)
{
	enum { SEEDS = 3, STREAMS = 32, DRAWS = 4 };
	static const uint64_t seeds[SEEDS] = {1, 2, UINT64_C(0xdeadbeefcafe)};
	GHashTable *seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);

	for (int s = 0; s < SEEDS; s++) {
		for (uint64_t index = 0; index < STREAMS; index++) {
			struct rng rng;
			rng_seed_stream(&rng, seeds[s], index);
			for (int d = 0; d < DRAWS; d++) {
				uint64_t *v = g_new(uint64_t, 1);
				*v = rng_next(&rng);
				cr_expect(g_hash_table_add(seen, v),
					  "seed %d stream %lu draw %d repeats an earlier value", s,
					  (unsigned long)index, d);
			}
		}
	}
	cr_expect_eq(g_hash_table_size(seen), SEEDS * STREAMS * DRAWS);
	g_hash_table_destroy(seen);

	/* Seeding stream 5 after others gives the same stream as seeding it alone. */
	struct rng alone, after;
	rng_seed_stream(&alone, 1, 5);
	for (uint64_t i = 0; i < 5; i++)
		rng_seed_stream(&after, 1, i);
	rng_seed_stream(&after, 1, 5);
	for (int i = 0; i < 16; i++)
		cr_expect_eq(rng_next(&alone), rng_next(&after));
}

/* ---- rng_below ------------------------------------------------------------- */

Test(rng_below, stays_in_range)
{
	static const uint64_t bounds[] = {
	    1, 2, 3, 1000, (UINT64_C(1) << 63) + 1, UINT64_C(3) << 62, UINT64_MAX,
	};
	struct rng rng;

	rng_seed(&rng, 42);
	for (size_t b = 0; b < G_N_ELEMENTS(bounds); b++) {
		uint64_t max = 0;
		for (int i = 0; i < 20000; i++) {
			uint64_t v = rng_below(&rng, bounds[b]);
			cr_assert_lt(v, bounds[b], "bound %#llx gave %#llx",
				     (unsigned long long)bounds[b], (unsigned long long)v);
			max = v > max ? v : max;
		}
		/* The top of the range is reached (roughly): no value stuck low. */
		if (bounds[b] <= 1000)
			cr_expect_eq(max, bounds[b] - 1, "bound %llu",
				     (unsigned long long)bounds[b]);
		else
			cr_expect_gt(max, bounds[b] / 10 * 9, "bound %#llx",
				     (unsigned long long)bounds[b]);
	}
}

Test(rng_below, bound_one_is_always_zero)
{
	struct rng rng;

	rng_seed(&rng, 7);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(rng_below(&rng, 1), 0);
}

/* Pearson's chi-square of @counts against equal expectations. */
static double chi_square(const uint64_t *counts, unsigned buckets, uint64_t total)
{
	double expected = (double)total / buckets, chi = 0;

	for (unsigned i = 0; i < buckets; i++) {
		double d = (double)counts[i] - expected;
		chi += d * d / expected;
	}
	return chi;
}

/*
 * 10 buckets over 100k draws: 9 degrees of freedom, where P(chi2 > 40) is
 * about 5e-6.  A modulo-biased or badly mixed generator lands in the
 * hundreds or thousands.  Buckets are taken from the top of the range
 * (v * 10 / bound), so the large bounds test the high bits too.
 */
#define DRAWS 100000
#define CHI2_MAX_9DF 40.0

static double chi_square_of(struct rng *rng, uint64_t bound, unsigned buckets)
{
	uint64_t counts[16] = {0};

	cr_assert_leq(buckets, G_N_ELEMENTS(counts));
	for (int i = 0; i < DRAWS; i++) {
		uint64_t v = rng_below(rng, bound);
		counts[(unsigned)((u128)v * buckets / bound)]++;
	}
	return chi_square(counts, buckets, DRAWS);
}

Test(rng_below, roughly_uniform)
{
	static const uint64_t bounds[] = {
	    10, 1000, 1001, UINT64_C(1) << 40, (UINT64_C(1) << 63) + 1, UINT64_MAX};
	struct rng rng;

	rng_seed_stream(&rng, 1, 3);
	for (size_t b = 0; b < G_N_ELEMENTS(bounds); b++) {
		double chi = chi_square_of(&rng, bounds[b], 10);
		cr_expect_lt(chi, CHI2_MAX_9DF, "bound %#llx: chi2 %.1f",
			     (unsigned long long)bounds[b], chi);
	}
}

/*
 * 3 * 2^62 does not divide 2^64: plain modulo would make [0, 2^62) twice as
 * likely as each of the other two thirds (chi2 ~ 12500 over 100k draws).
 * 2 degrees of freedom: P(chi2 > 20) is about 5e-5.
 */
Test(rng_below, no_modulo_bias)
{
	struct rng rng;

	rng_seed(&rng, 2024);
	double chi = chi_square_of(&rng, UINT64_C(3) << 62, 3);
	cr_expect_lt(chi, 20.0, "chi2 %.1f", chi);

	/* Small odd bound, low buckets. */
	uint64_t counts[3] = {0};
	for (int i = 0; i < DRAWS; i++)
		counts[rng_below(&rng, 3)]++;
	chi = chi_square(counts, 3, DRAWS);
	cr_expect_lt(chi, 20.0, "bound 3: chi2 %.1f", chi);
}
