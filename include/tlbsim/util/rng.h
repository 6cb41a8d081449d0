#ifndef TLBSIM_RNG_H
#define TLBSIM_RNG_H
/*
 * Deterministic pseudo-random numbers: xoshiro256** seeded through splitmix64.
 * Same seed, same stream on every machine (no libc rand(), no floating point in
 * the integer paths).  Each simulated thread owns a stream derived from the run
 * seed and its index, so adding a thread does not perturb the others.
 */
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *rng, uint64_t seed);
/* Stream @index of @seed: independent of how many other streams exist. */
void rng_seed_stream(struct rng *rng, uint64_t seed, uint64_t index);
uint64_t rng_next(struct rng *rng);
/* Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t rng_below(struct rng *rng, uint64_t bound);

#endif
