#ifndef TLBSIM_SWAP_H
#define TLBSIM_SWAP_H
/*
 * The page LRU's per-CPU batches and lock, after mm/swap.c: a new page joins
 * the LRU through its CPU's batch (folio_add_lru()), which moves to the list
 * under the node's LRU lock when full (lru_add_drain()); freeing pages takes
 * the lock again to take them off the list (release_pages()).  The lock is a
 * contended line: its holders take it in turn, each a line transfer after the
 * previous one's release.
 */
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/* Pages a CPU's batch holds before it drains (PAGEVEC_SIZE, mm/swap.c). */
#define LRU_BATCH 15

struct lru *lru_new(struct kernel *k);
void lru_free(struct lru *lru);

/* folio_add_lru(): a page @cpu just allocated at @now; returns the cycles
 * (a drain under the lock when the batch fills, else none). */
uint64_t lru_add_page(struct kernel *k, struct cpu *cpu, uint64_t now);

/*
 * free_pages_and_swap_cache() after a zap freed @nr pages on @cpu at @now:
 * lru_add_drain() first where the policy has it (before 6.15), then
 * release_pages() for the pages on the list.  Pages still in this CPU's batch
 * are not on the list (taken to be the latest it added, as when a task frees
 * what it just faulted in): they leave at the batch's next drain.  Returns
 * the cycles.
 */
uint64_t lru_free_pages(struct kernel *k, struct cpu *cpu, uint64_t nr, uint64_t now);

#endif
