#ifndef TLBSIM_CACHE_H
#define TLBSIM_CACHE_H
/*
 * One set-associative data cache level (an L1D, an L2, a core's share of an
 * L3) holding memory lines by tag, with true LRU replacement inside each set.
 * Tags only: no data, no coherence state.  The machine uses it to know where
 * a page walk finds its page-table lines (machine.c); the structure knows
 * nothing of CPUs, time or costs.
 */
#include <stdbool.h>
#include <stdint.h>

struct cache_geometry {
	unsigned sets; /* any count >= 1: the set index needs no division */
	unsigned ways;
};

struct cache_stats {
	uint64_t lookups; /* == hits + misses */
	uint64_t hits;
	uint64_t misses;
};

struct cache;

/* Returns NULL for an impossible geometry (callers validate first). */
struct cache *cache_new(const struct cache_geometry *geometry);
void cache_free(struct cache *cache);

/*
 * Look @tag up (any value but 0); a hit makes it the most recently used line
 * of its set, a miss fills it in place of the least recently used one.
 * Returns whether it hit.
 */
bool cache_access(struct cache *cache, uint64_t tag);
/*
 * The same lookup on a set of @ways tags the caller keeps (any value but 0,
 * most recent first, empty ways (0) after the others): true LRU with the
 * hit's move to the front, or the fill in place of the last way.
 */
bool cache_set_access(uint64_t *set, unsigned ways, uint64_t tag);
/* Whether @tag is held, touching nothing (tests, checks). */
bool cache_contains(const struct cache *cache, uint64_t tag);
const struct cache_stats *cache_stats(const struct cache *cache);

/*
 * Caches pick the vector instructions their set operation uses from what the
 * host has, with the same results in every case.  TLBSIM_SIMD in the
 * environment caps them, for comparing: "avx512", "avx2", "sse2" or "none".
 * Whether @name is one of those (the CLI refuses another).
 */
bool cache_simd_valid(const char *name);
/* Those names, most capable first, as "avx512, avx2, sse2 or none"; the
 * caller frees it. */
char *cache_simd_choices(void);

#endif
