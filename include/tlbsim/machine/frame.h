#ifndef TLBSIM_FRAME_H
#define TLBSIM_FRAME_H
/*
 * Physical frames: one allocator per machine, one pool per page size (a 2M
 * frame is not 512 4K ones: the pools are distinct), so that the stale
 * checker can tell a stale translation that still reaches the page it had
 * (harmless to the system, if wrong for the program) from one whose frame
 * was handed out again (a use-after-free: another mm's data, or the same
 * mm's new page).
 *
 * A frame is ALLOCATED while PTEs map it (@refcount > 0; fork shares one
 * between parent and child), HELD once the last reference went but its
 * zapper has not freed it yet (the kernel frees zapped pages only after
 * the flush: tlb_finish_mmu(), free_pages_and_swap_cache()), FREE on its
 * pool's free list.  Allocation is LIFO, as the per-CPU page lists hand the
 * hottest page out first; a pool with an empty list counts a fresh frame.
 * pfn 0 is never a frame: "none" (the zero page, or no allocator).
 *
 * Each frame remembers whom it was last allocated to, (mm id, PTE generation
 * of the mapping), and the mm it was last shared with by fork (frame_get()),
 * with that mapping's generation: a translation of either mapping filled
 * from that generation or later is one of this allocation.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/util/types.h"

enum frame_state { FRAME_FREE, FRAME_ALLOCATED, FRAME_HELD };

struct frames;

struct frames *frame_table_new(void);
void frame_table_free(struct frames *frames);

/* A frame of size @ps for @mm_id's PTE of generation @gen: the last freed, or a fresh one. */
uint32_t frame_alloc(struct frames *frames, enum page_size ps, unsigned mm_id, uint32_t gen);
/* One more PTE maps ALLOCATED @pfn: @mm_id's of generation @gen (fork's copy). */
void frame_get(struct frames *frames, enum page_size ps, uint32_t pfn, unsigned mm_id,
	       uint32_t gen);
/* A PTE stopped mapping @pfn; true if that was the last reference: the
 * frame is HELD, and the caller frees it (frame_release()) after its flush. */
bool frame_put(struct frames *frames, enum page_size ps, uint32_t pfn);
/* HELD -> FREE: on the free list, the next frame_alloc()'s. */
void frame_release(struct frames *frames, enum page_size ps, uint32_t pfn);

enum frame_state frame_state(const struct frames *frames, enum page_size ps, uint32_t pfn);
uint32_t frame_refcount(const struct frames *frames, enum page_size ps, uint32_t pfn);

/**
 * frame_reused_since() - was @pfn handed out again after a translation of it
 * was filled from @mm_id's PTE of generation @entry_gen?  True iff it is
 * ALLOCATED now and neither to @mm_id at a generation <= @entry_gen (the
 * allocation the entry saw) nor shared with @mm_id at such a generation.
 * A HELD or FREE frame is not reused (yet); pfn 0 never is.  The only
 * lookup of this module that a stale hit pays; a plain index, no hash.
 *
 * Simplifies: one sharer per frame (the last fork's child); a stale hit
 * through an older child's entry of a frame still shared would count as a
 * reuse.  Children change no PTE before they exit, so none is hit stale.
 */
bool frame_reused_since(const struct frames *frames, enum page_size ps, uint32_t pfn,
			unsigned mm_id, uint32_t entry_gen);

#endif
