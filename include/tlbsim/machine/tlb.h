#ifndef TLBSIM_TLB_H
#define TLBSIM_TLB_H
/*
 * One set-associative TLB structure (an L1 DTLB, an STLB, ...) with true LRU
 * or tree pseudo-LRU replacement inside each set.  Entries are tagged with an ASID (x86 PCID, arm64
 * ASID; 0 when the kernel uses none), the page size, the logical CPU that filled
 * the entry (@owner), the generation of the page-table entry it was filled
 * from, so that a later access can tell a stale translation from a current one,
 * and the frame that entry mapped, so that a stale one can be told to reach a
 * frame handed out again.
 *
 * @owner exists for SMT: Intel's SDM says a shared DTLB tags each entry with the
 * logical processor that created it and an invalidation is only guaranteed to
 * remove that processor's own entries.  Callers pass TLB_ANY_OWNER to ignore the
 * tag (the "one flush clears both siblings" premise) or a CPU number to honour it.
 *
 * The structure knows nothing of CPUs, time or costs; it only counts.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/util/types.h"

#define TLB_ANY_OWNER (-1)

/*
 * Which entry of a full set a fill replaces.  LRU: the least recently used.
 * TREE_PLRU: the one a binary tree of ways - 1 bits points at, each bit
 * turned away from the half last used (needs a power-of-two way count); an
 * invalid way, if any, is filled first under either.
 */
enum tlb_replacement { TLB_REPLACE_LRU, TLB_REPLACE_TREE_PLRU };
#define TLB_PLRU_MAX_WAYS 64

struct tlb_geometry {
	unsigned entries;    /* total entries; a multiple of @ways */
	unsigned ways;       /* ways == entries means fully associative */
	unsigned page_sizes; /* bitmask of 1u << enum page_size that it may hold */
	enum tlb_replacement replacement;
};

struct tlb_entry {
	uint64_t vpn;  /* virtual address >> page_size_shift(page_size) */
	uint32_t gen;  /* generation of the PTE this was filled from */
	uint32_t pfn;  /* the frame it maps (frame.h; 0: none) */
	uint16_t asid;
	uint16_t owner;
	uint8_t page_size; /* enum page_size */
	bool valid;
	bool writable; /* the PTE allowed writes when the entry was filled */
};

struct tlb_stats {
	uint64_t lookups; /* == hits + misses */
	uint64_t hits;
	uint64_t misses;
	uint64_t fills;
	uint64_t evictions;   /* valid entries displaced by a fill */
	uint64_t invalidated; /* valid entries removed by tlb_flush_* */
};

struct tlb;

/* Returns NULL if the geometry is impossible (callers validate first). */
struct tlb *tlb_new(const struct tlb_geometry *geometry);
void tlb_free(struct tlb *tlb);
const struct tlb_geometry *tlb_geometry(const struct tlb *tlb);

/**
 * tlb_lookup() - translate @vaddr for @asid, probing every page size the
 * structure holds (4K first).  A hit refreshes LRU and returns a copy of the entry
 * (valid until the next lookup in this structure); a miss returns NULL.  @owner: TLB_ANY_OWNER or
 * the CPU whose entries alone may match.  Counts one lookup either way.
 */
const struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner);
/*
 * The same, probing only page size @ps (which the structure must hold).
 * Equivalent to tlb_lookup() when no address is mapped with two page sizes at
 * once, which the simulator guarantees (a VMA has one page size): the hot
 * path saves the probes of the other sizes.
 */
const struct tlb_entry *tlb_lookup_size(struct tlb *tlb, uint64_t vaddr, enum page_size ps,
				       uint16_t asid, int owner);

/*
 * Insert a translation for the page of size @ps containing @vaddr, replacing an
 * existing entry for the same (vpn, size, asid, owner) or the set's victim.
 * A size the structure does not hold is ignored (returns false).
 */
bool tlb_fill(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	      uint32_t gen);
/* The same with the PTE's frame and write permission (tlb_fill() fills
 * writable entries of frame 0); a write through a read-only entry faults. */
bool tlb_fill_perm(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
		   uint16_t owner, uint32_t gen, uint32_t pfn, bool writable);

/*
 * The hot path's lookup and fill in two steps: tlb_probe() looks up the
 * entry of (@vaddr, @ps, @asid) that @owner filled (size @ps held, as for
 * tlb_lookup_size()); a hit refreshes LRU, counts, and leaves the entry's
 * generation and permission in *@probe; a miss counts and leaves the
 * page's set and tag, so that tlb_fill_probed() fills without searching
 * the set for the entry again.  Valid until the next
 * call that changes the structure: a fill, a hit, an invalidation.
 */
struct tlb_probe {
	unsigned char *block; /* the set (miss) */
	uint64_t tag;         /* the entry's tag (miss) */
	uint32_t gen;         /* the entry's PTE generation (hit) */
	uint32_t pfn;         /* the entry's frame (hit) */
	bool writable;        /* the entry's permission (hit) */
};
bool tlb_probe(struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid, uint16_t owner,
	       struct tlb_probe *probe);
/* tlb_fill_perm() after tlb_probe() missed for the same owner. */
void tlb_fill_probed(struct tlb *tlb, const struct tlb_probe *probe, uint16_t asid,
		     uint16_t owner, uint32_t gen, uint32_t pfn, bool writable);

/* INVLPG: drop every entry of @asid, any size, whose page contains @vaddr. */
unsigned tlb_flush_one(struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner);
/* CR3 write without NOFLUSH / ASIDE1: drop every entry of @asid. */
unsigned tlb_flush_asid(struct tlb *tlb, uint16_t asid, int owner);
/* Drop everything (all ASIDs). */
unsigned tlb_flush_all(struct tlb *tlb, int owner);

/*
 * Look without touching: the generation of the entry for (@vaddr, @ps, @asid,
 * @owner) in *@gen and true, or false.  No LRU update, no statistics.
 */
bool tlb_peek(const struct tlb *tlb, uint64_t vaddr, enum page_size ps, uint16_t asid,
	      int owner, uint32_t *gen);

/* Valid entries right now. */
unsigned tlb_occupancy(const struct tlb *tlb);

/* Would tlb_flush_one() (@vaddr) or tlb_flush_asid() (@vaddr TLB_ANY_VADDR)
 * drop an entry?  Changes nothing, counts nothing (DiDi's directory). */
#define TLB_ANY_VADDR UINT64_MAX
bool tlb_holds(const struct tlb *tlb, uint64_t vaddr, uint16_t asid, int owner);
const struct tlb_stats *tlb_stats(const struct tlb *tlb);

#endif
