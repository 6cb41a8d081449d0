/*
 * arch/x86/mm/tlb.c: flush_tlb_mm_range(), native_flush_tlb_others(), the
 * range rules and target selection; the shared building blocks every arch and
 * era uses (local flushes, cpumask atomics); the x86 reclaim batch.
 *
 * Models: flush_tlb_mm_range() decides once, on the initiator, between a range
 * and a full flush (the policy's range rule, with the era's handling of huge
 * pages); flushes locally (before the IPIs, or overlapping them from 5.13);
 * then, if any other CPU is in mm_cpumask, native_flush_tlb_others() counts
 * the request, picks targets (the policy's selection, then the era's
 * should_flush filter) and waits for every acknowledgement.  The handler is
 * the era's flush_tlb_func (lazytlb.c).
 * Simplifies: no PTI (one PCID per mm per CPU), no INVPCID, no global pages.
 * Invariant: a CPU whose bit is clear in mm_cpumask(mm) and that runs another
 * mm holds no entry of mm that predates a flush it was not sent, unless its
 * PCID slot's tlb_gen says so (then switch_mm flushes it).
 */
#include <glib.h>
#include "tlbsim/rmap.h"
#include "tlbsim/sched.h"
#include "tlbsim/smp.h"
#include "tlbsim/tlbflush.h"
#include "tlbsim/trace.h"

/* 6.14 trims stale mm_cpumask bits at most once a second (HZ jiffies). */
#define TRIM_INTERVAL_NS UINT64_C(1000000000)

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
	bool asids = k->machine->topology->hw_asids > 0;
	if (k->policy->arch->arch != ARCH_X86)
		return asids || cpu->loaded_mm == mm ? tlbflush_mm_asid(k, mm) : -1;
	if (!(k->policy->pcid && asids))
		return cpu->loaded_mm == mm ? 0 : -1;
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++)
		if (cpu->ctxs[i].mm == mm)
			return (int)i + 1;
	return -1;
}

void tlbflush_init(struct kernel *k)
{
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu *cpu = &k->machine->cpus[c];
		cpu->loaded_mm = k->init_mm;
		cpu->active_mm = k->init_mm;
		cpu->is_lazy = true;
		cpu->loaded_asid = 0;
		cpu->loaded_slot = 0;
		cpu->next_asid = 1;
		cpu->ctxs[0] = (struct tlb_context){.mm = k->init_mm, .tlb_gen = 0};
		mm_cpumask_set(k->init_mm, c);
	}
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

uint64_t tlbflush_local_all(struct kernel *k, struct cpu *cpu)
{
	machine_flush_asid(k->machine, cpu, cpu->loaded_asid);
	return costs_of(k)->flush_all;
}

uint64_t tlbflush_local_range(struct kernel *k, struct cpu *cpu, uint64_t start, uint64_t end,
			      unsigned stride_shift)
{
	uint64_t cycles = 0;
	for (uint64_t addr = start; addr < end; addr += UINT64_C(1) << stride_shift) {
		machine_invlpg(k->machine, cpu, cpu->loaded_asid, addr);
		cycles += costs_of(k)->invlpg;
	}
	return cycles;
}

unsigned tlbflush_select_targets(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, unsigned *targets)
{
	return k->policy->targets->select(k, self, mm, targets);
}

uint64_t context_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *next, uint64_t now)
{
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	if (!next)
		return lazy->enter_lazy_tlb(k, cpu, now);
	return lazy->switch_mm(k, cpu, cpu->active_mm, next, now);
}

void flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, unsigned stride_shift, bool freed_tables,
			uint64_t now, struct kcont done)
{
	k->policy->arch->flush_range(k, cpu, mm, vma, start, end, stride_shift, freed_tables, now,
				     &done);
}

/* ---- x86 ------------------------------------------------------------------ */

static uint64_t remote_flush_handler(struct kernel *k, struct cpu *cpu, uint64_t now, void *info)
{
	return k->policy->lazy->flush_tlb_func(k, cpu, info, false, now);
}

static void flush_tlb_others_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct flush_tlb_info *info = ctx;
	struct kcont done = info->done;
	uint64_t at = MAX(time, info->local_done);
	kernel_release(k, info);
	kcont_call(k, done, at);
}

/*
 * native_flush_tlb_others() / native_flush_tlb_multi(): count, pick targets,
 * interrupt them and wait.  Counted even if no target is left (4.20+ filters
 * after counting).  Takes ownership of @info.
 */
