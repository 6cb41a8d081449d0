/*
 * One set-associative TLB structure (see include/tlbsim/tlb.h).
 *
 * Models: a single level (an L1 DTLB, an STLB, ...) of @entries translations
 * organised as @entries / @ways sets of @ways entries, true LRU inside each set,
 * entries tagged with (vpn, page size, ASID, owner) and the PTE generation they
 * were filled from.  A structure may hold several page sizes; a lookup probes
 * them in the order 4K, 2M, 1G, as the size of the page behind an address is
 * not known before the walk.  An entry of size ps with page number vpn lives in
 * set vpn % sets, so every probe and every INVLPG touches one set per size.
 *
 * Simplifies: no per-size partitioning (real STLBs often split 1G pages into a
 * separate array), no hashing of the set index, no PLRU: true LRU is what the
 * stamp gives and is close enough for the shootdown costs tlbsim is after.  An
 * entry filled by owner 0 and one filled by owner 1 for the same page are two
 * separate entries, as in an SMT-shared DTLB that tags the logical processor.
 *
 * Invariant: at most one valid entry per (vpn, page size, ASID, owner), and it
 * sits in set (vpn % sets).  Valid entries carry distinct stamps >= 1, invalid
 * ones stamp 0, so "first way with the smallest stamp" is the fill victim.
 * stats.lookups == stats.hits + stats.misses.
 *
 * Hot path: tlb_lookup() and tlb_fill() touch one set per held size, never
 * divide when the set count is a power of two and never allocate.
 */
#include <glib.h>
#include "tlbsim/tlb.h"

#define ALL_PAGE_SIZES ((1u << NR_PAGE_SIZES) - 1)

struct tlb {
	struct tlb_geometry geo;
	struct tlb_stats stats;
	uint64_t stamp;    /* last LRU stamp handed out; 0 is never given to an entry */
	uint64_t set_mask; /* sets - 1, used instead of % when sets is a power of two */
	unsigned sets;
	unsigned ways;
	bool sets_pow2;
	unsigned nr_sizes;             /* page sizes held, i.e. popcount(geo.page_sizes) */
	uint8_t sizes[NR_PAGE_SIZES];  /* held sizes in probe order (4K, 2M, 1G) */
	uint8_t shifts[NR_PAGE_SIZES]; /* page_size_shift(sizes[i]), off the hot path */
	struct tlb_entry entries[];    /* set s is entries[s * ways .. (s + 1) * ways) */
};

static bool geometry_ok(const struct tlb_geometry *g)
{
	return g->ways != 0 && g->entries != 0 && g->entries % g->ways == 0 && g->page_sizes != 0 &&
	       (g->page_sizes & ~ALL_PAGE_SIZES) == 0;
}

struct tlb *tlb_new(const struct tlb_geometry *geometry)
{
	if (!geometry_ok(geometry))
		return NULL;

	/* At most UINT_MAX entries of 32 bytes: no overflow where size_t has 64 bits. */
	size_t bytes = sizeof(struct tlb) + (size_t)geometry->entries * sizeof(struct tlb_entry);
	struct tlb *tlb = g_malloc0(bytes);
	tlb->geo = *geometry;
	tlb->ways = geometry->ways;
	tlb->sets = geometry->entries / geometry->ways;
	tlb->sets_pow2 = (tlb->sets & (tlb->sets - 1)) == 0;
	tlb->set_mask = tlb->sets - 1;
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		if (!(geometry->page_sizes & (1u << ps)))
			continue;
		tlb->sizes[tlb->nr_sizes] = (uint8_t)ps;
		tlb->shifts[tlb->nr_sizes] = (uint8_t)page_size_shift((enum page_size)ps);
		tlb->nr_sizes++;
	}
	return tlb;
}

void tlb_free(struct tlb *tlb)
{
	g_free(tlb);
}

const struct tlb_geometry *tlb_geometry(const struct tlb *tlb)
{
	return &tlb->geo;
}

/* First entry of the set that holds page number @vpn (of any size). */
static inline struct tlb_entry *set_of(struct tlb *tlb, uint64_t vpn)
{
	uint64_t set = tlb->sets_pow2 ? (vpn & tlb->set_mask) : vpn % tlb->sets;
	return &tlb->entries[set * tlb->ways];
}

static inline bool owner_matches(const struct tlb_entry *e, int owner)
{
	return owner == TLB_ANY_OWNER || e->owner == owner;
}

/* The tag test.  vpn first and alone: it rejects almost every non-matching way. */
static inline bool entry_matches(const struct tlb_entry *e, uint64_t vpn, uint8_t ps, uint16_t asid,
				 int owner)
{
	if (e->vpn != vpn)
		return false;
	return e->valid && e->page_size == ps && e->asid == asid && owner_matches(e, owner);
}

static inline void invalidate(struct tlb_entry *e)
{
	e->valid = false;
	e->lru = 0; /* sorts before every valid entry: see fill_slot() */
}

/*
 * The entry of @set matching the tag, or NULL.  The way of a hit is random, so
 * an early-exit scan mispredicts its exit on nearly every hit, which costs more
 * than scanning the whole set.  Instead a branch-free pass (one cmov per way)
 * finds the first way whose vpn matches, and the full tag is checked from there
 * on: further ways are only reached when that one is another ASID's, owner's or
 * size's.  On the 512-random-page L1 + STLB benchmark this gave ~1.4x the
 * lookups/s of the early-exit loop.
 */
