/*
 * One set-associative TLB structure (see include/tlbsim/machine/tlb.h).
 *
 * Models: a single level (an L1 DTLB, an STLB, ...) of @entries translations
 * organised as @entries / @ways sets of @ways entries, true LRU or tree
 * pseudo-LRU inside each set (the topology says which; vendors document neither),
 * entries tagged with (vpn, page size, ASID, owner) and the PTE generation they
 * were filled from.  A structure may hold several page sizes; a lookup probes
 * them in the order 4K, 2M, 1G, as the size of the page behind an address is
 * not known before the walk.  An entry of size ps with page number vpn lives in
 * set vpn % sets, so every probe and every INVLPG touches one set per size.
 *
 * Simplifies: no per-size partitioning (real STLBs often split 1G pages into a
 * separate array), no hashing of the set index; invalidations leave the PLRU
 * bits as they are (an INVLPG is not a use).  An
 * entry filled by owner 0 and one filled by owner 1 for the same page are two
 * separate entries, as in an SMT-shared DTLB that tags the logical processor.
 *
 * Invariant: at most one valid entry per (vpn, page size, ASID, owner), and it
 * sits in set (vpn % sets); invalid ways have tag 0.  Under LRU with at most 12
 * ways a set is "ordered": one word holds the ways' recency and which are
 * filled (recency.h); the fill victim is the first invalid way, else the
 * least recently used.  Otherwise
 * (tree PLRU, wider sets) valid entries carry distinct stamps >= 1 and
 * invalid ones stamp 0, so "first way with the smallest stamp" is the fill
 * victim under LRU, and under tree PLRU while the set has an invalid way.
 * Either way the victim of a full set is its least recently used entry.
 * stats.lookups == stats.hits + stats.misses.
 *
 * Layout: one block per set holding, for sets of up to 8 ways, a word of
 * one-byte fingerprints of the ways' tags (TLB_FP_WAYS), then its ways'
 * tags, its recency word (or the ways' stamps), (asid, owner) ids, PTE
 * generations, frames and write permissions, so that a lookup or a fill
 * touches one block (an ordered 8-way set is 184 bytes; a miss reads only
 * the fingerprints) and addresses it from one pointer.
 * Hot path: the set sizes machines have (4 and 8 ways) get their own copy of
 * the lookup and fill code with the way count a constant, so the loops over
 * the ways unroll into compares and conditional moves: which way hits, or is
 * the victim, is unpredictable, and a branch on it would mispredict.  Lookups
 * and fills never divide when the set count is a power of two and never
 * allocate.
 */
#include <glib.h>
#include "tlbsim/machine/tlb.h"
#include "recency.h"

#define ALL_PAGE_SIZES ((1u << NR_PAGE_SIZES) - 1)
/* tag = TAG_VALID | vpn << 2 | page size; 0 = an invalid way. */
#define TAG_VALID (UINT64_C(1) << 63)
#define TAG_SIZE_BITS 2
/* The frame fits the entry's padding: a copy stays within 24 bytes. */
_Static_assert(sizeof(struct tlb_entry) == 24, "struct tlb_entry grew past 24 bytes");

struct tlb {
	/* Read on every lookup and fill. */
	_Alignas(HOST_LINE) unsigned char *mem; /* sets * set_bytes: the set blocks, see set_at() */
	uint64_t *plru;     /* per set, the tree's bits (TLB_REPLACE_TREE_PLRU), else NULL */
	size_t set_bytes;
	uint64_t set_mask; /* sets - 1, used instead of % when sets is a power of two */
	unsigned ways;
	bool sets_pow2;
	/* LRU with at most RECENCY_MAX_WAYS ways: a set's recency is one word
	 * (recency.h); else (tree PLRU, wider sets) a stamp per way. */
	bool ordered;
	unsigned sets;
	uint64_t stamp; /* stamped sets: the last stamp handed out; 0 is never given to an entry */
	/* Valid entries: a flush of the whole structure stops once it has seen
	 * them all, and costs nothing in an empty one (a broadcast reaches every
	 * CPU's TLBs, most of them empty or nearly). */
	unsigned valid;
	struct tlb_stats stats;
	struct tlb_geometry geo;
	unsigned nr_sizes;             /* page sizes held, i.e. popcount(geo.page_sizes) */
	uint8_t sizes[NR_PAGE_SIZES];  /* held sizes in probe order (4K, 2M, 1G) */
	uint8_t shifts[NR_PAGE_SIZES]; /* page_size_shift(sizes[i]), off the hot path */
	struct tlb_entry hit;          /* the entry the last lookup returned */
};

