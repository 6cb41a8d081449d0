/*
 * arch/x86/mm/tlb.c: flush_tlb_mm_range(), native_flush_tlb_others(), the
 * range rules, INVLPGB broadcasts and the reclaim batch (lazytlb.c has the
 * eras' mm switching and flush handler).
 *
 * Models: flush_tlb_mm_range() decides once, on the initiator, between a range
 * and a full flush (the policy's range rule, with the era's handling of huge
 * pages); flushes locally (before the IPIs, or overlapping them from 5.13);
 * then, if any other CPU is in mm_cpumask, native_flush_tlb_others() counts
 * the request, picks targets (the policy's selection, then the era's
 * should_flush filter) and waits for every acknowledgement.  The handler is
 * the era's flush_tlb_func (lazytlb.c).
 * Simplifies: no global pages; PTI (policy pti) is pti.c's, called from the
 * handler's flush (lazytlb.c).
 * Invariant: a CPU whose bit is clear in mm_cpumask(mm) and that runs another
 * mm holds no entry of mm that predates a flush it was not sent, unless its
 * PCID slot's tlb_gen says so (then switch_mm flushes it).
 */
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"
#include "tlbsim/kernel/tlbbatch.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

/* 6.14 trims stale mm_cpumask bits at most once a second (HZ jiffies). */
#define TRIM_INTERVAL_NS UINT64_C(1000000000)

static const struct topology_costs *costs_of(const struct kernel *k)
{
	return &k->machine->topology->costs;
}

/* The cycles the initiator sends for before its concurrent local flush. */
static uint64_t local_flush_sends(const struct kernel *k, unsigned nr)
{
	switch (k->policy->transport->local_flush_start) {
	case LOCAL_FLUSH_AFTER_EACH_SEND:
	case LOCAL_FLUSH_BY_TRANSPORT:
		return nr * costs_of(k)->ipi_send;
	case LOCAL_FLUSH_AFTER_ONE_SEND:
		return nr ? costs_of(k)->ipi_send : 0;
	case LOCAL_FLUSH_AT_ONCE:
		return 0;
	}
	g_assert_not_reached();
}

/*
 * native_flush_tlb_others() / native_flush_tlb_multi(): count, pick targets,
 * and hand them to the policy's transport (IPIs and a wait, in Linux).
 * Counted even if no target is left (4.20+ filters after counting).  Takes
 * ownership of @info.
 */
static void native_flush_tlb_others(struct kernel *k, struct cpu *cpu, struct flush_tlb_info *info,
				    const struct mm *mask_mm, uint64_t now, uint64_t local_cost)
{
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	cpu->counters.nr_tlb_remote_flush++;
	tlbflush_event(k, cpu, TLB_REMOTE_SEND_IPI, info->start, info->end, now);
	unsigned *targets = g_new(unsigned, k->machine->nr_cpus);
	unsigned kept = 0;
	if (k->policy->targets->sharers) {
		kept = k->policy->targets->sharers(k, cpu, info, targets);
	} else {
		unsigned nr = tlbflush_select_targets(k, cpu, mask_mm, targets);
		for (unsigned i = 0; i < nr; i++)
			if (lazy->should_flush(k, &k->machine->cpus[targets[i]], info))
				targets[kept++] = targets[i];
	}
	/* 5.13+: the local flush runs after the sends, while the IPIs fly. */
	info->local_cost = local_cost;
	info->local_done = now + local_flush_sends(k, kept) + local_cost;
	trace_local_flush_late(k, cpu->id, info->local_done - local_cost, local_cost);
	k->policy->transport->send(k, cpu, targets, kept, info, now);
	g_free(targets);
}

/* ---- INVLPGB (Rik van Riel; references.md, 'Linux: AMD INVLPGB (6.15)') -- */

static bool invlpgb_enabled(const struct kernel *k)
{
	return k->policy->invlpgb && k->machine->topology->invlpgb_count_max > 0;
}

