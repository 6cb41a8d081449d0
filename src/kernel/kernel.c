/*
 * Ownership of in-flight kernel objects (see kernel.h).  A set, not a list:
 * objects are released in any order, and nothing iterates it but teardown,
 * whose order does not matter.
 */
#include "tlbsim/kernel/kernel.h"

void kernel_init_inflight(struct kernel *k)
{
	k->inflight = g_hash_table_new_full(g_direct_hash, g_direct_equal, g_free, NULL);
}

void *kernel_alloc(struct kernel *k, size_t size)
{
	void *object = g_malloc0(size);
	g_hash_table_add(k->inflight, object);
	return object;
}

void kernel_release(struct kernel *k, void *object)
{
	gboolean found = g_hash_table_remove(k->inflight, object);
	g_assert(found);
}

void kernel_free_inflight(struct kernel *k)
{
	if (k->inflight)
		g_hash_table_destroy(k->inflight);
	k->inflight = NULL;
}
