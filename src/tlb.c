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
 * ones tag 0 and stamp 0, so "first way with the smallest stamp" is the fill
 * victim.  stats.lookups == stats.hits + stats.misses.
 *
 * Layout: structure of arrays.  A set's tags are contiguous (an 8-way set's
 * are one 64-byte line), so a probe reads one line; the stamps, generations
 * and (asid, owner) ids of a set sit in their own arrays and are touched only
 * on a tag match or a fill.  The simulator's hot path is host-cache bound:
 * this halves the lines a miss touches compared with 32-byte entries.
 * Hot path: lookups and fills touch one set per probed size, never divide
 * when the set count is a power of two and never allocate.
 */
#include <glib.h>
#include "tlbsim/tlb.h"

#define ALL_PAGE_SIZES ((1u << NR_PAGE_SIZES) - 1)
/* tag = TAG_VALID | vpn << 2 | page size; 0 = an invalid way. */
#define TAG_VALID (UINT64_C(1) << 63)
#define TAG_SIZE_BITS 2

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
	uint64_t *tag;                 /* way i of set s at [s * ways + i], as below */
	uint64_t *lru;
	uint32_t *gen;
	uint32_t *id; /* asid << 16 | owner */
	bool *writable;
	struct tlb_entry hit; /* the entry the last lookup returned */
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

	struct tlb *tlb = g_new0(struct tlb, 1);
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
	tlb->tag = g_new0(uint64_t, geometry->entries);
	tlb->lru = g_new0(uint64_t, geometry->entries);
	tlb->gen = g_new0(uint32_t, geometry->entries);
	tlb->id = g_new0(uint32_t, geometry->entries);
	tlb->writable = g_new0(bool, geometry->entries);
	return tlb;
}

void tlb_free(struct tlb *tlb)
{
	if (!tlb)
		return;
	g_free(tlb->tag);
	g_free(tlb->lru);
	g_free(tlb->gen);
	g_free(tlb->id);
	g_free(tlb->writable);
	g_free(tlb);
}

const struct tlb_geometry *tlb_geometry(const struct tlb *tlb)
{
	return &tlb->geo;
}

static inline uint64_t make_tag(uint64_t vpn, unsigned ps)
{
	return TAG_VALID | vpn << TAG_SIZE_BITS | ps;
}

static inline uint32_t make_id(uint16_t asid, uint16_t owner)
{
	return (uint32_t)asid << 16 | owner;
}

/* First way of the set holding page number @vpn. */
static inline size_t set_base(const struct tlb *tlb, uint64_t vpn)
{
	uint64_t set = tlb->sets_pow2 ? (vpn & tlb->set_mask) : vpn % tlb->sets;
	return (size_t)set * tlb->ways;
}

static inline bool id_matches(uint32_t id, uint16_t asid, int owner)
{
	return (id >> 16) == asid && (owner == TLB_ANY_OWNER || (id & 0xffff) == (unsigned)owner);
}

static inline void invalidate(struct tlb *tlb, size_t i)
{
	tlb->tag[i] = 0;
	tlb->lru[i] = 0; /* sorts before every valid entry: see fill_slot() */
}

/*
 * Way of the set at @base holding @tag for (@asid, @owner), or SIZE_MAX.  A
 * hit may sit in any way, so a scan that stops at the first match mispredicts
 * almost always; one branch-free pass finds the first tag match instead, and
 * the rare further ones (same page, other ASID or owner) are checked after.
 */
static inline size_t probe(const struct tlb *tlb, size_t base, uint64_t tag, uint16_t asid,
			   int owner)
{
	const uint64_t *tags = &tlb->tag[base];
	unsigned ways = tlb->ways, first = ways;

	for (unsigned w = ways; w-- > 0;)
		first = tags[w] == tag ? w : first;
	for (unsigned w = first; w < ways; w++)
		if (tags[w] == tag && id_matches(tlb->id[base + w], asid, owner))
			return base + w;
	return SIZE_MAX;
}

static const struct tlb_entry *hit_entry(struct tlb *tlb, size_t i)
{
	tlb->lru[i] = ++tlb->stamp;
	tlb->stats.hits++;
	tlb->hit = (struct tlb_entry){
		.vpn = (tlb->tag[i] & ~TAG_VALID) >> TAG_SIZE_BITS,
		.lru = tlb->lru[i],
		.gen = tlb->gen[i],
		.asid = (uint16_t)(tlb->id[i] >> 16),
		.owner = (uint16_t)(tlb->id[i] & 0xffff),
		.page_size = (uint8_t)(tlb->tag[i] & ((1u << TAG_SIZE_BITS) - 1)),
		.valid = true,
		.writable = tlb->writable[i],
	};
	return &tlb->hit;
}