/* A set's block, for @ways ways: its fingerprints (up to 8 ways), tags and
 * recency, then four more arrays indexed by way. */
struct set {
	uint64_t *fp;  /* up to 8 ways: byte w, way w's tag's fingerprint (TLB_FP_WAYS) */
	uint64_t *tag;
	uint64_t *lru; /* @ordered: the set's recency word; else a stamp per way */
	uint32_t *id;  /* asid << 16 | owner */
	uint32_t *gen;
	uint32_t *pfn;
	bool *writable;
	unsigned ways;
	bool ordered;
};

static inline size_t lru_bytes(unsigned ways, bool ordered)
{
	return ordered ? 8 : 8 * (size_t)ways;
}

/* Sets of up to this many ways keep a fingerprint of each way's tag, one
 * byte each in one word: a probe compares the word against the tag's
 * fingerprint in a few instructions, and only the ways it flags against the
 * tag itself.  A filter, not a tag: every hit is checked in full, so a
 * stale fingerprint (an emptied way keeps its byte) costs a compare, never
 * a wrong answer. */
#define TLB_FP_WAYS 8

static inline size_t fp_bytes(unsigned ways)
{
	return ways <= TLB_FP_WAYS ? 8 : 0;
}

static inline size_t block_bytes(unsigned ways, bool ordered)
{
	return fp_bytes(ways) +
	       ((size_t)ways * (8 + 4 + 4 + 4 + 1) + lru_bytes(ways, ordered) + 7) / 8 * 8;
}

/* The byte of @tag that the fingerprint word holds: a multiply's top bits,
 * which mix every bit of the page number. */
static inline uint64_t tag_fp(uint64_t tag)
{
	return (tag * UINT64_C(0x9e3779b97f4a7c15)) >> 56;
}

/* Inlined with constant @ways and @ordered, the offsets are constants. */
static inline struct set set_view(unsigned char *b, unsigned ways, bool ordered)
{
	unsigned char *tags = b + fp_bytes(ways);
	unsigned char *id = tags + 8 * (size_t)ways + lru_bytes(ways, ordered);
	return (struct set){
	    .fp = (uint64_t *)b,
	    .tag = (uint64_t *)tags,
	    .lru = (uint64_t *)(tags + 8 * (size_t)ways),
	    .id = (uint32_t *)id,
	    .gen = (uint32_t *)(id + 4 * (size_t)ways),
	    .pfn = (uint32_t *)(id + 8 * (size_t)ways),
	    .writable = (bool *)(id + 12 * (size_t)ways),
	    .ways = ways,
	    .ordered = ordered,
	};
}

/* The view of @tlb's block @b, off the hot path. */
static inline struct set tlb_set_view(const struct tlb *tlb, unsigned char *b)
{
	return set_view(b, tlb->ways, tlb->ordered);
}

/* Way @w of @s was hit: it becomes the most recent. */
static inline void set_use(struct tlb *tlb, struct set s, unsigned w)
{
	if (s.ordered)
		*s.lru = recency_use(recency_load(s.lru, s.ways), w);
	else
		s.lru[w] = ++tlb->stamp;
}

/* Way @w of @s was filled: it becomes the most recent. */
static inline void set_fill(struct tlb *tlb, struct set s, unsigned w)
{
	if (s.ordered)
		*s.lru = recency_fill(recency_load(s.lru, s.ways), w);
	else
		s.lru[w] = ++tlb->stamp;
}

