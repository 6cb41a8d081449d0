/*
 * Tests of src/machine/frame.c: fresh frames are numbered from 1 per page
 * size, a freed frame is the next one handed out (LIFO), the reference
 * count walks ALLOCATED -> HELD -> FREE, and frame_reused_since() tells the
 * allocation a translation saw from a later one, worked case by case.
 */
#include <signal.h>
#include <criterion/criterion.h>
#include "tlbsim/machine/frame.h"

Test(frame, fresh_frames_are_numbered_per_page_size)
{
	struct frames *f = frame_table_new();
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 1), 1);
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 2), 2);
	cr_expect_eq(frame_alloc(f, PS_2M, 1, 3), 1, "a pool of its own");
	cr_expect_eq(frame_alloc(f, PS_4K, 2, 1), 3);
	cr_expect_eq(frame_state(f, PS_2M, 1), FRAME_ALLOCATED);
	frame_table_free(f);
	frame_table_free(NULL);
}

Test(frame, the_last_freed_frame_is_handed_out_first)
{
	struct frames *f = frame_table_new();
	for (uint32_t gen = 1; gen <= 4; gen++)
		frame_alloc(f, PS_4K, 1, gen); /* frames 1..4 */
	cr_assert(frame_put(f, PS_4K, 2));
	cr_assert(frame_put(f, PS_4K, 4));
	cr_assert(frame_put(f, PS_4K, 3));
	frame_release(f, PS_4K, 2);
	frame_release(f, PS_4K, 4);
	frame_release(f, PS_4K, 3);
	/* Freed 2, 4, 3: handed out 3, 4, 2, then a fresh one. */
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 5), 3);
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 6), 4);
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 7), 2);
	cr_expect_eq(frame_alloc(f, PS_4K, 1, 8), 5);
	/* A freed 4K frame is no 2M frame. */
	cr_assert(frame_put(f, PS_4K, 5));
	frame_release(f, PS_4K, 5);
	cr_expect_eq(frame_alloc(f, PS_2M, 1, 9), 1);
	frame_table_free(f);
}

Test(frame, a_held_frame_is_not_handed_out)
{
	struct frames *f = frame_table_new();
	uint32_t pfn = frame_alloc(f, PS_4K, 1, 1);
	cr_assert(frame_put(f, PS_4K, pfn));
	cr_expect_eq(frame_state(f, PS_4K, pfn), FRAME_HELD);
	cr_expect_neq(frame_alloc(f, PS_4K, 2, 1), pfn, "held: its zapper has not freed it");
	frame_release(f, PS_4K, pfn);
	cr_expect_eq(frame_state(f, PS_4K, pfn), FRAME_FREE);
	cr_expect_eq(frame_alloc(f, PS_4K, 2, 2), pfn);
	frame_table_free(f);
}

Test(frame, shared_frames_are_held_at_the_last_put)
{
	struct frames *f = frame_table_new();
	uint32_t pfn = frame_alloc(f, PS_4K, 1, 10);
	frame_get(f, PS_4K, pfn, 2, 3); /* fork: the child maps it too */
	cr_expect_eq(frame_refcount(f, PS_4K, pfn), 2);
	cr_expect_not(frame_put(f, PS_4K, pfn), "the child still maps it");
	cr_expect_eq(frame_state(f, PS_4K, pfn), FRAME_ALLOCATED);
	cr_expect(frame_put(f, PS_4K, pfn));
	cr_expect_eq(frame_refcount(f, PS_4K, pfn), 0);
	cr_expect_eq(frame_state(f, PS_4K, pfn), FRAME_HELD);
	frame_table_free(f);
}

Test(frame, put_of_a_frame_nobody_maps_aborts, .signal = SIGABRT)
{
	struct frames *f = frame_table_new();
	uint32_t pfn = frame_alloc(f, PS_4K, 1, 1);
	frame_put(f, PS_4K, pfn);
	frame_put(f, PS_4K, pfn);
}

Test(frame, release_of_a_mapped_frame_aborts, .signal = SIGABRT)
{
	struct frames *f = frame_table_new();
	frame_release(f, PS_4K, frame_alloc(f, PS_4K, 1, 1));
}

/*
 * mm 1 maps frame P at generation 10 and a translation is filled from
 * generation 12 (after a write-protect, say).  Then P goes through the
 * states; the entry's view stays "same allocation" until P is ALLOCATED
 * again.
 */
Test(frame, reused_since_tells_a_new_allocation)
{
	struct frames *f = frame_table_new();
	uint32_t pfn = frame_alloc(f, PS_4K, 1, 10);
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 1, 12), "the allocation it saw");
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 1, 10), "filled at the allocation");
	cr_expect(frame_reused_since(f, PS_4K, pfn, 1, 9), "filled before: another page was there");
	cr_expect(frame_reused_since(f, PS_4K, pfn, 2, 12), "another mm's entry");
	frame_put(f, PS_4K, pfn);
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 2, 12), "held: no one else has it yet");
	frame_release(f, PS_4K, pfn);
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 2, 12), "free: no one else has it yet");
	/* Handed out again: to the same mm later, then to another. */
	cr_assert_eq(frame_alloc(f, PS_4K, 1, 20), pfn);
	cr_expect(frame_reused_since(f, PS_4K, pfn, 1, 12), "same mm, a later mapping");
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 1, 21), "an entry of the new mapping");
	frame_put(f, PS_4K, pfn);
	frame_release(f, PS_4K, pfn);
	cr_assert_eq(frame_alloc(f, PS_4K, 3, 5), pfn);
	cr_expect(frame_reused_since(f, PS_4K, pfn, 1, 21), "now another mm's page");
	cr_expect_not(frame_reused_since(f, PS_4K, 0, 1, 21), "pfn 0 is no frame");
	cr_expect_not(frame_reused_since(NULL, PS_4K, pfn, 1, 21), "no allocator");
	frame_table_free(f);
}

/* fork: the child (mm 2) maps the parent's frame from its generation 3; its
 * entries see the same allocation, until the frame is handed out again. */
Test(frame, reused_since_knows_the_fork_sharer)
{
	struct frames *f = frame_table_new();
	uint32_t pfn = frame_alloc(f, PS_4K, 1, 10);
	frame_get(f, PS_4K, pfn, 2, 3);
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 2, 3), "the child's entry");
	cr_expect_not(frame_reused_since(f, PS_4K, pfn, 1, 11), "the parent's entry");
	cr_expect(frame_reused_since(f, PS_4K, pfn, 2, 2), "the child's entry of an older page");
	cr_expect(frame_reused_since(f, PS_4K, pfn, 4, 3), "a third mm");
	frame_put(f, PS_4K, pfn);
	frame_put(f, PS_4K, pfn);
	frame_release(f, PS_4K, pfn);
	cr_assert_eq(frame_alloc(f, PS_4K, 5, 1), pfn);
	cr_expect(frame_reused_since(f, PS_4K, pfn, 2, 3), "the sharing went with the free");
	frame_table_free(f);
}
