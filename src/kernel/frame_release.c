/*
 * Freeing the frames a zap held (see include/tlbsim/kernel/frame_release.h).
 *
 * Models: Linux's order, free after the flush: the frames go back to the
 * allocator when the caller says its flush is done.  The release happens
 * when the caller's event runs, at or before @time (a flush's completion may
 * lie ahead of the engine's clock); no stale hit is judged in between, as
 * the call's PTE changes commit only after this (vm.c, rmap.c, fork.c).
 * Simplifies: a frame the caller releases is free for every CPU at once (no
 * per-CPU lists).
 * Invariant: every frame held by a call is released exactly once, by it.
 */
#include <string.h>
#include "tlbsim/kernel/frame_release.h"

void held_frames_add(struct kernel *k, struct held_frames *held, enum page_size ps, uint32_t pfn)
{
	if (pfn == 0)
		return;
	if (held->nr[ps] == held->room[ps]) {
		/* Doubling: a munmap of millions of pages collects in linear time. */
		uint32_t room = MAX(64u, held->room[ps] * 2);
		uint32_t *pfns = kernel_alloc(k, room * sizeof(*pfns));
		if (held->pfns[ps]) {
			memcpy(pfns, held->pfns[ps], held->nr[ps] * sizeof(*pfns));
			kernel_release(k, held->pfns[ps]);
		}
		held->pfns[ps] = pfns;
		held->room[ps] = room;
	}
	held->pfns[ps][held->nr[ps]++] = pfn;
}

void release_frames(struct kernel *k, struct cpu *cpu, struct mm *mm, enum page_size ps,
		    const uint32_t *pfns, uint32_t nr, uint64_t time)
{
	(void)time;
	/* The release gate: a lazy epoch keeps them until every CPU has swept
	 * the flush that covers them (policy.h). */
	const struct flush_transport_ops *transport = k->policy->transport;
	if (k->policy->release_gate == RELEASE_LAZY_EPOCH && transport->hold_frames &&
	    transport->hold_frames(k, cpu, mm, pfns, nr, ps))
		return;
	for (uint32_t i = 0; i < nr; i++)
		frame_release(mm->frames, ps, pfns[i]);
}

void held_frames_release(struct kernel *k, struct cpu *cpu, struct mm *mm,
			 struct held_frames *held, uint64_t time)
{
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		if (!held->pfns[ps])
			continue;
		release_frames(k, cpu, mm, (enum page_size)ps, held->pfns[ps], held->nr[ps], time);
		kernel_release(k, held->pfns[ps]);
	}
	*held = (struct held_frames){0};
}
