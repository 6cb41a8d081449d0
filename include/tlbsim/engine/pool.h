#ifndef TLBSIM_POOL_H
#define TLBSIM_POOL_H
/*
 * A pool of host threads for a parallel for-loop: pool_run() calls
 * fn(ctx, i) for every i in [0, n), on the pool's helper threads and on the
 * calling thread, and returns once every call has returned.  Which thread
 * takes which i is left to chance: callers make the result independent of it.
 *
 * Helpers spin a short while between loops, so that a loop which follows
 * closely on the previous one starts without a wake-up, then sleep.  One
 * caller at a time (asserted).
 */

struct pool;

/* @threads host threads in all, the caller's included: @threads - 1 helpers.
 * NULL if a thread cannot be started (the message in *@why, g_free()). */
struct pool *pool_new(unsigned threads, char **why);
void pool_free(struct pool *pool);
unsigned pool_threads(const struct pool *pool);

void pool_run(struct pool *pool, unsigned n, void (*fn)(void *ctx, unsigned i), void *ctx);

/* Which of its pool's threads the caller is: 0 for the one that calls
 * pool_run() (and any thread outside a pool), 1 .. threads - 1 for helpers. */
unsigned pool_thread_index(void);

#endif