/*
 * consider_global_asid(): an mm active (loaded, not lazy) on more than 3 CPUs
 * gets a global ASID, after which its flushes are broadcast.  The kernel
 * checks 1 time in 32 (pid vs jiffies); here after every IPI flush.
 */
static void consider_global_asid(struct kernel *k, struct mm *mm)
{
	if (!invlpgb_enabled(k) || mm->global_asid)
		return;
	unsigned active = 0;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		const struct cpu_tlbstate *ts = &k->tlbstate[c];
		active += ts->loaded_mm == mm && !ts->is_lazy;
	}
	if (active > 3)
		mm->global_asid = true;
}

struct invlpgb_flush {
	struct kernel *k;
	const struct mm *mm; /* NULL: all non-global entries (reclaim batch) */
	uint64_t start, end;
	unsigned stride_shift;
	uint64_t new_tlb_gen;
	struct kcont done;
};

/* TLBSYNC completes: every CPU's TLB has dropped the range, whatever it runs. */
static void tlbsync_done(void *target, uint64_t time)
{
	struct invlpgb_flush *f = target;
	struct kernel *k = f->k;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++)
		tlbflush_hw_invalidate_cpu(k, &k->machine->cpus[c], f->mm, f->start, f->end,
					   f->stride_shift, f->new_tlb_gen);
	struct kcont done = f->done;
	kernel_release(k, f);
	kcont_call(k, done, time);
}

/*
 * broadcast_tlb_flush(): INVLPGB chunks of at most invlpgb_count_max strides
 * (one for a full flush of the ASID), then TLBSYNC.  No IPIs, no vmstat REMOTE
 * counts.
 */
static void broadcast_tlb_flush(struct kernel *k, struct cpu *cpu, const struct mm *mm,
				uint64_t start, uint64_t end, unsigned stride_shift,
				uint64_t new_tlb_gen, uint64_t now, const struct kcont *done)
{
	const struct topology *topo = k->machine->topology;
	struct invlpgb_flush *f = kernel_alloc(k, sizeof(*f));
	*f = (struct invlpgb_flush){.k = k, .mm = mm, .start = start, .end = end,
				    .stride_shift = stride_shift, .new_tlb_gen = new_tlb_gen,
				    .done = *done};
	uint64_t strides = end == FLUSH_ALL ? 1 : (end - start) >> stride_shift;
	uint64_t instructions = (strides + topo->invlpgb_count_max - 1) / topo->invlpgb_count_max;
	cpu->counters.tlbi_broadcasts += instructions;
	tlbflush_event(k, cpu, TLB_BROADCAST, start, end, now);
	uint64_t issued = now + instructions * topo->costs.broadcast_issue;
	fabric_broadcast(k->machine->fabric, issued, engine_now(k->engine) + k->machine->lookahead,
			 tlbsync_done, f);
}

/* has_large_page() (3.6-3.13): is any 2 MiB page of [start, end) mapped huge? */
static bool has_large_page(const struct kernel *k, const struct vma *vma, uint64_t start,
			   uint64_t end, uint64_t *cycles)
{
	if (!vma || vma->page_size != PS_2M)
		return false;
	for (uint64_t addr = start; addr < end; addr += UINT64_C(1) << PMD_SHIFT_2M) {
		*cycles += costs_of(k)->pte_op;
		/* A munmap's PMDs are already cleared here, as in the kernel
		 * (the flush follows the zap): only mprotect-like calls see them. */
		if (vma_pte(vma, addr)->present)
			return true;
	}
	return false;
}

/*
 * The range decision: strides to INVLPG, or FLUSH_ALL.  Adjusts
 * *@stride_shift to what the era counts in (4K steps before 4.19).
 */
