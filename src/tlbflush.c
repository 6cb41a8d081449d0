/*
 * arch/x86/mm/tlb.c and switch_mm() as of Linux 4.5, with the era-specific
 * decisions delegated to the policy's ops (policy.h).
 *
 * Models: flush_tlb_mm_range() flushes locally first (INVLPG per page or a CR3
 * reload, as the range rule says), then, if any other CPU is in mm_cpumask,
 * native_flush_tlb_others() interrupts the targets and waits; flush_tlb_func()
 * on a target ignores a flush for an mm it no longer has active, flushes if it
 * runs the mm, or leaves the mm (leave_mm) if it only borrows it lazily.
 * switch_mm() sets/clears cpumask bits with atomics and reloads CR3, which
 * without PCIDs flushes the TLB.
 * Simplifies: no PCID use (4.5 did not use PCIDs); every TLB entry is a user,
 * non-global entry of ASID 0.
 * Invariant: a CPU whose bit is clear in mm_cpumask(mm) holds no entry of mm
 * that predates the clearing (leave_mm and switch_mm reload CR3).
 */
#include <glib.h>
#include "tlbsim/sched.h"
#include "tlbsim/smp.h"
#include "tlbsim/tlbflush.h"

#define PAGE_SHIFT_4K 12

struct flush_tlb_info {
	struct mm *mm;
	uint64_t start;
	uint64_t end; /* FLUSH_ALL: everything */
	struct kcont done;
};

static const struct topology_costs *costs_of(const struct kernel *k)
{
	return &k->machine->topology->costs;
}

void tlbflush_init(struct kernel *k)
{
	for (unsigned c = 0; c < k->machine->nr_cpus; c++) {
		struct cpu *cpu = &k->machine->cpus[c];
		cpu->loaded_mm = k->init_mm;
		cpu->active_mm = k->init_mm;
		cpu->is_lazy = true;
		cpu->loaded_asid = 0;
		mm_cpumask_set(k->init_mm, c);
	}
}

/* cpumask_set_cpu()/cpumask_clear_cpu(): a locked RMW on the mask's line. */
static uint64_t cpumask_atomic(struct kernel *k, struct cpu *cpu, struct mm *mm, bool set,
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

/* load_cr3(): without PCIDs a CR3 write drops every non-global entry. */
static uint64_t load_cr3(struct kernel *k, struct cpu *cpu, struct mm *mm)
{
	machine_flush_asid(k->machine, cpu, cpu->loaded_asid);
	cpu->loaded_mm = mm;
	cpu->counters.tlb_flush_events++; /* TLB_FLUSH_ON_TASK_SWITCH, all */
	return costs_of(k)->flush_all;
}

/* leave_mm(): a lazy CPU stops receiving flushes for the mm it borrows. */
static uint64_t leave_mm(struct kernel *k, struct cpu *cpu, uint64_t now)
{
	g_assert(cpu->is_lazy);
	struct mm *mm = cpu->active_mm;
	if (!mm_cpumask_test(mm, cpu->id))
		return 0;
	uint64_t cost = cpumask_atomic(k, cpu, mm, false, now);
	return cost + load_cr3(k, cpu, k->init_mm);
}

static uint64_t switch_mm(struct kernel *k, struct cpu *cpu, struct mm *prev, struct mm *next,
			  uint64_t now)
{
	uint64_t t = now;
	cpu->is_lazy = false;
	if (prev != next) {
		cpu->active_mm = next;
		cpu->counters.switch_mm++;
		t += cpumask_atomic(k, cpu, next, true, t);
		t += load_cr3(k, cpu, next);
		t += cpumask_atomic(k, cpu, prev, false, t);
		return t - now;
	}
	if (!mm_cpumask_test(next, cpu->id)) {
		/* leave_mm() ran while we were lazy: flushes stopped reaching us,
		 * so the TLB may hold freed translations. */
		t += cpumask_atomic(k, cpu, next, true, t);
		t += load_cr3(k, cpu, next);
	}
	return t - now;
}

uint64_t context_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *next, uint64_t now)
{
	if (!next) {
		/* enter_lazy_tlb(): keep the old mm loaded, stop caring. */
		cpu->is_lazy = true;
		return 0;
	}
	return switch_mm(k, cpu, cpu->active_mm, next, now);
}