static inline struct tlb_entry *probe(struct tlb_entry *set, unsigned ways, uint64_t vpn,
				      uint8_t ps, uint16_t asid, int owner)
{
	unsigned first = ways;

	for (unsigned w = ways; w-- > 0;)
		first = set[w].vpn == vpn ? w : first;
	if (first == ways)
		return NULL;
	for (unsigned w = first; w < ways; w++)
		if (entry_matches(&set[w], vpn, ps, asid, owner))
			return &set[w];
	return NULL;
}

const struct tlb_entry *tlb_lookup_size(struct tlb *tlb, uint64_t vaddr, enum page_size ps,
				       uint16_t asid, int owner)
{
	tlb->stats.lookups++;
	uint64_t vpn = vaddr >> page_size_shift(ps);
	struct tlb_entry *e = probe(set_of(tlb, vpn), tlb->ways, vpn, (uint8_t)ps, asid, owner);
	if (e) {
		e->lru = ++tlb->stamp;
		tlb->stats.hits++;
		return e;
	}
	tlb->stats.misses++;
	return NULL;
}

const struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	tlb->stats.lookups++;
	for (unsigned i = 0; i < tlb->nr_sizes; i++) {
		uint64_t vpn = vaddr >> tlb->shifts[i];
		struct tlb_entry *set = set_of(tlb, vpn);
		struct tlb_entry *e = probe(set, tlb->ways, vpn, tlb->sizes[i], asid, owner);

		if (e) {
			e->lru = ++tlb->stamp;
			tlb->stats.hits++;
			return e;
		}
	}
	tlb->stats.misses++;
	return NULL;
}

/*
 * The way a fill of (vpn, ps, asid, owner) goes to: the entry already holding
 * that translation (*same = true), else the first invalid way, else the least
 * recently used.  Invalid entries have lru == 0 and valid ones lru >= 1, so the
 * first way with the smallest stamp is exactly "first invalid, else LRU".
 */
static struct tlb_entry *fill_slot(struct tlb_entry *set, unsigned ways, uint64_t vpn, uint8_t ps,
				   uint16_t asid, uint16_t owner, bool *same)
{
	struct tlb_entry *victim = set;

	for (struct tlb_entry *e = set; e != set + ways; e++) {
		if (entry_matches(e, vpn, ps, asid, owner)) {
			*same = true;
			return e;
		}
		if (e->lru < victim->lru)
			victim = e;
	}
	*same = false;
	return victim;
}

/* stats.fills counts every accepted fill, including one that refreshes an existing entry. */
bool tlb_fill(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	      uint32_t gen)
{
	if ((unsigned)ps >= NR_PAGE_SIZES || !(tlb->geo.page_sizes & (1u << ps)))
		return false;

	uint64_t vpn = vaddr >> page_size_shift(ps);
	bool same;
	struct tlb_entry *set = set_of(tlb, vpn);
	struct tlb_entry *e = fill_slot(set, tlb->ways, vpn, (uint8_t)ps, asid, owner, &same);

	if (e->valid && !same)
		tlb->stats.evictions++;
	tlb->stats.fills++;
	*e = (struct tlb_entry){
	    .vpn = vpn,
	    .lru = ++tlb->stamp,
	    .gen = gen,
	    .asid = asid,
	    .owner = owner,
	    .page_size = (uint8_t)ps,
	    .valid = true,
	};
	return true;
}

unsigned tlb_flush_one(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	unsigned removed = 0;

	/* A page of size ps containing vaddr has vpn vaddr >> shift: one set per size. */
	for (unsigned i = 0; i < tlb->nr_sizes; i++) {
		uint64_t vpn = vaddr >> tlb->shifts[i];
		struct tlb_entry *set = set_of(tlb, vpn);

		for (unsigned w = 0; w < tlb->ways; w++) {
			if (entry_matches(&set[w], vpn, tlb->sizes[i], asid, owner)) {
				invalidate(&set[w]);
				removed++;
			}
		}
	}
	tlb->stats.invalidated += removed;
	return removed;
}

/* Drop every valid entry of @owner, and of @asid unless @any_asid.  Walks all sets. */
static unsigned flush_matching(struct tlb *tlb, bool any_asid, uint16_t asid, int owner)
{
	unsigned removed = 0;

	for (unsigned i = 0; i < tlb->geo.entries; i++) {
		struct tlb_entry *e = &tlb->entries[i];

		if (e->valid && (any_asid || e->asid == asid) && owner_matches(e, owner)) {
			invalidate(e);
			removed++;
		}
	}
	tlb->stats.invalidated += removed;
	return removed;
}

unsigned tlb_flush_asid(struct tlb *tlb, uint16_t asid, int owner)
{
	return flush_matching(tlb, false, asid, owner);
}

unsigned tlb_flush_all(struct tlb *tlb, int owner)
{
	return flush_matching(tlb, true, 0, owner);
}

unsigned tlb_occupancy(const struct tlb *tlb)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tlb->geo.entries; i++)
		n += tlb->entries[i].valid;
	return n;
}

const struct tlb_stats *tlb_stats(const struct tlb *tlb)
{
	return &tlb->stats;
}
