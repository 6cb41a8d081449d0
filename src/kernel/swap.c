/*
 * The LRU lists' per-CPU add batches and per-node lock (mm/swap.c).
 *
 * Models: one LRU lock per socket (the node's lruvec; no memory cgroups), a
 * line that holders take in turn: a holder gets it a line transfer after the
 * previous release, then the list head the previous holder wrote (one more
 * transfer), then the other CPUs' entries next to its pages (one transfer
 * each), then does lru_page cycles per page; interrupts are off from the
 * spin to the unlock (an IPI waits, smp.c).  A CPU's batch counts the
 * pages it added since its last drain and how many of those were freed since.
 * Simplifies: the lock is granted in the order the simulation reaches the
 * acquisitions, each computed when its caller's step runs (a step that takes
 * it at a later time than another CPU's earlier-processed step waits for
 * that one); pages freed by another CPU than the one whose batch holds them
 * are taken to be on the list.
 * Invariant: a batch never holds more than LRU_BATCH pages, nor more freed
 * pages than pages.
 */
#include <glib.h>
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/swap.h"

struct lru_lock {
	struct cacheline line;  /* the spinlock */
	struct cacheline list;  /* the list heads and neighbours it protects */
	uint64_t free_at;       /* release of the last holder */
};

struct lru_batch {
	unsigned pages;
	unsigned freed; /* of those, already unmapped and freed by their task */
};

struct lru {
	struct lru_lock *locks; /* per socket */
	struct lru_batch *batches; /* per CPU */
};

struct lru *lru_new(struct kernel *k)
{
	const struct topology *topo = k->machine->topology;
	struct lru *lru = g_new0(struct lru, 1);
	lru->locks = g_new0(struct lru_lock, topo->sockets);
	for (unsigned s = 0; s < topo->sockets; s++)
		lru->locks[s].line = lru->locks[s].list = CACHELINE_INIT;
	lru->batches = g_new0(struct lru_batch, k->machine->nr_cpus);
	k->lru = lru;
	return lru;
}

void lru_free(struct lru *lru)
{
	if (!lru)
		return;
	g_free(lru->locks);
	g_free(lru->batches);
	g_free(lru);
}

/*
 * spin_lock_irqsave(&lruvec->lru_lock), @adds pages onto the list and @dels
 * off it, unlock.  A caller's pages are one run of the list (added, or freed,
 * together), so only the run's outer neighbours are other CPUs' pages:
 * list_add() writes the old first entry's prev, list_del() the prev and next
 * entries' pointers (include/linux/list.h).  Those lines were last written by
 * another holder; the previous one stands for it.
 */
static uint64_t lru_locked(struct kernel *k, struct cpu *cpu, uint64_t adds, uint64_t dels,
			   uint64_t now)
{
	const struct fabric *fabric = k->machine->fabric;
	struct lru_lock *lock = &k->lru->locks[cpu->socket];
	cpu->counters.lru_lock_acquisitions++;
	uint64_t t = fabric_line_rmw(fabric, &lock->line, cpu->id, MAX(now, lock->free_at));
	int previous = lock->list.writer;
	t = fabric_line_rmw(fabric, &lock->list, cpu->id, t);
	if (previous >= 0 && (unsigned)previous != cpu->id) {
		unsigned neighbours = (adds ? 1 : 0) + (dels ? 2 : 0);
		t += neighbours * fabric_line_transfer(fabric, (unsigned)previous, cpu->id);
	}
	t += (adds + dels) * k->machine->topology->costs.lru_page;
	lock->free_at = t;
	/* Interrupts are off from the spin to the unlock: an IPI waits. */
	smp_irqs_off(k, cpu, now, t);
	cpu->counters.lru_lock_cycles += t - now;
	return t - now;
}

/* lru_add_drain(): the batch's pages onto the list; the freed ones, whose
 * last reference the batch held, straight off it again. */
static uint64_t lru_drain(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct lru_batch *b = &k->lru->batches[cpu->id];
	if (b->pages == 0)
		return 0;
	uint64_t adds = b->pages, dels = b->freed;
	*b = (struct lru_batch){0};
	return lru_locked(k, cpu, adds, dels, now);
}

uint64_t lru_add_page(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct lru_batch *b = &k->lru->batches[cpu->id];
	if (++b->pages < LRU_BATCH)
		return 0;
	return lru_drain(k, cpu, now);
}

uint64_t lru_free_pages(struct kernel *k, struct cpu *cpu, uint64_t nr, uint64_t now)
{
	if (nr == 0)
		return 0;
	uint64_t t = now;
	struct lru_batch *b = &k->lru->batches[cpu->id];
	if (k->policy->lru_add_drain_on_free)
		t += lru_drain(k, cpu, t);
	uint64_t in_batch = MIN(nr, (uint64_t)(b->pages - b->freed));
	b->freed += (unsigned)in_batch;
	if (nr > in_batch)
		t += lru_locked(k, cpu, 0, nr - in_batch, t);
	return t - now;
}
