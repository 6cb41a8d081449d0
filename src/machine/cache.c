/*
 * One set-associative data cache level (see include/tlbsim/machine/cache.h).
 *
 * Models: @sets x @ways lines, each a 64-bit tag; true LRU inside a set.  The
 * set of a tag is a hash of it, not its low bits: tlbsim's tags are synthetic
 * line numbers (machine.c), and real caches index by physical address, whose
 * page-frame bits are as good as random for a process's pages; Intel's L3
 * hashes the address over its slices too.  A multiply-shift maps the hash
 * onto any set count without a division.
 *
 * Layout: a set is its ways' tags in recency order, most recent first, so a
 * lookup reads one array (an 8-way set is one host cache line) and LRU needs
 * no stamps: a hit moves its tag to the front, a miss drops the last tag and
 * puts the new one in front.  Every simulated access of a machine with caches
 * comes here one to three times, and host cache misses and mispredicted
 * branches are what it costs; the usual way counts (4, 8, 16) get their own
 * unrolled copy of the code, two ways per SSE2 register on x86
 * (set_access_pairs()), else set_access().
 *
 * Invariant: within a set, valid tags (nonzero) come first, in recency order,
 * then zeros; a tag appears at most once in the cache, in set cache_set(tag).
 * stats.lookups == stats.hits + stats.misses.
 */
#include <glib.h>
#include "tlbsim/machine/cache.h"
#include "tlbsim/util/types.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct cache {
	_Alignas(HOST_LINE) uint64_t *tags; /* sets * ways, set-major, each set most recent first */
	unsigned sets, ways;
	struct cache_stats stats;
};

struct cache *cache_new(const struct cache_geometry *geometry)
{
	if (geometry->sets == 0 || geometry->ways == 0)
		return NULL;
	struct cache *cache = g_aligned_alloc0(1, sizeof(*cache), HOST_LINE);
	cache->tags = g_new0(uint64_t, (size_t)geometry->sets * geometry->ways);
	cache->sets = geometry->sets;
	cache->ways = geometry->ways;
	return cache;
}

void cache_free(struct cache *cache)
{
	if (!cache)
		return;
	g_free(cache->tags);
	g_aligned_free(cache);
}

/* Fibonacci hashing: the multiply's high half mixes every bit of the tag, so
 * neighbouring tags scatter. */
static inline unsigned cache_set(const struct cache *cache, uint64_t tag)
{
	uint64_t hash = (tag * UINT64_C(0x9e3779b97f4a7c15)) >> 32;
	return (unsigned)((hash * cache->sets) >> 32);
}

/*
 * Look @tag up in @set and make it the most recent: found, it moves to the
 * front; missing, the last way (the least recent, or an empty one) is dropped
 * and it goes in front.  Branch-free over the ways, so that inlined with a
 * constant @ways the loops unroll into compares and conditional moves: where
 * a tag sits is unpredictable, and a branch on it would mispredict.
 */
static inline bool set_access(uint64_t *set, uint64_t tag, unsigned ways)
{
	unsigned pos = ways - 1;
	for (unsigned w = 0; w < ways; w++)
		pos = set[w] == tag ? w : pos;
	/* GCC otherwise turns the compares and the moves below into a
	 * branch per way (to skip stores that change nothing), and those
	 * mispredict on nearly every hit: hide from it where pos came from. */
	__asm__("" : "+r"(pos));
	/* No match leaves pos on the last way, which then holds another tag. */
	bool hit = set[pos] == tag;
	/* Way w takes way w - 1's tag up to pos (an index, not a choice:
	 * no branch either).  Going down, way w - 1 is still unchanged when
	 * way w reads it. */
	for (unsigned w = ways - 1; w > 0; w--)
		set[w] = set[w - (w <= pos)];
	set[0] = tag;
	return hit;
}

#ifdef __SSE2__
/*
 * set_access() for an even @ways of at most 16, two ways per SSE2 register:
 * the compares side by side into a mask (64-bit equality from two 32-bit
 * ones), and the move to the front as a blend of each pair with the pair one
 * way down (shufpd): ways up to the position take their neighbour's tag (way
 * 0 the new one), the others keep theirs.  No load or store address depends
 * on where the tag was.
 */
static inline bool set_access_pairs(uint64_t *set, uint64_t tag, unsigned ways)
{
	__m128i key = _mm_set1_epi64x((long long)tag);
	__m128i old[8];
	uint64_t match = 0;
	for (unsigned i = 0; i < ways / 2; i++) {
		old[i] = _mm_loadu_si128((const __m128i *)&set[2 * i]);
		__m128i eq = _mm_cmpeq_epi32(old[i], key);
		eq = _mm_and_si128(eq, _mm_shuffle_epi32(eq, _MM_SHUFFLE(2, 3, 0, 1)));
		match |= (uint64_t)_mm_movemask_pd(_mm_castsi128_pd(eq)) << (2 * i);
	}
	/* No match leaves the position on the last way, which then holds
	 * another tag. */
	unsigned pos = (unsigned)__builtin_ctzll(match | UINT64_C(1) << (ways - 1));
	bool hit = (match >> pos) & 1;
	__m128i at = _mm_set1_epi32((int)pos);
	for (unsigned i = 0; i < ways / 2; i++) {
		/* Ways 2i - 1 and 2i (the new tag before way 0). */
		__m128d down =
		    i ? _mm_shuffle_pd(_mm_castsi128_pd(old[i - 1]), _mm_castsi128_pd(old[i]), 1)
		      : _mm_shuffle_pd(_mm_castsi128_pd(key), _mm_castsi128_pd(old[0]), 0);
		__m128i way =
		    _mm_set_epi32((int)(2 * i + 1), (int)(2 * i + 1), (int)(2 * i), (int)(2 * i));
		__m128i keep = _mm_cmpgt_epi32(way, at); /* ways past the position stay */
		__m128i moved = _mm_or_si128(_mm_and_si128(keep, old[i]),
					     _mm_andnot_si128(keep, _mm_castpd_si128(down)));
		_mm_storeu_si128((__m128i *)&set[2 * i], moved);
	}
	return hit;
}
#define set_access_unrolled set_access_pairs
#else
#define set_access_unrolled set_access
#endif

/* Tags are never 0 (cache.h): the hot path does not check. */
bool cache_access(struct cache *cache, uint64_t tag)
{
	uint64_t *set = &cache->tags[(size_t)cache_set(cache, tag) * cache->ways];
	bool hit;
	switch (cache->ways) {
	case 4:
		hit = set_access_unrolled(set, tag, 4);
		break;
	case 8:
		hit = set_access_unrolled(set, tag, 8);
		break;
	case 16:
		hit = set_access_unrolled(set, tag, 16);
		break;
	default:
		hit = set_access(set, tag, cache->ways);
		break;
	}
	cache->stats.lookups++;
	if (hit)
		cache->stats.hits++;
	else
		cache->stats.misses++;
	return hit;
}

bool cache_contains(const struct cache *cache, uint64_t tag)
{
	const uint64_t *set = &cache->tags[(size_t)cache_set(cache, tag) * cache->ways];
	for (unsigned w = 0; w < cache->ways && set[w] != 0; w++)
		if (set[w] == tag)
			return true;
	return false;
}

const struct cache_stats *cache_stats(const struct cache *cache)
{
	return &cache->stats;
}
