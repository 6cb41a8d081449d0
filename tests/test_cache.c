/*
 * Tests of src/machine/cache.c: hits and misses, true LRU inside a set, the stats
 * identity, that neighbouring tags spread over the sets, and refused
 * geometries.
 */
#include <criterion/criterion.h>
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
