/*
 * Lazy TLB mode, mm switching and the flush handler, era by era (x86
 * arch/x86/mm/tlb.c: enter_lazy_tlb, switch_mm_irqs_off, leave_mm,
 * flush_tlb_func; references.md, 'Linux: lazy TLB up to 4.13' and the lazy-TLB
 * sections after it).
 *
 * Eras (each a struct lazy_tlb_ops):
 * - strict (3.x-4.13): a lazy CPU keeps the old mm and its mm_cpumask bit; the
 *   first shootdown reaches it and it leaves the mm (leave_mm).  No PCIDs: every
 *   mm switch writes CR3 and flushes.
 * - pcid (4.14-4.18): 6 PCIDs per CPU; with PCIDs a CPU switches to init_mm at
 *   once instead of going lazy (tlb_defer_switch_to_init_mm() is false), so it
 *   leaves mm_cpumask.  Without PCIDs it defers, stays in the mask and handles
 *   flushes as if it ran the mm.  Flushes are generation-tracked (tlb_gen).
 * - lazier (4.20-6.13, Rik van Riel): always lazy; lazy CPUs stay in
 *   mm_cpumask but are skipped unless page tables were freed, and catch up by
 *   tlb_gen when they return; no cpumask atomics for init_mm.
 * - trimmed (6.14+): a switch no longer clears the old mm's bit; a CPU that
 *   gets a flush for an mm it left clears its bit then (TLB_REMOTE_WRONG_CPU);
 *   such CPUs get flushes only once per second per mm (trim_cpumask).
 * Invariant (all x86 eras): a CPU's ctxs[slot].tlb_gen never exceeds its mm's
 * tlb_gen, and a CPU running an mm is current once every flush it was sent
 * has been handled.
 */
#include <glib.h>
#include "tlbsim/kernel/pti.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

static const struct topology_costs *costs_of(const struct kernel *k)
{
	return &k->machine->topology->costs;
}

static bool use_pcid(const struct kernel *k)
{
	return k->policy->pcid && k->machine->topology->hw_asids > 0;
}

/* choose_new_asid(): reuse @next's PCID if this CPU still has one for it. */
static void choose_new_asid(const struct kernel *k, struct cpu *cpu, const struct mm *next,
			    unsigned *slot, bool *need_flush)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (!use_pcid(k)) {
		*slot = 0;
		*need_flush = true;
		return;
	}
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++) {
		if (ts->ctxs[i].mm != next)
			continue;
		*slot = i;
		*need_flush = ts->ctxs[i].tlb_gen < next->tlb_gen;
		return;
	}
	*slot = ts->next_asid;
	ts->next_asid = (ts->next_asid + 1) % TLB_NR_DYN_ASIDS;
	*need_flush = true;
}

/* load_new_mm_cr3(): CR3 := @next's tables with PCID @slot, flushing it if
 * @need_flush (otherwise with the NOFLUSH bit). */
static uint64_t load_new_mm_cr3(struct kernel *k, struct cpu *cpu, struct mm *next,
				unsigned slot, bool need_flush)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	ts->loaded_mm = next;
	ts->loaded_slot = slot;
	ts->loaded_asid = use_pcid(k) ? (uint16_t)(slot + 1) : 0;
	if (need_flush) {
		machine_flush_asid(k->machine, cpu, ts->loaded_asid);
		/* A PCID that changes hands loses the old mm. */
		ts->ctxs[slot].mm = next;
	}
	ts->ctxs[slot].tlb_gen = next->tlb_gen;
	tlbflush_event(k, cpu, TLB_FLUSH_ON_TASK_SWITCH, 0, need_flush ? FLUSH_ALL : 0,
		       TRACE_CURSOR);
	return costs_of(k)->flush_all;
}

/* Cycles spent switching mm (any era), counted once here for switch_mm_cycles. */
static uint64_t account_switch(struct cpu *cpu, uint64_t cycles)
{
	cpu->counters.switch_mm_cycles += cycles;
	return cycles;
}

/* ---- strict (3.x-4.13) ---------------------------------------------------- */

/* leave_mm(): a lazy CPU stops receiving flushes for the mm it borrows. */
static uint64_t leave_mm(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	struct mm *mm = ts->active_mm;
	if (!mm_cpumask_test(mm, cpu->id))
		return 0;
	uint64_t cost = tlbflush_cpumask_atomic(k, cpu, mm, false, now);
	return cost + load_new_mm_cr3(k, cpu, k->init_mm, 0, true);
}

