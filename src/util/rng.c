/*
 * xoshiro256** (Blackman & Vigna) seeded through splitmix64.  Chosen because it
 * is tiny, fast, has no bad low bits, and gives the same stream everywhere;
 * determinism across machines is a product requirement.
 */
#include "tlbsim/util/rng.h"

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void rng_seed(struct rng *rng, uint64_t seed)
{
	uint64_t state = seed;
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&state);
}

void rng_seed_stream(struct rng *rng, uint64_t seed, uint64_t index)
{
	uint64_t mix = seed;
	uint64_t stream_key = splitmix64(&mix) ^ (index * UINT64_C(0xd1342543de82ef95));
	rng_seed(rng, stream_key);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *rng, uint64_t bound)
{
	/* Rejection sampling: values in the incomplete top block would bias. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
	uint64_t x;
	do
		x = rng_next(rng);
	while (x >= limit);
	return x % bound;
}