/* Way @w of @s is emptied. */
static inline void set_drop(struct set s, unsigned w)
{
	s.tag[w] = 0;
	if (s.ordered)
		*s.lru = recency_empty(*s.lru, w);
	else
		s.lru[w] = 0; /* sorts before every valid entry: see set_victim() */
}

static bool geometry_ok(const struct tlb_geometry *g)
{
	bool shape = g->ways != 0 && g->entries != 0 && g->entries % g->ways == 0 &&
		     g->page_sizes != 0 && (g->page_sizes & ~ALL_PAGE_SIZES) == 0;
	switch (g->replacement) {
	case TLB_REPLACE_LRU:
		return shape;
	case TLB_REPLACE_TREE_PLRU: /* ways - 1 tree bits in one word */
		return shape && (g->ways & (g->ways - 1)) == 0 && g->ways <= TLB_PLRU_MAX_WAYS;
	}
	return false;
}

struct tlb *tlb_new(const struct tlb_geometry *geometry)
{
	if (!geometry_ok(geometry))
		return NULL;

	struct tlb *tlb = g_aligned_alloc0(1, sizeof(*tlb), HOST_LINE);
	tlb->geo = *geometry;
	tlb->ways = geometry->ways;
	tlb->sets = geometry->entries / geometry->ways;
	tlb->sets_pow2 = (tlb->sets & (tlb->sets - 1)) == 0;
	tlb->ordered =
	    geometry->replacement == TLB_REPLACE_LRU && geometry->ways <= RECENCY_MAX_WAYS;
	tlb->set_mask = tlb->sets - 1;
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		if (!(geometry->page_sizes & (1u << ps)))
			continue;
		tlb->sizes[tlb->nr_sizes] = (uint8_t)ps;
		tlb->shifts[tlb->nr_sizes] = (uint8_t)page_size_shift((enum page_size)ps);
		tlb->nr_sizes++;
	}
	tlb->set_bytes = block_bytes(tlb->ways, tlb->ordered);
	tlb->mem = g_malloc0(tlb->sets * tlb->set_bytes);
	if (geometry->replacement == TLB_REPLACE_TREE_PLRU)
		tlb->plru = g_new0(uint64_t, tlb->sets);
	return tlb;
}

