/*
 * riscv TLB flushing (arch/riscv/mm/tlbflush.c ~6.8, arch/riscv/mm/context.c;
 * references.md, 'Linux: riscv remote flushes'): __flush_tlb_range() flushes
 * locally when only this hart is in mm_cpumask, else interrupts every hart of
 * the mask (this one included) directly, or makes one SBI remote-fence call
 * that the firmware fans out, by the topology's flush_hw.remote.  A hart flushes a range per
 * stride up to tlb_flush_all_threshold (64) strides, else its whole ASID.
 * The reclaim batch (54d7431af73e, 6.8) ORs each mm's cpumask in and ends
 * with one full sfence.vma (every ASID) on every hart of the mask.
 *
 * Models: the SBI path as an ecall (sbi_call cycles on the caller) followed by
 * the firmware's IPIs, whose handlers run on the targets like interrupts (the
 * M-mode trap costs irq_entry/irq_exit too); SiFive's CIP-1200 erratum
 * (flush_hw.full_flush_only): every sfence.vma flushes everything.
 * Simplifies: nr_tlb_* counters are counted as on x86, for comparison (the
 * riscv kernel has no such vmstat items); with ASIDs a hart keeps its bit in
 * the old mm's mask on a switch, since its TLB may still hold that ASID.
 * Invariant: when the caller goes on, every hart of the mask has flushed.
 */
#include <glib.h>
#include "tlbsim/kernel/tlbbatch.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

struct flush_tlb_range_data {
	uint16_t asid;
	bool all_asids; /* FLUSH_TLB_NO_ASID */
	uint64_t start;
	uint64_t end; /* FLUSH_ALL */
	unsigned stride_shift;
	struct kcont done;
	uint64_t local_done;
};

/* local_flush_tlb_range_threshold_asid(), from the caller (@reason
 * TLB_LOCAL_MM_SHOOTDOWN) or from the IPI handler (TLB_REMOTE_SHOOTDOWN). */
static uint64_t local_flush_tlb_range_asid(struct kernel *k, struct cpu *cpu,
					   const struct flush_tlb_range_data *d,
					   enum tlb_flush_reason reason)
{
	const struct topology *topo = k->machine->topology;
	uint64_t strides = d->end == FLUSH_ALL ? UINT64_MAX : (d->end - d->start) >> d->stride_shift;
	tlbflush_event(k, cpu, reason, d->start, d->end, TRACE_CURSOR);
	if (topo->full_flush_only || d->all_asids) {
		machine_flush_all(k->machine, cpu);
		return topo->costs.flush_all;
	}
	if (strides > k->policy->riscv_flush_all_threshold) {
		machine_flush_asid(k->machine, cpu, d->asid);
		return topo->costs.flush_all;
	}
	uint64_t cycles = 0;
	for (uint64_t i = 0; i < strides; i++) {
		machine_invlpg(k->machine, cpu, d->asid, d->start + (i << d->stride_shift));
		cycles += topo->costs.invlpg;
	}
	return cycles;
}

/* __ipi_flush_tlb_range_asid() */
static uint64_t ipi_flush_tlb_range_asid(struct kernel *k, struct cpu *cpu, uint64_t now,
					 void *info)
{
	(void)now;
	cpu->counters.nr_tlb_remote_flush_received++;
	return local_flush_tlb_range_asid(k, cpu, info, TLB_REMOTE_SHOOTDOWN);
}

static void flush_range_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct flush_tlb_range_data *d = ctx;
	struct kcont done = d->done;
	uint64_t at = MAX(time, d->local_done);
	kernel_release(k, d);
	kcont_call(k, done, at);
}

/* __flush_tlb_range(): takes ownership of @d. */
static void flush_tlb_range_mask(struct kernel *k, struct cpu *cpu, const struct mm *mask,
				 struct flush_tlb_range_data *d, uint64_t now)
{
	const struct topology *topo = k->machine->topology;
	bool local = mm_cpumask_test(mask, cpu->id);
	unsigned *targets = g_new(unsigned, k->machine->nr_cpus);
	unsigned nr = tlbflush_select_targets(k, cpu, mask, targets);
	uint64_t t = now, local_cost = 0;
	trace_kernel_step(k, cpu->id, now);
	if (nr == 0) {
		g_free(targets);
		if (local)
			t += local_flush_tlb_range_asid(k, cpu, d, TLB_LOCAL_MM_SHOOTDOWN);
		trace_local_flush(k, cpu->id, now, t - now);
		d->local_done = t;
		flush_range_done(k, d, t);
		return;
	}
	cpu->counters.nr_tlb_remote_flush++;
	if (topo->remote_flush == REMOTE_FLUSH_SBI) {
		cpu->counters.sbi_rfences++;
		t += topo->costs.sbi_call; /* sbi_remote_sfence_vma_asid(): trap to M-mode */
	}
	/* on_each_cpu_mask() runs the local flush after the sends, before waiting
	 * (the firmware does the same for its own hart). */
	if (local)
		local_cost = local_flush_tlb_range_asid(k, cpu, d, TLB_LOCAL_MM_SHOOTDOWN);
	d->local_done = t + nr * topo->costs.ipi_send + local_cost;
	trace_local_flush_late(k, cpu->id, d->local_done - local_cost, local_cost);
	struct kcont wait = {.fn = flush_range_done, .ctx = d};
	smp_call_function_many(k, cpu, targets, nr, ipi_flush_tlb_range_asid, d, t, wait);
	g_free(targets);
}

