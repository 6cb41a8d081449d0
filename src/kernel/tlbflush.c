/*
 * The TLB-flush code every architecture and era shares (arch/x86/mm/tlb.c
 * and its arm64/riscv counterparts have their own in arch/): the per-CPU TLB
 * state, the tlb:tlb_flush event, local flushes, cpumask atomics, target
 * selection and ASIDs, and flush_tlb_mm_range(), which hands the range to
 * the policy's architecture.
 */
#include <glib.h>
#include "tlbsim/kernel/tlbflush.h"

static const struct topology_costs *costs_of(const struct kernel *k)
{
	return &k->machine->topology->costs;
}

uint16_t tlbflush_mm_asid(const struct kernel *k, const struct mm *mm)
{
	unsigned asids = k->machine->topology->hw_asids;
	if (asids < 2 || mm == k->init_mm)
		return 0;
	/* ASID 0 is reserved (the kernel's); no rollover is modelled. */
	return (uint16_t)(1 + mm->id % (asids - 1));
}

int tlbflush_cpu_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	return k->policy->arch->cpu_asid_of(k, cpu, mm);
}

int tlbflush_mm_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	bool asids = k->machine->topology->hw_asids > 0;
	return asids || tlbflush_state(k, cpu)->loaded_mm == mm ? tlbflush_mm_asid(k, mm) : -1;
}

uint64_t lazy_tlb_keep_loaded(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	(void)now;
	tlbflush_state(k, cpu)->is_lazy = true;
	return 0;
}

void tlbflush_init(struct kernel *k)
{
	k->tlbstate = g_new0(struct cpu_tlbstate, k->machine->nr_cpus);
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu_tlbstate *ts = &k->tlbstate[c];
		ts->loaded_mm = k->init_mm;
		ts->active_mm = k->init_mm;
		ts->is_lazy = true;
		ts->next_asid = 1;
		ts->flush_nodes = FLUSH_NODES_ALL;
		ts->ctxs[0] = (struct tlb_context){.mm = k->init_mm, .tlb_gen = 0};
		mm_cpumask_set(k->init_mm, c);
	}
}

void tlbflush_exit(struct kernel *k)
{
	g_free(k->tlbstate);
	k->tlbstate = NULL;
}

uint64_t tlbflush_cpumask_atomic(struct kernel *k, struct cpu *cpu, struct mm *mm, bool set,
				 uint64_t now)
{
	uint64_t end = fabric_line_rmw(k->machine->fabric, &mm->cpumask_line, cpu->id, now);
	if (set)
		mm_cpumask_set(mm, cpu->id);
	else
		mm_cpumask_clear(mm, cpu->id);
	cpu->counters.cpumask_atomics++;
	return end - now;
}

void tlbflush_event(struct kernel *k, struct cpu *cpu, enum tlb_flush_reason reason,
		    uint64_t start, uint64_t end, uint64_t at)
{
	cpu->counters.tlb_flush_events++;
	(*tlb_flush_reason_counter(&cpu->counters, reason, false))++;
	if (end == FLUSH_ALL)
		(*tlb_flush_reason_counter(&cpu->counters, reason, true))++;
	trace_tlb_flush(k, cpu->id, reason,
			end == FLUSH_ALL ? -1 : (int64_t)((end - start) >> PAGE_SHIFT_4K), at);
}

uint64_t tlbflush_local_all(struct kernel *k, struct cpu *cpu)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	machine_flush_asid(k->machine, cpu, ts->loaded_asid);
	return costs_of(k)->flush_all;
}

uint64_t tlbflush_local_range(struct kernel *k, struct cpu *cpu, uint64_t start, uint64_t end,
			      unsigned stride_shift)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	uint64_t cycles = 0;
	for (uint64_t addr = start; addr < end; addr += UINT64_C(1) << stride_shift) {
		machine_invlpg(k->machine, cpu, ts->loaded_asid, addr);
		cycles += costs_of(k)->invlpg;
	}
	return cycles;
}

/* A user mm's context slot that a hardware invalidation of @mm (NULL:
 * every user mm) reaches. */
static bool hw_reaches(const struct kernel *k, const struct tlb_context *ctx, const struct mm *mm)
{
	return ctx->mm && ctx->mm != k->init_mm && (!mm || ctx->mm == mm);
}

/* The tag slot @slot's entries carry (one tag for all without PCIDs). */
static uint16_t hw_tag(const struct kernel *k, unsigned slot)
{
	bool pcid = k->policy->pcid && k->machine->topology->hw_asids > 0;
	return pcid ? (uint16_t)(slot + 1) : 0;
}

/* Current again only if this was the one flush it missed: an older one
 * skipped while it was lazy still needs its catch-up (the kernel moves the
 * mm to a fresh global PCID instead). */
static void hw_catch_up(struct tlb_context *ctx, uint64_t new_tlb_gen)
{
	if (new_tlb_gen != TLB_GENERATION_INVALID && ctx->tlb_gen + 1 == new_tlb_gen)
		ctx->tlb_gen = new_tlb_gen;
}

