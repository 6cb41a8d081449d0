/*
 * The "ipi" transport: Linux's native_flush_tlb_others() tail, one
 * smp_call_function_many() to the targets, whose handler is the era's
 * flush_tlb_func().  The completion point is the policy's: every target's
 * csd unlocked after its flush (Linux), or nothing at all (the initiator goes
 * on once its interrupts are sent; the request is still carried out).
 */
#include "tlbsim/kernel/shootdown.h"
#include "tlbsim/kernel/smp.h"

void shootdown_complete(struct kernel *k, struct flush_tlb_info *info, uint64_t time)
{
	struct kcont done = info->done;
	uint64_t at = MAX(time, info->local_done);
	kernel_release(k, info);
	kcont_call(k, done, at);
}

uint64_t shootdown_remote_flush(struct kernel *k, struct cpu *cpu, uint64_t now, void *info)
{
	return k->policy->lazy->flush_tlb_func(k, cpu, info, false, now);
}

static void ipis_acknowledged(struct kernel *k, void *ctx, uint64_t time)
{
	shootdown_complete(k, ctx, time);
}

/* Completion "none": the initiator went on already; only @info is left. */
static void ipis_done_unwaited(struct kernel *k, void *ctx, uint64_t time)
{
	(void)time;
	kernel_release(k, ctx);
}

void shootdown_ipis(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		    struct flush_tlb_info *info, uint64_t now, bool wait)
{
	if (wait) {
		struct kcont acked = {.fn = ipis_acknowledged, .ctx = info};
		smp_call_function_many(k, cpu, targets, nr, shootdown_remote_flush, info, now,
				       acked);
		return;
	}
	struct kcont done = info->done;
	uint64_t local_done = info->local_done;
	struct kcont release = {.fn = ipis_done_unwaited, .ctx = info};
	uint64_t sent = smp_call_function_many(k, cpu, targets, nr, shootdown_remote_flush, info,
					       now, release);
	kcont_call(k, done, MAX(sent, local_done));
}

static void ipi_send(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		     struct flush_tlb_info *info, uint64_t now)
{
	shootdown_ipis(k, cpu, targets, nr, info, now,
		       k->policy->completion == FLUSH_COMPLETION_REMOTE_DONE);
}

const struct flush_transport_ops flush_transport_ipi = {
	.name = "ipi",
	.imitates = "native_flush_tlb_others(): smp_call_function_many() and its csd waits",
	.send = ipi_send,
};