void tlb_free(struct tlb *tlb)
{
	if (!tlb)
		return;
	g_free(tlb->mem);
	g_free(tlb->plru);
	g_aligned_free(tlb);
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

/* The block of the set holding page number @vpn. */
static inline unsigned char *set_block(const struct tlb *tlb, uint64_t vpn)
{
	uint64_t set = tlb->sets_pow2 ? (vpn & tlb->set_mask) : vpn % tlb->sets;
	return tlb->mem + (size_t)set * tlb->set_bytes;
}

static inline bool id_matches(uint32_t id, uint16_t asid, int owner)
{
	return (id >> 16) == asid && (owner == TLB_ANY_OWNER || (id & 0xffff) == (unsigned)owner);
}

/*
 * Tree pseudo-LRU: node n's children are 2n and 2n + 1 (the root is 1), the
 * leaves are the ways, and node n's bit set sends the next victim to its
 * right half.  A use turns every bit on the way's path away from it.
 */
__attribute__((noinline, cold)) static void plru_touch(uint64_t *bits, unsigned ways, unsigned way)
{
	unsigned node = 1;

	for (unsigned half = ways / 2; half > 0; half /= 2) {
		unsigned right = (way & half) != 0;
		if (right)
			*bits &= ~(UINT64_C(1) << node);
		else
			*bits |= UINT64_C(1) << node;
		node = 2 * node + right;
	}
}

static unsigned plru_victim(uint64_t bits, unsigned ways)
{
	unsigned node = 1, way = 0;

	for (unsigned half = ways / 2; half > 0; half /= 2) {
		unsigned right = (unsigned)(bits >> node) & 1;
		way += right ? half : 0;
		node = 2 * node + right;
	}
	return way;
}

/* The tree bits of the set in block @b (off the LRU hot path: a division). */
static uint64_t *plru_bits(const struct tlb *tlb, const unsigned char *b)
{
	return &tlb->plru[(size_t)(b - tlb->mem) / tlb->set_bytes];
}

/*
 * Under tree PLRU, the way a fill takes: @lru_way (the same entry, or an
 * invalid way) unless @full, when the tree picks; the tree then points away
 * from it.  Out of line: LRU machines never come here.
 */
__attribute__((noinline, cold)) static unsigned plru_fill_way(const struct tlb *tlb,
							      const unsigned char *b, unsigned ways,
							      unsigned lru_way, bool full)
{
	uint64_t *bits = plru_bits(tlb, b);
	unsigned w = full ? plru_victim(*bits, ways) : lru_way;
	plru_touch(bits, ways, w);
	return w;
}

/* ---- lookup ----------------------------------------------------------------- */

/*
 * Way of @s (@ways ways) holding @tag for (@asid, @owner), or -1: the first
 * in way order.  Up to 8 ways, the fingerprints name the few ways worth a
 * compare (usually none on a miss, the hit's way on a hit).  Wider sets: a
 * hit may sit in any way, so a scan that stops at the first match
 * mispredicts almost always; one branch-free pass finds the first tag match
 * instead, and the rare further ones (same page, other ASID or owner) are
 * checked after.
 */
static inline int probe_ways(struct set s, unsigned ways, uint64_t tag, uint16_t asid, int owner)
{
	unsigned first = ways;

	if (ways <= TLB_FP_WAYS) {
		/* Bytes of the fingerprint word equal to the tag's: zero bytes
		 * of x, flagged by the borrow trick (which may also flag a byte
		 * above a true zero: a false candidate, checked like any). */
		const uint64_t ones = UINT64_C(0x0101010101010101);
		uint64_t x = *s.fp ^ (ones * tag_fp(tag));
		uint64_t ways_mask = ways == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * ways)) - 1;
		uint64_t candidates = (x - ones) & ~x & (ones << 7) & ways_mask;
		while (candidates) {
			unsigned w = (unsigned)__builtin_ctzll(candidates) >> 3;
			if (s.tag[w] == tag && id_matches(s.id[w], asid, owner))
				return (int)w;
			candidates &= candidates - 1;
		}
		return -1;
	}
	if (ways < 64) { /* a mask of the matching ways and a bit scan */
		uint64_t match = UINT64_C(1) << ways;
		for (unsigned w = 0; w < ways; w++)
			match |= (uint64_t)(s.tag[w] == tag) << w;
		first = (unsigned)__builtin_ctzll(match);
	} else {
		for (unsigned w = ways; w-- > 0;)
			first = s.tag[w] == tag ? w : first;
	}
	for (unsigned w = first; w < ways; w++)
		if (s.tag[w] == tag && id_matches(s.id[w], asid, owner))
			return (int)w;
	return -1;
}

/* Probe the set in block @b; *@s is its view. */
static inline int probe(const struct tlb *tlb, unsigned char *b, struct set *s, uint64_t tag,
			uint16_t asid, int owner)
{
	*s = tlb_set_view(tlb, b);
	switch (tlb->ways) {
	case 4:
		return probe_ways(*s, 4, tag, asid, owner);
	case 8:
		return probe_ways(*s, 8, tag, asid, owner);
	default:
		return probe_ways(*s, tlb->ways, tag, asid, owner);
	}
}