static uint64_t strict_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
				 struct mm *next, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	(void)prev;
	uint64_t t = now;
	struct mm *old = ts->active_mm;
	ts->is_lazy = false;
	if (old != next) {
		ts->active_mm = next;
		cpu->counters.switch_mm++;
		t += tlbflush_cpumask_atomic(k, cpu, next, true, t);
		t += load_new_mm_cr3(k, cpu, next, 0, true);
		t += tlbflush_cpumask_atomic(k, cpu, old, false, t);
		return account_switch(cpu, t - now);
	}
	if (!mm_cpumask_test(next, cpu->id)) {
		/* leave_mm() ran while we were lazy: flushes stopped reaching us,
		 * so the TLB may hold freed translations. */
		t += tlbflush_cpumask_atomic(k, cpu, next, true, t);
		t += load_new_mm_cr3(k, cpu, next, 0, true);
	}
	return account_switch(cpu, t - now);
}

static bool all_should_flush(const struct kernel *k, const struct cpu *target,
			     const struct flush_tlb_info *info)
{
	(void)k;
	(void)target;
	(void)info;
	return true;
}

/*
 * The reason flush_tlb_func() traces: a target's is a remote shootdown; the
 * initiator's a local mm shootdown, or a local shootdown for a request that
 * names no mm (the reclaim batch: flush_tlb_func_local(info,
 * TLB_LOCAL_SHOOTDOWN) in arch_tlbbatch_flush() up to 5.12, "f->mm == NULL"
 * in the unified handler since).
 */
static enum tlb_flush_reason flush_reason(const struct flush_tlb_info *f, bool local)
{
	if (!local)
		return TLB_REMOTE_SHOOTDOWN;
	return f->mm ? TLB_LOCAL_MM_SHOOTDOWN : TLB_LOCAL_SHOOTDOWN;
}

/* The flush itself once the handler decided to do it. */
static uint64_t do_flush(struct kernel *k, struct cpu *cpu, const struct flush_tlb_info *f,
			 bool full, bool local)
{
	tlbflush_event(k, cpu, flush_reason(f, local), f->start, full ? FLUSH_ALL : f->end,
		       TRACE_CURSOR);
	uint64_t cycles;
	if (local && full)
		cpu->counters.nr_tlb_local_flush_all++;
	else if (local)
		cpu->counters.nr_tlb_local_flush_one += (f->end - f->start) >> f->stride_shift;
	if (k->policy->pti) /* a kernel and a user PCID to flush */
		cycles = pti_flush(k, cpu, f, full, local);
	else if (full)
		cycles = tlbflush_local_all(k, cpu);
	else
		cycles = tlbflush_local_range(k, cpu, f->start, f->end, f->stride_shift);
	if (local)
		cpu->counters.local_flush_cycles += cycles;
	return cycles;
}

/* 4.5 flush_tlb_func() / the local half of flush_tlb_mm_range(). */
static uint64_t strict_flush_tlb_func(struct kernel *k, struct cpu *cpu,
				      const struct flush_tlb_info *f, bool local, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (local)
		return do_flush(k, cpu, f, f->end == FLUSH_ALL, true);
	if (f->mm && f->mm != ts->active_mm)
		return 0;
	cpu->counters.nr_tlb_remote_flush_received++;
	if (ts->is_lazy)
		return leave_mm(k, cpu, now);
	return do_flush(k, cpu, f, f->mm == NULL || f->end == FLUSH_ALL, false);
}

const struct lazy_tlb_ops lazy_tlb_strict = {
	.name = "strict",
	.imitates = "enter_lazy_tlb/switch_mm/leave_mm/flush_tlb_func, Linux 3.x-4.13",
	.arch = ARCH_X86,
	.remote_full_if_not_loaded = true,
	.tracks_tlb_gen = false,
	.enter_lazy_tlb = lazy_tlb_keep_loaded,
	.switch_mm = strict_switch_mm,
	.should_flush = all_should_flush,
	.flush_tlb_func = strict_flush_tlb_func,
};

/* ---- generation-tracked eras (4.14+) -------------------------------------- */

/*
 * switch_mm_irqs_off() to a different mm.  @clear_prev: clear this CPU's bit
 * in the old mm (all but 6.14+); @init_mm_atomics: also for init_mm (4.14-4.19).
 */
static uint64_t switch_to_other_mm(struct kernel *k, struct cpu *cpu, struct mm *next,
				   bool clear_prev, bool init_mm_atomics, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	uint64_t t = now;
	struct mm *prev = ts->loaded_mm;
	cpu->counters.switch_mm++;
	if (clear_prev && (prev != k->init_mm || init_mm_atomics) &&
	    mm_cpumask_test(prev, cpu->id))
		t += tlbflush_cpumask_atomic(k, cpu, prev, false, t);
	if ((next != k->init_mm || init_mm_atomics) && !mm_cpumask_test(next, cpu->id))
		t += tlbflush_cpumask_atomic(k, cpu, next, true, t);
	unsigned slot;
	bool need_flush;
	choose_new_asid(k, cpu, next, &slot, &need_flush);
	t += load_new_mm_cr3(k, cpu, next, slot, need_flush);
	ts->active_mm = next;
	return t - now;
}