void tlbflush_hw_invalidate_cpu(struct kernel *k, struct cpu *cpu, const struct mm *mm,
				uint64_t start, uint64_t end, unsigned stride_shift,
				uint64_t new_tlb_gen)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	for (unsigned slot = 0; slot < TLB_NR_DYN_ASIDS; slot++) {
		struct tlb_context *ctx = &ts->ctxs[slot];
		if (!hw_reaches(k, ctx, mm))
			continue;
		uint16_t tag = hw_tag(k, slot);
		if (end == FLUSH_ALL)
			machine_broadcast_invalidate_cpu(k->machine, cpu, tag, MACHINE_ALL_VADDR);
		else
			for (uint64_t a = start; a < end; a += UINT64_C(1) << stride_shift)
				machine_broadcast_invalidate_cpu(k->machine, cpu, tag, a);
		hw_catch_up(ctx, new_tlb_gen);
	}
}

bool tlbflush_hw_holds(const struct kernel *k, const struct cpu *cpu, const struct mm *mm,
		       uint64_t start, uint64_t end, unsigned stride_shift, bool pwc)
{
	const struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	for (unsigned slot = 0; slot < TLB_NR_DYN_ASIDS; slot++) {
		if (!hw_reaches(k, &ts->ctxs[slot], mm))
			continue;
		uint16_t tag = hw_tag(k, slot);
		if (end == FLUSH_ALL || pwc) {
			uint64_t vaddr = end == FLUSH_ALL ? MACHINE_ALL_VADDR : start;
			if (machine_cpu_holds(k->machine, cpu, tag, vaddr, pwc))
				return true;
		}
		uint64_t stride = UINT64_C(1) << stride_shift;
		for (uint64_t a = start; end != FLUSH_ALL && a < end; a += stride)
			if (machine_cpu_holds(k->machine, cpu, tag, a, false))
				return true;
	}
	return false;
}

void tlbflush_hw_catch_up_cpu(struct kernel *k, struct cpu *cpu, const struct mm *mm,
			      uint64_t new_tlb_gen)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	for (unsigned slot = 0; slot < TLB_NR_DYN_ASIDS; slot++)
		if (hw_reaches(k, &ts->ctxs[slot], mm))
			hw_catch_up(&ts->ctxs[slot], new_tlb_gen);
}

unsigned tlbflush_check_acked_flushes(struct kernel *k, const struct mm *mm, uint64_t span,
				      uint64_t time)
{
	unsigned found = 0;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		const struct cpu_tlbstate *ts = &k->tlbstate[c];
		if (ts->acked_mm != mm || ts->acked_flush_end <= time)
			continue;
		machine_report_stale_pwc(&k->machine->cpus[c], span, time);
		found++;
	}
	return found;
}

unsigned tlbflush_select_targets(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, unsigned *targets)
{
	return k->policy->targets->select(k, self, mm, tlbflush_state(k, self)->flush_nodes,
					  targets);
}

void flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, unsigned stride_shift, bool freed_tables,
			uint64_t now, struct kcont done)
{
	k->policy->arch->flush_range(k, cpu, mm, vma, start, end, stride_shift, freed_tables, now,
				     &done);
}

/*
 * numaPTE: flush_tlb_mm_range() whose shootdown reaches only the CPUs on
 * @nodes.  native_flush_tlb_others() selects its targets synchronously
 * inside the call, so the mask rides on the initiator's state for the call
 * only.  No such CPU: the local flush alone, as if the mask held no other.
 */
static void flush_tlb_nodes(struct kernel *k, struct cpu *cpu, struct mm *mm,
			    const struct vma *vma, uint64_t start, uint64_t end,
			    unsigned stride_shift, uint64_t nodes, uint64_t now, struct kcont done)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	unsigned *targets = g_new(unsigned, k->machine->nr_cpus);
	unsigned nr = k->policy->targets->select(k, cpu, mm, nodes, targets);
	g_free(targets);
	if (nr == 0) {
		k->policy->arch->flush_range_local(k, cpu, mm, vma, start, end, stride_shift,
						   false, now, &done);
		return;
	}
	ts->flush_nodes = nodes;
	flush_tlb_mm_range(k, cpu, mm, vma, start, end, stride_shift, false, now, done);
	ts->flush_nodes = FLUSH_NODES_ALL;
}

void flush_tlb_gathered(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, unsigned stride_shift, bool freed_tables,
			const struct tlb_access *seen, uint64_t now, struct kcont done)
{
	const struct flush_targets_ops *targets = k->policy->targets;
	enum flush_reach reach =
	    targets->reach ? targets->reach(k, cpu, seen, freed_tables) : FLUSH_REACH_MM;
	switch (reach) {
	case FLUSH_REACH_NONE:
		kcont_call(k, done, now);
		return;
	case FLUSH_REACH_LOCAL:
		k->policy->arch->flush_range_local(k, cpu, mm, vma, start, end, stride_shift,
						   freed_tables, now, &done);
		return;
	case FLUSH_REACH_NODES:
		flush_tlb_nodes(k, cpu, mm, vma, start, end, stride_shift, seen->nodes, now, done);
		return;
	case FLUSH_REACH_MM:
		break;
	}
	flush_tlb_mm_range(k, cpu, mm, vma, start, end, stride_shift, freed_tables, now, done);
}
