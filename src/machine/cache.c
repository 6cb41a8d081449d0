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
 * branches are what it costs.  On x86 the set operation compares and moves
 * the ways in vector registers, with no branch and no address depending on
 * where the tag was: eight ways per AVX-512 register (set_access_avx512_8(),
 * _16(), for up to 16 ways) where the host has it, else four per AVX2
 * register for 4, 8 and 16 ways (set_access_quads()), else two per SSE2
 * register (set_access_pairs()); other way counts and other hosts take
 * set_access().  Each leaves the set exactly as set_access() would: the
 * choice, made once per cache (set_impl_for()), changes the time a run
 * takes, never its output.  TLBSIM_SIMD (cache.h) caps it, for comparing.
 *
 * Invariant: within a set, valid tags (nonzero) come first, in recency order,
 * then zeros; a tag appears at most once in the cache, in set cache_set(tag).
 * stats.lookups == stats.hits + stats.misses.
 */
#include <string.h>
#include <glib.h>
#include "tlbsim/machine/cache.h"
#include "tlbsim/util/types.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CACHE_X86_VECTORS 1
#endif

/* @fn(@set, @tag, w) with the way count @ways (4, 8 or 16) a constant, so
 * that each count gets its own unrolled copy. */
#define BY_WAYS_4_8_16(fn, set, tag, ways)                                                        \
	((ways) == 4 ? fn(set, tag, 4) : (ways) == 8 ? fn(set, tag, 8) : fn(set, tag, 16))

/* Which code a set operation takes, from the least to the most capable. */
enum set_impl { SET_PLAIN, SET_SSE2, SET_AVX2, SET_AVX512 };
static const char *const set_impl_names[] = {"none", "sse2", "avx2", "avx512"};

struct cache {
	_Alignas(HOST_LINE) uint64_t *tags; /* sets * ways, set-major, each set most recent first */
	unsigned sets, ways;
	enum set_impl impl;
	struct cache_stats stats;
};

char *cache_simd_choices(void)
{
	GString *list = g_string_new(NULL);
	for (unsigned i = G_N_ELEMENTS(set_impl_names); i-- > 0;) {
		const char *separator = i > 1 ? ", " : i == 1 ? " or " : "";
		g_string_append_printf(list, "%s%s", set_impl_names[i], separator);
	}
	return g_string_free(list, FALSE);
}

/* The code TLBSIM_SIMD's value @name names, or -1. */
static int set_impl_named(const char *name)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(set_impl_names); i++)
		if (!strcmp(name, set_impl_names[i]))
			return (int)i;
	return -1;
}

bool cache_simd_valid(const char *name)
{
	return set_impl_named(name) >= 0;
}

/* The most capable code the host runs, within TLBSIM_SIMD (the CLI has
 * refused a value that names none). */
static enum set_impl set_impl_host(void)
{
	const char *env = g_getenv("TLBSIM_SIMD");
	int named = env ? set_impl_named(env) : -1;
	enum set_impl cap = named >= 0 ? (enum set_impl)named : SET_AVX512;
#ifdef CACHE_X86_VECTORS
	if (cap >= SET_AVX512 && __builtin_cpu_supports("avx512f"))
		return SET_AVX512;
	if (cap >= SET_AVX2 && __builtin_cpu_supports("avx2"))
		return SET_AVX2;
#endif
#ifdef __SSE2__
	if (cap >= SET_SSE2)
		return SET_SSE2;
#endif
	return SET_PLAIN;
}

static enum set_impl set_impl_for(unsigned ways)
{
	enum set_impl impl = set_impl_host();
	if (impl == SET_AVX512 && ways > 16)
		impl = SET_AVX2;
	if (impl <= SET_AVX2 && ways != 4 && ways != 8 && ways != 16)
		impl = SET_PLAIN;
	return impl;
}

struct cache *cache_new(const struct cache_geometry *geometry)
{
	if (geometry->sets == 0 || geometry->ways == 0)
		return NULL;
	struct cache *cache = g_aligned_alloc0(1, sizeof(*cache), HOST_LINE);
	/* On a host line, so that a vector set operation's load and store of an
	 * 8-way set are never split over two lines. */
	cache->tags =
	    g_aligned_alloc0((size_t)geometry->sets * geometry->ways, sizeof(uint64_t), HOST_LINE);
	cache->sets = geometry->sets;
	cache->ways = geometry->ways;
	cache->impl = set_impl_for(geometry->ways);
	return cache;
}

