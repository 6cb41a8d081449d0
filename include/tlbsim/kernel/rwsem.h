#ifndef TLBSIM_RWSEM_H
#define TLBSIM_RWSEM_H
/*
 * Reader-writer semaphores, after kernel/locking/rwsem.c: mm->mmap_lock and
 * the per-VMA lock (vm.c).  A semaphore is its count word, a contended cache
 * line: every acquire and every release is one read-modify-write on it
 * (fabric_line_rmw), so readers that share the lock still pull its line from
 * CPU to CPU, which is what makes a read-mostly mmap_lock scale badly.  On top
 * of the line, exclusion: a writer waits until the holders release; a reader
 * waits while a writer holds the lock or waits for it (FIFO, as the kernel's
 * hand-off approximately gives).
 *
 * Waiting is event-driven: down_read()/down_write() grant at once (calling
 * @granted before they return) or queue the caller; the release that frees
 * the lock grants the next waiters then and calls their @granted when they
 * hold it.  A waiting task sleeps (sched_block(): its CPU goes idle, lazy-TLB
 * mode included, or runs another task) and the release wakes it
 * (sched_wake_kernel()); without a scheduler (k->sched NULL, the unit tests
 * that drive a semaphore by hand) it spins and takes the lock with its own
 * RMW on the line as soon as the release's completes.
 *
 * Times: the caller passes when it asks (or releases), which may lie ahead of
 * the engine's clock but never behind it; @granted gets the time the caller
 * holds the lock.  Nothing here schedules an event: what a granted caller
 * does next respects the lookahead itself (machine.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/machine/rwsem_types.h"

/* init_rwsem(): unlocked, its line in nobody's cache yet. */
void init_rwsem(struct rw_semaphore *sem);

/**
 * down_read() - @cpu asks for @sem for reading at @now.
 * Granted at once unless a writer holds it or any task waits for it (then
 * queued).  @granted runs, possibly before this returns, at the time the RMW
 * that takes the lock completes.
 */
void down_read(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
	       struct kcont granted);
/* down_write(): the same for writing: granted at once only if nobody holds
 * it and nobody waits. */
void down_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
		struct kcont granted);
/*
 * down_read_trylock(): take @sem for reading at @now if nobody holds it for
 * writing and nobody waits (one RMW), else fail without queueing: the
 * kernel's trylock reads the count first and gives up on a writer or a
 * waiter (RWSEM_READ_FAILED_MASK), a load and no RMW.  *@done: when the RMW
 * or the load completes.
 */
bool down_read_trylock(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
		       uint64_t *done);

/*
 * up_read() / up_write(): @cpu releases at @time with one RMW on the line;
 * returns when that completes (the caller goes on then).  If the lock is
 * free then (no reader left, or the writer gone), the waiter at the head of
 * the queue is granted: a writer alone, or the readers up to the next
 * waiting writer, each by its own RMW on the line in queue order.
 */
uint64_t up_read(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t time);
uint64_t up_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t time);
/*
 * downgrade_write(): the writer @cpu becomes a reader at @time (one RMW) and
 * the readers at the head of the queue are granted with it.  Returns when
 * the RMW completes.
 */
uint64_t downgrade_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem,
			 uint64_t time);

/* Tasks queued on @sem (for tests and assertions). */
unsigned rwsem_nr_waiters(const struct rw_semaphore *sem);

#endif
