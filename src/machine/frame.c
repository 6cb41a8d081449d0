/*
 * Physical frames (see include/tlbsim/machine/frame.h).
 *
 * Models: per page size, a page allocator that hands out the most recently
 * freed frame first (the per-CPU lists' hot pages; one list per size for the
 * whole machine, no zones, no NUMA nodes) and numbers a new frame when the
 * list is empty; reference counts for the PTEs that map a frame.
 * Simplifies: memory never runs out (no reclaim is forced by allocation);
 * every CPU shares one list, so a frame freed on one CPU is the next one
 * any CPU gets.
 * Invariant: per pool, a frame is on the free list iff FREE; refcount > 0
 * iff ALLOCATED; frames are numbered 1 .. nr (pfn 0 is "none").
 */
#include <glib.h>
#include "tlbsim/machine/frame.h"
#include "tlbsim/machine/mm.h"

/* 16 bytes: a run has a frame per populated page, millions of them.  mm ids
 * are at most MM_MAX_ID, and so are reference counts (an mm maps a frame at
 * most once); both asserted where they are set. */
struct frame {
	uint32_t gen;       /* PTE generation of the mapping it was allocated for */
	uint32_t share_gen; /* the same, of the last mapping fork shared it with */
	uint16_t refcount;
	uint16_t mm_id;    /* whom it was last allocated to */
	uint16_t share_mm; /* whom fork last shared it with (0: nobody since the allocation) */
	uint8_t state;     /* enum frame_state */
};
_Static_assert(sizeof(struct frame) == 16, "struct frame grew");
_Static_assert(MM_MAX_ID <= UINT16_MAX, "mm ids fit a frame");

struct frame_pool {
	GArray *frames; /* struct frame, index pfn - 1 */
	GArray *free;   /* uint32_t pfns, the top is the last freed */
};

struct frames {
	struct frame_pool pools[NR_PAGE_SIZES];
};

struct frames *frame_table_new(void)
{
	struct frames *frames = g_new0(struct frames, 1);
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		frames->pools[ps].frames = g_array_new(FALSE, TRUE, sizeof(struct frame));
		frames->pools[ps].free = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	}
	return frames;
}

void frame_table_free(struct frames *frames)
{
	if (!frames)
		return;
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		g_array_free(frames->pools[ps].frames, TRUE);
		g_array_free(frames->pools[ps].free, TRUE);
	}
	g_free(frames);
}

static struct frame *frame_at(const struct frames *frames, enum page_size ps, uint32_t pfn)
{
	const GArray *all = frames->pools[ps].frames;
	g_assert(pfn >= 1 && pfn <= all->len);
	return &g_array_index(all, struct frame, pfn - 1);
}

uint32_t frame_alloc(struct frames *frames, enum page_size ps, unsigned mm_id, uint32_t gen)
{
	struct frame_pool *pool = &frames->pools[ps];
	uint32_t pfn;
	if (pool->free->len > 0) {
		pfn = g_array_index(pool->free, uint32_t, pool->free->len - 1);
		g_array_set_size(pool->free, pool->free->len - 1);
	} else {
		/* 2^32 frames of 4K are 16 TiB: beyond any laid-out workload. */
		g_assert(pool->frames->len < UINT32_MAX);
		g_array_set_size(pool->frames, pool->frames->len + 1);
		pfn = pool->frames->len;
	}
	struct frame *f = frame_at(frames, ps, pfn);
	g_assert(f->state == FRAME_FREE);
	g_assert(mm_id <= UINT16_MAX);
	*f = (struct frame){
	    .refcount = 1, .gen = gen, .mm_id = (uint16_t)mm_id, .state = FRAME_ALLOCATED};
	return pfn;
}

void frame_get(struct frames *frames, enum page_size ps, uint32_t pfn, unsigned mm_id,
	       uint32_t gen)
{
	struct frame *f = frame_at(frames, ps, pfn);
	g_assert(f->state == FRAME_ALLOCATED && f->refcount < UINT16_MAX && mm_id <= UINT16_MAX);
	f->refcount++;
	f->share_mm = (uint16_t)mm_id;
	f->share_gen = gen;
}

bool frame_put(struct frames *frames, enum page_size ps, uint32_t pfn)
{
	struct frame *f = frame_at(frames, ps, pfn);
	g_assert(f->state == FRAME_ALLOCATED && f->refcount > 0);
	if (--f->refcount > 0)
		return false;
	f->state = FRAME_HELD;
	return true;
}

void frame_release(struct frames *frames, enum page_size ps, uint32_t pfn)
{
	struct frame *f = frame_at(frames, ps, pfn);
	g_assert(f->state == FRAME_HELD);
	f->state = FRAME_FREE;
	g_array_append_val(frames->pools[ps].free, pfn);
}

enum frame_state frame_state(const struct frames *frames, enum page_size ps, uint32_t pfn)
{
	return (enum frame_state)frame_at(frames, ps, pfn)->state;
}

uint32_t frame_refcount(const struct frames *frames, enum page_size ps, uint32_t pfn)
{
	return frame_at(frames, ps, pfn)->refcount;
}

bool frame_reused_since(const struct frames *frames, enum page_size ps, uint32_t pfn,
			unsigned mm_id, uint32_t entry_gen)
{
	if (!frames || pfn == 0)
		return false;
	const struct frame *f = frame_at(frames, ps, pfn);
	if (f->state != FRAME_ALLOCATED)
		return false;
	bool owner_saw = f->mm_id == mm_id && f->gen <= entry_gen;
	bool sharer_saw = f->share_mm == mm_id && f->share_mm != 0 && f->share_gen <= entry_gen;
	return !owner_saw && !sharer_saw;
}