void cache_free(struct cache *cache)
{
	if (!cache)
		return;
	g_aligned_free(cache->tags);
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
#endif

#ifdef CACHE_X86_VECTORS
/*
 * set_access() for 4, 8 or 16 ways, four per AVX2 register: the compares
 * side by side into a mask, and the move to the front as each quad rotated
 * up one lane (vpermq), the quad below's last way (or the new tag) entering
 * lane 0, blended over the ways up to the position.
 */
__attribute__((target("avx2"), always_inline)) static inline bool
set_access_quads(uint64_t *set, uint64_t tag, unsigned ways)
{
	__m256i key = _mm256_set1_epi64x((long long)tag);
	__m256i old[4];
	unsigned match = 0;
	for (unsigned i = 0; i < ways / 4; i++) {
		old[i] = _mm256_loadu_si256((const __m256i *)&set[4 * i]);
		__m256i eq = _mm256_cmpeq_epi64(old[i], key);
		match |= (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(eq)) << (4 * i);
	}
	unsigned pos = (unsigned)__builtin_ctz(match | 1u << (ways - 1));
	__m256i at = _mm256_set1_epi64x(pos);
	for (unsigned i = 0; i < ways / 4; i++) {
		__m256i rotated = _mm256_permute4x64_epi64(old[i], _MM_SHUFFLE(2, 1, 0, 3));
		__m256i below =
		    i ? _mm256_permute4x64_epi64(old[i - 1], _MM_SHUFFLE(3, 3, 3, 3)) : key;
		__m256i up = _mm256_blend_epi32(rotated, below, 0x03);
		__m256i way = _mm256_setr_epi64x(4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3);
		__m256i keep = _mm256_cmpgt_epi64(way, at); /* ways past the position stay */
		_mm256_storeu_si256((__m256i *)&set[4 * i], _mm256_blendv_epi8(up, old[i], keep));
	}
	return (match >> pos) & 1;
}

__attribute__((target("avx2"))) static bool set_access_avx2(uint64_t *set, uint64_t tag,
							   unsigned ways)
{
	return BY_WAYS_4_8_16(set_access_quads, set, tag, ways);
}

/*
 * set_access() for up to 8 ways in one AVX-512 register (lanes past @ways
 * neither loaded nor stored): the compares at once into a mask, and the
 * move to the front as the set shifted up one lane (the new tag entering
 * lane 0) blended over lanes 0 .. pos.
 */
__attribute__((target("avx512f"))) static bool set_access_avx512_8(uint64_t *set, uint64_t tag,
								 unsigned ways)
{
	__mmask8 lanes = (__mmask8)((1u << ways) - 1);
	__m512i key = _mm512_set1_epi64((long long)tag);
	__m512i old = _mm512_maskz_loadu_epi64(lanes, set);
	unsigned match = _mm512_mask_cmpeq_epi64_mask(lanes, old, key);
	unsigned pos = (unsigned)__builtin_ctz(match | 1u << (ways - 1));
	__m512i up = _mm512_alignr_epi64(old, key, 7); /* tag, way 0, way 1, ... */
	_mm512_mask_storeu_epi64(set, (__mmask8)((2u << pos) - 1), up);
	return (match >> pos) & 1;
}

/* The same for 9 to 16 ways, in two registers. */
__attribute__((target("avx512f"))) static bool set_access_avx512_16(uint64_t *set, uint64_t tag,
								  unsigned ways)
{
	__mmask8 high_lanes = (__mmask8)((1u << (ways - 8)) - 1);
	__m512i key = _mm512_set1_epi64((long long)tag);
	__m512i low = _mm512_loadu_si512(set);
	__m512i high = _mm512_maskz_loadu_epi64(high_lanes, set + 8);
	unsigned match = _mm512_cmpeq_epi64_mask(low, key) |
			 (unsigned)_mm512_mask_cmpeq_epi64_mask(high_lanes, high, key) << 8;
	unsigned pos = (unsigned)__builtin_ctz(match | 1u << (ways - 1));
	unsigned move = (2u << pos) - 1;
	_mm512_mask_storeu_epi64(set, (__mmask8)move, _mm512_alignr_epi64(low, key, 7));
	_mm512_mask_storeu_epi64(set + 8, (__mmask8)(move >> 8), _mm512_alignr_epi64(high, low, 7));
	return (match >> pos) & 1;
}
#endif

#ifdef __SSE2__
static bool set_access_sse2(uint64_t *set, uint64_t tag, unsigned ways)
{
	return BY_WAYS_4_8_16(set_access_pairs, set, tag, ways);
}
#endif

/* Tags are never 0 (cache.h): the hot path does not check. */
bool cache_access(struct cache *cache, uint64_t tag)
{
	uint64_t *set = &cache->tags[(size_t)cache_set(cache, tag) * cache->ways];
	unsigned ways = cache->ways;
	bool hit;
	switch (cache->impl) {
#ifdef CACHE_X86_VECTORS
	case SET_AVX512:
		hit = ways <= 8 ? set_access_avx512_8(set, tag, ways)
				: set_access_avx512_16(set, tag, ways);
		break;
	case SET_AVX2:
		hit = set_access_avx2(set, tag, ways);
		break;
#endif
#ifdef __SSE2__
	case SET_SSE2:
		hit = set_access_sse2(set, tag, ways);
		break;
#endif
	default:
		hit = set_access(set, tag, ways);
		break;
	}
	cache->stats.lookups++;
	if (hit)
		cache->stats.hits++;
	else
		cache->stats.misses++;
	return hit;
}

bool cache_set_access(uint64_t *set, unsigned ways, uint64_t tag)
{
	/* 4 ways (the PDE cache's) a constant: their own unrolled copy. */
	return ways == 4 ? set_access(set, tag, 4) : set_access(set, tag, ways);
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