static uint64_t flush_decide(struct kernel *k, const struct mm *mm, const struct vma *vma,
			     uint64_t start, uint64_t end, unsigned *stride_shift, uint64_t *cycles)
{
	if (end == FLUSH_ALL)
		return FLUSH_ALL;
	switch (k->policy->huge_page_range) {
	case HUGE_RANGE_PER_4K:
		*stride_shift = PAGE_SHIFT_4K;
		break;
	case HUGE_RANGE_FLUSH_ALL:
		*stride_shift = PAGE_SHIFT_4K;
		if (vma && !vma->hugetlb && has_large_page(k, vma, start, end, cycles))
			return FLUSH_ALL;
		break;
	case HUGE_RANGE_PER_STRIDE:
		break;
	}
	return k->policy->range->pages_to_flush(k, mm, vma, start, end, *stride_shift);
}

/* flush_tlb_mm_range(); @remote false: ABIS's local-only flush, which skips
 * native_flush_tlb_others() (and INVLPGB) as if no other CPU were in the mask. */
static void x86_flush_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
			    const struct vma *vma, uint64_t start, uint64_t end,
			    unsigned stride_shift, bool freed_tables, bool remote, uint64_t now,
			    const struct kcont *done)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	uint64_t t = now;
	struct flush_tlb_info *info = kernel_alloc(k, sizeof(*info));
	*info = (struct flush_tlb_info){.mm = mm, .stride_shift = stride_shift,
					.freed_tables = freed_tables, .initiator = cpu->id,
					.done = *done};
	uint64_t strides = flush_decide(k, mm, vma, start, end, &info->stride_shift, &t);
	info->start = strides == FLUSH_ALL ? 0 : start;
	info->end = strides == FLUSH_ALL ? FLUSH_ALL : start + (strides << info->stride_shift);
	if (lazy->tracks_tlb_gen) { /* inc_mm_tlb_gen(): a locked RMW on the mm's line */
		info->new_tlb_gen = ++mm->tlb_gen;
		t = fabric_line_rmw(k->machine->fabric, &mm->context_line, cpu->id, t);
	}
	bool loaded = lazy->tracks_tlb_gen ? ts->loaded_mm == mm
					   : ts->active_mm == mm && !ts->is_lazy;
	if (!loaded && lazy->remote_full_if_not_loaded) {
		info->start = 0;
		info->end = FLUSH_ALL;
	}
	uint64_t trim_ns = topology_ns_to_cycles(k->machine->topology, TRIM_INTERVAL_NS);
	if (mm->next_trim_cpumask == 0) /* mm creation: jiffies + HZ */
		mm->next_trim_cpumask = trim_ns;
	if (t >= mm->next_trim_cpumask) { /* should_trim_cpumask() */
		info->trim_cpumask = true;
		mm->next_trim_cpumask = t + trim_ns;
	}
	if (remote && invlpgb_enabled(k) && mm->global_asid) {
		struct kcont cont = info->done;
		uint64_t s = info->start, e = info->end, gen = info->new_tlb_gen;
		unsigned shift = info->stride_shift;
		kernel_release(k, info);
		broadcast_tlb_flush(k, cpu, mm, s, e, shift, gen, t, &cont);
		return;
	}
	uint64_t local = 0;
	trace_kernel_step(k, cpu->id, t);
	unsigned first = mm_cpumask_next(mm, 0);
	bool others = remote && first < mm->nr_cpus &&
		      (first != cpu->id || mm_cpumask_next(mm, cpu->id + 1) < mm->nr_cpus);
	info->initiator_waits = others;
	if (loaded)
		local = lazy->flush_tlb_func(k, cpu, info, true, t);
	if (!(others && k->policy->concurrent_local_flush))
		trace_local_flush(k, cpu->id, t, local);
	if (!others) {
		struct kcont cont = info->done;
		kernel_release(k, info);
		kcont_call(k, cont, t + local);
		return;
	}
	if (!k->policy->concurrent_local_flush) {
		t += local; /* flushed locally first, then the IPIs */
		local = 0;
	}
	native_flush_tlb_others(k, cpu, info, mm, t, local);
	consider_global_asid(k, mm);
}

static void x86_flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
				   const struct vma *vma, uint64_t start, uint64_t end,
				   unsigned stride_shift, bool freed_tables, uint64_t now,
				   const struct kcont *done)
{
	x86_flush_range(k, cpu, mm, vma, start, end, stride_shift, freed_tables, true, now, done);
}