static void native_flush_tlb_others(struct kernel *k, struct cpu *cpu, struct flush_tlb_info *info,
				    const struct mm *mask_mm, uint64_t now, uint64_t local_cost)
{
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	cpu->counters.nr_tlb_remote_flush++;
	cpu->counters.tlb_flush_events++; /* TLB_REMOTE_SEND_IPI */
	if (k->trace)
		trace_tlb_flush(k->trace, cpu->id, TRACE_TLB_REMOTE_SEND_IPI, info->start,
				info->end, now);
	unsigned *targets = g_new(unsigned, k->machine->nr_cpus);
	unsigned nr = tlbflush_select_targets(k, cpu, mask_mm, targets), kept = 0;
	for (unsigned i = 0; i < nr; i++)
		if (lazy->should_flush(k, &k->machine->cpus[targets[i]], info))
			targets[kept++] = targets[i];
	/* 5.13+: the local flush runs after the sends, while the IPIs fly. */
	info->local_done = now + kept * costs_of(k)->ipi_send + local_cost;
	if (k->trace)
		trace_local_flush_late(k->trace, cpu->id, info->local_done - local_cost, local_cost);
	struct kcont wait_done = {.fn = flush_tlb_others_done, .ctx = info};
	smp_call_function_many(k, cpu, targets, kept, remote_flush_handler, info, now, wait_done);
	g_free(targets);
}

/* ---- INVLPGB (Rik van Riel, 6.15; mechanisms.md 5.1) ---------------------- */

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
		const struct cpu *cpu = &k->machine->cpus[c];
		active += cpu->loaded_mm == mm && !cpu->is_lazy;
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
	bool pcid = k->policy->pcid && k->machine->topology->hw_asids > 0;
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu *cpu = &k->machine->cpus[c];
		for (unsigned slot = 0; slot < TLB_NR_DYN_ASIDS; slot++) {
			struct tlb_context *ctx = &cpu->ctxs[slot];
			if (!ctx->mm || ctx->mm == k->init_mm || (f->mm && ctx->mm != f->mm))
				continue;
			uint16_t tag = pcid ? (uint16_t)(slot + 1) : 0;
			if (f->end == FLUSH_ALL)
				machine_broadcast_invalidate_cpu(k->machine, cpu, tag, MACHINE_ALL_VADDR);
			else
				for (uint64_t a = f->start; a < f->end; a += UINT64_C(1) << f->stride_shift)
					machine_broadcast_invalidate_cpu(k->machine, cpu, tag, a);
			/* Current again only if this was the one flush it missed: an
			 * older one skipped while it was lazy still needs its catch-up
			 * (the kernel moves the mm to a fresh global PCID instead). */
			if (f->new_tlb_gen != TLB_GENERATION_INVALID &&
			    ctx->tlb_gen + 1 == f->new_tlb_gen)
				ctx->tlb_gen = f->new_tlb_gen;
		}
	}
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
	cpu->counters.tlb_flush_events++;
	if (k->trace)
		trace_tlb_flush(k->trace, cpu->id, TRACE_TLB_BROADCAST, start, end, now);
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