static uint64_t flush_tlb_local_range(struct kernel *k, struct cpu *cpu, uint64_t start,
				      uint64_t end)
{
	uint64_t cycles = 0;
	for (uint64_t addr = start; addr < end; addr += UINT64_C(1) << PAGE_SHIFT_4K) {
		machine_invlpg(k->machine, cpu, cpu->loaded_asid, addr);
		cycles += costs_of(k)->invlpg;
	}
	return cycles;
}

/* flush_tlb_func(): the IPI handler on each target. */
static uint64_t flush_tlb_func(struct kernel *k, struct cpu *cpu, uint64_t now, void *info)
{
	const struct flush_tlb_info *f = info;
	if (f->mm && f->mm != cpu->active_mm)
		return 0;
	cpu->counters.nr_tlb_remote_flush_received++;
	if (cpu->is_lazy)
		return leave_mm(k, cpu, now);
	cpu->counters.tlb_flush_events++; /* TLB_REMOTE_SHOOTDOWN */
	if (f->end == FLUSH_ALL) {
		machine_flush_asid(k->machine, cpu, cpu->loaded_asid);
		return costs_of(k)->flush_all;
	}
	return flush_tlb_local_range(k, cpu, f->start, f->end);
}

static void flush_tlb_others_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct flush_tlb_info *info = ctx;
	struct kcont done = info->done;
	kernel_release(k, info);
	kcont_call(k, done, time);
}

/* native_flush_tlb_others(): count, pick targets, interrupt them and wait. */
static void flush_tlb_others(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t start,
			     uint64_t end, uint64_t now, struct kcont done)
{
	cpu->counters.nr_tlb_remote_flush++;
	cpu->counters.tlb_flush_events++; /* TLB_REMOTE_SEND_IPI */
	unsigned *targets = g_new(unsigned, k->machine->nr_cpus);
	unsigned nr = k->policy->targets->select(k, cpu, mm, targets);
	struct flush_tlb_info *info = kernel_alloc(k, sizeof(*info));
	*info = (struct flush_tlb_info){.mm = mm, .start = start, .end = end, .done = done};
	struct kcont wait_done = {.fn = flush_tlb_others_done, .ctx = info};
	smp_call_function_many(k, cpu, targets, nr, flush_tlb_func, info, now, wait_done);
	g_free(targets);
}

void flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, bool freed_tables, uint64_t now,
			struct kcont done)
{
	(void)freed_tables; /* 4.5 sends the same IPIs whether or not tables were freed */
	uint64_t t = now;
	uint64_t pages = FLUSH_ALL;

	/* Not running this mm (or only borrowing it): no local flush, and the
	 * remote CPUs get a full flush. */
	if (cpu->active_mm == mm && !cpu->is_lazy) {
		pages = k->policy->range->pages_to_flush(k, mm, vma, start, end);
		cpu->counters.tlb_flush_events++; /* TLB_LOCAL_MM_SHOOTDOWN */
		if (pages == FLUSH_ALL) {
			cpu->counters.nr_tlb_local_flush_all++;
			machine_flush_asid(k->machine, cpu, cpu->loaded_asid);
			t += costs_of(k)->flush_all;
		} else {
			cpu->counters.nr_tlb_local_flush_one += pages;
			t += flush_tlb_local_range(k, cpu, start, start + (pages << PAGE_SHIFT_4K));
		}
	}
	if (pages == FLUSH_ALL) {
		start = 0;
		end = FLUSH_ALL;
	}
	unsigned first = mm_cpumask_next(mm, 0);
	bool others = first < mm->nr_cpus &&
		      (first != cpu->id || mm_cpumask_next(mm, cpu->id + 1) < mm->nr_cpus);
	if (others)
		flush_tlb_others(k, cpu, mm, start, end, t, done);
	else
		kcont_call(k, done, t);
}

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
					      const struct vma *vma, uint64_t start, uint64_t end)
{
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

/* 3.16+ (Dave Hansen, a5102476a24b): one global ceiling, 33 by default. */
static uint64_t pages_to_flush_ceiling(const struct kernel *k, const struct mm *mm,
				       const struct vma *vma, uint64_t start, uint64_t end)
{
	(void)mm;
	if (end == FLUSH_ALL || (vma && vma->hugetlb))
		return FLUSH_ALL;
	uint64_t pages = range_pages(start, end);
	return pages > k->policy->single_page_flush_ceiling ? FLUSH_ALL : pages;
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
