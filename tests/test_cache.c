/*
 * Tests of src/machine/cache.c: hits and misses, true LRU inside a set (also
 * against a reference list, in each code a set operation can take), the stats
 * identity, that neighbouring tags spread over the sets, and refused
 * geometries.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/cache.h"

static struct cache *cache_of(unsigned sets, unsigned ways)
{
	struct cache *c = cache_new(&(struct cache_geometry){.sets = sets, .ways = ways});
	cr_assert_not_null(c);
	return c;
}

Test(cache, a_miss_fills_and_the_next_access_hits)
{
	struct cache *c = cache_of(4, 2);
	cr_expect_not(cache_contains(c, 42));
	cr_expect_not(cache_access(c, 42));
	cr_expect(cache_contains(c, 42));
	cr_expect(cache_access(c, 42));
	const struct cache_stats *s = cache_stats(c);
	cr_expect_eq(s->lookups, 2);
	cr_expect_eq(s->hits, 1);
	cr_expect_eq(s->misses, 1);
	cache_free(c);
	cache_free(NULL);
}

Test(cache, the_least_recently_used_way_is_the_victim)
{
	/* One set: every tag competes for its two ways. */
	struct cache *c = cache_of(1, 2);
	cache_access(c, 1);
	cache_access(c, 2);
	cr_expect(cache_access(c, 1)); /* 1 is now the most recent */
	cr_expect_not(cache_access(c, 3));
	cr_expect(cache_contains(c, 1));
	cr_expect_not(cache_contains(c, 2), "2 was the least recently used");
	cr_expect(cache_contains(c, 3));
	/* A fully used set keeps exactly its ways' worth of tags. */
	for (uint64_t t = 10; t < 20; t++)
		cache_access(c, t);
	unsigned held = 0;
	for (uint64_t t = 1; t < 20; t++)
		held += cache_contains(c, t);
	cr_expect_eq(held, 2);
	cr_expect(cache_contains(c, 18) && cache_contains(c, 19));
	cache_free(c);
}

/* Reference true LRU for one set: @order holds its tags, most recent first. */
static bool reference_access(uint64_t *order, unsigned ways, uint64_t tag)
{
	unsigned pos = ways - 1;
	for (unsigned w = 0; w < ways; w++)
		if (order[w] == tag)
			pos = w;
	bool hit = order[pos] == tag;
	for (unsigned w = pos; w > 0; w--)
		order[w] = order[w - 1];
	order[0] = tag;
	return hit;
}

/* Hits at every position, misses with the set full or not, from a pool a
 * few tags larger than the set; caches made with the environment as it is. */
static void check_true_lru(const char *code)
{
	static const unsigned way_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24};
	for (unsigned k = 0; k < sizeof(way_counts) / sizeof(way_counts[0]); k++) {
		unsigned ways = way_counts[k];
		struct cache *c = cache_of(1, ways);
		uint64_t order[24] = {0};
		uint64_t x = 12345;
		for (unsigned i = 0; i < 5000; i++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			uint64_t tag = 1 + (x >> 33) % (ways + 3);
			bool want = reference_access(order, ways, tag);
			cr_assert_eq(cache_access(c, tag), want, "%s, %u ways, access %u (tag %lu)",
				     code, ways, i, (unsigned long)tag);
		}
		for (uint64_t t = 1; t <= ways + 3; t++) {
			bool held = false;
			for (unsigned w = 0; w < ways; w++)
				held |= order[w] == t;
			cr_expect_eq(cache_contains(c, t), held, "%s, %u ways, tag %lu", code, ways,
				     (unsigned long)t);
		}
		cache_free(c);
	}
}

/*
 * Every way count is true LRU, in each code a set operation can take
 * (cache.c): AVX-512 for up to 16 ways, AVX2 and SSE2 for 4, 8 and 16, the
 * plain loop for any; the host runs those it has, up to TLBSIM_SIMD.
 */
Test(cache, every_way_count_is_true_lru)
{
	static const char *const caps[] = {"avx512", "avx2", "sse2", "none"};
	for (unsigned i = 0; i < G_N_ELEMENTS(caps); i++) {
		cr_assert(cache_simd_valid(caps[i]));
		g_setenv("TLBSIM_SIMD", caps[i], TRUE);
		check_true_lru(caps[i]);
	}
	g_unsetenv("TLBSIM_SIMD");
	cr_expect_not(cache_simd_valid("avx"));
	g_autofree char *choices = cache_simd_choices();
	cr_expect_str_eq(choices, "avx512, avx2, sse2 or none");
}

Test(cache, neighbouring_tags_spread_over_the_sets)
{
	/* 64 consecutive tags in 64 direct-mapped sets: indexed by a hash, about
	 * 1 - 1/e of the sets get one (40 on average), where a hash that kept
	 * neighbours together would put them in a handful. */
	struct cache *c = cache_of(64, 1);
	for (uint64_t t = 1; t <= 64; t++)
		cache_access(c, t);
	unsigned held = 0;
	for (uint64_t t = 1; t <= 64; t++)
		held += cache_contains(c, t);
	cr_expect_geq(held, 32, "only %u of 64 neighbouring lines kept", held);
	cr_expect_lt(held, 64, "no two of 64 hashed lines collided in 64 sets");
	cache_free(c);
}

Test(cache, set_counts_need_not_be_powers_of_two)
{
	/* 6 sets x 4 ways: 24 tags fit only if every set gets 4; check the
	 * mapping stays inside the array (ASan) and the capacity holds. */
	struct cache *c = cache_of(6, 4);
	for (uint64_t t = 1; t <= 1000; t++)
		cache_access(c, t);
	unsigned held = 0;
	for (uint64_t t = 1; t <= 1000; t++)
		held += cache_contains(c, t);
	cr_expect_eq(held, 24);
	cache_free(c);
}

Test(cache, impossible_geometries_are_refused)
{
	cr_expect_null(cache_new(&(struct cache_geometry){.sets = 0, .ways = 4}));
	cr_expect_null(cache_new(&(struct cache_geometry){.sets = 4, .ways = 0}));
}
