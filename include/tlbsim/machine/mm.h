#ifndef TLBSIM_MM_H
#define TLBSIM_MM_H
/*
 * An address space: VMAs with their page-table entries, page-table pages,
 * mm_cpumask and the flush generation.  Plain state with small helpers; the
 * kernel mechanisms that change it (munmap, flushes, switch_mm) live above.
 *
 * Every PTE carries generations.  @gen is bumped by every change (populate,
 * unmap, protection downgrade, reclaim); @pending is the generation of the
 * latest change that made older translations wrong (a zap or a downgrade, not
 * a populate); @committed is the @pending of the latest such change whose
 * operation has returned to user space (munmap returned, the reclaim flush
 * finished).  A TLB entry filled from generation g is stale once
 * g < committed: using it is a correctness bug of the flush policy.  Entries
 * filled after the change (a racing fault) have g > pending and stay valid.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/machine/fabric.h"
#include "tlbsim/machine/frame.h"
#include "tlbsim/machine/rwsem_types.h"
#include "tlbsim/util/types.h"

struct pte {
	uint32_t gen;
	uint32_t pending;
	uint32_t committed;
	/* The frame it maps (frame.h), kept after a zap: the last one it
	 * mapped.  0: none (the zero page, or an mm without frames). */
	uint32_t pfn;
	bool present;
	bool writable;
	bool zero_page; /* maps the shared zero page: read-only, never on the LRU */
	/* _PAGE_DIRTY: set by a write through the PTE (the hardware, or the
	 * write fault that maps it, pte_mkdirty()); gone with the PTE when it is
	 * zapped, its page then written out or freed. */
	bool dirty;
	/* ABIS's view of the TLBs (docs/beyond.md): the x86 Accessed bit, set by
	 * a page walk that fills a TLB from the PTE (machine_translate()'s miss
	 * path, machine_fill()), and the one CPU whose walk loaded it, or
	 * PTE_ACCESSOR_SHARED once a second CPU's has.  Cleared together with
	 * every change that makes older translations wrong (zap, write-protect,
	 * copy of the zero page), the old value read by the changer as from
	 * ptep_get_and_clear().  Invariant: a PTE with @accessed false is in no
	 * TLB, but for entries of an older change whose flush is still owed; a
	 * not-present PTE is never accessed.  Kept for every policy (the walker
	 * sets it for free); only flush_targets "abis" reads it.  @access_word
	 * is the three at once, for pte_mark_accessed(). */
	union {
		struct {
			bool accessed;
			uint8_t access_pad;
			uint16_t accessor;
		};
		uint32_t access_word;
	};
};

/* 20 bytes of generations, frame and flags, 3 of ABIS state, 1 of padding:
 * millions of pages per run, so kept small. */
_Static_assert(sizeof(struct pte) == 24, "struct pte grew");

#define PTE_ACCESSOR_SHARED UINT16_MAX

/*
 * A page walk of @cpu loaded @pte into a TLB: the hardware sets A, ABIS
 * learns the accessor.  Atomic, as pte_mark_dirty(): walks of different
 * cores may run on different host threads (machine_run_group()), and the
 * result (A set; the one accessor, or shared) is the same in any order.
 */