static void x86_flush_tlb_local_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
				      const struct vma *vma, uint64_t start, uint64_t end,
				      unsigned stride_shift, bool freed_tables, uint64_t now,
				      const struct kcont *done)
{
	x86_flush_range(k, cpu, mm, vma, start, end, stride_shift, freed_tables, false, now,
			done);
}

/* arch_tlbbatch_should_defer(): only worth it if another CPU may cache the mm. */
static bool x86_should_defer(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	(void)k;
	unsigned first = mm_cpumask_next(mm, 0);
	return first < mm->nr_cpus &&
	       (first != cpu->id || mm_cpumask_next(mm, cpu->id + 1) < mm->nr_cpus);
}

/* arch_tlbbatch_add_pending(): inc_mm_tlb_gen() + OR mm_cpumask into the batch. */
static uint64_t x86_batch_add_pending(struct kernel *k, struct cpu *cpu,
				      struct tlbflush_unmap_batch *batch, struct mm *mm,
				      uint64_t addr, uint64_t now)
{
	(void)addr;
	uint64_t t = now;
	if (k->policy->lazy->tracks_tlb_gen) {
		mm->tlb_gen++;
		t = fabric_line_rmw(k->machine->fabric, &mm->context_line, cpu->id, now);
	}
	tlbbatch_add_mask(batch, mm);
	return t - now;
}

/*
 * arch_tlbbatch_flush(): one IPI round to the union of the masks; every target
 * flushes everything it must (4.5: all; 4.14+: each mm whose gen moved), the
 * initiator too if it is in the mask.
 */
static void x86_batch_flush(struct kernel *k, struct cpu *cpu, struct tlbflush_unmap_batch *batch,
			    uint64_t now, const struct kcont *done)
{
	struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	if (invlpgb_enabled(k)) {
		/* invlpgb_flush_all_nonglobals() + TLBSYNC, for the whole system. */
		broadcast_tlb_flush(k, cpu, NULL, 0, FLUSH_ALL, PAGE_SHIFT_4K,
				    TLB_GENERATION_INVALID, now, done);
		return;
	}
	struct flush_tlb_info *info = kernel_alloc(k, sizeof(*info));
	*info = (struct flush_tlb_info){.mm = NULL, .start = 0, .end = FLUSH_ALL,
					.stride_shift = PAGE_SHIFT_4K, .initiator = cpu->id,
					.new_tlb_gen = TLB_GENERATION_INVALID, .done = *done};
	uint64_t t = now, local = 0;
	info->initiator_waits = tlbbatch_others(batch, cpu->id);
	if (tlbbatch_test(batch, cpu->id)) {
		/* TLB_LOCAL_SHOOTDOWN, traced once: by flush_tlb_func() in 4.14+. */
		if (lazy->tracks_tlb_gen) {
			if (ts->loaded_mm != k->init_mm)
				local = lazy->flush_tlb_func(k, cpu, info, true, t);
		} else {
			tlbflush_event(k, cpu, TLB_LOCAL_SHOOTDOWN, 0, FLUSH_ALL, t);
			cpu->counters.nr_tlb_local_flush_all++;
			local = tlbflush_local_all(k, cpu);
		}
	}
	if (!(k->policy->concurrent_local_flush && tlbbatch_others(batch, cpu->id)))
		trace_local_flush(k, cpu->id, t, local);
	if (!tlbbatch_others(batch, cpu->id)) {
		struct kcont cont = info->done;
		kernel_release(k, info);
		kcont_call(k, cont, t + local);
		return;
	}
	if (!k->policy->concurrent_local_flush) {
		t += local;
		local = 0;
	}
	native_flush_tlb_others(k, cpu, info, tlbbatch_mask(batch), t, local);
}

/* The PCID slot holding @mm on @cpu (tag slot + 1), 0 while it is loaded
 * without PCIDs, -1 if @cpu can hold none of it. */
