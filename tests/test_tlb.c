/*
 * Tests of src/machine/tlb.c: geometry checks, matching (ASID, owner, page size), LRU
 * order worked out by hand, the three flushes, the counters, and a randomized
 * comparison against a naive reference model kept in this file.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <glib.h>
#include "tlbsim/machine/tlb.h"

#define K4 UINT64_C(0x1000)
#define M2 UINT64_C(0x200000)
#define G1 UINT64_C(0x40000000)
#define SZ_4K (1u << PS_4K)
#define SZ_2M (1u << PS_2M)
#define SZ_1G (1u << PS_1G)

static struct tlb *new_tlb(unsigned entries, unsigned ways, unsigned page_sizes)
{
	struct tlb_geometry g = {.entries = entries, .ways = ways, .page_sizes = page_sizes};
	struct tlb *tlb = tlb_new(&g);

	cr_assert_not_null(tlb, "geometry %u/%u/%#x rejected", entries, ways, page_sizes);
	return tlb;
}

static bool hits(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	return tlb_lookup(tlb, vaddr, asid, owner) != NULL;
}

/* tlb_lookup() that fails the test, rather than crashing it, on a miss. */
static const struct tlb_entry *must_hit(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	const struct tlb_entry *e = tlb_lookup(tlb, vaddr, asid, owner);

	cr_assert_not_null(e, "miss at %#lx asid %u owner %d", (unsigned long)vaddr, asid, owner);
	return e;
}

/* ---- geometry ---------------------------------------------------------- */

Test(tlb, rejects_impossible_geometry)
{
	static const struct tlb_geometry bad[] = {
	    {.entries = 64, .ways = 0, .page_sizes = SZ_4K},
	    {.entries = 0, .ways = 4, .page_sizes = SZ_4K},
	    {.entries = 0, .ways = 0, .page_sizes = SZ_4K},
	    {.entries = 64, .ways = 6, .page_sizes = SZ_4K}, /* 6 does not divide 64 */
	    {.entries = 4, .ways = 8, .page_sizes = SZ_4K},  /* more ways than entries */
	    {.entries = 64, .ways = 4, .page_sizes = 0},
	    {.entries = 64, .ways = 4, .page_sizes = 1u << NR_PAGE_SIZES},
	    {.entries = 64, .ways = 4, .page_sizes = SZ_4K | 0x80000000u},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_null(tlb_new(&bad[i]), "bad geometry %zu accepted", i);
}

Test(tlb, accepts_and_keeps_geometry)
{
	struct tlb *tlb = new_tlb(24, 8, SZ_4K | SZ_2M | SZ_1G); /* 3 sets: not a power of two */
	const struct tlb_geometry *g = tlb_geometry(tlb);

	cr_assert_eq(g->entries, 24);
	cr_assert_eq(g->ways, 8);
	cr_assert_eq(g->page_sizes, 7u);
	cr_assert_eq(tlb_occupancy(tlb), 0);
	tlb_free(tlb);
	tlb_free(NULL);
}

/* ---- matching ---------------------------------------------------------- */

Test(tlb, hit_after_fill)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	cr_assert_null(tlb_lookup(tlb, 0x1234abc, 1, 0));
	cr_assert(tlb_fill(tlb, 0x1234abc, PS_4K, 1, 0, 7));

	const struct tlb_entry *e = tlb_lookup(tlb, 0x1234000, 1, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->vpn, 0x1234);
	cr_assert_eq(e->gen, 7);
	cr_assert_eq(e->asid, 1);
	cr_assert_eq(e->owner, 0);
	cr_assert_eq(e->page_size, PS_4K);
	cr_assert(e->valid);
	cr_assert(hits(tlb, 0x1234fff, 1, 0));
	cr_assert_not(hits(tlb, 0x1235000, 1, 0), "next page");
	cr_assert_not(hits(tlb, 0x1233fff, 1, 0), "previous page");
	tlb_free(tlb);
}

Test(tlb, miss_for_other_asid)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	tlb_fill(tlb, 0x5000, PS_4K, 3, 0, 1);
	cr_assert_not(hits(tlb, 0x5000, 4, 0));
	cr_assert_not(hits(tlb, 0x5000, 0, TLB_ANY_OWNER));
	cr_assert(hits(tlb, 0x5000, 3, 0));
	tlb_free(tlb);
}

Test(tlb, owner_filtering)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	tlb_fill(tlb, 0x9000, PS_4K, 0, 1, 1);
	cr_assert_not(hits(tlb, 0x9000, 0, 2), "owner 2 must not see owner 1's entry");
	cr_assert_not(hits(tlb, 0x9000, 0, 0));
	cr_assert(hits(tlb, 0x9000, 0, 1));
	cr_assert(hits(tlb, 0x9000, 0, TLB_ANY_OWNER));

	/* The same page filled by owner 2 is a second entry, not a refresh. */
	tlb_fill(tlb, 0x9000, PS_4K, 0, 2, 5);
	cr_assert_eq(tlb_occupancy(tlb), 2);
	cr_assert_eq(must_hit(tlb, 0x9000, 0, 2)->gen, 5);
	cr_assert_eq(must_hit(tlb, 0x9000, 0, 1)->gen, 1);
	tlb_free(tlb);
}

Test(tlb, same_page_of_other_asids_and_owners_in_one_set)
{
	/* One 4-way set; the same vaddr under three tags, plus a dead way in front. */
	struct tlb *tlb = new_tlb(4, 4, SZ_4K);

	tlb_fill(tlb, 0x7000, PS_4K, 9, 0, 90); /* way 0, flushed below */
	tlb_fill(tlb, 0x7000, PS_4K, 1, 0, 10);
	tlb_fill(tlb, 0x7000, PS_4K, 2, 0, 20);
	tlb_fill(tlb, 0x7000, PS_4K, 2, 1, 21);
	cr_assert_eq(tlb_flush_asid(tlb, 9, TLB_ANY_OWNER), 1);

	cr_assert_eq(must_hit(tlb, 0x7000, 1, 0)->gen, 10);
	cr_assert_eq(must_hit(tlb, 0x7000, 2, 0)->gen, 20);
	cr_assert_eq(must_hit(tlb, 0x7000, 2, 1)->gen, 21);
	cr_assert_not(hits(tlb, 0x7000, 9, 0), "flushed way still has the vpn but is invalid");
	cr_assert_not(hits(tlb, 0x7000, 3, TLB_ANY_OWNER));
	cr_assert_not(hits(tlb, 0x7000, 1, 1));
	tlb_free(tlb);
}