static void riscv_flush_tlb_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
				  const struct vma *vma, uint64_t start, uint64_t end,
				  unsigned stride_shift, bool freed_tables, uint64_t now,
				  const struct kcont *done)
{
	(void)vma;
	(void)freed_tables;
	struct flush_tlb_range_data *d = kernel_alloc(k, sizeof(*d));
	*d = (struct flush_tlb_range_data){.asid = tlbflush_mm_asid(k, mm), .start = start,
					   .end = end, .stride_shift = stride_shift,
					   .done = *done};
	flush_tlb_range_mask(k, cpu, mm, d, now);
}

static bool riscv_should_defer(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	(void)k;
	(void)cpu;
	(void)mm;
	return true;
}

static uint64_t riscv_batch_add_pending(struct kernel *k, struct cpu *cpu,
					struct tlbflush_unmap_batch *batch, struct mm *mm,
					uint64_t addr, uint64_t now)
{
	(void)k;
	(void)cpu;
	(void)addr;
	(void)now;
	tlbbatch_add_mask(batch, mm);
	return 0;
}

static void riscv_batch_flush(struct kernel *k, struct cpu *cpu, struct tlbflush_unmap_batch *batch,
			      uint64_t now, const struct kcont *done)
{
	struct flush_tlb_range_data *d = kernel_alloc(k, sizeof(*d));
	*d = (struct flush_tlb_range_data){.all_asids = true, .start = 0, .end = FLUSH_ALL,
					   .stride_shift = PAGE_SHIFT_4K, .done = *done};
	flush_tlb_range_mask(k, cpu, tlbbatch_mask(batch), d, now);
}

static void riscv_names(const struct topology *topology, struct flush_names *names)
{
	*names = (struct flush_names){.irq = "handle_IPI",
				      .handler = "ipi_flush_tlb_range_asid",
				      .local = "local_flush_tlb_range_asid"};
	if (topology->remote_flush == REMOTE_FLUSH_SBI) {
		/* The firmware interrupts the harts and fences in M-mode. */
		names->irq = "sbi_ipi (M-mode)";
		names->handler = "sbi_tlb_flush (M-mode)";
	}
}

const struct flush_arch_ops flush_arch_riscv = {
	.name = "riscv",
	.imitates = "arch/riscv/mm/tlbflush.c: __flush_tlb_range (IPIs or SBI remote fence), "
		    "arch_tlbbatch_* (54d7431af73e)",
	.arch = ARCH_RISCV,
	.flush_range = riscv_flush_tlb_range,
	.should_defer = riscv_should_defer,
	.batch_add_pending = riscv_batch_add_pending,
	.batch_flush = riscv_batch_flush,
	.batched_pending_flushes_mm = true,
	.names = riscv_names,
	.cpu_asid_of = tlbflush_mm_asid_of,
};

/* switch_mm() + set_mm(): ASID per mm, or a full local flush without ASIDs. */
static uint64_t riscv_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
				struct mm *next, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	(void)prev;
	uint64_t t = now;
	struct mm *old = ts->loaded_mm;
	ts->is_lazy = false;
	ts->active_mm = next;
	if (old == next)
		return 0;
	cpu->counters.switch_mm++;
	bool asids = k->machine->topology->hw_asids > 0;
	if (!mm_cpumask_test(next, cpu->id))
		t += tlbflush_cpumask_atomic(k, cpu, next, true, t);
	if (!asids && mm_cpumask_test(old, cpu->id))
		t += tlbflush_cpumask_atomic(k, cpu, old, false, t);
	ts->loaded_mm = next;
	ts->loaded_asid = tlbflush_mm_asid(k, next);
	t += k->machine->topology->costs.flush_all; /* satp write */
	if (!asids)
		machine_flush_all(k->machine, cpu);
	cpu->counters.switch_mm_cycles += t - now;
	return t - now;
}

const struct lazy_tlb_ops lazy_tlb_riscv = {
	.name = "riscv",
	.imitates = "arch/riscv/mm/context.c: switch_mm/set_mm (ASID per mm; lazy harts stay in "
		    "mm_cpumask)",
	.arch = ARCH_RISCV,
	.enter_lazy_tlb = lazy_tlb_keep_loaded,
	.switch_mm = riscv_switch_mm,
	/* Flushes never go through the x86 IPI handler: no should_flush or flush_tlb_func. */
};