static int x86_cpu_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm)
{
	const struct cpu_tlbstate *ts = tlbflush_state(k, cpu);
	if (!(k->policy->pcid && k->machine->topology->hw_asids > 0))
		return ts->loaded_mm == mm ? 0 : -1;
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++)
		if (ts->ctxs[i].mm == mm)
			return (int)i + 1;
	return -1;
}

static void x86_names(const struct topology *topology, struct flush_names *names)
{
	(void)topology;
	*names = (struct flush_names){.irq = "call_function_interrupt",
				      .handler = "flush_tlb_func",
				      .local = "flush_tlb_func (local)"};
}

const struct flush_arch_ops flush_arch_x86 = {
	.name = "x86",
	.imitates = "arch/x86/mm/tlb.c: flush_tlb_mm_range, native_flush_tlb_others, "
		    "arch_tlbbatch_* (IPIs)",
	.arch = ARCH_X86,
	.flush_range = x86_flush_tlb_mm_range,
	.flush_range_local = x86_flush_tlb_local_range,
	.should_defer = x86_should_defer,
	.batch_add_pending = x86_batch_add_pending,
	.batch_flush = x86_batch_flush,
	.batched_pending_flushes_mm = true,
	.names = x86_names,
	.cpu_asid_of = x86_cpu_asid_of,
};

/*
 * Range rules.  The 3.6 rule (Alex Shi, 2012): INVLPG each page iff the range
 * is at most min(tlb entries, total_vm) >> tlb_flushall_shift pages; shift -1
 * means never; hugetlb VMAs always flush all.
 */
static uint64_t range_pages(uint64_t start, uint64_t end)
{
	return (end - start) >> PAGE_SHIFT_4K;
}

static uint64_t pages_to_flush_flushall_shift(const struct kernel *k, const struct mm *mm,
					      const struct vma *vma, uint64_t start, uint64_t end,
					      unsigned stride_shift)
{
	(void)stride_shift; /* always 4K pages in this era */
	const struct topology *topo = k->machine->topology;
	int shift = policy_flushall_shift(k->policy, topo->tlb_flushall_shift);
	if (end == FLUSH_ALL || shift < 0 || (vma && vma->hugetlb))
		return FLUSH_ALL;
	uint64_t entries = topo->tlb_lld_4k;
	uint64_t active = entries < mm->total_vm ? entries : mm->total_vm;
	uint64_t pages = range_pages(start, end);
	return pages > (active >> shift) ? FLUSH_ALL : pages;
}

const struct flush_range_ops flush_range_tlb_flushall_shift = {
	.name = "tlb_flushall_shift",
	.imitates = "flush_tlb_mm_range() 3.6-3.15 (611ae8e3f520, c4211f42d3e6)",
	.pages_to_flush = pages_to_flush_flushall_shift,
};

/*
 * 3.16+ (Dave Hansen, a5102476a24b): one global ceiling, 33 by default ("each
 * single flush is about 100 ns, caps overhead at about 3,000 ns").  Counted in
 * strides since 4.19, where hugetlb ranges stop being flushed whole.
 */
static uint64_t pages_to_flush_ceiling(const struct kernel *k, const struct mm *mm,
				       const struct vma *vma, uint64_t start, uint64_t end,
				       unsigned stride_shift)
{
	(void)mm;
	if (end == FLUSH_ALL ||
	    (vma && vma->hugetlb && k->policy->huge_page_range != HUGE_RANGE_PER_STRIDE))
		return FLUSH_ALL;
	uint64_t strides = (end - start) >> stride_shift;
	return strides > k->policy->single_page_flush_ceiling ? FLUSH_ALL : strides;
}

const struct flush_range_ops flush_range_single_page_ceiling = {
	.name = "single_page_flush_ceiling",
	.imitates = "flush_tlb_mm_range() 3.16+ tlb_single_page_flush_ceiling (a5102476a24b)",
	.pages_to_flush = pages_to_flush_ceiling,
};