/* ---- replacement ------------------------------------------------------- */

/*
 * 4 entries, 2 ways: 2 sets, set = vpn & 1.  A, B, C = vpn 0, 2, 4 all map to
 * set 0; D = vpn 1 sits in set 1 and must never be disturbed.
 */
#define PA (0 * K4)
#define PB (2 * K4)
#define PC (4 * K4)
#define PD (1 * K4)

Test(tlb, lru_evicts_least_recently_touched)
{
	struct tlb *tlb = new_tlb(4, 2, SZ_4K);

	tlb_fill(tlb, PD, PS_4K, 0, 0, 0);
	tlb_fill(tlb, PA, PS_4K, 0, 0, 0);
	tlb_fill(tlb, PB, PS_4K, 0, 0, 0);
	cr_assert(hits(tlb, PA, 0, 0)); /* A now more recent than B */
	tlb_fill(tlb, PC, PS_4K, 0, 0, 0);

	cr_assert_eq(tlb_stats(tlb)->evictions, 1);
	cr_assert_not(hits(tlb, PB, 0, 0), "B was the LRU way of set 0");
	cr_assert(hits(tlb, PA, 0, 0));
	cr_assert(hits(tlb, PC, 0, 0));
	cr_assert(hits(tlb, PD, 0, 0), "set 1 untouched");
	cr_assert_eq(tlb_occupancy(tlb), 3);
	tlb_free(tlb);
}

Test(tlb, lru_without_touch_evicts_oldest_fill)
{
	struct tlb *tlb = new_tlb(4, 2, SZ_4K);

	tlb_fill(tlb, PA, PS_4K, 0, 0, 0);
	tlb_fill(tlb, PB, PS_4K, 0, 0, 0);
	tlb_fill(tlb, PC, PS_4K, 0, 0, 0); /* evicts A */
	cr_assert(hits(tlb, PB, 0, 0));    /* B more recent than C now */
	tlb_fill(tlb, PA, PS_4K, 0, 0, 0); /* evicts C */

	cr_assert_eq(tlb_stats(tlb)->evictions, 2);
	cr_assert(hits(tlb, PA, 0, 0));
	cr_assert(hits(tlb, PB, 0, 0));
	cr_assert_not(hits(tlb, PC, 0, 0));
	tlb_free(tlb);
}

Test(tlb, invalid_way_is_taken_before_lru)
{
	struct tlb *tlb = new_tlb(4, 2, SZ_4K);

	tlb_fill(tlb, PA, PS_4K, 0, 0, 0);
	tlb_fill(tlb, PB, PS_4K, 0, 0, 0);
	cr_assert_eq(tlb_flush_one(tlb, PB, 0, TLB_ANY_OWNER), 1); /* B's way is free, A is LRU */
	tlb_fill(tlb, PC, PS_4K, 0, 0, 0);

	cr_assert_eq(tlb_stats(tlb)->evictions, 0);
	cr_assert(hits(tlb, PA, 0, 0));
	cr_assert(hits(tlb, PC, 0, 0));
	tlb_free(tlb);
}

static struct tlb *new_plru_tlb(unsigned entries, unsigned ways)
{
	struct tlb_geometry g = {.entries = entries, .ways = ways, .page_sizes = SZ_4K,
				 .replacement = TLB_REPLACE_TREE_PLRU};
	struct tlb *tlb = tlb_new(&g);

	cr_assert_not_null(tlb, "tree PLRU %u/%u rejected", entries, ways);
	return tlb;
}

static bool present(const struct tlb *tlb, uint64_t vaddr)
{
	uint32_t gen;
	return tlb_peek(tlb, vaddr, PS_4K, 0, 0, &gen);
}

