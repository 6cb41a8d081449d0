/*
 * arm64 TLB maintenance (arch/arm64/include/asm/tlbflush.h; references.md,
 * 'Linux: arm64 TLBI broadcasts'): every user flush is a broadcast TLBI to
 * the Inner Shareable domain, completed by DSB ISH.  No IPIs, no mm_cpumask,
 * no lazy-TLB logic for shootdowns; ASIDs are per mm and the same on every
 * CPU.
 *
 * Models: __flush_tlb_range() issues one TLBI VAE1IS per stride, or one
 * ASIDE1IS when the range has more than MAX_TLBI_OPS strides (policy knob
 * arm64_max_tlbi_ops; no FEAT_TLBIRANGE), then waits for the DSB.  The reclaim
 * batch (43b3dfdd0455, 6.5) issues each page's TLBI at once without the DSB and
 * pays a single DSB at arch_tlbbatch_flush().
 * Simplifies: the invalidations of one DSB land together, when it completes;
 * context switches never flush (no ASID rollover modelled, with 16-bit ASIDs);
 * TLBI issue cost is the same for every kind.
 * Invariant: when the initiator goes on, every TLB has dropped the range.
 */
#include <string.h>
#include <glib.h>
#include "tlbsim/kernel/tlbbatch.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

/* Invalidations issued and not yet completed by a DSB. */
struct tlbi_batch {
	struct kernel *k;
	uint16_t asid;
	bool whole_asid;
	uint64_t nr;
	uint64_t *addrs;
	struct kcont done;
	uint64_t sync_at;
};

/* The DSB completes: every TLB has done the TLBIs issued before it. */
static void dsb_ish_done(void *target, uint64_t time)
{
	struct tlbi_batch *b = target;
	struct kernel *k = b->k;
	if (b->whole_asid)
		machine_broadcast_invalidate(k->machine, b->asid, MACHINE_ALL_VADDR);
	for (uint64_t i = 0; i < b->nr; i++)
		machine_broadcast_invalidate(k->machine, b->asid, b->addrs[i]);
	struct kcont done = b->done;
	if (b->addrs)
		kernel_release(k, b->addrs);
	kernel_release(k, b);
	kcont_call(k, done, time);
}

/* dsb(ish) after @issued: the broadcast lands, then @done. */
static void dsb_ish(struct kernel *k, struct tlbi_batch *b, uint64_t issued)
{
	uint64_t not_before = engine_now(k->engine) + k->machine->lookahead;
	fabric_broadcast(k->machine->fabric, issued, not_before, dsb_ish_done, b);
}

static void arm64_flush_tlb_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
				  const struct vma *vma, uint64_t start, uint64_t end,
				  unsigned stride_shift, bool freed_tables, uint64_t now,
				  const struct kcont *done)
{
	(void)vma;
	(void)freed_tables; /* a non-last-level TLBI also drops walk caches: modelled as always */
	const struct topology_costs *costs = &k->machine->topology->costs;
	struct tlbi_batch *b = kernel_alloc(k, sizeof(*b));
	*b = (struct tlbi_batch){.k = k, .asid = tlbflush_mm_asid(k, mm), .done = *done};
	uint64_t strides = end == FLUSH_ALL ? UINT64_MAX : (end - start) >> stride_shift;
	if (strides > k->policy->arm64_max_tlbi_ops) {
		b->whole_asid = true; /* flush_tlb_mm(): TLBI ASIDE1IS */
		strides = 1;
	} else {
		b->nr = strides;
		b->addrs = kernel_alloc(k, strides * sizeof(uint64_t));
		for (uint64_t i = 0; i < strides; i++)
			b->addrs[i] = start + (i << stride_shift);
	}
	cpu->counters.tlbi_broadcasts += strides;
	tlbflush_event(k, cpu, TLB_BROADCAST, start, end, now);
	dsb_ish(k, b, now + strides * costs->broadcast_issue);
}

static bool arm64_should_defer(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	(void)k;
	(void)cpu;
	(void)mm;
	return true;
}

/* __flush_tlb_page_nosync(): the TLBI goes out now; the DSB comes later. */
static uint64_t arm64_batch_add_pending(struct kernel *k, struct cpu *cpu,
					struct tlbflush_unmap_batch *batch, struct mm *mm,
					uint64_t addr, uint64_t now)
{
	(void)now;
	tlbbatch_add_page(k, batch, mm, addr);
	cpu->counters.tlbi_broadcasts++;
	return k->machine->topology->costs.broadcast_issue;
}

/* arch_tlbbatch_flush(): a single dsb(ish). */
static void arm64_batch_flush(struct kernel *k, struct cpu *cpu, struct tlbflush_unmap_batch *batch,
			      uint64_t now, const struct kcont *done)
{
	struct tlbi_batch *b = kernel_alloc(k, sizeof(*b));
	*b = (struct tlbi_batch){.k = k, .asid = tlbflush_mm_asid(k, batch->mm), .done = *done,
				 .nr = batch->nr_pages};
	if (batch->nr_pages) {
		b->addrs = kernel_alloc(k, batch->nr_pages * sizeof(uint64_t));
		memcpy(b->addrs, batch->pages, batch->nr_pages * sizeof(uint64_t));
	}
	tlbflush_event(k, cpu, TLB_BROADCAST, 0, batch->nr_pages << 12, now);
	dsb_ish(k, b, now);
}

/* Its flushes take no interrupt; cross-calls would (arch/arm64/kernel/smp.c). */
static void arm64_names(const struct topology *topology, struct flush_names *names)
{
	(void)topology;
	*names = (struct flush_names){.irq = "ipi_handler",
				      .handler = "generic_smp_call_function_interrupt",
				      .local = "__flush_tlb_range"};
}

const struct flush_arch_ops flush_arch_arm64 = {
	.name = "arm64",
	.imitates = "arch/arm64/include/asm/tlbflush.h: __flush_tlb_range (TLBI ...IS + DSB), "
		    "arch_tlbbatch_* (43b3dfdd0455)",
	.arch = ARCH_ARM64,
	.flush_range = arm64_flush_tlb_range,
	.should_defer = arm64_should_defer,
	.batch_add_pending = arm64_batch_add_pending,
	.batch_flush = arm64_batch_flush,
	.batched_pending_flushes_mm = false,
	.names = arm64_names,
	.cpu_asid_of = tlbflush_mm_asid_of,
};

/* check_and_switch_context(): the mm's ASID; with none, a local flush. */
static uint64_t arm64_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
				struct mm *next, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	(void)prev;
	(void)now;
	ts->is_lazy = false;
	ts->active_mm = next;
	if (ts->loaded_mm == next)
		return 0;
	cpu->counters.switch_mm++;
	ts->loaded_mm = next;
	ts->loaded_asid = tlbflush_mm_asid(k, next);
	uint64_t cost = k->machine->topology->costs.flush_all; /* TTBR0 write */
	if (k->machine->topology->hw_asids == 0)
		machine_flush_all(k->machine, cpu);
	cpu->counters.switch_mm_cycles += cost;
	return cost;
}

const struct lazy_tlb_ops lazy_tlb_arm64 = {
	.name = "arm64",
	.imitates = "arch/arm64/mm/context.c: check_and_switch_context (ASID per mm, no "
		    "mm_cpumask use)",
	.arch = ARCH_ARM64,
	.enter_lazy_tlb = lazy_tlb_keep_loaded,
	.switch_mm = arm64_switch_mm,
	/* Flushes never go through the x86 IPI handler: no should_flush or flush_tlb_func. */
};
