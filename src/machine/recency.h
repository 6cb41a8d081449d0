#ifndef TLBSIM_MACHINE_RECENCY_H
#define TLBSIM_MACHINE_RECENCY_H
/*
 * The replacement state of a set of up to 12 ways in one 64-bit word
 * (private to src/machine): true LRU without stamps.
 *
 * Bits 0 .. 4 * ways - 1: the recency order, nibble r holding the way of rank
 * r, rank 0 the most recently used.  Bits 48 .. 48 + ways - 1: which ways
 * are filled.  The victim is the first empty way in way order if there is
 * one, else the way of the last rank: the choice of "first invalid way, else
 * the least recent" that a stamp per way gives, so that entries land in the
 * same ways.  An emptied way keeps its rank until it is filled again, which
 * makes it the most recent; by the time the set is full every way has been
 * used since it was last filled, so the last rank is the least recent.
 *
 * A word whose order is zero stands for the initial order (way r at rank r):
 * zeroed memory needs no setup, and a set never used takes no host memory.
 * No order of two or more ways is 0; for one way, 0 is the order.
 */
#include <stdint.h>

#define RECENCY_MAX_WAYS 12
#define RECENCY_FILLED_SHIFT 48
#define RECENCY_ORDER_MASK ((UINT64_C(1) << RECENCY_FILLED_SHIFT) - 1)
#define RECENCY_NIBBLES UINT64_C(0x111111111111)

/* Way r at rank r: the nibbles 0, 1, 2, ... of the first @ways ranks. */
static inline uint64_t recency_initial(unsigned ways)
{
	return UINT64_C(0xba9876543210) & ((UINT64_C(1) << (4 * ways)) - 1);
}

/* *@word, its order made explicit if still the initial one. */
static inline uint64_t recency_load(const uint64_t *word, unsigned ways)
{
	return *word & RECENCY_ORDER_MASK ? *word : *word | recency_initial(ways);
}

/* The rank of @way: the only nibble of the order equal to it.  In x that
 * nibble alone is zero below rank @ways, and the lowest nibble the borrow
 * trick flags is always a true zero (false flags sit above one). */
static inline unsigned recency_rank(uint64_t word, unsigned way)
{
	uint64_t x = (word & RECENCY_ORDER_MASK) ^ (RECENCY_NIBBLES * way);
	uint64_t zero = (x - RECENCY_NIBBLES) & ~x & (RECENCY_NIBBLES << 3);
	return (unsigned)__builtin_ctzll(zero) >> 2;
}

/* @way was used: it becomes the most recent, the ranks below its own move up one. */
static inline uint64_t recency_use(uint64_t word, unsigned way)
{
	unsigned rank = recency_rank(word, way);
	uint64_t upto = (UINT64_C(2) << (4 * rank + 3)) - 1; /* ranks 0 .. rank */
	return (word & ~upto) | ((word << 4) & upto) | way;
}

/* @way was filled: used, and filled. */
static inline uint64_t recency_fill(uint64_t word, unsigned way)
{
	return recency_use(word, way) | UINT64_C(1) << (RECENCY_FILLED_SHIFT + way);
}

/* @way was emptied. */
static inline uint64_t recency_empty(uint64_t word, unsigned way)
{
	return word & ~(UINT64_C(1) << (RECENCY_FILLED_SHIFT + way));
}

/* The way a fill takes: the first empty one, else the least recent. */
static inline unsigned recency_victim(uint64_t word, unsigned ways)
{
	uint64_t empty = ~(word >> RECENCY_FILLED_SHIFT) & ((UINT64_C(1) << ways) - 1);
	unsigned last = (unsigned)(word >> (4 * (ways - 1))) & 0xf;
	return empty ? (unsigned)__builtin_ctzll(empty) : last;
}

#endif
