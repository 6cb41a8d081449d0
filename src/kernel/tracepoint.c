/*
 * The names of the tlb:tlb_flush reasons (tracepoint.h); the tracepoints
 * themselves are inline.
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
