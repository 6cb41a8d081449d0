/*
 * A pool of host threads for parallel for-loops (pool.h).
 *
 * Notes:
 * - A loop lives on its caller's stack: one word holds its length n and its
 *   next unclaimed index (32 bits each), and a thread claims an index with a
 *   compare-and-swap.  The caller waits for @done to reach n (every claimed
 *   call has returned).
 * - The caller shows its loop in a slot of the pool, one per thread that may
 *   run loops at once.  A helper counts itself in the slot's @users before it
 *   reads the loop pointer, and out after it is done with it; the caller
 *   clears the pointer and waits for @users to fall to 0 before its loop
 *   leaves the stack.  (All sequentially consistent: a helper that still saw
 *   the pointer is counted when the caller looks.)
 * - A new loop bumps @generation.  A helper that found nothing to claim
 *   spins on it for SPINS polls, a millisecond or so (a PAUSE takes tens of
 *   ns), since the event queue's next phase usually follows within
 *   microseconds; then it sleeps on a condition variable.  The caller wakes
 *   sleepers only if there are any: @sleepers and @generation are
 *   sequentially consistent, so a helper about to sleep either is counted or
 *   sees the new generation (Dekker).
 * - With no helper and no lent thread (@available = 0) a loop is run by its
 *   caller alone, without showing it.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "tlbsim/engine/pool.h"

#define INDEX_MASK UINT64_C(0xffffffff)
#define COUNT_SHIFT 32

/* Polls of the generation before a helper sleeps (4096 measured no
 * different on munmap16; fewer would put helpers to sleep between phases). */
#define SPINS 65536
/* A lent thread's sleep: short, so that it also notices its own end. */
#define LEND_SLEEP_US 10000

struct loop {
	_Atomic uint64_t word; /* n << COUNT_SHIFT | next unclaimed index */
	_Atomic unsigned done;
	void (*fn)(void *ctx, unsigned i);
	void *ctx;
};

/* Where a caller shows its loop; each slot on its own host cache line. */
struct slot {
	_Alignas(POOL_LINE) _Atomic(struct loop *) loop;
	_Atomic unsigned users;
	_Atomic bool taken;
};

/* What a helper is given: its pool and its index. */
struct helper {
	struct pool *pool;
	unsigned index;
};

struct pool {
	unsigned helpers, callers;
	struct slot *slots;
	GThread **threads;
	struct helper *helper_args;
	_Alignas(POOL_LINE) _Atomic uint64_t generation;
	_Atomic unsigned sleepers;
	_Atomic unsigned available; /* helpers and lent threads */
	_Atomic unsigned lenders;   /* lent threads so far: their indexes */
	_Atomic bool quit;
	GMutex lock;
	GCond wake;
};

static _Thread_local unsigned thread_index;