static const struct tlb_entry *hit_entry(struct tlb *tlb, const unsigned char *b, struct set s,
					 unsigned w)
{
	uint64_t tag = s.tag[w];
	uint32_t id = s.id[w];

	set_use(tlb, s, w);
	if (__builtin_expect(tlb->plru != NULL, 0)) /* LRU machines pay one test */
		plru_touch(plru_bits(tlb, b), tlb->ways, w);
	tlb->stats.hits++;
	tlb->hit = (struct tlb_entry){
	    .vpn = (tag & ~TAG_VALID) >> TAG_SIZE_BITS,
	    .gen = s.gen[w],
	    .pfn = s.pfn[w],
	    .asid = (uint16_t)(id >> 16),
	    .owner = (uint16_t)(id & 0xffff),
	    .page_size = (uint8_t)(tag & ((1u << TAG_SIZE_BITS) - 1)),
	    .valid = true,
	    .writable = s.writable[w],
	};
	return &tlb->hit;
}

/* 12, 21, 30: page_size_shift() without its table load. */
static inline unsigned shift_of(enum page_size ps)
{
	return 12 + 9 * (unsigned)ps;
}

const struct tlb_entry *tlb_lookup_size(struct tlb *tlb, uint64_t vaddr, enum page_size ps,
				       uint16_t asid, int owner)
{
	uint64_t vpn = vaddr >> shift_of(ps);
	unsigned char *b = set_block(tlb, vpn);
	struct set s;
	int w = probe(tlb, b, &s, make_tag(vpn, ps), asid, owner);

	tlb->stats.lookups++;
	if (w >= 0)
		return hit_entry(tlb, b, s, (unsigned)w);
	tlb->stats.misses++;
	return NULL;
}

const struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	tlb->stats.lookups++;
	for (unsigned i = 0; i < tlb->nr_sizes; i++) {
		uint64_t vpn = vaddr >> tlb->shifts[i];
		unsigned char *b = set_block(tlb, vpn);
		struct set s;
		int w = probe(tlb, b, &s, make_tag(vpn, tlb->sizes[i]), asid, owner);
		if (w >= 0)
			return hit_entry(tlb, b, s, (unsigned)w);
	}
	tlb->stats.misses++;
	return NULL;
}

bool tlb_peek(const struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
	      int owner, uint32_t *gen)
{
	if (!(tlb->geo.page_sizes & (1u << ps)))
		return false;
	uint64_t vpn = vaddr >> shift_of(ps);
	struct set s;
	int w = probe(tlb, set_block(tlb, vpn), &s, make_tag(vpn, ps), asid, owner);
	if (w < 0)
		return false;
	*gen = s.gen[w];
	return true;
}

/*
 * The fill victim: the first empty way if the set has one, else the least
 * recently used (ordered sets: recency.h).
 * Stamped sets: the first way with the smallest stamp (see the invariant);
 * the running minimum stays in a register, as comparing with lru[victim]
 * would make each way wait for the load of the previous victim's stamp.
 */
static inline unsigned set_victim(struct set s)
{
	if (s.ordered)
		return recency_victim(recency_load(s.lru, s.ways), s.ways);
	unsigned victim = 0;
	uint64_t oldest = UINT64_MAX;

	for (unsigned w = 0; w < s.ways; w++) {
		victim = s.lru[w] < oldest ? w : victim;
		oldest = s.lru[w] < oldest ? s.lru[w] : oldest;
	}
	return victim;
}

static inline bool probe_set(struct tlb *tlb, unsigned char *b, unsigned ways, bool ordered,
			     uint64_t tag, uint16_t asid, uint16_t owner, struct tlb_probe *probe)
{
	struct set s = set_view(b, ways, ordered);
	int w = probe_ways(s, ways, tag, asid, owner);

	tlb->stats.lookups++;
	if (w < 0) {
		tlb->stats.misses++;
		probe->block = b; /* the hit's fields stay unset: see tlb.h */
		probe->tag = tag;
		return false;
	}
	set_use(tlb, s, (unsigned)w);
	if (__builtin_expect(tlb->plru != NULL, 0))
		plru_touch(plru_bits(tlb, b), ways, (unsigned)w);
	tlb->stats.hits++;
	probe->gen = s.gen[w];
	probe->pfn = s.pfn[w];
	probe->writable = s.writable[w];
	return true;
}