Test(tlb, tree_plru_needs_power_of_two_ways)
{
	static const struct tlb_geometry bad[] = {
	    {.entries = 24, .ways = 6, .page_sizes = SZ_4K, .replacement = TLB_REPLACE_TREE_PLRU},
	    {.entries = 3, .ways = 3, .page_sizes = SZ_4K, .replacement = TLB_REPLACE_TREE_PLRU},
	    {.entries = 128, .ways = 128, .page_sizes = SZ_4K, .replacement = TLB_REPLACE_TREE_PLRU},
	    {.entries = 8, .ways = 4, .page_sizes = SZ_4K, .replacement = 2},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_null(tlb_new(&bad[i]), "bad geometry %zu accepted", i);
	tlb_free(new_plru_tlb(64, 64)); /* fully associative: 63 tree bits */
	tlb_free(new_plru_tlb(6, 1));   /* direct-mapped: no tree at all */
}

/*
 * One 4-way set, pages 0-3 filled into ways 0-3, then page 0 used.  The tree's
 * bits point away from the last use on each level: the root away from ways
 * 0-1 (page 0's half), the node over ways 2-3 away from way 3 (filled last):
 * the victim is way 2, page 2.  LRU would take page 1.
 */
Test(tlb, tree_plru_victim_follows_the_tree)
{
	struct tlb *plru = new_plru_tlb(4, 4);
	struct tlb *lru = new_tlb(4, 4, SZ_4K);

	for (uint64_t page = 0; page < 4; page++) {
		tlb_fill(plru, page * K4, PS_4K, 0, 0, 0);
		tlb_fill(lru, page * K4, PS_4K, 0, 0, 0);
	}
	cr_assert(hits(plru, 0, 0, 0));
	cr_assert(hits(lru, 0, 0, 0));
	tlb_fill(plru, 4 * K4, PS_4K, 0, 0, 0);
	tlb_fill(lru, 4 * K4, PS_4K, 0, 0, 0);

	cr_assert_eq(tlb_stats(plru)->evictions, 1);
	cr_assert_not(present(plru, 2 * K4), "tree PLRU evicts page 2");
	for (uint64_t page = 0; page < 5; page++)
		if (page != 2)
			cr_assert(present(plru, page * K4), "page %lu", (unsigned long)page);
	cr_assert_not(present(lru, 1 * K4), "LRU evicts page 1");
	cr_assert(present(lru, 2 * K4));
	tlb_free(plru);
	tlb_free(lru);
}

/* An invalidated way is refilled first, whatever the tree says. */
Test(tlb, tree_plru_fills_an_invalid_way_first)
{
	struct tlb *tlb = new_plru_tlb(4, 4);

	for (uint64_t page = 0; page < 4; page++)
		tlb_fill(tlb, page * K4, PS_4K, 0, 0, 0);
	cr_assert_eq(tlb_flush_one(tlb, 3 * K4, 0, TLB_ANY_OWNER), 1); /* the tree points at 0 */
	tlb_fill(tlb, 4 * K4, PS_4K, 0, 0, 0);

	cr_assert_eq(tlb_stats(tlb)->evictions, 0);
	for (uint64_t page = 0; page < 5; page++)
		cr_assert_eq(present(tlb, page * K4), page != 3, "page %lu", (unsigned long)page);
	tlb_free(tlb);
}

/*
 * Five pages cycled through one 4-way set: LRU always evicts the page needed
 * next and never hits after the first pass; the tree, which only approximates
 * recency, keeps some.  (The munmap harness's accessors cycle through their
 * pages like this, and sets holding more pages than ways are common.)
 */
Test(tlb, cyclic_overflow_lru_never_hits_tree_plru_does)
{
	struct tlb *plru = new_plru_tlb(4, 4);
	struct tlb *lru = new_tlb(4, 4, SZ_4K);
	unsigned plru_hits = 0, lru_hits = 0;

	for (unsigned round = 0; round < 20; round++) {
		for (uint64_t page = 0; page < 5; page++) {
			if (hits(plru, page * K4, 0, 0))
				plru_hits++;
			else
				tlb_fill(plru, page * K4, PS_4K, 0, 0, 0);
			if (hits(lru, page * K4, 0, 0))
				lru_hits++;
			else
				tlb_fill(lru, page * K4, PS_4K, 0, 0, 0);
		}
	}
	cr_assert_eq(lru_hits, 0);
	cr_assert_gt(plru_hits, 0);
	cr_assert_eq(tlb_stats(plru)->hits, plru_hits);
	tlb_free(plru);
	tlb_free(lru);
}

Test(tlb, fully_associative)
{
	/* 8 entries, 8 ways: one set; vpns 0, 8, 16, ... would share a set in any split. */
	struct tlb *tlb = new_tlb(8, 8, SZ_4K);

	for (uint64_t i = 0; i < 8; i++)
		tlb_fill(tlb, i * 8 * K4, PS_4K, 0, 0, 0);
	cr_assert_eq(tlb_occupancy(tlb), 8);
	cr_assert_eq(tlb_stats(tlb)->evictions, 0);
	cr_assert(hits(tlb, 0, 0, 0)); /* page 0 refreshed: page 8 is now the LRU */
	tlb_fill(tlb, 64 * 8 * K4, PS_4K, 0, 0, 0);

	cr_assert_eq(tlb_stats(tlb)->evictions, 1);
	cr_assert_not(hits(tlb, 1 * 8 * K4, 0, 0));
	for (uint64_t i = 0; i < 8; i++)
		if (i != 1)
			cr_assert(hits(tlb, i * 8 * K4, 0, 0), "page %lu", (unsigned long)(i * 8));
	cr_assert(hits(tlb, 64 * 8 * K4, 0, 0));
	tlb_free(tlb);
}

/*
 * Sets of up to 8 ways filter a probe by a one-byte fingerprint of each
 * way's tag (tlb.c): among 4088 pages that are not held, about 8 in 256
 * share a held page's fingerprint, and each must still miss, through a
 * lookup and through a probe; so must a page whose way was emptied (it keeps
 * its fingerprint) and a held page under another ASID or owner.
 */
Test(tlb, a_fingerprint_match_is_not_a_hit)
{
	struct tlb *tlb = new_tlb(8, 8, SZ_4K); /* one set */
	for (uint64_t i = 0; i < 8; i++)
		tlb_fill(tlb, i * K4, PS_4K, 7, 1, 0);
	struct tlb_probe probe;
	for (uint64_t page = 8; page < 4096; page++) {
		cr_assert_not(hits(tlb, page * K4, 7, 1), "page %lu", (unsigned long)page);
		cr_assert_not(tlb_probe(tlb, page * K4, PS_4K, 7, 1, &probe), "page %lu",
			      (unsigned long)page);
	}
	cr_assert_eq(tlb_flush_one(tlb, 3 * K4, 7, 1), 1);
	for (uint64_t i = 0; i < 8; i++) {
		cr_expect_eq(hits(tlb, i * K4, 7, 1), i != 3, "page %lu", (unsigned long)i);
		cr_expect_not(hits(tlb, i * K4, 8, 1), "page %lu, other ASID", (unsigned long)i);
		cr_expect_not(hits(tlb, i * K4, 7, 2), "page %lu, other owner", (unsigned long)i);
	}
	cr_expect_eq(tlb_stats(tlb)->hits, 7);
	tlb_free(tlb);
}

/* ---- page sizes -------------------------------------------------------- */

Test(tlb, huge_page_covers_every_4k_page_inside)
{
	struct tlb *tlb = new_tlb(32, 4, SZ_2M);
	const uint64_t base = G1 + 5 * M2; /* vpn (2M) = 512 + 5 = 517 */

	cr_assert(tlb_fill(tlb, base + 0x123456, PS_2M, 1, 0, 9));
	for (uint64_t off = 0; off < M2; off += K4) {
		const struct tlb_entry *e = tlb_lookup(tlb, base + off + (off / K4) % K4, 1, 0);

		cr_assert_not_null(e, "offset %#lx", (unsigned long)off);
		cr_assert_eq(e->vpn, 517);
		cr_assert_eq(e->page_size, PS_2M);
	}
	cr_assert(hits(tlb, base + M2 - 1, 1, 0));
	cr_assert_not(hits(tlb, base + M2, 1, 0));
	cr_assert_not(hits(tlb, base - 1, 1, 0));
	cr_assert_eq(tlb_stats(tlb)->hits, 513);
	tlb_free(tlb);
}

Test(tlb, invlpg_anywhere_inside_huge_page_removes_it)
{
	struct tlb *tlb = new_tlb(32, 4, SZ_4K | SZ_2M);
	const uint64_t base = 7 * M2;
	const uint64_t inside[] = {base, base + K4, base + 0xabcde, base + M2 - K4, base + M2 - 1};

	for (size_t i = 0; i < G_N_ELEMENTS(inside); i++) {
		tlb_fill(tlb, base, PS_2M, 0, 0, 0);
		cr_assert(hits(tlb, inside[i], 0, 0));
		cr_assert_eq(tlb_flush_one(tlb, inside[i], 0, TLB_ANY_OWNER), 1, "vaddr %#lx",
			     (unsigned long)inside[i]);
		cr_assert_not(hits(tlb, base, 0, 0));
		cr_assert_eq(tlb_occupancy(tlb), 0);
	}
	/* Just outside: nothing to remove. */
	tlb_fill(tlb, base, PS_2M, 0, 0, 0);
	cr_assert_eq(tlb_flush_one(tlb, base + M2, 0, TLB_ANY_OWNER), 0);
	cr_assert_eq(tlb_flush_one(tlb, base - 1, 0, TLB_ANY_OWNER), 0);
	cr_assert(hits(tlb, base, 0, 0));
	tlb_free(tlb);
}

Test(tlb, mixed_sizes_probe_both)
{
	struct tlb *tlb = new_tlb(32, 4, SZ_4K | SZ_2M);

	tlb_fill(tlb, 0x3000, PS_4K, 0, 0, 1);
	tlb_fill(tlb, 4 * M2, PS_2M, 0, 0, 2);

	const struct tlb_entry *e = tlb_lookup(tlb, 0x3abc, 0, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->page_size, PS_4K);
	e = tlb_lookup(tlb, 4 * M2 + 0x5000, 0, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->page_size, PS_2M);
	cr_assert_eq(e->gen, 2);
	tlb_free(tlb);
}

Test(tlb, page_size_is_part_of_the_tag)
{
	struct tlb *tlb = new_tlb(32, 4, SZ_4K | SZ_2M);

	/* 2M vpn 3 (vaddr 6M) and the 4K vpn 3 (vaddr 0x3000) are different pages. */
	tlb_fill(tlb, 3 * M2, PS_2M, 0, 0, 0);
	cr_assert_not(hits(tlb, 3 * K4, 0, 0));
	tlb_fill(tlb, 3 * K4, PS_4K, 0, 0, 0);
	cr_assert_eq(tlb_occupancy(tlb), 2);
	cr_assert_eq(tlb_stats(tlb)->evictions, 0);
	cr_assert_eq(tlb_flush_one(tlb, 3 * K4, 0, TLB_ANY_OWNER), 1);
	cr_assert(hits(tlb, 3 * M2, 0, 0));
	tlb_free(tlb);
}

Test(tlb, small_page_wins_when_both_cover)
{
	struct tlb *tlb = new_tlb(32, 4, SZ_4K | SZ_2M);
	const uint64_t va = 2 * M2 + 0x7000;

	tlb_fill(tlb, va, PS_2M, 0, 0, 20);
	tlb_fill(tlb, va, PS_4K, 0, 0, 40);
	cr_assert_eq(must_hit(tlb, va, 0, 0)->page_size, PS_4K);
	cr_assert_eq(must_hit(tlb, va + K4, 0, 0)->page_size, PS_2M);
	/* One INVLPG drops both translations of the address. */
	cr_assert_eq(tlb_flush_one(tlb, va, 0, TLB_ANY_OWNER), 2);
	cr_assert_eq(tlb_occupancy(tlb), 0);
	tlb_free(tlb);
}

Test(tlb, size_not_held_is_ignored)
{
	struct tlb *tlb = new_tlb(16, 4, SZ_4K);

	cr_assert_not(tlb_fill(tlb, 0, PS_2M, 0, 0, 0));
	cr_assert_not(tlb_fill(tlb, 0, PS_1G, 0, 0, 0));
	cr_assert_not(tlb_fill(tlb, 0, NR_PAGE_SIZES, 0, 0, 0));
	cr_assert_eq(tlb_occupancy(tlb), 0);
	cr_assert_eq(tlb_stats(tlb)->fills, 0);
	cr_assert_not(hits(tlb, 0, 0, 0));
	tlb_free(tlb);
}

Test(tlb, one_gig_pages)
{
	struct tlb *tlb = new_tlb(4, 4, SZ_4K | SZ_2M | SZ_1G);

	tlb_fill(tlb, 3 * G1 + 12345, PS_1G, 2, 0, 0);
	cr_assert_eq(must_hit(tlb, 3 * G1 + G1 - 1, 2, 0)->page_size, PS_1G);
	cr_assert_not(hits(tlb, 4 * G1, 2, 0));
	cr_assert_eq(tlb_flush_one(tlb, 3 * G1 + 100 * M2, 2, 0), 1);
	tlb_free(tlb);
}

/* ---- flushes ----------------------------------------------------------- */

Test(tlb, flush_one_removes_only_the_target)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	for (uint64_t p = 0; p < 16; p++)
		tlb_fill(tlb, p * K4, PS_4K, 1, 0, 0);
	tlb_fill(tlb, 5 * K4, PS_4K, 2, 0, 0);

	cr_assert_eq(tlb_flush_one(tlb, 5 * K4 + 17, 1, TLB_ANY_OWNER), 1);
	cr_assert_not(hits(tlb, 5 * K4, 1, 0));
	cr_assert(hits(tlb, 5 * K4, 2, 0), "same page, other ASID");
	for (uint64_t p = 0; p < 16; p++)
		if (p != 5)
			cr_assert(hits(tlb, p * K4, 1, 0), "page %lu", (unsigned long)p);
	cr_assert_eq(tlb_flush_one(tlb, 5 * K4, 1, TLB_ANY_OWNER), 0, "already gone");
	cr_assert_eq(tlb_flush_one(tlb, 99 * K4, 1, TLB_ANY_OWNER), 0, "never there");
	cr_assert_eq(tlb_occupancy(tlb), 16);
	cr_assert_eq(tlb_stats(tlb)->invalidated, 1);
	tlb_free(tlb);
}

