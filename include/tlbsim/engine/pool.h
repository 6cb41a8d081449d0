#ifndef TLBSIM_POOL_H
#define TLBSIM_POOL_H
/*
 * A pool of host threads for parallel for-loops: pool_run() calls
 * fn(ctx, i) for every i in [0, n), on the pool's helper threads, on threads
 * lent to it, and on the calling thread, and returns once every call has
 * returned.  Which thread takes which i is left to chance: callers make the
 * result independent of it.
 *
 * Several threads may run loops at once (a sweep's runs): the helpers take
 * indexes of any loop that has some left.  A thread with nothing of its own to
 * do can lend itself to the others' loops (pool_lend()).
 *
 * Helpers spin a short while between loops, so that a loop which follows
 * closely on the previous one starts without a wake-up, then sleep.
 */
#include <stdatomic.h>

/* The host's cache line: util/types.h's HOST_LINE, which the engine layer,
 * below util, does not see. */
#define POOL_LINE 64

struct pool;

/* @threads host threads in all, the one caller included: @threads - 1
 * helpers.  NULL if a thread cannot be started (the message in *@why,
 * g_free()). */
struct pool *pool_new(unsigned threads, char **why);
/* @helpers started threads, for up to @callers threads running loops at
 * once (at least 1). */
struct pool *pool_new_shared(unsigned helpers, unsigned callers, char **why);
void pool_free(struct pool *pool);
/* The most threads that can work on one loop: helpers + callers. */
unsigned pool_threads(const struct pool *pool);

void pool_run(struct pool *pool, unsigned n, void (*fn)(void *ctx, unsigned i), void *ctx);

/*
 * Work on other threads' loops, as a helper does, until *@until is nonzero;
 * whoever sets it calls pool_wake() so that a sleeping lender sees it.
 */
void pool_lend(struct pool *pool, const atomic_int *until);
void pool_wake(struct pool *pool);

/* Which of its pool's threads the caller is: 0 for a thread that calls
 * pool_run() (and any thread outside a pool), 1 .. helpers for helpers,
 * above that for a lent thread. */
unsigned pool_thread_index(void);

#endif