static void x86_flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm,
				   const struct vma *vma, uint64_t start, uint64_t end,
				   unsigned stride_shift, bool freed_tables, uint64_t now,
				   const struct kcont *done)
{
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
	bool loaded = lazy->tracks_tlb_gen ? cpu->loaded_mm == mm
					   : cpu->active_mm == mm && !cpu->is_lazy;
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
	if (invlpgb_enabled(k) && mm->global_asid) {
		struct kcont cont = info->done;
		uint64_t s = info->start, e = info->end, gen = info->new_tlb_gen;
		unsigned shift = info->stride_shift;
		kernel_release(k, info);
		broadcast_tlb_flush(k, cpu, mm, s, e, shift, gen, t, &cont);
		return;
	}
	uint64_t local = 0;
	if (k->trace)
		trace_cursor(k->trace, cpu->id, t);
	if (loaded)
		local = lazy->flush_tlb_func(k, cpu, info, true, t);
	unsigned first = mm_cpumask_next(mm, 0);
	bool others = first < mm->nr_cpus &&
		      (first != cpu->id || mm_cpumask_next(mm, cpu->id + 1) < mm->nr_cpus);
	if (k->trace && !(others && k->policy->concurrent_local_flush))
		trace_local_flush(k->trace, cpu->id, t, local);
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
	rmap_batch_add_mask(batch, mm);
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
	if (rmap_batch_test(batch, cpu->id)) {
		/* TLB_LOCAL_SHOOTDOWN, traced once: by flush_tlb_func() in 4.14+. */
		if (lazy->tracks_tlb_gen) {
			if (cpu->loaded_mm != k->init_mm)
				local = lazy->flush_tlb_func(k, cpu, info, true, t);
		} else {
			cpu->counters.tlb_flush_events++;
			if (k->trace)
				trace_tlb_flush(k->trace, cpu->id, TRACE_TLB_LOCAL_SHOOTDOWN, 0,
						FLUSH_ALL, t);
			cpu->counters.nr_tlb_local_flush_all++;
			local = tlbflush_local_all(k, cpu);
		}
	}
	if (k->trace && !(k->policy->concurrent_local_flush && rmap_batch_others(batch, cpu->id)))
		trace_local_flush(k->trace, cpu->id, t, local);
	if (!rmap_batch_others(batch, cpu->id)) {
		struct kcont cont = info->done;
		kernel_release(k, info);
		kcont_call(k, cont, t + local);
		return;
	}
	if (!k->policy->concurrent_local_flush) {
		t += local;
		local = 0;
	}
	native_flush_tlb_others(k, cpu, info, rmap_batch_mask_mm(batch), t, local);
}

const struct flush_arch_ops flush_arch_x86 = {
	.name = "x86",
	.imitates = "arch/x86/mm/tlb.c: flush_tlb_mm_range, native_flush_tlb_others, "
		    "arch_tlbbatch_* (IPIs)",
	.arch = ARCH_X86,
	.flush_range = x86_flush_tlb_mm_range,
	.should_defer = x86_should_defer,
	.batch_add_pending = x86_batch_add_pending,
	.batch_flush = x86_batch_flush,
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

/* Every other CPU in mm_cpumask (smp_call_function_many skips the caller). */
static unsigned select_mm_cpumask(const struct kernel *k, const struct cpu *self,
				  const struct mm *mm, unsigned *targets)
{
	(void)k;
	unsigned n = 0;
	for (unsigned c = mm_cpumask_next(mm, 0); c < mm->nr_cpus; c = mm_cpumask_next(mm, c + 1))
		if (c != self->id)
			targets[n++] = c;
	return n;
}

const struct flush_targets_ops flush_targets_mm_cpumask = {
	.name = "mm_cpumask",
	.imitates = "native_flush_tlb_others() 4.5",
	.select = select_mm_cpumask,
};

/*
 * Alex Shi's 2016 "[REF PATCH] x86/tlb: just do tlb flush on one of siblings
 * of SMT": walk a copy of mm_cpumask (the caller included) in order; for each
 * CPU whose whole sibling set is still in the copy, clear its next sibling.
 * The caller is then skipped as smp_call_function_many() does.
 */
static unsigned select_smt_dedup(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, unsigned *targets)
{
	const struct machine *m = k->machine;
	unsigned nr_cpus = m->nr_cpus;
	bool *in = g_new0(bool, nr_cpus);
	for (unsigned c = mm_cpumask_next(mm, 0); c < nr_cpus; c = mm_cpumask_next(mm, c + 1))
		in[c] = true;
	unsigned threads = m->topology->threads_per_core;
	unsigned stride = m->topology->sockets * m->topology->cores_per_socket;
	if (threads > 1) {
		for (unsigned c = 0; c < nr_cpus; c++) {
			if (!in[c])
				continue;
			unsigned base = c % stride; /* thread 0 of this core */
			bool all = true;
			for (unsigned t = 0; t < threads; t++)
				all = all && in[base + t * stride];
			if (!all)
				continue;
			unsigned next_thread = (m->cpus[c].thread + 1) % threads;
			in[base + next_thread * stride] = false;
		}
	}
	unsigned n = 0;
	for (unsigned c = 0; c < nr_cpus; c++)
		if (in[c] && c != self->id)
			targets[n++] = c;
	g_free(in);
	return n;
}

const struct flush_targets_ops flush_targets_smt_dedup = {
	.name = "smt_dedup",
	.imitates = "native_flush_tlb_others() + Alex Shi's 2016 SMT-sibling patch (not merged)",
	.select = select_smt_dedup,
};