Test(tlb, flush_one_honours_owner)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	tlb_fill(tlb, 0x8000, PS_4K, 0, 0, 0);
	tlb_fill(tlb, 0x8000, PS_4K, 0, 1, 0);
	cr_assert_eq(tlb_flush_one(tlb, 0x8000, 0, 1), 1);
	cr_assert(hits(tlb, 0x8000, 0, 0));
	cr_assert_not(hits(tlb, 0x8000, 0, 1));
	tlb_free(tlb);
}

Test(tlb, flush_asid_keeps_other_asids)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K | SZ_2M);

	for (uint64_t p = 0; p < 10; p++) {
		tlb_fill(tlb, p * K4, PS_4K, 1, 0, 0);
		tlb_fill(tlb, p * K4, PS_4K, 2, 0, 0);
	}
	tlb_fill(tlb, 9 * M2, PS_2M, 1, 0, 0);

	cr_assert_eq(tlb_flush_asid(tlb, 1, TLB_ANY_OWNER), 11);
	cr_assert_eq(tlb_occupancy(tlb), 10);
	for (uint64_t p = 0; p < 10; p++) {
		cr_assert_not(hits(tlb, p * K4, 1, 0));
		cr_assert(hits(tlb, p * K4, 2, 0));
	}
	cr_assert_not(hits(tlb, 9 * M2, 1, 0));
	cr_assert_eq(tlb_flush_asid(tlb, 1, TLB_ANY_OWNER), 0);
	cr_assert_eq(tlb_stats(tlb)->invalidated, 11);
	tlb_free(tlb);
}

