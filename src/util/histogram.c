/*
 * A histogram in bounded memory (see include/tlbsim/util/histogram.h).
 *
 * Notes:
 * - The table is open addressing with linear probing over keys and counts
 *   (a count of 0 marks a free slot), at most half full: its room doubles
 *   when it would be fuller.  Exact, it holds at most
 *   HISTOGRAM_EXACT_VALUES keys; the next new value folds every key into
 *   its bucket (bucket()), which holds at most 56320 keys: the room never
 *   passes 2 * HISTOGRAM_EXACT_VALUES slots, 2 MiB.
 * - A bucket's key is its lowest value, so folding a key that is already a
 *   bucket's leaves it as it is: adding values before or after the fold
 *   gives the same table.
 * - A percentile sorts the table's keys (at most 65536) each time: the
 *   report asks for two, once per run.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "tlbsim/util/histogram.h"

#define INITIAL_ROOM 64

struct histogram {
	uint64_t count;
	uint64_t sum_hi, sum_lo;
	uint64_t min, max;
	uint64_t fingerprint;
	bool bucketed;
	size_t room; /* slots: a power of two */
	size_t used; /* slots with a count */
	uint64_t *keys;
	uint64_t *counts;
};

/* @value kept to its HISTOGRAM_BITS leading bits. */
static uint64_t bucket(uint64_t value)
{
	if (value < (UINT64_C(1) << HISTOGRAM_BITS))
		return value;
	unsigned drop = 64 - (unsigned)__builtin_clzll(value) - HISTOGRAM_BITS;
	return value >> drop << drop;
}

static void table_alloc(struct histogram *h, size_t room)
{
	h->room = room;
	h->used = 0;
	h->keys = g_new(uint64_t, room);
	h->counts = g_new0(uint64_t, room);
}

/* The slot of @key: where it is, or the free slot where it belongs. */
static size_t slot_of(const struct histogram *h, uint64_t key)
{
	unsigned shift = 64 - (unsigned)__builtin_ctzll(h->room);
	size_t i = (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> shift);
	while (h->counts[i] && h->keys[i] != key)
		i = (i + 1) & (h->room - 1);
	return i;
}

static void table_add(struct histogram *h, uint64_t key, uint64_t n)
{
	size_t i = slot_of(h, key);
	if (!h->counts[i]) {
		h->keys[i] = key;
		h->used++;
	}
	h->counts[i] += n;
}

/* Move every key into a table of @room slots, each folded if @fold. */
static void table_rebuild(struct histogram *h, size_t room, bool fold)
{
	uint64_t *keys = h->keys, *counts = h->counts;
	size_t old_room = h->room;
	table_alloc(h, room);
	for (size_t i = 0; i < old_room; i++)
		if (counts[i])
			table_add(h, fold ? bucket(keys[i]) : keys[i], counts[i]);
	g_free(keys);
	g_free(counts);
}

struct histogram *histogram_new(void)
{
	struct histogram *h = g_new0(struct histogram, 1);
	table_alloc(h, INITIAL_ROOM);
	return h;
}

void histogram_free(struct histogram *h)
{
	if (!h)
		return;
	g_free(h->keys);
	g_free(h->counts);
	g_free(h);
}

struct histogram *histogram_copy(const struct histogram *h)
{
	struct histogram *copy = g_memdup2(h, sizeof(*h));
	copy->keys = g_memdup2(h->keys, h->room * sizeof(uint64_t));
	copy->counts = g_memdup2(h->counts, h->room * sizeof(uint64_t));
	return copy;
}

void histogram_add(struct histogram *h, uint64_t value)
{
	h->min = h->count == 0 ? value : MIN(h->min, value);
	h->max = h->count == 0 ? value : MAX(h->max, value);
	h->count++;
	h->sum_lo += value;
	h->sum_hi += h->sum_lo < value;
	h->fingerprint = ((h->fingerprint << 5 | h->fingerprint >> 59) ^ value) *
			 UINT64_C(0x9e3779b97f4a7c15);
	uint64_t key = h->bucketed ? bucket(value) : value;
	if (h->counts[slot_of(h, key)] == 0) {
		if (!h->bucketed && h->used == HISTOGRAM_EXACT_VALUES) {
			h->bucketed = true;
			table_rebuild(h, h->room, true);
			key = bucket(value);
		}
		if (2 * (h->used + 1) > h->room)
			table_rebuild(h, 2 * h->room, false);
	}
	table_add(h, key, 1);
}

uint64_t histogram_count(const struct histogram *h)
{
	return h->count;
}

void histogram_sum(const struct histogram *h, uint64_t *hi, uint64_t *lo)
{
	*hi = h->sum_hi;
	*lo = h->sum_lo;
}

uint64_t histogram_min(const struct histogram *h)
{
	return h->min;
}

uint64_t histogram_max(const struct histogram *h)
{
	return h->max;
}

bool histogram_exact(const struct histogram *h)
{
	return !h->bucketed;
}

size_t histogram_bytes(const struct histogram *h)
{
	return sizeof(*h) + 2 * h->room * sizeof(uint64_t);
}

uint64_t histogram_fingerprint(const struct histogram *h)
{
	return h->fingerprint;
}

struct entry {
	uint64_t key, count;
};

static int compare_entries(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->key, y = ((const struct entry *)b)->key;
	return (x > y) - (x < y);
}

uint64_t histogram_percentile(const struct histogram *h, unsigned pct)
{
	g_assert(pct >= 1 && pct <= 100);
	if (h->count == 0)
		return 0;
	struct entry *sorted = g_new(struct entry, h->used);
	size_t n = 0;
	for (size_t i = 0; i < h->room; i++)
		if (h->counts[i])
			sorted[n++] = (struct entry){h->keys[i], h->counts[i]};
	qsort(sorted, n, sizeof(*sorted), compare_entries);
	/* Nearest rank: ceil(count * pct / 100), without overflow. */
	uint64_t rank = h->count / 100 * pct + (h->count % 100 * pct + 99) / 100;
	uint64_t seen = 0, value = sorted[n - 1].key;
	for (size_t i = 0; i < n; i++) {
		seen += sorted[i].count;
		if (seen >= rank) {
			value = sorted[i].key;
			break;
		}
	}
	g_free(sorted);
	return value;
}