bool tlb_probe(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	       struct tlb_probe *probe)
{
	uint64_t vpn = vaddr >> shift_of(ps);
	unsigned char *b = set_block(tlb, vpn);
	uint64_t tag = make_tag(vpn, ps);

	if (!tlb->ordered)
		return probe_set(tlb, b, tlb->ways, false, tag, asid, owner, probe);
	switch (tlb->ways) {
	case 4:
		return probe_set(tlb, b, 4, true, tag, asid, owner, probe);
	case 8:
		return probe_set(tlb, b, 8, true, tag, asid, owner, probe);
	default:
		return probe_set(tlb, b, tlb->ways, true, tag, asid, owner, probe);
	}
}

/* ---- fill ------------------------------------------------------------------- */

/* The way to fill: the existing entry for (@tag, @id) if any (*@same), else
 * set_victim(). */
static inline unsigned fill_way(struct set s, uint64_t tag, uint32_t id, bool *same)
{
	for (unsigned w = 0; w < s.ways; w++) {
		if (s.tag[w] == tag && s.id[w] == id) {
			*same = true;
			return w;
		}
	}
	*same = false;
	return set_victim(s);
}

/* Way @w of @s becomes (@tag, @id); @evicts: it held another entry. */
static inline void fill_entry(struct tlb *tlb, struct set s, unsigned w, uint64_t tag, uint32_t id,
			      uint32_t gen, uint32_t pfn, bool writable, bool evicts)
{
	if (evicts)
		tlb->stats.evictions++;
	tlb->stats.fills++;
	tlb->valid += s.tag[w] == 0;
	s.tag[w] = tag;
	if (s.ways <= TLB_FP_WAYS)
		*s.fp = (*s.fp & ~(UINT64_C(0xff) << (8 * w))) | tag_fp(tag) << (8 * w);
	s.id[w] = id;
	s.gen[w] = gen;
	s.pfn[w] = pfn;
	s.writable[w] = writable;
	set_fill(tlb, s, w);
}

static inline void fill_set(struct tlb *tlb, const unsigned char *b, struct set s, uint64_t tag,
			    uint32_t id, uint32_t gen, uint32_t pfn, bool writable)
{
	bool same;
	unsigned w = fill_way(s, tag, id, &same);

	if (__builtin_expect(tlb->plru != NULL, 0))
		w = plru_fill_way(tlb, b, s.ways, w, !same && s.tag[w]);
	fill_entry(tlb, s, w, tag, id, gen, pfn, writable, s.tag[w] && !same);
}

bool tlb_fill(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	      uint32_t gen)
{
	return tlb_fill_perm(tlb, vaddr, ps, asid, owner, gen, 0, true);
}

bool tlb_fill_perm(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
		   uint16_t owner, uint32_t gen, uint32_t pfn, bool writable)
{
	if ((unsigned)ps >= NR_PAGE_SIZES || !(tlb->geo.page_sizes & (1u << ps)))
		return false;

	uint64_t vpn = vaddr >> shift_of(ps);
	uint64_t tag = make_tag(vpn, ps);
	uint32_t id = make_id(asid, owner);
	unsigned char *b = set_block(tlb, vpn);

	fill_set(tlb, b, tlb_set_view(tlb, b), tag, id, gen, pfn, writable);
	return true;
}

/* The probed miss's fill in a set of @ways ways, @ordered or not. */
static inline void fill_probed_set(struct tlb *tlb, const struct tlb_probe *probe, unsigned ways,
				   bool ordered, uint32_t id, uint32_t gen, uint32_t pfn,
				   bool writable)
{
	struct set s = set_view(probe->block, ways, ordered);
	unsigned w = set_victim(s);

	if (__builtin_expect(tlb->plru != NULL, 0))
		w = plru_fill_way(tlb, probe->block, ways, w, s.tag[w] != 0);
	fill_entry(tlb, s, w, probe->tag, id, gen, pfn, writable, s.tag[w] != 0);
}

