/*
 * The "rar" transport: Intel's Remote Action Request as the posted Linux RFC
 * drives it (arch/x86/mm/rar.c, v4 of June 2025; beyond.md section 6, [R1]-[R3]):
 * native_flush_tlb_multi() hands the flush to hardware instead of IPIs.
 *
 * Models: the initiator claims one of the machine's payload slots and fills
 * it (an RMW on the payload table's line), writes START into each target's
 * action byte (an RMW on a line that target wrote last, as the csd queueing
 * of an IPI), sends one RAR signal to the whole mask (one ICR write), and
 * spins on the targets' bytes in turn until each reads OK.  A target's
 * "remote action handler circuit" performs the invalidation in microcode:
 * no interrupt entry, handler or exit, served even with interrupts off
 * (IGNORE_IF); it costs the target rar_service cycles plus the INVLPGs (or
 * the full flush) of the payload, and writes OK.  The invalidation is the
 * hardware's: every tag the target holds the mm under, loaded or not, as
 * INVLPGB's (tlbflush_hw_invalidate_cpu()); no flush_tlb_func() runs, so
 * targets count no nr_tlb_remote_flush_received and no tlb:tlb_flush.
 * With every payload slot in flight the flush goes out as IPIs.
 * Simplifies: every mm's remote flushes use RAR (the RFC uses it for the
 * mms with a global ASID, which the model does not track separately); a RAR
 * signal reaching a CPU in an IPI handler waits for the handler's end.
 */
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"
#include "tlbsim/kernel/smp.h"

struct rar {
	unsigned in_use;             /* payload slots claimed and not yet released */
	struct cacheline table_line; /* the shared payload table */
};

static void rar_boot(struct kernel *k)
{
	k->rar = g_new0(struct rar, 1);
	k->rar->table_line = CACHELINE_INIT;
}

static void rar_shutdown(struct kernel *k)
{
	g_free(k->rar);
	k->rar = NULL;
}

/* The target's microcode reads the payload and performs its action. */
static uint64_t rar_action(struct kernel *k, struct cpu *cpu, uint64_t now, void *data)
{
	const struct flush_tlb_info *info = data;
	const struct topology_costs *costs = &k->machine->topology->costs;
	uint64_t t = fabric_line_read(k->machine->fabric, &k->rar->table_line, cpu->id, now);
	tlbflush_hw_invalidate_cpu(k, cpu, info->mm, info->start, info->end, info->stride_shift,
				   info->new_tlb_gen);
	cpu->counters.rar_actions++;
	t += costs->rar_service;
	if (info->end == FLUSH_ALL)
		return t + costs->flush_all - now;
	return t + ((info->end - info->start) >> info->stride_shift) * costs->invlpg - now;
}

/* Every target's byte read OK: the payload slot is free again. */
static void rar_completed(struct kernel *k, void *ctx, uint64_t time)
{
	k->rar->in_use--;
	shootdown_complete(k, ctx, time);
}

static void rar_send(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		     struct flush_tlb_info *info, uint64_t now)
{
	struct rar *rar = k->rar;
	if (nr == 0 || rar->in_use == k->machine->topology->rar_payloads) {
		shootdown_ipis(k, cpu, targets, nr, info, now, true);
		return;
	}
	rar->in_use++;
	uint64_t t = fabric_line_rmw(k->machine->fabric, &rar->table_line, cpu->id, now);
	cpu->counters.rar_requests++;
	struct kcont completed = {.fn = rar_completed, .ctx = info};
	smp_call_function_many_ack(k, cpu, targets, nr, rar_action, info, t, completed, SMP_RAR);
}

const struct flush_transport_ops flush_transport_rar = {
	.name = "rar",
	.imitates = "Intel Remote Action Request, Linux RFC v4 (2025): smp_call_rar_many()",
	.boot = rar_boot,
	.shutdown = rar_shutdown,
	.local_flush_start = LOCAL_FLUSH_AFTER_ONE_SEND,
	.send = rar_send,
};
