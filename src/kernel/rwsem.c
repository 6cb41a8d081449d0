/*
 * Reader-writer semaphores (kernel/locking/rwsem.c).
 *
 * Models: the count word as one cache line that every down_*() and up_*()
 * does one RMW on (fabric_line_rmw(): concurrent RMWs queue behind each other
 * and each pulls the line from its last writer); exclusion by holder counts
 * and a FIFO of waiters.  A release that frees the lock grants the head of
 * the queue: one writer, or every reader up to the next writer, in queue
 * order.  A waiter sleeps (schedule(): its CPU switches to idle, or to
 * another task) and the release wakes it: it runs again a wakeup IPI after
 * the release's RMW completes, plus the switch back; a reader then holds the
 * lock (the waker counted it in), a writer takes it with an RMW of its own.
 * Driven by hand, without a scheduler, a waiter spins instead and takes the
 * lock with its own RMW as soon as the release's completes.
 * Simplifies: no optimistic spinning and no reader stealing: a reader that
 * finds a waiter queues behind it, as the kernel's hand-off makes it do once
 * the writer has waited long (RWSEM_FLAG_HANDOFF), and a woken reader does
 * not pass writers queued behind it (5.3+ wakes nearly every reader in the
 * queue); the lock is held from the hand-off, through the wakeup; a
 * waiter's first, failed atomic and the wait_lock's line are not charged;
 * the wakeup always costs an IPI (no idle polling) and no idle-state exit;
 * the lock is granted in the order the simulation reaches the acquisitions
 * (as the LRU lock, swap.c).
 * Invariant: writer implies readers == 0; a non-empty queue means the lock
 * is held (a waiter is granted as soon as its turn comes).
 */
#include <glib.h>
#include "tlbsim/kernel/rwsem.h"
#include "tlbsim/kernel/sched.h"

struct rwsem_waiter {
	struct rwsem_waiter *next;
	struct cpu *cpu;
	bool write;
	uint64_t since; /* when it asked */
	struct task *sleeper; /* its task, asleep until granted; NULL: spinning */
	struct rw_semaphore *sem;
	struct kcont granted;
};

void init_rwsem(struct rw_semaphore *sem)
{
	*sem = RWSEM_INITIALIZER;
}

unsigned rwsem_nr_waiters(const struct rw_semaphore *sem)
{
	unsigned n = 0;
	for (const struct rwsem_waiter *w = sem->head; w; w = w->next)
		n++;
	return n;
}

static void rwsem_queue(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem,
			bool write, uint64_t now, struct kcont granted)
{
	struct rwsem_waiter *w = kernel_alloc(k, sizeof(*w));
	*w = (struct rwsem_waiter){
	    .cpu = cpu, .write = write, .since = now, .sem = sem, .granted = granted};
	/* rwsem_down_{read,write}_slowpath() schedule().  Without a scheduler
	 * (driven by hand) a waiter spins. */
	if (k->sched) {
		w->sleeper = sched_current(k, cpu);
		if (w->sleeper)
			sched_block(k, cpu, now);
	}
	if (sem->tail)
		sem->tail->next = w;
	else
		sem->head = w;
	sem->tail = w;
}

void down_read(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
	       struct kcont granted)
{
	g_assert(now >= engine_now(k->engine));
	if (sem->writer || sem->head) {
		rwsem_queue(k, cpu, sem, false, now, granted);
		return;
	}
	sem->readers++;
	uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, now);
	kcont_call(k, granted, t);
}

bool down_read_trylock(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
		       uint64_t *done)
{
	g_assert(now >= engine_now(k->engine));
	if (sem->writer || sem->head) {
		*done = fabric_line_read(k->machine->fabric, &sem->count, cpu->id, now);
		return false;
	}
	sem->readers++;
	*done = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, now);
	return true;
}

void down_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t now,
		struct kcont granted)
{
	g_assert(now >= engine_now(k->engine));
	if (sem->writer || sem->readers || sem->head) {
		rwsem_queue(k, cpu, sem, true, now, granted);
		return;
	}
	sem->writer = true;
	uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, now);
	kcont_call(k, granted, t);
}

/* A sleeping waiter has its CPU again at @time.  A reader holds the lock
 * (the waker counted it in, rwsem_mark_wake()); a writer takes it with its
 * own RMW (rwsem_try_write_lock()), the lock handed off to it meanwhile. */
static void rwsem_sleeper_woken(struct kernel *k, void *ctx, uint64_t time)
{
	struct rwsem_waiter *w = ctx;
	struct kcont granted = w->granted;
	if (w->write)
		time = fabric_line_rmw(k->machine->fabric, &w->sem->count, w->cpu->id, time);
	kernel_release(k, w);
	kcont_call(k, granted, time);
}

/*
 * rwsem_wake(): the lock's state allows the head of the queue in from @time
 * (the release's RMW done): take the waiters it lets in off the queue first,
 * then call them, so that what they do next sees the lock as it now is.
 */
static void rwsem_wake(struct kernel *k, struct rw_semaphore *sem, unsigned waker, uint64_t time)
{
	struct rwsem_waiter *woken = NULL, **last = &woken;
	while (sem->head && !sem->writer) {
		struct rwsem_waiter *w = sem->head;
		if (w->write && sem->readers)
			break;
		sem->head = w->next;
		if (!sem->head)
			sem->tail = NULL;
		w->next = NULL;
		*last = w;
		last = &w->next;
		if (w->write)
			sem->writer = true;
		else
			sem->readers++;
	}
	while (woken) {
		struct rwsem_waiter *w = woken;
		woken = w->next;
		if (w->sleeper) {
			/* wake_up_q(): the sleeper's CPU is interrupted (a reschedule
			 * IPI), switches back from idle, then goes on. */
			uint64_t at = MAX(time, w->since);
			if (w->cpu->id != waker)
				at += fabric_ipi_latency(k->machine->fabric, waker, w->cpu->id);
			struct kcont resume = {.fn = rwsem_sleeper_woken, .ctx = w};
			sched_wake_kernel(k, w->sleeper, at, resume);
			continue;
		}
		uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, w->cpu->id,
					     MAX(time, w->since));
		struct kcont granted = w->granted;
		kernel_release(k, w);
		kcont_call(k, granted, t);
	}
}

uint64_t up_read(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t time)
{
	g_assert(sem->readers > 0 && !sem->writer);
	uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, time);
	if (--sem->readers == 0)
		rwsem_wake(k, sem, cpu->id, t);
	return t;
}

uint64_t up_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, uint64_t time)
{
	g_assert(sem->writer && sem->readers == 0);
	uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, time);
	sem->writer = false;
	rwsem_wake(k, sem, cpu->id, t);
	return t;
}

uint64_t downgrade_write(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem,
			 uint64_t time)
{
	g_assert(sem->writer && sem->readers == 0);
	uint64_t t = fabric_line_rmw(k->machine->fabric, &sem->count, cpu->id, time);
	sem->writer = false;
	sem->readers = 1;
	rwsem_wake(k, sem, cpu->id, t);
	return t;
}