Test(tlb, flush_asid_honours_owner)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	for (uint64_t p = 0; p < 4; p++) {
		tlb_fill(tlb, p * K4, PS_4K, 1, 0, 0);
		tlb_fill(tlb, p * K4, PS_4K, 1, 1, 0);
	}
	cr_assert_eq(tlb_flush_asid(tlb, 1, 0), 4);
	cr_assert_eq(tlb_occupancy(tlb), 4);
	cr_assert(hits(tlb, 2 * K4, 1, 1));
	cr_assert_not(hits(tlb, 2 * K4, 1, 0));
	tlb_free(tlb);
}

Test(tlb, flush_all_with_owner_keeps_other_owner)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);

	for (uint64_t p = 0; p < 6; p++) {
		tlb_fill(tlb, p * K4, PS_4K, (uint16_t)(p % 3), 0, 0); /* ASIDs 0, 1, 2 */
		tlb_fill(tlb, p * K4, PS_4K, (uint16_t)(p % 3), 1, 0);
	}
	cr_assert_eq(tlb_flush_all(tlb, 0), 6);
	cr_assert_eq(tlb_occupancy(tlb), 6);
	for (uint64_t p = 0; p < 6; p++) {
		cr_assert_not(hits(tlb, p * K4, (uint16_t)(p % 3), 0));
		cr_assert(hits(tlb, p * K4, (uint16_t)(p % 3), 1));
	}
	cr_assert_eq(tlb_flush_all(tlb, TLB_ANY_OWNER), 6);
	cr_assert_eq(tlb_occupancy(tlb), 0);
	cr_assert_eq(tlb_stats(tlb)->invalidated, 12);
	tlb_free(tlb);
}

/* ---- counters ---------------------------------------------------------- */

Test(tlb, stats_identities)
{
	struct tlb *tlb = new_tlb(4, 2, SZ_4K); /* set = vpn & 1 */
	const struct tlb_stats *s = tlb_stats(tlb);

	hits(tlb, PA, 0, 0);               /* miss */
	tlb_fill(tlb, PA, PS_4K, 0, 0, 0); /* set 0: A */
	hits(tlb, PA, 0, 0);               /* hit */
	tlb_fill(tlb, PB, PS_4K, 0, 0, 0); /* set 0: A B */
	tlb_fill(tlb, PC, PS_4K, 0, 0, 0); /* evicts A (valid): 1 */
	tlb_flush_one(tlb, PB, 0, 0);      /* invalidates B: 1 */
	tlb_fill(tlb, PA, PS_4K, 0, 0, 0); /* takes B's invalid way: no eviction */
	tlb_flush_one(tlb, PB, 0, 0);      /* nothing */
	hits(tlb, PB, 0, 0);               /* miss */
	hits(tlb, PC, 0, 0);               /* hit */
	tlb_fill(tlb, PD, PS_4K, 0, 0, 0); /* set 1 */
	tlb_flush_all(tlb, TLB_ANY_OWNER); /* A, C, D: 3 */

	cr_assert_eq(s->lookups, 4);
	cr_assert_eq(s->hits, 2);
	cr_assert_eq(s->misses, 2);
	cr_assert_eq(s->lookups, s->hits + s->misses);
	cr_assert_eq(s->fills, 5);
	cr_assert_eq(s->evictions, 1);
	cr_assert_eq(s->invalidated, 4);
	tlb_free(tlb);
}

