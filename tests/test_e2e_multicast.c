/*
 * barrelfish-multicast as a user runs it, under --strict: munmap16 (shrunk to
 * an 8 MiB file and a 1 ms tail, 32 munmaps) and latr-micro (20 iterations)
 * on skylake-sp-2s-48 (2 sockets) and ivybridge-ex-8s (8 sockets), against
 * linux-6.8, whose choices the preset keeps but for the transport.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

static void strict_row(struct table *t, const char *topology, const char *workload,
		       const char *policy)
{
	const char *shrink = g_str_equal(workload, "munmap16") ? "--set=workload.file_size=8M"
							       : "--set=workload.iterations=20";
	/* latr-micro has no tail: the list ends there. */
	const char *tail = g_str_equal(workload, "munmap16") ? "--set=workload.tail_ms=1" : NULL;
	run_row(t, topology, workload, policy, "1", "--strict", shrink, tail, NULL);
	cr_assert_eq(table_u64(t, 0, "stale_hits"), 0, "%s %s %s", topology, workload, policy);
	cr_assert_eq(table_u64(t, 0, "stale_reuse"), 0);
	cr_assert_eq(table_u64(t, 0, "stale_pwc"), 0);
}

static double op_ns(const struct table *t)
{
	return g_ascii_strtod(table_get(t, 0, "op_ns_mean"), NULL);
}

/*
 * munmap16's readers run on two sockets of either machine: every munmap
 * sends two messages from the initiator and none of the IPIs linux-6.8
 * sends; each target gets one request and writes one reply, so the messages
 * are twice the requests.  No interrupt entry and exit on the path: the
 * munmap is shorter than linux-6.8's (skylake-sp-2s-48: 4589 against 5904
 * ns; ivybridge-ex-8s: 14649 against 20162).
 */
Test(e2e_multicast, munmap16_sends_messages_not_ipis)
{
	static const char *const machines[] = {"skylake-sp-2s-48", "ivybridge-ex-8s"};
	for (size_t i = 0; i < G_N_ELEMENTS(machines); i++) {
		struct table m, l;
		strict_row(&m, machines[i], "munmap16", "barrelfish-multicast");
		strict_row(&l, machines[i], "munmap16", "linux-6.8");
		uint64_t requests = table_u64(&m, 0, "multicast_requests");
		cr_assert_gt(requests, 0, "%s", machines[i]);
		cr_assert_eq(table_u64(&m, 0, "ipis_sent"), 0);
		cr_assert_eq(table_u64(&m, 0, "multicast_messages"), 2 * requests);
		cr_assert_eq(requests, table_u64(&l, 0, "ipis_sent"), "the same targets");
		cr_assert_lt(op_ns(&m), op_ns(&l), "%s", machines[i]);
		table_clear(&m);
		table_clear(&l);
	}
}

/* latr-micro's reference threads sleep (lazy TLB) when the allocator
 * munmaps: linux-6.8 sends them nothing, and the transport never runs. */
Test(e2e_multicast, latr_micro_has_no_targets)
{
	static const char *const machines[] = {"skylake-sp-2s-48", "ivybridge-ex-8s"};
	for (size_t i = 0; i < G_N_ELEMENTS(machines); i++) {
		struct table m, l;
		strict_row(&m, machines[i], "latr-micro", "barrelfish-multicast");
		strict_row(&l, machines[i], "latr-micro", "linux-6.8");
		cr_assert_eq(table_u64(&m, 0, "multicast_messages"), 0, "%s", machines[i]);
		cr_assert_eq(table_u64(&l, 0, "ipis_sent"), 0);
		cr_assert_str_eq(table_get(&m, 0, "op_ns_mean"), table_get(&l, 0, "op_ns_mean"));
		table_clear(&m);
		table_clear(&l);
	}
}
