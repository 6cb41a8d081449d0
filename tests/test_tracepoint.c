/*
 * The kernel's tracepoints (kernel/tracepoint.h): the tlb:tlb_flush reasons
 * carry the kernel's names, in the kernel's order, and a tracepoint with no
 * probe registered calls nothing, while one with a probe passes its
 * arguments through unchanged.
 */
#include <criterion/criterion.h>
#include "tlbsim/kernel/tracepoint.h"

Test(tracepoint, reason_names_are_the_kernels)
{
	static const char *const names[] = {
	    "TLB_FLUSH_ON_TASK_SWITCH", "TLB_REMOTE_SHOOTDOWN", "TLB_LOCAL_SHOOTDOWN",
	    "TLB_LOCAL_MM_SHOOTDOWN",   "TLB_REMOTE_SEND_IPI",  "TLB_REMOTE_WRONG_CPU",
	    "TLB_BROADCAST",
	};
	cr_assert_eq(NR_TLB_FLUSH_REASONS, sizeof(names) / sizeof(names[0]));
	for (unsigned r = 0; r < NR_TLB_FLUSH_REASONS; r++)
		cr_expect_str_eq(tlb_flush_reason_name(r), names[r]);
}

struct seen {
	unsigned calls;
	unsigned cpu;
	enum tlb_flush_reason reason;
	int64_t pages;
	uint64_t at;
};

static void probe_tlb_flush(void *data, unsigned cpu, enum tlb_flush_reason reason,
			    int64_t pages, uint64_t at)
{
	struct seen *s = data;
	*s = (struct seen){.calls = s->calls + 1, .cpu = cpu, .reason = reason, .pages = pages,
			   .at = at};
}

Test(tracepoint, probe_gets_the_arguments_and_none_is_called_without_one)
{
	static const struct tracepoint_ops ops = {.tlb_flush = probe_tlb_flush};
	struct seen seen = {0};
	struct kernel k = {0};
	trace_tlb_flush(&k, 3, TLB_REMOTE_SEND_IPI, 33, 1000); /* nobody listens */
	k.tp = &ops;
	k.tp_data = &seen;
	trace_tlb_flush(&k, 3, TLB_REMOTE_SEND_IPI, -1, 1000);
	cr_expect_eq(seen.calls, 1);
	cr_expect_eq(seen.cpu, 3);
	cr_expect_eq(seen.reason, TLB_REMOTE_SEND_IPI);
	cr_expect_eq(seen.pages, -1);
	cr_expect_eq(seen.at, 1000);
}

/* ftrace's spelling of each reason (include/trace/events/tlb.h), what --stat prints. */
Test(tracepoint, reason_ftrace_names)
{
	static const char *const names[] = {
	    "flush on task switch", "remote shootdown", "local shootdown", "local mm shootdown",
	    "remote ipi send",      "remote wrong CPU", "broadcast",
	};
	for (unsigned r = 0; r < NR_TLB_FLUSH_REASONS; r++)
		cr_expect_str_eq(tlb_flush_reason_ftrace(r), names[r]);
}

/* Each reason has two counters of its own, the events and the full flushes,
 * and together they are the COUNTERS_FLUSH_REASONS list. */
Test(tracepoint, reason_counters_are_distinct)
{
	struct counters c = {0};
	for (unsigned r = 0; r < NR_TLB_FLUSH_REASONS; r++) {
		*tlb_flush_reason_counter(&c, r, false) += 1;
		*tlb_flush_reason_counter(&c, r, true) += 100;
	}
	cr_expect_eq(c.tlb_remote_shootdown, 1);
	cr_expect_eq(c.tlb_remote_shootdown_full, 100);
	cr_expect_eq(c.tlb_broadcast_full, 100);
	uint64_t sum = 0;
#define ADD(name) sum += c.name;
	COUNTERS_FLUSH_REASONS(ADD)
#undef ADD
	cr_expect_eq(sum, NR_TLB_FLUSH_REASONS * 101, "every counter of the list, once");
	cr_expect_eq(c.tlb_flush_events, 0);
}
