/*
 * PTI: each mm has a kernel PCID and a user PCID (Linux: kern_pcid(asid) and
 * user_pcid(asid) = asid | 0x800); every entry to the kernel from user space
 * switches CR3 to the kernel PCID and every return switches back, with the
 * NOFLUSH bit set unless the user PCID was marked for a flush
 * (user_pcid_flush_mask, invalidate_user_asid()).
 *
 * Models: the workload's accesses are user accesses, so every TLB entry the
 * model fills is a user-PCID entry, carried under the slot's tag as without
 * PTI; the model has no kernel access to user memory, so a kernel-PCID
 * INVLPG or CR3 write finds nothing and only costs its cycles.
 * flush_tlb_one_user() (4.15-5.x __flush_tlb_one_user()): INVLPG for the
 * kernel PCID, then INVPCID of the user PCID (invpcid_addr), or where the CPU
 * has no INVPCID (invpcid_addr 0) a mark that flushes the whole user PCID at
 * the next return to user; a full flush writes CR3 (flush_all) and marks.
 * Amit's "x86/mm/tlb: Defer PTI flushes" RFC ([E5], policy pti_user_flush
 * "deferred"): unless page tables were freed, or the CPU initiated a
 * shootdown (it waits for acks anyway), the user range is kept on the CPU and
 * INVLPGed right after the switch at the next return to user; a second
 * range before that return marks the whole user PCID instead, as does a
 * switch to another mm in between.
 * Simplifies: the LFENCE after the deferred INVLPGs is not charged; switch_mm's
 * flush of a PCID that needs one drops the user entries at the switch (Linux
 * marks them, and the next return flushes: the same entries at the next user
 * access); a mark when page tables were freed drops the user entries at once
 * (same TLB at the next user access), because the freed-table checker cannot
 * tell a kernel-mode CPU's idle user-PCID walk caches from live ones.  An
 * interrupt that returns to the kernel applies what is pending, without the
 * CR3 switch, where Linux waits for the task's own return: a task switched in
 * meanwhile may run user code with no return path the model sees.
 * Invariant: no user access on a CPU while its loaded PCID has a pending
 * flush: pending flushes are made only in the kernel and applied at every
 * return (vm.c, fork.c, smp.c, sched.c call pti_return_to_user()).
 */
#include <glib.h>
#include "tlbsim/kernel/pti.h"

static const struct topology_costs *costs_of(const struct kernel *k)
{
	return &k->machine->topology->costs;
}

uint64_t pti_enter_kernel(const struct kernel *k)
{
	return k->policy->pti ? costs_of(k)->cr3_switch : 0;
}

/* invalidate_user_asid(): flush the slot's user PCID at its next return. */
static void mark_user_pcid(struct kernel *k, struct cpu *cpu, unsigned slot, bool freed_tables)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	ts->user_pcid_flush_mask |= 1u << slot;
	if (freed_tables && slot == ts->loaded_slot)
		machine_flush_asid(k->machine, cpu, ts->loaded_asid);
}

/* The deferred range of @slot, kept until the next return to user. */
static void defer_user_range(struct kernel *k, struct cpu *cpu, const struct flush_tlb_info *f)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (ts->deferred_end != 0 &&
	    (ts->deferred_slot != ts->loaded_slot || ts->deferred_start != f->start ||
	     ts->deferred_end != f->end || ts->deferred_shift != f->stride_shift)) {
		/* A second range: tracking both costs more than it saves (RFC). */
		mark_user_pcid(k, cpu, ts->deferred_slot, false);
		mark_user_pcid(k, cpu, ts->loaded_slot, false);
		ts->deferred_end = 0;
		return;
	}
	if (ts->deferred_end == 0)
		cpu->counters.pti_user_flushes_deferred++;
	ts->deferred_slot = ts->loaded_slot;
	ts->deferred_start = f->start;
	ts->deferred_end = f->end;
	ts->deferred_shift = f->stride_shift;
}

uint64_t pti_flush(struct kernel *k, struct cpu *cpu, const struct flush_tlb_info *f, bool full,
		   bool local)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	const struct topology_costs *costs = costs_of(k);
	if (full) { /* CR3 write on the kernel PCID, then the user PCID's mark */
		mark_user_pcid(k, cpu, ts->loaded_slot, f->freed_tables);
		return costs->flush_all;
	}
	uint64_t strides = (f->end - f->start) >> f->stride_shift;
	uint64_t cycles = strides * costs->invlpg; /* kernel PCID: nothing to find */
	bool defer = k->policy->pti_user_flush == PTI_USER_FLUSH_DEFERRED && !f->freed_tables &&
		     !(local && f->initiator_waits);
	if (defer) {
		defer_user_range(k, cpu, f);
		return cycles;
	}
	if (costs->invpcid_addr == 0) {
		mark_user_pcid(k, cpu, ts->loaded_slot, f->freed_tables);
		return cycles;
	}
	for (uint64_t addr = f->start; addr < f->end; addr += UINT64_C(1) << f->stride_shift)
		machine_invlpg(k->machine, cpu, ts->loaded_asid, addr); /* INVPCID, user PCID */
	return cycles + strides * costs->invpcid_addr;
}

/* The deferred range's INVLPGs, if it is still the loaded PCID's. */
static uint64_t flush_deferred(struct kernel *k, struct cpu *cpu)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	uint64_t cycles = 0;
	if (ts->deferred_end == 0)
		return 0;
	if (ts->deferred_slot != ts->loaded_slot) {
		mark_user_pcid(k, cpu, ts->deferred_slot, false);
	} else if (!(ts->user_pcid_flush_mask & (1u << ts->loaded_slot))) {
		for (uint64_t a = ts->deferred_start; a < ts->deferred_end;
		     a += UINT64_C(1) << ts->deferred_shift) {
			machine_invlpg(k->machine, cpu, ts->loaded_asid, a);
			cycles += costs_of(k)->invlpg;
		}
	}
	ts->deferred_end = 0;
	return cycles;
}

uint64_t pti_return_to_user(struct kernel *k, struct cpu *cpu, bool to_user)
{
	if (!k->policy->pti)
		return 0;
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	uint64_t cycles = to_user ? costs_of(k)->cr3_switch : 0;
	cycles += flush_deferred(k, cpu);
	unsigned bit = 1u << ts->loaded_slot;
	if (ts->user_pcid_flush_mask & bit) { /* NOFLUSH clear: the CR3 write flushes */
		ts->user_pcid_flush_mask &= ~bit;
		machine_flush_asid(k->machine, cpu, ts->loaded_asid);
		cpu->counters.pti_user_flush_all++;
	}
	return cycles;
}