static inline void pte_mark_accessed(struct pte *pte, unsigned cpu)
{
	struct pte want;
	uint32_t seen = __atomic_load_n(&pte->access_word, __ATOMIC_RELAXED);
	for (;;) {
		want.access_word = seen;
		if (want.accessed && (want.accessor == cpu || want.accessor == PTE_ACCESSOR_SHARED))
			return;
		want.accessor = want.accessed ? PTE_ACCESSOR_SHARED : (uint16_t)cpu;
		want.accessed = true;
		if (__atomic_compare_exchange_n(&pte->access_word, &seen, want.access_word, true,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/* A write went through @pte (the hardware sets D). */
static inline void pte_mark_dirty(struct pte *pte)
{
	if (!__atomic_load_n(&pte->dirty, __ATOMIC_RELAXED))
		__atomic_store_n(&pte->dirty, true, __ATOMIC_RELAXED);
}

struct mm;

/*
 * The per-VMA lock (6.4+): the lock of one kernel VMA, i.e. of a run of
 * tlbsim VMAs the kernel would have merged (mm_vma_relink()).  Faults take
 * @sem for reading with a trylock; a writer (vma_start_write()) takes it for
 * writing only to wait for the readers to leave, then marks the VMA
 * write-locked (@vm_lock_seq = the mm's @mm_lock_seq) until it drops
 * mmap_lock or downgrades it (vma_end_write_all(): the mm's sequence moves
 * on).  The semantics live in vm.c; this is the state.
 */
struct vma_lock {
	struct rw_semaphore sem;
	uint64_t vm_lock_seq;
	struct vma_lock *next;      /* the mm's list of every lock it allocated */
	struct vma_lock *next_free; /* the mm's free list, while unused */
};

struct vma {
	const struct mm *mm; /* the address space it belongs to */
	uint64_t start; /* bytes, aligned to the page size */
	uint64_t end;
	enum page_size page_size; /* size of its translations: 4K, or 2M for THP/hugetlb */
	bool hugetlb;
	bool shared; /* MAP_SHARED: a read fault allocates (shmem), no zero page */
	bool mapped; /* false once unmapped, true again once mapped again */
	bool writable;
	uint64_t epoch;  /* bumped when a PTE is zapped or write-protected, on unmap and on map */
	unsigned region; /* workload region index */
	unsigned chunk;  /* chunk index inside the region */
	struct pte *ptes; /* one per page of page_size */
	/* Its kernel VMA's lock, shared with the VMAs it is merged with
	 * (mm_vma_relink()); NULL while unmapped; owned by the mm. */
	struct vma_lock *vm_lock;
};

struct mm {
	unsigned id;
	unsigned nr_cpus;
	/* The machine's frame allocator, borrowed (set by whoever creates the
	 * mm; fork_mm_new() copies it); NULL: no frames tracked. */
	struct frames *frames;
	uint64_t *cpumask;     /* mm_cpumask bitmap, nr_cpus bits */
	/* The bitmap's cache line (one line: <= 512 CPUs modelled as one). */
	struct cacheline cpumask_line;
	uint64_t total_vm;     /* mapped pages (4K units), as mm->total_vm */
	unsigned nr_vmas;
	unsigned vmas_room;    /* slots allocated: grown by doubling while laid out */
	struct vma *vmas;      /* sorted by start; unmapped ones stay, mapped == false */
	uint64_t pmd_base;     /* first 2 MiB span covered by pmd_users */
	unsigned nr_pmds;
	uint32_t *pmd_users;   /* mapped VMAs touching each 2 MiB span: 0 = PTE page freed */
	/* numaPTE: per 2 MiB span, the sockets (bit socket % 64) whose walks
	 * have used its PTE page, i.e. that hold a replica of it; cleared with
	 * the page (mm_unmap_vma()).  Kept under every policy, read by none
	 * but flush_targets "numapte". */
	uint64_t *pmd_nodes;
	uint32_t next_gen;     /* generation source for PTE changes */
	uint64_t tlb_gen;      /* x86 mm->context.tlb_gen: bumped by every flush request */
	/* mmu_gathers between their first PTE change and their flush's end */
	unsigned tlb_flush_pending;
	/* Reclaim deferred a flush of this mm (set_tlb_ubc_flush_pending()); the
	 * next page-table walk flushes first (flush_tlb_batched_pending(), rmap.h),
	 * which alone clears it. */
	bool tlb_flush_batched;
	/* tlb_gen's line: inc_mm_tlb_gen() is an RMW on it, flush_tlb_func() a
	 * load (4.14+; switch_mm's load is taken to hit a shared copy). */
	struct cacheline context_line;
	uint16_t asid;         /* arm64/riscv: the mm's ASID on every CPU (0: none) */
	uint64_t next_trim_cpumask; /* 6.14+: cycle time of the next cpumask trim */
	bool global_asid;      /* 6.15+ x86: flushed by INVLPGB on every CPU */
	/* munmap()/madvise(MADV_DONTNEED) calls in progress (LATR's
	 * mm->munmap_inprogress: their flushes may be lazy) */
	unsigned munmap_inprogress;
	uint64_t epoch;        /* bumped with any VMA's epoch */
	struct rw_semaphore *mmap_lock; /* owned */
	uint64_t mm_lock_seq;  /* vma_end_write_all() moves it on (struct vma_lock) */
	struct vma_lock *vma_locks;     /* owned: every lock allocated, by ->next */
	struct vma_lock *free_vma_locks; /* of those, the unused, by ->next_free */
};

/* The largest mm id: 15 bits in the data caches' line tags (machine.c), 16 in
 * frames (frame.c); the interpreter refuses a workload that needs more. */
#define MM_MAX_ID 32767u
struct mm *mm_new(unsigned id, unsigned nr_cpus);
void mm_free(struct mm *mm);

/*
 * Add a mapped VMA before the run starts.  VMAs must be added in increasing,
 * non-overlapping address order.  PTEs start not present.
 */
struct vma *mm_add_vma(struct mm *mm, uint64_t start, uint64_t len, enum page_size ps,
		       bool hugetlb, unsigned region, unsigned chunk);
/*
 * Build page-table occupancy once all VMAs are added, and give each VMA its
 * lock (mm_vma_relink()).
 */
void mm_finish_layout(struct mm *mm);

/*
 * VMA merging, simply: the kernel merges adjacent anonymous private mappings
 * with the same flags into one VMA (vma_merge()), so a VMA that starts where
 * the previous one ends, in the same region (same page size), both mapped,
 * with the same protection, neither shared (a shmem file each) nor hugetlb
 * (VM_DONTEXPAND does not merge), is part of the previous one's kernel VMA:
 * they share a lock.  tlbsim keeps them apart otherwise (their PTEs, their
 * calls).
 *
 * mm_vma_relink(): @vma was just unmapped, mapped again or changed
 * protection by @cpu holding mmap_lock for writing: redo the kernel VMAs
 * around it as __split_vma() and vma_merge() would.  A split gives the
 * shorter part a new lock, written last by @cpu (vm_area_dup()) and
 * write-locked, as the kernel's new VMA under the caller's write lock; a
 * merge keeps the longer run's lock and frees the other for reuse (its VMA
 * was write-locked by the caller, so no fault holds it).  Which part keeps
 * the old lock is the kernel's choice, not this: every lock involved was
 * just drained and written by @cpu, so they are the same to the model, and
 * the shorter part's rewrite keeps the work per call at the shorter part's
 * length (a region of thousands of chunks unmapped one by one).
 */
bool mm_vmas_merge(const struct vma *prev, const struct vma *vma);
void mm_vma_relink(struct mm *mm, struct vma *vma, unsigned cpu);

static inline struct pte *vma_pte(const struct vma *vma, uint64_t addr)
{
	return &vma->ptes[(addr - vma->start) >> page_size_shift(vma->page_size)];
}

static inline uint64_t vma_pages(const struct vma *vma)
{
	return (vma->end - vma->start) >> page_size_shift(vma->page_size);
}

/* Populate one PTE (fault-in) with a fresh generation and a new frame. */
void mm_populate(struct mm *mm, struct vma *vma, uint64_t addr, bool writable);
/* Map the shared zero page read-only at @addr (a read fault, do_anonymous_page()):
 * no frame of its own. */
void mm_map_zero_page(struct mm *mm, struct vma *vma, uint64_t addr);
/* Replace the zero page at @addr by a new writable page (wp_page_copy()): older
 * translations are now wrong, as after a zap. */
void mm_cow_zero_page(struct mm *mm, struct vma *vma, uint64_t addr);
/*
 * fork's copy of present @src into the not-present PTE of @addr in @vma
 * (copy_present_pte()): a fresh generation, @src's permission (as far as
 * @vma allows), zero-page and dirty bits, and @src's frame, shared.
 */
void mm_copy_pte(struct mm *mm, struct vma *vma, uint64_t addr, const struct pte *src);

/*
 * Clear the PTE of @addr (zap).  Returns true if it was present, i.e. a TLB
 * may hold it and mmu_gather must cover it.  Its frame loses the reference;
 * mm_zap_pte_frame() says whether that left it HELD.
 */
bool mm_zap_pte(struct mm *mm, struct vma *vma, uint64_t addr);
/*
 * mm_zap_pte(), and *@held = the frame the zap dropped the last reference
 * of (HELD: the caller frees it with frame_release() once its flush is
 * done), or 0.
 */
bool mm_zap_pte_frame(struct mm *mm, struct vma *vma, uint64_t addr, uint32_t *held);
/* Write-protect a present PTE; true if it was writable (a flush is needed). */
bool mm_wrprotect_pte(struct mm *mm, struct vma *vma, uint64_t addr);
/* The change to this PTE is now globally visible: stale entries become bugs. */
static inline void mm_commit_pte(struct pte *pte)
{
	if (pte->pending > pte->committed)
		pte->committed = pte->pending;
}

/*
 * Commit only what one call changed: the generations it allocated are
 * [@lo, @hi] (one event allocates them contiguously).  A PTE whose pending
 * change is older was changed by another call, still in flight, which will
 * commit it on its own return.  If a later call changed it again since, our
 * change is still committed: @lo stands for it, as this PTE holds no other
 * generation in [@lo, @hi].
 */
static inline void mm_commit_change(struct pte *pte, uint32_t lo, uint32_t hi)
{
	if (pte->pending < lo)
		return;
	uint32_t gen = pte->pending <= hi ? pte->pending : lo;
	if (gen > pte->committed)
		pte->committed = gen;
}

/*
 * Mark @vma unmapped and drop its page-table references (total_vm is left to
 * the caller: the kernel lowers it only after the flush).  Every 2 MiB span
 * whose last user it was loses its PTE page: those spans are reported through
 * @freed_start/@freed_end (the lowest and highest freed span, bytes) and the
 * count returned, as free_pgtables() would.
 */
unsigned mm_unmap_vma(struct mm *mm, struct vma *vma, uint64_t *freed_start,
		      uint64_t *freed_end);
/*
 * Map an unmapped @vma again, at its old address (mmap() after munmap()): a
 * fresh read-write mapping with every PTE not present.  Takes its page-table
 * references again and raises total_vm.  The PTEs keep their generations, so
 * a TLB entry left from before the munmap still counts as stale if hit.
 */
void mm_map_vma(struct mm *mm, struct vma *vma);

/* Has the PTE page of 2 MiB span @span (vaddr >> 21) been freed? */
static inline bool mm_pmd_freed(const struct mm *mm, uint64_t span)
{
	return span >= mm->pmd_base && span - mm->pmd_base < mm->nr_pmds &&
	       mm->pmd_users[span - mm->pmd_base] == 0;
}

/* numaPTE: the sockets holding a replica of the PTE page mapping @vaddr. */
static inline uint64_t mm_pmd_nodes(const struct mm *mm, uint64_t vaddr)
{
	uint64_t span = vaddr >> 21;
	if (!mm->pmd_nodes || span < mm->pmd_base || span - mm->pmd_base >= mm->nr_pmds)
		return 0;
	return mm->pmd_nodes[span - mm->pmd_base];
}

/*
 * numaPTE: a page walk from socket @node reaches the PTE page mapping
 * @vaddr: its node now holds a replica.  Returns true if that replica had
 * to be copied from another node's (the first walker's node holds the
 * table itself, allocated there on first touch).  The bitmap is per-mm
 * bookkeeping, so a const mm (a VMA's) may record it.
 */
bool mm_pmd_replicate(const struct mm *mm, uint64_t vaddr, unsigned node);

/* mm_cpumask */
static inline bool mm_cpumask_test(const struct mm *mm, unsigned cpu)
{
	return (mm->cpumask[cpu / 64] >> (cpu % 64)) & 1;
}
void mm_cpumask_set(struct mm *mm, unsigned cpu);
void mm_cpumask_clear(struct mm *mm, unsigned cpu);
unsigned mm_cpumask_weight(const struct mm *mm);
/* Next CPU >= @from in the mask, or nr_cpus. */
unsigned mm_cpumask_next(const struct mm *mm, unsigned from);

#endif
