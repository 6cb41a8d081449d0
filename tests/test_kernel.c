/*
 * Tests of src/kernel/kernel.c: the set of in-flight kernel objects.  Objects come
 * back zeroed, kernel_release() frees one (the set owns them), and
 * kernel_free_inflight() frees whatever a stopped run left behind.  "No
 * leak" is proved by running this file under valgrind or the Sanitize build
 * (LeakSanitizer), not by an assertion.
 */
#include <signal.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/kernel/kernel.h"

static unsigned inflight(const struct kernel *k)
{
	return g_hash_table_size(k->inflight);
}

static bool all_zero(const void *p, size_t size)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < size; i++)
		if (b[i])
			return false;
	return true;
}

Test(kernel_inflight, alloc_returns_zeroed_tracked_memory)
{
	struct kernel k = {0};
	static const size_t sizes[] = {1, 8, 24, 100, 4096, 65536};
	void *objects[G_N_ELEMENTS(sizes)];

	kernel_init_inflight(&k);
	cr_assert_not_null(k.inflight);
	cr_expect_eq(inflight(&k), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		objects[i] = kernel_alloc(&k, sizes[i]);
		cr_assert_not_null(objects[i]);
		cr_expect(all_zero(objects[i], sizes[i]), "size %zu not zeroed", sizes[i]);
		/* Writable over its whole size (ASan/valgrind check the bounds). */
		memset(objects[i], 0xa5, sizes[i]);
		cr_expect_eq(inflight(&k), i + 1);
		for (size_t j = 0; j < i; j++)
			cr_expect_neq(objects[i], objects[j]);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
		cr_expect(g_hash_table_contains(k.inflight, objects[i]));
	kernel_free_inflight(&k);
}

/* Release in an order unrelated to allocation; each frees exactly its object. */
Test(kernel_inflight, release_removes_in_any_order)
{
	struct kernel k = {0};
	enum { N = 16 };
	void *objects[N];
	static const unsigned order[N] = {5, 0, 15, 7, 8, 1, 14, 2, 13, 3, 12, 4, 11, 6, 10, 9};

	kernel_init_inflight(&k);
	for (unsigned i = 0; i < N; i++) {
		objects[i] = kernel_alloc(&k, 32 + i);
		memset(objects[i], (int)i, 32 + i);
	}
	for (unsigned n = 0; n < N; n++) {
		void *gone = objects[order[n]];
		kernel_release(&k, gone);
		cr_expect_eq(inflight(&k), N - n - 1);
		cr_expect_not(g_hash_table_contains(k.inflight, gone));
		/* The rest are intact. */
		for (unsigned m = n + 1; m < N; m++) {
			const unsigned char *p = objects[order[m]];
			cr_expect_eq(p[0], order[m]);
			cr_expect_eq(p[31 + order[m]], order[m]);
		}
	}
	kernel_free_inflight(&k);
	cr_expect_null(k.inflight);
}

/* A run stopped mid-call: what is left is freed (valgrind/LSan see no leak). */
Test(kernel_inflight, free_inflight_frees_what_is_left)
{
	struct kernel k = {0};

	kernel_init_inflight(&k);
	for (unsigned i = 0; i < 100; i++) {
		void *p = kernel_alloc(&k, 64 + i);
		if (i % 3 == 0)
			kernel_release(&k, p);
	}
	cr_expect_eq(inflight(&k), 66);
	kernel_free_inflight(&k);
	cr_expect_null(k.inflight);
	/* Teardown paths may run it twice, or on a kernel that never started. */
	kernel_free_inflight(&k);
	struct kernel never = {0};
	kernel_free_inflight(&never);
	cr_expect_null(never.inflight);
}

Test(kernel_inflight, reinit_after_free)
{
	struct kernel k = {0};

	kernel_init_inflight(&k);
	kernel_alloc(&k, 8);
	kernel_free_inflight(&k);
	kernel_init_inflight(&k);
	cr_expect_eq(inflight(&k), 0);
	void *p = kernel_alloc(&k, 8);
	kernel_release(&k, p);
	kernel_free_inflight(&k);
}

Test(kernel_inflight, release_unknown_pointer_aborts, .signal = SIGABRT)
{
	struct kernel k = {0};
	int not_ours = 0;

	kernel_init_inflight(&k);
	kernel_alloc(&k, 16);
	kernel_release(&k, &not_ours);
}

struct cont_log {
	struct kernel *k;
	uint64_t time;
	unsigned calls;
};

static void record_cont(struct kernel *k, void *ctx, uint64_t time)
{
	struct cont_log *log = ctx;

	log->k = k;
	log->time = time;
	log->calls++;
}

Test(kernel, kcont_call_passes_kernel_context_and_time)
{
	struct kernel k = {0};
	struct cont_log log = {0};
	struct kcont cont = {.fn = record_cont, .ctx = &log};

	kcont_call(&k, cont, 12345);
	cr_expect_eq(log.calls, 1);
	cr_expect_eq(log.k, &k);
	cr_expect_eq(log.time, 12345);
}
