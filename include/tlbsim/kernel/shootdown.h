#ifndef TLBSIM_SHOOTDOWN_H
#define TLBSIM_SHOOTDOWN_H
/*
 * The shootdown frame's transports (policy.h, struct flush_transport_ops):
 * how a flush request reaches its targets once native_flush_tlb_others() has
 * chosen them, and when the initiator may go on.  "ipi" is Linux's
 * smp_call_function_many(); "latr" (latr.c) posts the request for the
 * targets to sweep at their next tick or context switch.
 */
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/kernel/tlbflush.h"

/*
 * The completion point is reached at @time: the initiator goes on (after
 * its own concurrent local flush, if still running), and @info is released.
 */
void shootdown_complete(struct kernel *k, struct flush_tlb_info *info, uint64_t time);

/* flush_tlb_func() on a target, as the transports run it: the policy's era's
 * handler for a remote request. */
uint64_t shootdown_remote_flush(struct kernel *k, struct cpu *cpu, uint64_t now, void *info);

/* smp_call_function_many() to @targets for @info; the initiator goes on
 * when every target has flushed (@wait) or once the interrupts are sent. */
void shootdown_ipis(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		    struct flush_tlb_info *info, uint64_t now, bool wait);

#endif
