/*
 * A pool of host threads for a parallel for-loop (pool.h).
 *
 * Notes:
 * - One 64-bit word says which loop is on and what is left of it: the loop's
 *   epoch (24 bits), its length n and the next unclaimed index (20 bits
 *   each).  A thread claims an index with a compare-and-swap that succeeds
 *   only while the epoch is the one it saw, so a helper that wakes late can
 *   never claim an index of the next loop as one of the last.
 * - The caller publishes a loop by storing a new word, takes indexes itself,
 *   then waits for @done to reach n: every claimed call has returned.
 * - Helpers spin on the word for SPINS polls after a loop, a millisecond or
 *   so (a PAUSE takes tens of ns), since the event queue's next phase
 *   usually follows within microseconds; then they sleep on a condition
 *   variable.  The caller wakes sleepers only if there are any:
 *   @sleepers and the word are sequentially consistent, so a helper that is
 *   about to sleep either is counted or sees the new epoch (Dekker).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "tlbsim/engine/pool.h"

#define FIELD_BITS 20
#define FIELD_MASK ((UINT64_C(1) << FIELD_BITS) - 1)
#define COUNT_SHIFT FIELD_BITS
#define EPOCH_SHIFT (2 * FIELD_BITS)
#define EPOCH_MASK ((UINT64_C(1) << (64 - EPOCH_SHIFT)) - 1)

/* Polls of the word before a helper sleeps (4096 measured no different on
 * munmap16; fewer would put helpers to sleep between phases). */
#define SPINS 65536

/* What a helper is given: its pool and its index. */
struct helper {
	struct pool *pool;
	unsigned index;
};

struct pool {
	unsigned threads;
	GThread **helpers;
	struct helper *helper_args;
	_Atomic uint64_t word;
	_Atomic unsigned done;
	_Atomic unsigned sleepers;
	_Atomic bool quit;
	/* The loop's body: written before the word that publishes the loop,
	 * read after a claim of that loop succeeded. */
	void (*fn)(void *ctx, unsigned i);
	void *ctx;
	bool running;
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

static inline uint64_t word_epoch(uint64_t word)
{
	return word >> EPOCH_SHIFT;
}

static bool pool_claim(struct pool *pool, uint64_t epoch, unsigned *index)
{
	uint64_t word = atomic_load_explicit(&pool->word, memory_order_acquire);
	for (;;) {
		uint64_t next = word & FIELD_MASK, n = (word >> COUNT_SHIFT) & FIELD_MASK;
		if (word_epoch(word) != epoch || next >= n)
			return false;
		if (atomic_compare_exchange_weak_explicit(&pool->word, &word, word + 1,
							  memory_order_acquire,
							  memory_order_acquire)) {
			*index = (unsigned)next;
			return true;
		}
	}
}

static void pool_work(struct pool *pool, uint64_t epoch)
{
	unsigned i;
	while (pool_claim(pool, epoch, &i)) {
		pool->fn(pool->ctx, i);
		atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
	}
}

static gpointer pool_helper(gpointer data)
{
	const struct helper *me = data;
	struct pool *pool = me->pool;
	uint64_t seen = 0;
	thread_index = me->index;
	for (;;) {
		uint64_t epoch = seen;
		for (unsigned spin = 0; spin < SPINS && epoch == seen; spin++) {
			cpu_relax();
			epoch = word_epoch(atomic_load_explicit(&pool->word, memory_order_relaxed));
		}
		if (epoch == seen) {
			g_mutex_lock(&pool->lock);
			atomic_fetch_add(&pool->sleepers, 1);
			while ((epoch = word_epoch(atomic_load(&pool->word))) == seen)
				g_cond_wait(&pool->wake, &pool->lock);
			atomic_fetch_sub(&pool->sleepers, 1);
			g_mutex_unlock(&pool->lock);
		}
		if (atomic_load(&pool->quit))
			return NULL;
		seen = epoch;
		pool_work(pool, epoch);
	}
}

/* Store a new word with the next epoch and wake any sleeping helper. */
static uint64_t pool_publish(struct pool *pool, unsigned n)
{
	uint64_t epoch = (word_epoch(atomic_load_explicit(&pool->word, memory_order_relaxed)) + 1) &
			 EPOCH_MASK;
	atomic_store(&pool->word, epoch << EPOCH_SHIFT | (uint64_t)n << COUNT_SHIFT);
	if (atomic_load(&pool->sleepers)) {
		g_mutex_lock(&pool->lock);
		g_cond_broadcast(&pool->wake);
		g_mutex_unlock(&pool->lock);
	}
	return epoch;
}

struct pool *pool_new(unsigned threads, char **why)
{
	g_assert(threads >= 1);
	struct pool *pool = g_new0(struct pool, 1);
	pool->threads = threads;
	g_mutex_init(&pool->lock);
	g_cond_init(&pool->wake);
	pool->helpers = g_new0(GThread *, threads);
	pool->helper_args = g_new0(struct helper, threads);
	for (unsigned i = 0; i + 1 < threads; i++) {
		GError *error = NULL;
		pool->helper_args[i] = (struct helper){.pool = pool, .index = i + 1};
		pool->helpers[i] =
		    g_thread_try_new("tlbsim-pool", pool_helper, &pool->helper_args[i], &error);
		if (!pool->helpers[i]) {
			*why = g_strdup_printf("cannot start host thread %u of %u: %s", i + 2,
					       threads, error->message);
			g_error_free(error);
			pool_free(pool);
			return NULL;
		}
	}
	return pool;
}

void pool_free(struct pool *pool)
{
	if (!pool)
		return;
	g_assert(!pool->running);
	atomic_store(&pool->quit, true);
	(void)pool_publish(pool, 0);
	g_mutex_lock(&pool->lock);
	g_cond_broadcast(&pool->wake);
	g_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i + 1 < pool->threads; i++)
		if (pool->helpers[i])
			g_thread_join(pool->helpers[i]);
	g_free(pool->helpers);
	g_free(pool->helper_args);
	g_mutex_clear(&pool->lock);
	g_cond_clear(&pool->wake);
	g_free(pool);
}

unsigned pool_threads(const struct pool *pool)
{
	return pool->threads;
}

void pool_run(struct pool *pool, unsigned n, void (*fn)(void *ctx, unsigned i), void *ctx)
{
	g_assert(!pool->running && n <= FIELD_MASK);
	pool->running = true;
	pool->fn = fn;
	pool->ctx = ctx;
	atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
	uint64_t epoch = pool_publish(pool, n);
	pool_work(pool, epoch);
	while (atomic_load_explicit(&pool->done, memory_order_acquire) != n)
		cpu_relax();
	pool->running = false;
}
