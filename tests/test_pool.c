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

/* ---- shared pools: several callers, lent threads ------------------------- */

struct caller {
	struct pool *pool;
	unsigned rounds;
	bool ok;
};

static gpointer run_loops(gpointer data)
{
	struct caller *c = data;
	c->ok = true;
	for (unsigned round = 0; round < c->rounds; round++) {
		unsigned n = 1 + round % 9;
		struct tally *t = g_new0(struct tally, 1);
		pool_run(c->pool, n, count_call, t);
		for (unsigned i = 0; i < MAX_N; i++)
			c->ok &= atomic_load(&t->calls[i]) == (i < n ? 1u : 0u);
		g_free(t);
	}
	return NULL;
}

/* Two threads run loops at once on two shared helpers: each loop gets every
 * index exactly once, whoever takes them. */
Test(pool, concurrent_callers_each_get_every_index_once)
{
	char *why = NULL;
	struct pool *pool = pool_new_shared(2, 2, &why);
	cr_assert_not_null(pool, "%s", why);
	cr_assert_eq(pool_threads(pool), 4);
	struct caller callers[2] = {{.pool = pool, .rounds = 2000}, {.pool = pool, .rounds = 2000}};
	GThread *other = g_thread_new("caller", run_loops, &callers[1]);
	run_loops(&callers[0]);
	g_thread_join(other);
	cr_assert(callers[0].ok && callers[1].ok);
	pool_free(pool);
}

/* A loop of two calls that each wait (up to @wait_us) for the other to
 * start: they meet only if two threads take them at once. */
struct rendezvous {
	gint64 wait_us;
	atomic_uint arrived;
	atomic_uint met;
	atomic_uint by_thread[2];
};

static void meet(void *ctx, unsigned i)
{
	struct rendezvous *r = ctx;
	atomic_fetch_add(&r->arrived, 1);
	gint64 deadline = g_get_monotonic_time() + r->wait_us;
	while (atomic_load(&r->arrived) < 2 && g_get_monotonic_time() < deadline)
		g_usleep(100);
	atomic_fetch_add(&r->met, atomic_load(&r->arrived) == 2);
	atomic_store(&r->by_thread[i], pool_thread_index());
}

struct lender {
	struct pool *pool;
	atomic_int until;
};

static gpointer lend(gpointer data)
{
	struct lender *l = data;
	pool_lend(l->pool, &l->until);
	return NULL;
}

/* No helper: a loop runs on its caller alone, so the two calls cannot meet;
 * with another thread lent to the pool they do, and the lender goes home
 * when told. */
Test(pool, a_lent_thread_takes_part_in_the_loops_of_others)
{
	char *why = NULL;
	struct pool *pool = pool_new_shared(0, 2, &why);
	cr_assert_not_null(pool, "%s", why);
	struct tally *t = g_new0(struct tally, 1);
	pool_run(pool, 3, count_call, t);
	cr_assert_eq(atomic_load(&t->by_thread[0]), 3, "no helper: all on the caller");
	g_free(t);

	struct lender lender = {.pool = pool};
	atomic_init(&lender.until, 0);
	GThread *thread = g_thread_new("lender", lend, &lender);
	/* The lender counts itself available once it runs: before that a
	 * loop runs on its caller alone, and its calls wait in vain. */
	struct rendezvous r = {.wait_us = G_USEC_PER_SEC / 5};
	gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	do {
		atomic_store(&r.arrived, 0);
		atomic_store(&r.met, 0);
		pool_run(pool, 2, meet, &r);
	} while (atomic_load(&r.met) != 2 && g_get_monotonic_time() < deadline);
	cr_assert_eq(atomic_load(&r.met), 2, "the two calls never ran at once");
	cr_assert_neq(atomic_load(&r.by_thread[0]), atomic_load(&r.by_thread[1]));
	cr_assert(atomic_load(&r.by_thread[0]) > 0 || atomic_load(&r.by_thread[1]) > 0,
		  "a lent thread has an index of its own");
	atomic_store(&lender.until, 1);
	pool_wake(pool);
	g_thread_join(thread);
	pool_free(pool);
}
