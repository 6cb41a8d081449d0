/* Tests of the host thread pool (src/engine/pool.c). */
#include <stdatomic.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/engine/pool.h"

#define MAX_N 1000

struct tally {
	atomic_uint calls[MAX_N];
	atomic_uint by_thread[8];
};

static void count_call(void *ctx, unsigned i)
{
	struct tally *t = ctx;
	cr_assert_lt(i, MAX_N);
	atomic_fetch_add(&t->calls[i], 1);
	unsigned me = pool_thread_index();
	cr_assert_lt(me, 8);
	atomic_fetch_add(&t->by_thread[me], 1);
}

/* Every index exactly once, on threads 0 .. threads - 1, loop after loop. */
static void check_loops(unsigned threads)
{
	char *why = NULL;
	struct pool *pool = pool_new(threads, &why);
	cr_assert_not_null(pool, "%s", why);
	cr_assert_eq(pool_threads(pool), threads);
	static const unsigned sizes[] = {0, 1, 2, 3, 7, 64, MAX_N};
	for (unsigned round = 0; round < 200; round++) {
		unsigned n = sizes[round % G_N_ELEMENTS(sizes)];
		struct tally *t = g_new0(struct tally, 1);
		pool_run(pool, n, count_call, t);
		unsigned total = 0;
		for (unsigned i = 0; i < MAX_N; i++)
			cr_assert_eq(atomic_load(&t->calls[i]), i < n ? 1u : 0u,
				     "round %u: index %u of %u called %u times", round, i, n,
				     atomic_load(&t->calls[i]));
		for (unsigned k = 0; k < 8; k++) {
			cr_assert(k < threads || atomic_load(&t->by_thread[k]) == 0);
			total += atomic_load(&t->by_thread[k]);
		}
		cr_assert_eq(total, n);
		g_free(t);
	}
	pool_free(pool);
}

Test(pool, one_thread_runs_every_index_on_the_caller)
{
	check_loops(1);
}

Test(pool, two_threads_run_every_index_once)
{
	check_loops(2);
}

Test(pool, four_threads_run_every_index_once)
{
	check_loops(4);
}

/* Helpers that went to sleep between loops are woken for the next one. */
Test(pool, loops_after_a_pause_still_run)
{
	char *why = NULL;
	struct pool *pool = pool_new(3, &why);
	cr_assert_not_null(pool, "%s", why);
	for (unsigned round = 0; round < 3; round++) {
		g_usleep(20000); /* long past the helpers' spinning */
		struct tally *t = g_new0(struct tally, 1);
		pool_run(pool, 50, count_call, t);
		for (unsigned i = 0; i < 50; i++)
			cr_assert_eq(atomic_load(&t->calls[i]), 1);
		g_free(t);
	}
	pool_free(pool);
	pool_free(NULL);
}

Test(pool, the_caller_is_thread_zero)
{
	cr_assert_eq(pool_thread_index(), 0);
}