/* The tlb_gen algorithm shared by every era since 4.14 (references.md, 'Linux: flush
 * generations (4.14+)'). */
static uint64_t flush_tlb_func_gen(struct kernel *k, struct cpu *cpu,
				   const struct flush_tlb_info *f, bool local, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	struct mm *mm = ts->loaded_mm;
	struct tlb_context *ctx = &ts->ctxs[ts->loaded_slot];
	uint64_t local_gen = ctx->tlb_gen, mm_gen = mm->tlb_gen;
	if (f->new_tlb_gen != TLB_GENERATION_INVALID && f->new_tlb_gen <= local_gen)
		return 0; /* already done, by a flush that covered it */
	/* atomic64_read(&mm->context.tlb_gen): the flusher's RMW made it the
	 * flusher's line (free for the initiator itself). */
	uint64_t read = fabric_line_read(k->machine->fabric, &mm->context_line, cpu->id, now) - now;
	if (local_gen == mm_gen) {
		tlbflush_event(k, cpu, flush_reason(f, local), 0, 0, TRACE_CURSOR);
		return read;
	}
	bool partial = f->end != FLUSH_ALL && f->new_tlb_gen == local_gen + 1 &&
		       f->new_tlb_gen == mm_gen;
	ctx->tlb_gen = mm_gen;
	return read + do_flush(k, cpu, f, !partial, local);
}

/* 4.14 flush_tlb_func_common(): no lazy state; init_mm has nothing to flush. */
static uint64_t pcid_flush_tlb_func(struct kernel *k, struct cpu *cpu,
				    const struct flush_tlb_info *f, bool local, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (!local) {
		if (f->mm && f->mm != ts->loaded_mm)
			return 0;
		cpu->counters.nr_tlb_remote_flush_received++;
	}
	if (ts->loaded_mm == k->init_mm)
		return 0;
	return flush_tlb_func_gen(k, cpu, f, local, now);
}

static uint64_t pcid_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
			       struct mm *next, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	(void)prev;
	ts->is_lazy = false;
	if (ts->loaded_mm == next) {
		ts->active_mm = next;
		return 0; /* a deferred-lazy CPU kept handling flushes */
	}
	return account_switch(cpu, switch_to_other_mm(k, cpu, next, true, true, now));
}

static uint64_t pcid_enter_lazy_tlb(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (ts->loaded_mm == k->init_mm)
		return 0;
	if (!use_pcid(k)) {
		ts->is_lazy = true; /* tlb_defer_switch_to_init_mm() */
		return 0;
	}
	return account_switch(cpu, switch_to_other_mm(k, cpu, k->init_mm, true, true, now));
}

const struct lazy_tlb_ops lazy_tlb_pcid = {
	.name = "pcid",
	.imitates = "switch_mm_irqs_off/enter_lazy_tlb with PCID, Linux 4.14-4.18 "
		    "(Lutomirski, 10af6235e0d3)",
	.arch = ARCH_X86,
	.remote_full_if_not_loaded = false,
	.tracks_tlb_gen = true,
	.enter_lazy_tlb = pcid_enter_lazy_tlb,
	.switch_mm = pcid_switch_mm,
	.should_flush = all_should_flush,
	.flush_tlb_func = pcid_flush_tlb_func,
};

static uint64_t lazier_enter_lazy_tlb(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	(void)now;
	if (ts->loaded_mm != k->init_mm)
		ts->is_lazy = true;
	return 0;
}

/* switch_mm_irqs_off() since 4.20; @clear_prev false from 6.14. */
static uint64_t lazier_switch(struct kernel *k, struct cpu *cpu, struct mm *next, bool clear_prev,
			      uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	bool was_lazy = ts->is_lazy;
	ts->is_lazy = false;
	if (ts->loaded_mm != next)
		return account_switch(cpu, switch_to_other_mm(k, cpu, next, clear_prev, false, now));
	ts->active_mm = next;
	if (!was_lazy)
		return 0; /* a thread switch inside the process */
	/* Back from lazy mode: flushes skipped us, catch up by generation. */
	struct tlb_context *ctx = &ts->ctxs[ts->loaded_slot];
	if (ctx->tlb_gen == next->tlb_gen)
		return 0;
	return account_switch(cpu, load_new_mm_cr3(k, cpu, next, ts->loaded_slot, true));
}