Test(tlb, refill_same_translation_neither_evicts_nor_duplicates)
{
	struct tlb *tlb = new_tlb(4, 2, SZ_4K);

	tlb_fill(tlb, PA, PS_4K, 0, 0, 1);
	tlb_fill(tlb, PB, PS_4K, 0, 0, 1);
	tlb_fill(tlb, PA + 0x10, PS_4K, 0, 0, 2); /* same page: overwrite, A becomes MRU */

	cr_assert_eq(tlb_occupancy(tlb), 2);
	cr_assert_eq(tlb_stats(tlb)->evictions, 0);
	cr_assert_eq(tlb_stats(tlb)->fills, 3);
	cr_assert_eq(must_hit(tlb, PA, 0, 0)->gen, 2);
	/* The refill refreshed A's LRU stamp: C must now displace B. */
	tlb_fill(tlb, PC, PS_4K, 0, 0, 1);
	cr_assert(hits(tlb, PA, 0, 0));
	cr_assert_not(hits(tlb, PB, 0, 0));
	cr_assert_eq(tlb_flush_one(tlb, PA, 0, TLB_ANY_OWNER), 1, "exactly one copy of A");
	tlb_free(tlb);
}

/* ---- randomized comparison with a reference model ---------------------- */

/*
 * The reference is deliberately naive: each set is a small array of slots
 * holding the page's base address and size in bytes, the set index is always
 * computed with %, INVLPG and every flush walk the whole array and test page
 * containment by address range.  It shares with src/machine/tlb.c only the written
 * semantics: victim = first invalid slot, else the smallest stamp.
 */
struct ref_slot {
	bool valid;
	uint64_t base; /* page base address */
	uint64_t bytes;
	uint16_t asid, owner;
	uint32_t gen;
	uint64_t stamp;
};

struct ref_tlb {
	unsigned sets, ways, page_sizes;
	uint64_t clock;
	struct ref_slot *slot; /* sets * ways */
};

static bool ref_owner_ok(const struct ref_slot *s, int owner)
{
	return owner == TLB_ANY_OWNER || (int)s->owner == owner;
}

static struct ref_slot *ref_lookup(struct ref_tlb *r, uint64_t vaddr, uint16_t asid, int owner)
{
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		if (!(r->page_sizes & (1u << ps)))
			continue;
		uint64_t bytes = page_size_bytes((enum page_size)ps);
		uint64_t set = (vaddr / bytes) % r->sets;
		for (unsigned w = 0; w < r->ways; w++) {
			struct ref_slot *s = &r->slot[set * r->ways + w];
			if (s->valid && s->bytes == bytes && s->base <= vaddr &&
			    vaddr < s->base + bytes && s->asid == asid && ref_owner_ok(s, owner)) {
				s->stamp = ++r->clock;
				return s;
			}
		}
	}
	return NULL;
}

static void ref_fill(struct ref_tlb *r, uint64_t vaddr, enum page_size ps, uint16_t asid,
		     uint16_t owner, uint32_t gen)
{
	if (ps >= NR_PAGE_SIZES || !(r->page_sizes & (1u << ps)))
		return;
	uint64_t bytes = page_size_bytes(ps);
	uint64_t base = vaddr / bytes * bytes;
	struct ref_slot *set = &r->slot[(vaddr / bytes) % r->sets * r->ways];
	struct ref_slot *victim = NULL;

	for (unsigned w = 0; w < r->ways && !victim; w++)
		if (set[w].valid && set[w].base == base && set[w].bytes == bytes &&
		    set[w].asid == asid && set[w].owner == owner)
			victim = &set[w];
	for (unsigned w = 0; w < r->ways && !victim; w++)
		if (!set[w].valid)
			victim = &set[w];
	if (!victim) {
		victim = &set[0];
		for (unsigned w = 1; w < r->ways; w++)
			if (set[w].stamp < victim->stamp)
				victim = &set[w];
	}
	*victim = (struct ref_slot){true, base, bytes, asid, owner, gen, ++r->clock};
}

/* kind 0: INVLPG vaddr; 1: all of asid; 2: everything.  Returns the count removed. */
static unsigned ref_flush(struct ref_tlb *r, int kind, uint64_t vaddr, uint16_t asid, int owner)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->sets * r->ways; i++) {
		struct ref_slot *s = &r->slot[i];
		bool hit = s->valid && ref_owner_ok(s, owner);

		if (kind <= 1)
			hit = hit && s->asid == asid;
		if (kind == 0)
			hit = hit && s->base <= vaddr && vaddr < s->base + s->bytes;
		if (hit) {
			s->valid = false;
			n++;
		}
	}
	return n;
}

static unsigned ref_occupancy(const struct ref_tlb *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->sets * r->ways; i++)
		n += r->slot[i].valid;
	return n;
}

/* xorshift64*: fixed sequence on every libc, unlike rand(). */
static uint64_t rng_next(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * UINT64_C(2685821657736338717);
}

/*
 * Addresses come from a small pool so that hits, conflicts and overlapping page
 * sizes are common: @regions 1G regions x @huge 2M pages x @small 4K pages, any
 * byte inside; ASIDs 0 .. @asids - 1.
 */
struct pool {
	unsigned regions, huge, small, asids;
};

static uint64_t random_vaddr(uint64_t *rng, const struct pool *p)
{
	uint64_t r = rng_next(rng);

	return r % p->regions * G1 + (r >> 8) % p->huge * M2 + (r >> 16) % p->small * K4 +
	       (r >> 32) % K4;
}

static int random_owner(uint64_t *rng, bool allow_any)
{
	unsigned r = (unsigned)(rng_next(rng) % 3);

	return r == 2 ? (allow_any ? TLB_ANY_OWNER : 1) : (int)r;
}

