/*
 * The names and counters of the tlb:tlb_flush reasons (tracepoint.h); the
 * tracepoints themselves are inline.
 */
#include <glib.h>
#include "tlbsim/kernel/tracepoint.h"

static const char *const reason_names[NR_TLB_FLUSH_REASONS] = {
	[TLB_FLUSH_ON_TASK_SWITCH] = "TLB_FLUSH_ON_TASK_SWITCH",
	[TLB_REMOTE_SHOOTDOWN] = "TLB_REMOTE_SHOOTDOWN",
	[TLB_LOCAL_SHOOTDOWN] = "TLB_LOCAL_SHOOTDOWN",
	[TLB_LOCAL_MM_SHOOTDOWN] = "TLB_LOCAL_MM_SHOOTDOWN",
	[TLB_REMOTE_SEND_IPI] = "TLB_REMOTE_SEND_IPI",
	[TLB_REMOTE_WRONG_CPU] = "TLB_REMOTE_WRONG_CPU",
	[TLB_BROADCAST] = "TLB_BROADCAST",
};

const char *tlb_flush_reason_name(enum tlb_flush_reason reason)
{
	g_assert(reason < NR_TLB_FLUSH_REASONS);
	return reason_names[reason];
}

/* TLB_FLUSH_REASON in include/trace/events/tlb.h: what ftrace prints. */
static const char *const reason_ftrace[NR_TLB_FLUSH_REASONS] = {
	[TLB_FLUSH_ON_TASK_SWITCH] = "flush on task switch",
	[TLB_REMOTE_SHOOTDOWN] = "remote shootdown",
	[TLB_LOCAL_SHOOTDOWN] = "local shootdown",
	[TLB_LOCAL_MM_SHOOTDOWN] = "local mm shootdown",
	[TLB_REMOTE_SEND_IPI] = "remote ipi send",
	[TLB_REMOTE_WRONG_CPU] = "remote wrong CPU", /* 6.14 */
	[TLB_BROADCAST] = "broadcast",              /* tlbsim's own */
};

const char *tlb_flush_reason_ftrace(enum tlb_flush_reason reason)
{
	g_assert(reason < NR_TLB_FLUSH_REASONS);
	return reason_ftrace[reason];
}

uint64_t *tlb_flush_reason_counter(struct counters *c, enum tlb_flush_reason reason, bool full)
{
	switch (reason) {
#define REASON(r, name)                                                                            \
	case r:                                                                                    \
		return full ? &c->name##_full : &c->name;
		REASON(TLB_FLUSH_ON_TASK_SWITCH, tlb_flush_task_switch)
		REASON(TLB_REMOTE_SHOOTDOWN, tlb_remote_shootdown)
		REASON(TLB_LOCAL_SHOOTDOWN, tlb_local_shootdown)
		REASON(TLB_LOCAL_MM_SHOOTDOWN, tlb_local_mm_shootdown)
		REASON(TLB_REMOTE_SEND_IPI, tlb_remote_send_ipi)
		REASON(TLB_REMOTE_WRONG_CPU, tlb_remote_wrong_cpu)
		REASON(TLB_BROADCAST, tlb_broadcast)
#undef REASON
	case NR_TLB_FLUSH_REASONS:
		break;
	}
	g_assert_not_reached();
}
