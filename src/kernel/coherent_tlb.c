/*
 * The "coherence" transport: TLBs that take part in cache coherence, as
 * UNITD proposes (Romanescu, Lebeck, Sorin, Bracy, HPCA 2010; beyond.md
 * section 5, [U1], [U2]): each TLB entry remembers the physical address of
 * the PTE it came from, and the coherence invalidations that the kernel's
 * PTE stores send to the line's sharers evict the matching entries.  No
 * software shootdown runs: no IPI, no handler, nothing on the targets.
 *
 * Models: at the flush, the invalidations of the request's PTE stores reach
 * the farthest target a line transfer after the initiator, and each TLB
 * matches them in its PTE-address CAM (tlb_snoop cycles); the initiator's
 * stores are globally performed then, which is when it goes on.  Every
 * CPU's TLB but the initiator's (which flushed itself) drops the request's
 * entries then, whatever it runs (tlbflush_hw_invalidate_cpu()).
 * Simplifies: the invalidations are applied at the flush, not at each PTE
 * store of the zap (the stale checker judges only after the call returns);
 * a request the range rule turned into a full flush drops every entry of the
 * mm, where UNITD would drop only the changed PTEs'; one CAM match is charged
 * per request (the messages pipeline); the initiator still executes its own
 * local flush, which a kernel on such hardware would drop.
 */
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"

struct coherent_flush {
	struct kernel *k;
	struct flush_tlb_info *info;
};

/* The PTE stores are globally performed: every other TLB has matched them. */
static void coherence_performed(void *target, uint64_t arg)
{
	(void)arg;
	struct coherent_flush *f = target;
	struct kernel *k = f->k;
	struct flush_tlb_info *info = f->info;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu *cpu = &k->machine->cpus[c];
		if (c != info->initiator)
			tlbflush_hw_invalidate_cpu(k, cpu, info->mm, info->start, info->end,
						   info->stride_shift, info->new_tlb_gen);
	}
	kernel_release(k, f);
	shootdown_complete(k, info, engine_now(k->engine));
}

static void coherence_send(struct kernel *k, struct cpu *cpu, const unsigned *targets,
			   unsigned nr, struct flush_tlb_info *info, uint64_t now)
{
	if (nr == 0) {
		shootdown_complete(k, info, now);
		return;
	}
	uint64_t reach = 0;
	for (unsigned i = 0; i < nr; i++)
		reach = MAX(reach, fabric_line_transfer(k->machine->fabric, cpu->id, targets[i]));
	uint64_t performed = now + reach + k->machine->topology->costs.tlb_snoop;
	struct coherent_flush *f = kernel_alloc(k, sizeof(*f));
	*f = (struct coherent_flush){.k = k, .info = info};
	uint64_t at = kernel_global_time(k, performed);
	engine_schedule(k->engine, at, LANE_GLOBAL, coherence_performed, f, 0);
}

const struct flush_transport_ops flush_transport_coherence = {
	.name = "coherence",
	.imitates = "UNITD (HPCA 2010): TLBs kept coherent by the PTE stores' invalidations",
	.local_flush_start = LOCAL_FLUSH_AT_ONCE,
	.send = coherence_send,
};
