/*
 * The "ipi" transport: Linux's native_flush_tlb_others() tail, one
 * smp_call_function_many() to the targets, whose handler is the era's
 * flush_tlb_func().  The completion point is the policy's: every target's
 * csd unlocked after its flush (Linux); unlocked when its handler takes it,
 * before the flush (early acknowledgement, Nadav Amit's RFC v2 of 2019 [E3]:
 * the flush info travels inlined in the call data, and a flush that freed
 * page tables still acknowledges after it unless early_ack_freed_tables); or
 * nothing at all (the initiator goes on once its interrupts are sent; the
 * request is still carried out).
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

/* The flush, inlined in the call data of an early-acknowledged request: it
 * outlives the initiator's wait. */
struct early_ack {
	struct flush_tlb_info info;
	unsigned pending; /* targets that have not run it yet */
};

/* flush_tlb_func() after the early ack; when it ends is what the freed-table
 * check compares with the tables' free (tlbflush_check_acked_flushes()). */
static uint64_t early_acked_flush(struct kernel *k, struct cpu *cpu, uint64_t now, void *data)
{
	struct early_ack *ea = data;
	uint64_t cost = shootdown_remote_flush(k, cpu, now, &ea->info);
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	ts->acked_mm = ea->info.mm;
	ts->acked_flush_end = now + cost;
	if (--ea->pending == 0)
		kernel_release(k, ea);
	return cost;
}

static bool shootdown_acks_early(const struct kernel *k, const struct flush_tlb_info *info,
				 unsigned nr)
{
	return k->policy->completion == FLUSH_COMPLETION_HANDLER_ENTRY && nr > 0 &&
	       (!info->freed_tables || k->policy->early_ack_freed_tables);
}

void shootdown_ipis(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		    struct flush_tlb_info *info, uint64_t now, bool wait)
{
	if (wait && shootdown_acks_early(k, info, nr)) {
		struct early_ack *ea = kernel_alloc(k, sizeof(*ea));
		*ea = (struct early_ack){.info = *info, .pending = nr};
		struct kcont acked = {.fn = ipis_acknowledged, .ctx = info};
		smp_call_function_many_ack(k, cpu, targets, nr, early_acked_flush, ea, now, acked,
					   SMP_ACK_ON_ENTRY);
		return;
	}
	if (wait) {
		struct kcont acked = {.fn = ipis_acknowledged, .ctx = info};
		/* flush_tlb_func() changes only the target's TLBs, tlbflush
		 * state, counters and trace: a local call (smp.h). */
		smp_call_function_many_ack(k, cpu, targets, nr, shootdown_remote_flush, info, now,
					   acked, SMP_ACK_AFTER_LOCAL);
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
		       k->policy->completion != FLUSH_COMPLETION_NONE);
}

const struct flush_transport_ops flush_transport_ipi = {
	.name = "ipi",
	.imitates = "native_flush_tlb_others(): smp_call_function_many() and its csd waits",
	.send = ipi_send,
};