const struct tlb_entry *tlb_lookup_size(struct tlb *tlb, uint64_t vaddr, enum page_size ps,
				       uint16_t asid, int owner)
{
	tlb->stats.lookups++;
	uint64_t vpn = vaddr >> page_size_shift(ps);
	size_t i = probe(tlb, set_base(tlb, vpn), make_tag(vpn, ps), asid, owner);
	if (i != SIZE_MAX)
		return hit_entry(tlb, i);
	tlb->stats.misses++;
	return NULL;
}

const struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	tlb->stats.lookups++;
	for (unsigned s = 0; s < tlb->nr_sizes; s++) {
		uint64_t vpn = vaddr >> tlb->shifts[s];
		size_t i = probe(tlb, set_base(tlb, vpn), make_tag(vpn, tlb->sizes[s]), asid,
				 owner);
		if (i != SIZE_MAX)
			return hit_entry(tlb, i);
	}
	tlb->stats.misses++;
	return NULL;
}

bool tlb_peek(const struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
	      int owner, uint32_t *gen)
{
	if (!(tlb->geo.page_sizes & (1u << ps)))
		return false;
	uint64_t vpn = vaddr >> page_size_shift(ps);
	size_t i = probe(tlb, set_base(tlb, vpn), make_tag(vpn, ps), asid, owner);
	if (i == SIZE_MAX)
		return false;
	*gen = tlb->gen[i];
	return true;
}

/* The way to fill: the existing entry for (tag, id) if any, else the LRU way. */
static size_t fill_slot(const struct tlb *tlb, size_t base, uint64_t tag, uint32_t id, bool *same)
{
	size_t victim = base;
	for (size_t i = base; i < base + tlb->ways; i++) {
		if (tlb->tag[i] == tag && tlb->id[i] == id) {
			*same = true;
			return i;
		}
		if (tlb->lru[i] < tlb->lru[victim])
			victim = i;
	}
	*same = false;
	return victim;
}

bool tlb_fill(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	      uint32_t gen)
{
	return tlb_fill_perm(tlb, vaddr, ps, asid, owner, gen, true);
}

bool tlb_fill_perm(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
		   uint16_t owner, uint32_t gen, bool writable)
{
	if ((unsigned)ps >= NR_PAGE_SIZES || !(tlb->geo.page_sizes & (1u << ps)))
		return false;

	uint64_t vpn = vaddr >> page_size_shift(ps);
	uint64_t tag = make_tag(vpn, ps);
	uint32_t id = make_id(asid, owner);
	bool same;
	size_t i = fill_slot(tlb, set_base(tlb, vpn), tag, id, &same);

	if (tlb->tag[i] && !same)
		tlb->stats.evictions++;
	tlb->stats.fills++;
	tlb->tag[i] = tag;
	tlb->id[i] = id;
	tlb->gen[i] = gen;
	tlb->writable[i] = writable;
	tlb->lru[i] = ++tlb->stamp;
	return true;
}

unsigned tlb_flush_one(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	unsigned removed = 0;

	/* A page of size ps containing vaddr has vpn vaddr >> shift: one set per size. */
	for (unsigned s = 0; s < tlb->nr_sizes; s++) {
		uint64_t vpn = vaddr >> tlb->shifts[s];
		uint64_t tag = make_tag(vpn, tlb->sizes[s]);
		size_t base = set_base(tlb, vpn);

		for (size_t i = base; i < base + tlb->ways; i++) {
			if (tlb->tag[i] == tag && id_matches(tlb->id[i], asid, owner)) {
				invalidate(tlb, i);
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

	for (size_t i = 0; i < tlb->geo.entries; i++) {
		uint32_t id = tlb->id[i];
		if (tlb->tag[i] && (any_asid || (id >> 16) == asid) &&
		    (owner == TLB_ANY_OWNER || (id & 0xffff) == (unsigned)owner)) {
			invalidate(tlb, i);
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

	for (size_t i = 0; i < tlb->geo.entries; i++)
		n += tlb->tag[i] != 0;
	return n;
}

const struct tlb_stats *tlb_stats(const struct tlb *tlb)
{
	return &tlb->stats;
}