/* Both models side by side, driven by one random sequence. */
struct pair {
	struct tlb *tlb;
	struct ref_tlb ref;
	const struct pool *pool;
	uint64_t rng;
	unsigned step;
	uint64_t ref_lookups, ref_hits, ref_inval;
};

static void step_lookup(struct pair *p, uint64_t va, uint16_t asid)
{
	int owner = random_owner(&p->rng, true);
	const struct tlb_entry *got = tlb_lookup(p->tlb, va, asid, owner);
	const struct ref_slot *want = ref_lookup(&p->ref, va, asid, owner);

	p->ref_lookups++;
	cr_assert_eq(got != NULL, want != NULL, "step %u: lookup %#lx asid %u owner %d", p->step,
		     (unsigned long)va, asid, owner);
	if (!want)
		return;
	p->ref_hits++;
	cr_assert_eq(got->vpn << page_size_shift(got->page_size), want->base, "step %u", p->step);
	cr_assert_eq(page_size_bytes(got->page_size), want->bytes, "step %u", p->step);
	cr_assert_eq(got->asid, want->asid, "step %u", p->step);
	cr_assert_eq(got->owner, want->owner, "step %u", p->step);
	cr_assert_eq(got->gen, want->gen, "step %u", p->step);
}

/* Mostly a size the structure holds; one fill in 8 may be of any size (and ignored). */
static void step_fill(struct pair *p, uint64_t va, uint16_t asid)
{
	unsigned held = p->ref.page_sizes, r = (unsigned)rng_next(&p->rng);
	enum page_size ps = (enum page_size)(r % NR_PAGE_SIZES);

	while (r % 8 != 0 && !(held & (1u << ps)))
		ps = (enum page_size)((ps + 1) % NR_PAGE_SIZES);

	uint16_t owner = (uint16_t)random_owner(&p->rng, false);
	bool ok = tlb_fill(p->tlb, va, ps, asid, owner, p->step);

	cr_assert_eq(ok, (held & (1u << ps)) != 0, "step %u: fill size %d", p->step, ps);
	ref_fill(&p->ref, va, ps, asid, owner, p->step);
}

static void step_flush(struct pair *p, int kind, uint64_t va, uint16_t asid)
{
	int owner = random_owner(&p->rng, true);
	unsigned got = kind == 0   ? tlb_flush_one(p->tlb, va, asid, owner)
		       : kind == 1 ? tlb_flush_asid(p->tlb, asid, owner)
				   : tlb_flush_all(p->tlb, owner);
	unsigned want = ref_flush(&p->ref, kind, va, asid, owner);

	p->ref_inval += want;
	cr_assert_eq(got, want, "step %u: flush kind %d", p->step, kind);
}

/*
 * Per 10000 operations: 5000 lookups, 4500 fills, 480 INVLPG, 18 ASID flushes
 * and 2 full flushes, rare enough for a 256-entry structure to fill up between
 * them.  Occupancy is compared after every operation.
 */
static void compare_with_reference(unsigned entries, unsigned ways, unsigned page_sizes,
				   const struct pool *pool, uint64_t seed, unsigned steps)
{
	struct pair p = {
	    .tlb = new_tlb(entries, ways, page_sizes),
	    .ref = {.sets = entries / ways, .ways = ways, .page_sizes = page_sizes},
	    .pool = pool,
	    .rng = seed,
	};
	unsigned max_occupancy = 0;

	p.ref.slot = g_new0(struct ref_slot, entries);
	for (p.step = 0; p.step < steps; p.step++) {
		unsigned op = (unsigned)(rng_next(&p.rng) % 10000);
		uint64_t va = random_vaddr(&p.rng, pool);
		uint16_t asid = (uint16_t)(rng_next(&p.rng) % pool->asids);

		if (op < 5000)
			step_lookup(&p, va, asid);
		else if (op < 9500)
			step_fill(&p, va, asid);
		else
			step_flush(&p, op < 9980 ? 0 : op < 9998 ? 1 : 2, va, asid);
		cr_assert_eq(tlb_occupancy(p.tlb), ref_occupancy(&p.ref), "step %u", p.step);
		max_occupancy = MAX(max_occupancy, tlb_occupancy(p.tlb));
	}

	const struct tlb_stats *s = tlb_stats(p.tlb);
	cr_assert_eq(s->lookups, p.ref_lookups);
	cr_assert_eq(s->hits, p.ref_hits);
	cr_assert_eq(s->lookups, s->hits + s->misses);
	cr_assert_eq(s->invalidated, p.ref_inval);
	/* A comparison that never hits, misses, evicts or fills up proves little. */
	cr_assert_gt(s->hits, steps / 20, "only %lu hits", (unsigned long)s->hits);
	cr_assert_gt(s->misses, steps / 20, "only %lu misses", (unsigned long)s->misses);
	cr_assert_gt(s->evictions, steps / 100, "only %lu evictions", (unsigned long)s->evictions);
	cr_assert_eq(max_occupancy, entries, "never full");
	g_free(p.ref.slot);
	tlb_free(p.tlb);
}

Test(tlb, random_vs_reference_l1_4k)
{
	const struct pool pool = {.regions = 1, .huge = 1, .small = 40, .asids = 2};

	compare_with_reference(64, 4, SZ_4K, &pool, 1, 20000);
}

Test(tlb, random_vs_reference_fully_associative_mixed)
{
	const struct pool pool = {.regions = 2, .huge = 2, .small = 6, .asids = 2};

	compare_with_reference(16, 16, SZ_4K | SZ_2M, &pool, 2, 20000);
}

Test(tlb, random_vs_reference_non_power_of_two_sets)
{
	const struct pool pool = {.regions = 2, .huge = 3, .small = 5, .asids = 2};

	compare_with_reference(24, 4, SZ_4K | SZ_2M | SZ_1G, &pool, 3, 20000); /* 6 sets */
}

