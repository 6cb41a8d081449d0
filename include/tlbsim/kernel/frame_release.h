#ifndef TLBSIM_FRAME_RELEASE_H
#define TLBSIM_FRAME_RELEASE_H
/*
 * When the kernel frees the frames its zaps left HELD (machine/frame.h).
 * Linux frees a zapped page only after the flush that removed every
 * translation of it: tlb_finish_mmu() -> free_pages_and_swap_cache() for
 * munmap, MADV_DONTNEED and exit_mmap(), shrink_folio_list()'s
 * free_unref_folios() after try_to_unmap_flush() for reclaim.  A call
 * collects the frames its zaps held (held_frames_add()) and hands them to
 * release_frames() at that point; the one place that decides when a held
 * frame goes back to the allocator (the "release gate" of a mechanism that
 * acknowledges a flush before it is done).
 */
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/* The frames one call's zaps held, by page size; arrays kernel_alloc()ed. */
struct held_frames {
	uint32_t *pfns[NR_PAGE_SIZES];
	uint32_t nr[NR_PAGE_SIZES];
	uint32_t room[NR_PAGE_SIZES];
};

/* Remember HELD frame @pfn of size @ps (0: none, ignored). */
void held_frames_add(struct kernel *k, struct held_frames *held, enum page_size ps, uint32_t pfn);

/*
 * release_frames() - @cpu frees @nr HELD frames of size @ps that its call
 * zapped in @mm, at @time, its flush done: each goes back to the allocator
 * (FREE, the next to be allocated).  Linux: at once (release_gate
 * "after_completion"); "lazy_epoch": once the lazy transport says every CPU
 * has applied the flush.
 */
void release_frames(struct kernel *k, struct cpu *cpu, struct mm *mm, enum page_size ps,
		    const uint32_t *pfns, uint32_t nr, uint64_t time);

/* release_frames() of every size @held holds; its arrays go, it is empty. */
void held_frames_release(struct kernel *k, struct cpu *cpu, struct mm *mm,
			 struct held_frames *held, uint64_t time);

#endif