/*
 * Nothing touched the set since the probe missed, so the entry is still
 * absent (the probe matched this owner's entries exactly): no search for
 * it, only for the victim, as tlb_fill_perm() would choose it.
 */
void tlb_fill_probed(struct tlb *tlb, const struct tlb_probe *probe, uint16_t asid,
		     uint16_t owner, uint32_t gen, uint32_t pfn, bool writable)
{
	uint32_t id = make_id(asid, owner);

	if (!tlb->ordered) {
		fill_probed_set(tlb, probe, tlb->ways, false, id, gen, pfn, writable);
		return;
	}
	switch (tlb->ways) {
	case 4:
		fill_probed_set(tlb, probe, 4, true, id, gen, pfn, writable);
		break;
	case 8:
		fill_probed_set(tlb, probe, 8, true, id, gen, pfn, writable);
		break;
	default:
		fill_probed_set(tlb, probe, tlb->ways, true, id, gen, pfn, writable);
		break;
	}
}

/* ---- invalidation ------------------------------------------------------------ */

unsigned tlb_flush_one(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	unsigned removed = 0;

	/* A page of size ps containing vaddr has vpn vaddr >> shift: one set per size. */
	for (unsigned i = 0; i < tlb->nr_sizes; i++) {
		uint64_t vpn = vaddr >> tlb->shifts[i];
		uint64_t tag = make_tag(vpn, tlb->sizes[i]);
		struct set s = tlb_set_view(tlb, set_block(tlb, vpn));

		for (unsigned w = 0; w < tlb->ways; w++) {
			if (s.tag[w] == tag && id_matches(s.id[w], asid, owner)) {
				set_drop(s, w);
				removed++;
			}
		}
	}
	tlb->valid -= removed;
	tlb->stats.invalidated += removed;
	return removed;
}

/* Drop every valid entry of @owner, and of @asid unless @any_asid.  Walks the
 * sets until it has seen every valid entry. */
static unsigned flush_matching(struct tlb *tlb, bool any_asid, uint16_t asid, int owner)
{
	unsigned removed = 0, unseen = tlb->valid;

	for (size_t set = 0; set < tlb->sets && unseen; set++) {
		struct set s = tlb_set_view(tlb, tlb->mem + set * tlb->set_bytes);

		for (unsigned w = 0; w < tlb->ways; w++) {
			uint32_t id = s.id[w];
			if (!s.tag[w])
				continue;
			unseen--;
			if ((any_asid || (id >> 16) == asid) &&
			    (owner == TLB_ANY_OWNER || (id & 0xffff) == (unsigned)owner)) {
				set_drop(s, w);
				removed++;
			}
		}
	}
	tlb->valid -= removed;
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
	return tlb->valid;
}

/* Off the access path: only a directory's flush asks (a sharer check). */
bool tlb_holds(const struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner)
{
	if (vaddr == TLB_ANY_VADDR) {
		for (size_t set = 0; set < tlb->sets; set++) {
			struct set s = tlb_set_view(tlb, tlb->mem + set * tlb->set_bytes);
			for (unsigned w = 0; w < tlb->ways; w++)
				if (s.tag[w] && id_matches(s.id[w], asid, owner))
					return true;
		}
		return false;
	}
	for (unsigned i = 0; i < tlb->nr_sizes; i++) {
		uint64_t vpn = vaddr >> tlb->shifts[i];
		uint64_t tag = make_tag(vpn, tlb->sizes[i]);
		struct set s = tlb_set_view(tlb, set_block(tlb, vpn));
		for (unsigned w = 0; w < tlb->ways; w++)
			if (s.tag[w] == tag && id_matches(s.id[w], asid, owner))
				return true;
	}
	return false;
}

const struct tlb_stats *tlb_stats(const struct tlb *tlb)
{
	return &tlb->stats;
}