Test(tlb, random_vs_reference_stlb)
{
	const struct pool pool = {.regions = 1, .huge = 4, .small = 64, .asids = 2};

	compare_with_reference(256, 8, SZ_4K | SZ_2M, &pool, 4, 40000);
}

/* 12 ways, the most whose recency fits one word (src/machine/recency.h), and
 * 13, the fewest that keep a stamp per way. */
Test(tlb, random_vs_reference_widest_ordered_and_narrowest_stamped_sets)
{
	const struct pool pool = {.regions = 2, .huge = 4, .small = 40, .asids = 2};
	compare_with_reference(48, 12, SZ_4K | SZ_2M, &pool, 5, 30000);
	compare_with_reference(52, 13, SZ_4K | SZ_2M, &pool, 6, 30000);
}

Test(tlb, lookup_size_probes_only_that_size)
{
	struct tlb_geometry g = {.entries = 16, .ways = 4, .page_sizes = (1u << PS_4K) | (1u << PS_2M)};
	struct tlb *t = tlb_new(&g);
	uint64_t addr = UINT64_C(0x40200000) + 0x3000;
	cr_assert(tlb_fill(t, addr, PS_2M, 1, 0, 7));
	cr_assert_null(tlb_lookup_size(t, addr, PS_4K, 1, TLB_ANY_OWNER));
	const struct tlb_entry *e = tlb_lookup_size(t, addr, PS_2M, 1, TLB_ANY_OWNER);
	cr_assert_not_null(e);
	cr_assert_eq(e->gen, 7);
	cr_assert_not_null(tlb_lookup(t, addr, 1, TLB_ANY_OWNER), "the general lookup finds it too");
	const struct tlb_stats *s = tlb_stats(t);
	cr_assert_eq(s->lookups, 3);
	cr_assert_eq(s->hits, 2);
	cr_assert_eq(s->misses, 1);
	tlb_free(t);
}

/* tlb_peek() sees what a lookup would, and changes neither LRU nor statistics. */
Test(tlb, peek_changes_nothing)
{
	struct tlb *tlb = new_tlb(64, 4, SZ_4K);
	uint32_t gen = 0;
	cr_assert_not(tlb_peek(tlb, 0x5000, PS_4K, 1, 0, &gen));
	cr_assert(tlb_fill(tlb, 0x5000, PS_4K, 1, 0, 9));
	struct tlb_stats before = *tlb_stats(tlb);
	cr_assert(tlb_peek(tlb, 0x5fff, PS_4K, 1, 0, &gen));
	cr_assert_eq(gen, 9);
	cr_assert_not(tlb_peek(tlb, 0x5000, PS_4K, 2, 0, &gen), "other ASID");
	cr_assert_not(tlb_peek(tlb, 0x5000, PS_4K, 1, 3, &gen), "other owner");
	cr_assert_not(tlb_peek(tlb, 0x5000, PS_2M, 1, 0, &gen), "a size it does not hold");
	const struct tlb_stats *after = tlb_stats(tlb);
	cr_assert_eq(after->lookups, before.lookups);
	cr_assert_eq(after->hits, before.hits);
	tlb_free(tlb);
}

/*
 * tlb_probe() + tlb_fill_probed() against tlb_lookup_size() + tlb_fill_perm()
 * on two structures fed the same random stream (LRU and tree PLRU, two
 * owners, two ASIDs, invalidations between): the same hits, generations,
 * permissions and counters, access for access.
 */
static void probe_matches_lookup_and_fill(enum tlb_replacement replacement)
{
	struct tlb_geometry g = {.entries = 64, .ways = 8, .page_sizes = SZ_4K,
				 .replacement = replacement};
	struct tlb *a = tlb_new(&g), *b = tlb_new(&g);
	GRand *rng = g_rand_new_with_seed(21);

	for (uint32_t i = 1; i <= 20000; i++) {
		uint64_t vaddr = (uint64_t)g_rand_int_range(rng, 0, 200) * K4;
		uint16_t asid = (uint16_t)g_rand_int_range(rng, 0, 2);
		uint16_t owner = (uint16_t)g_rand_int_range(rng, 0, 2);
		if (g_rand_int_range(rng, 0, 50) == 0) {
			tlb_flush_one(a, vaddr, asid, TLB_ANY_OWNER);
			tlb_flush_one(b, vaddr, asid, TLB_ANY_OWNER);
			continue;
		}
		const struct tlb_entry *e = tlb_lookup_size(a, vaddr, PS_4K, asid, owner);
		struct tlb_probe probe;
		bool hit = tlb_probe(b, vaddr, PS_4K, asid, owner, &probe);
		cr_assert_eq(hit, e != NULL, "access %u", i);
		if (hit) {
			cr_assert_eq(probe.gen, e->gen);
			cr_assert_eq(probe.pfn, e->pfn);
			cr_assert_eq(probe.pfn, e->gen * 7 + 1, "the fill's frame comes back");
			cr_assert_eq(probe.writable, e->writable);
			continue;
		}
		tlb_fill_perm(a, vaddr, PS_4K, asid, owner, i, i * 7 + 1, i % 3 != 0);
		tlb_fill_probed(b, &probe, asid, owner, i, i * 7 + 1, i % 3 != 0);
	}
	cr_expect_eq(memcmp(tlb_stats(a), tlb_stats(b), sizeof(struct tlb_stats)), 0);
	cr_expect_eq(tlb_occupancy(a), tlb_occupancy(b));
	g_rand_free(rng);
	tlb_free(a);
	tlb_free(b);
}

Test(tlb, probe_then_fill_equals_lookup_then_fill_lru)
{
	probe_matches_lookup_and_fill(TLB_REPLACE_LRU);
}

Test(tlb, probe_then_fill_equals_lookup_then_fill_tree_plru)
{
	probe_matches_lookup_and_fill(TLB_REPLACE_TREE_PLRU);
}