unsigned pool_thread_index(void)
{
	return thread_index;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static bool loop_claim(struct loop *loop, unsigned *index)
{
	uint64_t word = atomic_load_explicit(&loop->word, memory_order_relaxed);
	for (;;) {
		uint64_t next = word & INDEX_MASK, n = word >> COUNT_SHIFT;
		if (next >= n)
			return false;
		if (atomic_compare_exchange_weak_explicit(&loop->word, &word, word + 1,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			*index = (unsigned)next;
			return true;
		}
	}
}

/* Whether it ran any of @loop's calls. */
static bool loop_work(struct loop *loop)
{
	unsigned i;
	bool worked = false;
	while (loop_claim(loop, &i)) {
		loop->fn(loop->ctx, i);
		atomic_fetch_add_explicit(&loop->done, 1, memory_order_release);
		worked = true;
	}
	return worked;
}

/* One look at every slot; whether it ran anything. */
static bool pool_scan(struct pool *pool)
{
	bool worked = false;
	for (unsigned i = 0; i < pool->callers; i++) {
		struct slot *slot = &pool->slots[i];
		if (!atomic_load_explicit(&slot->loop, memory_order_relaxed))
			continue;
		atomic_fetch_add(&slot->users, 1);
		struct loop *loop = atomic_load(&slot->loop);
		if (loop)
			worked |= loop_work(loop);
		atomic_fetch_sub_explicit(&slot->users, 1, memory_order_release);
	}
	return worked;
}

static bool pool_done(struct pool *pool, const atomic_int *until)
{
	return atomic_load(&pool->quit) || (until && atomic_load(until));
}

/* Wait for a generation after @seen, the pool's end or *@until. */
static void pool_idle(struct pool *pool, uint64_t seen, const atomic_int *until)
{
	for (unsigned spin = 0; spin < SPINS; spin++) {
		if (atomic_load_explicit(&pool->generation, memory_order_relaxed) != seen ||
		    pool_done(pool, until))
			return;
		cpu_relax();
	}
	g_mutex_lock(&pool->lock);
	atomic_fetch_add(&pool->sleepers, 1);
	while (atomic_load(&pool->generation) == seen && !pool_done(pool, until)) {
		if (until)
			g_cond_wait_until(&pool->wake, &pool->lock,
					  g_get_monotonic_time() + LEND_SLEEP_US);
		else
			g_cond_wait(&pool->wake, &pool->lock);
	}
	atomic_fetch_sub(&pool->sleepers, 1);
	g_mutex_unlock(&pool->lock);
}

/* A helper's life, or a lent thread's until *@until. */
static void pool_serve(struct pool *pool, const atomic_int *until)
{
	while (!pool_done(pool, until)) {
		uint64_t seen = atomic_load(&pool->generation);
		if (!pool_scan(pool))
			pool_idle(pool, seen, until);
	}
}

static gpointer pool_helper(gpointer data)
{
	const struct helper *me = data;
	thread_index = me->index;
	pool_serve(me->pool, NULL);
	return NULL;
}

void pool_wake(struct pool *pool)
{
	atomic_fetch_add(&pool->generation, 1);
	g_mutex_lock(&pool->lock);
	g_cond_broadcast(&pool->wake);
	g_mutex_unlock(&pool->lock);
}

/* A new loop is showing: wake any sleeping helper. */
static void pool_publish(struct pool *pool)
{
	atomic_fetch_add(&pool->generation, 1);
	if (atomic_load(&pool->sleepers)) {
		g_mutex_lock(&pool->lock);
		g_cond_broadcast(&pool->wake);
		g_mutex_unlock(&pool->lock);
	}
}

struct pool *pool_new_shared(unsigned helpers, unsigned callers, char **why)
{
	g_assert(callers >= 1);
	struct pool *pool = g_new0(struct pool, 1);
	pool->helpers = helpers;
	pool->callers = callers;
	pool->slots = g_aligned_alloc0(callers, sizeof(struct slot), POOL_LINE);
	g_mutex_init(&pool->lock);
	g_cond_init(&pool->wake);
	pool->threads = g_new0(GThread *, MAX(1, helpers));
	pool->helper_args = g_new0(struct helper, MAX(1, helpers));
	atomic_store(&pool->available, helpers);
	for (unsigned i = 0; i < helpers; i++) {
		GError *error = NULL;
		pool->helper_args[i] = (struct helper){.pool = pool, .index = i + 1};
		pool->threads[i] =
		    g_thread_try_new("tlbsim-pool", pool_helper, &pool->helper_args[i], &error);
		if (!pool->threads[i]) {
			*why = g_strdup_printf("cannot start host thread %u of %u: %s", i + 1,
					       helpers, error->message);
			g_error_free(error);
			pool_free(pool);
			return NULL;
		}
	}
	return pool;
}

struct pool *pool_new(unsigned threads, char **why)
{
	g_assert(threads >= 1);
	return pool_new_shared(threads - 1, 1, why);
}

void pool_free(struct pool *pool)
{
	if (!pool)
		return;
	atomic_store(&pool->quit, true);
	pool_wake(pool);
	for (unsigned i = 0; i < pool->helpers; i++)
		if (pool->threads[i])
			g_thread_join(pool->threads[i]);
	for (unsigned i = 0; i < pool->callers; i++)
		g_assert(!atomic_load(&pool->slots[i].taken));
	g_free(pool->threads);
	g_free(pool->helper_args);
	g_aligned_free(pool->slots);
	g_mutex_clear(&pool->lock);
	g_cond_clear(&pool->wake);
	g_free(pool);
}

unsigned pool_threads(const struct pool *pool)
{
	return pool->helpers + pool->callers;
}

static struct slot *slot_take(struct pool *pool)
{
	for (unsigned i = 0; i < pool->callers; i++) {
		bool free_slot = false;
		if (atomic_compare_exchange_strong(&pool->slots[i].taken, &free_slot, true))
			return &pool->slots[i];
	}
	g_error("pool_run(): more than %u threads run loops at once", pool->callers);
}

void pool_run(struct pool *pool, unsigned n, void (*fn)(void *ctx, unsigned i), void *ctx)
{
	if (n <= 1 || !atomic_load_explicit(&pool->available, memory_order_relaxed)) {
		for (unsigned i = 0; i < n; i++)
			fn(ctx, i);
		return;
	}
	struct slot *slot = slot_take(pool);
	struct loop loop = {.fn = fn, .ctx = ctx};
	atomic_init(&loop.word, (uint64_t)n << COUNT_SHIFT);
	atomic_init(&loop.done, 0);
	atomic_store(&slot->loop, &loop);
	pool_publish(pool);
	loop_work(&loop);
	while (atomic_load_explicit(&loop.done, memory_order_acquire) != n)
		cpu_relax();
	atomic_store(&slot->loop, NULL);
	while (atomic_load(&slot->users))
		cpu_relax();
	atomic_store(&slot->taken, false);
}

void pool_lend(struct pool *pool, const atomic_int *until)
{
	unsigned saved = thread_index;
	thread_index = pool->helpers + 1 + atomic_fetch_add(&pool->lenders, 1);
	atomic_fetch_add(&pool->available, 1);
	pool_serve(pool, until);
	atomic_fetch_sub(&pool->available, 1);
	thread_index = saved;
}