static uint64_t lazier_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
				 struct mm *next, uint64_t now)
{
	(void)prev;
	return lazier_switch(k, cpu, next, true, now);
}

/* tlb_is_not_lazy(), unless page tables were freed (then every CPU in the mask). */
static bool lazier_should_flush(const struct kernel *k, const struct cpu *target,
				const struct flush_tlb_info *info)
{
	struct cpu_tlbstate *target_ts = tlbflush_state(k, target);
	if (info->freed_tables && k->policy->lazy_table_free_ipi)
		return true;
	return !target_ts->is_lazy;
}

/*
 * flush_tlb_func_common() since 4.20: nothing to do on init_mm; a lazy CPU
 * leaves lazy mode for init_mm (switch_mm_irqs_off(NULL, &init_mm): it stops
 * using the freed tables), clearing its bit in the old mm if @clear_prev
 * (before 6.14); a CPU running the mm catches up by generation.
 */
static uint64_t lazier_flush_common(struct kernel *k, struct cpu *cpu,
				    const struct flush_tlb_info *f, bool local, bool clear_prev,
				    uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (ts->loaded_mm == k->init_mm)
		return 0;
	if (ts->is_lazy) {
		ts->is_lazy = false;
		return account_switch(
		    cpu, switch_to_other_mm(k, cpu, k->init_mm, clear_prev, false, now));
	}
	return flush_tlb_func_gen(k, cpu, f, local, now);
}

/* 4.20-6.13 flush_tlb_func_remote() + flush_tlb_func_common(). */
static uint64_t lazier_flush_tlb_func(struct kernel *k, struct cpu *cpu,
				      const struct flush_tlb_info *f, bool local, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (!local) {
		if (f->mm && f->mm != ts->loaded_mm)
			return 0;
		cpu->counters.nr_tlb_remote_flush_received++;
	}
	return lazier_flush_common(k, cpu, f, local, true, now);
}

const struct lazy_tlb_ops lazy_tlb_lazier = {
	.name = "lazier",
	.imitates = "Rik van Riel's 'make lazy TLB mode even lazier', Linux 4.20-6.13 "
		    "(ac0315896970, 016c4d92cd16)",
	.arch = ARCH_X86,
	.remote_full_if_not_loaded = false,
	.tracks_tlb_gen = true,
	.enter_lazy_tlb = lazier_enter_lazy_tlb,
	.switch_mm = lazier_switch_mm,
	.should_flush = lazier_should_flush,
	.flush_tlb_func = lazier_flush_tlb_func,
};

static uint64_t trimmed_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev,
				  struct mm *next, uint64_t now)
{
	(void)prev;
	return lazier_switch(k, cpu, next, false, now);
}

/* should_flush_tlb() today: lazy CPUs never, CPUs that left the mm on trims. */
static bool trimmed_should_flush(const struct kernel *k, const struct cpu *target,
				 const struct flush_tlb_info *info)
{
	struct cpu_tlbstate *target_ts = tlbflush_state(k, target);
	if (info->freed_tables && k->policy->lazy_table_free_ipi)
		return true;
	if (target_ts->is_lazy)
		return false;
	if (!info->mm || target_ts->loaded_mm == info->mm)
		return true;
	return info->trim_cpumask;
}

static uint64_t trimmed_flush_tlb_func(struct kernel *k, struct cpu *cpu,
				       const struct flush_tlb_info *f, bool local, uint64_t now)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (!local) {
		cpu->counters.nr_tlb_remote_flush_received++;
		if (f->mm && f->mm != ts->loaded_mm) {
			/* TLB_REMOTE_WRONG_CPU: trim our stale bit. */
			tlbflush_event(k, cpu, TLB_REMOTE_WRONG_CPU, 0, 0, now);
			return tlbflush_cpumask_atomic(k, cpu, f->mm, false, now);
		}
	}
	return lazier_flush_common(k, cpu, f, local, false, now);
}

const struct lazy_tlb_ops lazy_tlb_trimmed = {
	.name = "trimmed",
	.imitates = "lazily updated mm_cpumask trimmed once a second, Linux 6.14+ "
		    "(209954cbc7d0, 6db2526c1d69)",
	.arch = ARCH_X86,
	.remote_full_if_not_loaded = false,
	.tracks_tlb_gen = true,
	.enter_lazy_tlb = lazier_enter_lazy_tlb,
	.switch_mm = trimmed_switch_mm,
	.should_flush = trimmed_should_flush,
	.flush_tlb_func = trimmed_flush_tlb_func,
};
