/*
 * fork()'s and exit()'s address-space work, as Linux 6.1 decides its TLB
 * flushes (kernel/fork.c dup_mmap(), mm/memory.c copy_page_range(),
 * kernel/exit.c exit_mm(), mm/mmap.c exit_mmap(), arch/x86 tlb_flush()).
 *
 * Models:
 * - dup_mmap(): mmap_write_lock(oldmm) (a contended rwsem, rwsem.c); each
 *   mapped VMA copied (vma_op cycles) and each of its PTEs visited
 *   (copy_pte_range(), pte_op cycles), present ones copied into the child;
 *   a present writable PTE of a private mapping is write-protected in the
 *   parent and mapped read-only in the child (copy_present_pte(): COW); then
 *   flush_tlb_mm(oldmm), which on x86 is flush_tlb_mm_range(mm, 0,
 *   TLB_FLUSH_ALL, 0, freed_tables = true): a full flush, IPIs to every
 *   other CPU of the parent's mm_cpumask, lazy ones included; the lock goes
 *   after the flush.  The flush is unconditional (nothing may be writable).
 * - exit_mm(): enter_lazy_tlb() before mmput(), so exit_mmap() runs on a
 *   CPU lazily on the child's mm; exit_mmap() zaps every PTE into a fullmm
 *   mmu_gather (tlb_gather_mmu_fullmm()), frees the page tables
 *   (free_pgtables(): freed_tables), and tlb_finish_mmu() flushes: x86's
 *   tlb_flush() passes 0..TLB_FLUSH_ALL for a fullmm gather, so
 *   flush_tlb_mm_range(mm, 0, TLB_FLUSH_ALL, freed_tables).  Its only CPU
 *   is this lazy one, whose flush_tlb_func() switches to init_mm (the
 *   lazier eras' handler, lazytlb.c): a task-switch flush, not a local one.
 *   tlb_flush_mmu_tlbonly() skips the flush of a gather that cleared nothing
 *   and freed no table (an mm without VMAs).
 * - The parent's later writes to its write-protected pages fault; the child
 *   is gone, so do_wp_page() reuses the page (wp_page_reuse():
 *   ptep_set_access_flags(), which on x86 writes the PTE and flushes
 *   nothing: a stale read-only entry only causes a spurious fault).  That is
 *   vm.c's write fault on a present PTE of a writable VMA.
 * - A write, while the child lives, to a page the fork shared (the parent's
 *   stack as fork() returns; the child's rseq area, which the kernel writes
 *   on the child's first return to user space: wake_up_new_task() calls
 *   rseq_migrate()) copies it (do_wp_page(): the page is no longer
 *   PageAnonExclusive and has two users) and wp_page_copy()'s
 *   ptep_clear_flush() flushes that one page on the mm's CPUs
 *   (fork_cow_fault()).  Those pages are not laid out: no PTE, a flush only.
 * Simplifies: the child mm is one object reused by every fork of the same
 * parent task (its PTE generations go on; its tlb_gen is bumped at each
 * fork so that a PCID still tagged with it is flushed at the next switch,
 * as a new mm's fresh ctx_id would be); the mm's other users (the task
 * struct, the files, the signal handlers: copy_process()) cost nothing;
 * the child's own mmap_lock in exit_mmap() is uncontended and not modelled;
 * the pages the child's zap frees are the parent's too (shared COW pages),
 * so nothing leaves the LRU (their frames are shared: freed, after the
 * flush, are only those the parent no longer maps); 6.4+'s VMA write locks
 * in dup_mmap() are not taken.
 * Invariant: every parent PTE dup_mmap() write-protected is committed when
 * fork() returns, after the flush; every child PTE is zapped and committed
 * when exit_mm()'s @done runs.
 */
#include <glib.h>
#include "tlbsim/kernel/fork.h"
#include "tlbsim/kernel/frame_release.h"
#include "tlbsim/kernel/pti.h"
#include "tlbsim/kernel/rwsem.h"
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/swap.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

/* One fork() or exit in flight. */
struct fork_call {
	struct kernel *k;
	struct cpu *cpu;
	struct mm *oldmm;        /* the parent (dup_mmap()); NULL for an exit */
	struct mm *mm;           /* the child's */
	uint64_t asked;          /* when it asked for mmap_lock */
	uint32_t gen_lo, gen_hi; /* the generations of the parent's write-protects */
	struct held_frames held; /* exit: the frames whose last mapping it zapped */
	struct kcont done;
};

/* The call is over at @time: free it and go on with its continuation. */
static void fork_call_finish(struct kernel *k, struct fork_call *call, uint64_t time)
{
	struct kcont done = call->done;
	kernel_release(k, call);
	kcont_call(k, done, time);
}

struct mm *fork_mm_new(const struct mm *oldmm, unsigned id)
{
	struct mm *mm = mm_new(id, oldmm->nr_cpus);
	mm->frames = oldmm->frames;
	for (unsigned i = 0; i < oldmm->nr_vmas; i++) {
		const struct vma *v = &oldmm->vmas[i];
		mm_add_vma(mm, v->start, v->end - v->start, v->page_size, v->hugetlb, v->region,
			   v->chunk)
		    ->shared = v->shared;
	}
	mm_finish_layout(mm);
	for (unsigned i = 0; i < mm->nr_vmas; i++) {
		uint64_t freed_start = 0, freed_end = 0;
		mm_unmap_vma(mm, &mm->vmas[i], &freed_start, &freed_end);
		mm_vma_relink(mm, &mm->vmas[i], 0);
	}
	mm->total_vm = 0;
	return mm;
}

/* ---- dup_mmap() ----------------------------------------------------------- */

static int fork_asid_of(const void *ctx, const struct cpu *cpu)
{
	const struct fork_call *call = ctx;
	return tlbflush_cpu_asid_of(call->k, cpu, call->oldmm);
}

/*
 * copy_pte_range() of one VMA: each present PTE copied; a writable one of a
 * private mapping write-protected on both sides (copy_present_pte()).
 * Returns the PTEs visited.
 */
static uint64_t copy_page_range(struct fork_call *call, struct vma *src, struct vma *dst)
{
	uint64_t size = page_size_bytes(src->page_size);
	uint64_t n = vma_pages(src);
	bool cow = !src->shared;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t addr = src->start + i * size;
		const struct pte *pte = vma_pte(src, addr);
		if (!pte->present)
			continue;
		if (cow)
			mm_wrprotect_pte(call->oldmm, src, addr);
		mm_copy_pte(call->mm, dst, addr, pte); /* the child shares the frame */
	}
	return n;
}

/* The fork returns to the parent: its write-protects are visible to all;
 * an entry older than them still in a TLB would be stale (counted). */
static void dup_mmap_return_event(void *target, uint64_t time)
{
	struct fork_call *call = target;
	struct kernel *k = call->k;
	for (unsigned v = 0; call->gen_hi >= call->gen_lo && v < call->oldmm->nr_vmas; v++) {
		struct vma *vma = &call->oldmm->vmas[v];
		uint64_t size = page_size_bytes(vma->page_size);
		for (uint64_t addr = vma->start; vma->mapped && addr < vma->end; addr += size) {
			struct pte *pte = vma_pte(vma, addr);
			mm_commit_change(pte, call->gen_lo, call->gen_hi);
			if (pte->committed >= call->gen_lo)
				machine_count_stale_entries(k->machine, vma, addr, pte->committed,
							    fork_asid_of, call);
		}
	}
	time += pti_return_to_user(k, call->cpu, true);
	trace_syscall_exit(k, call->cpu->id, time);
	fork_call_finish(k, call, time);
}

/* flush_tlb_mm(oldmm) done at @time: mmap_write_unlock(oldmm), and the
 * return lands no sooner than the lookahead (machine.h). */
static void dup_mmap_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct fork_call *call = ctx;
	time = up_write(k, call->cpu, call->oldmm->mmap_lock, time);
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, dup_mmap_return_event, call, at);
}

/* The copy, at a global event: from here on every CPU's walks see the
 * write-protected PTEs.  Then flush_tlb_mm(oldmm). */
static void dup_mmap_event(void *target, uint64_t unused)
{
	(void)unused;
	struct fork_call *call = target;
	struct kernel *k = call->k;
	const struct topology_costs *costs = &k->machine->topology->costs;
	uint64_t t = engine_now(k->engine), cycles = 0;
	sched_revoke_quiet(k); /* quiet writers of the parent's pages must fault now */
	call->gen_lo = call->oldmm->next_gen;
	for (unsigned v = 0; v < call->oldmm->nr_vmas; v++) {
		struct vma *src = &call->oldmm->vmas[v], *dst = &call->mm->vmas[v];
		if (!src->mapped)
			continue;
		mm_map_vma(call->mm, dst);
		dst->writable = src->writable;
		mm_vma_relink(call->mm, dst, call->cpu->id);
		cycles += costs->vma_op + copy_page_range(call, src, dst) * costs->pte_op;
	}
	call->gen_hi = call->oldmm->next_gen - 1; /* < gen_lo: nothing write-protected */
	struct kcont flushed = {.fn = dup_mmap_flushed, .ctx = call};
	flush_tlb_mm_range(k, call->cpu, call->oldmm, NULL, 0, FLUSH_ALL, PAGE_SHIFT_4K, true,
			   t + cycles, flushed);
}

static void dup_mmap_locked(struct kernel *k, void *ctx, uint64_t time)
{
	struct fork_call *call = ctx;
	call->cpu->counters.mmap_lock_acquisitions++;
	call->cpu->counters.mmap_lock_wait_cycles += time - call->asked;
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, dup_mmap_event, call, 0);
}

void dup_mmap(struct kernel *k, struct cpu *cpu, struct mm *oldmm, struct mm *mm, uint64_t now,
	      struct kcont done)
{
	g_assert(mm->nr_vmas == oldmm->nr_vmas && mm->total_vm == 0);
	cpu->counters.syscalls++;
	trace_syscall_enter(k, cpu->id, "fork", NULL, 0, 0, now);
	/* A new mm has a new ctx_id: no PCID holds it yet. */
	mm->tlb_gen++;
	struct fork_call *call = kernel_alloc(k, sizeof(*call));
	*call = (struct fork_call){.k = k, .cpu = cpu, .oldmm = oldmm, .mm = mm, .done = done};
	uint64_t t = now + k->machine->topology->costs.syscall + pti_enter_kernel(k);
	call->asked = t;
	struct kcont locked = {.fn = dup_mmap_locked, .ctx = call};
	down_write(k, cpu, oldmm->mmap_lock, t, locked);
}

/* ---- exit_mm() ------------------------------------------------------------ */

static void exit_mmap_return_event(void *target, uint64_t time)
{
	struct fork_call *call = target;
	struct kernel *k = call->k;
	for (unsigned v = 0; v < call->mm->nr_vmas; v++) {
		struct vma *vma = &call->mm->vmas[v];
		for (uint64_t i = 0; i < vma_pages(vma); i++)
			mm_commit_pte(&vma->ptes[i]);
	}
	fork_call_finish(k, call, time);
}

/* tlb_finish_mmu() done at @time: free_pages_and_swap_cache() frees the
 * pages whose last mapping was the child's (the parent unmapped them). */
static void exit_mmap_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct fork_call *call = ctx;
	held_frames_release(k, call->cpu, call->mm, &call->held, time);
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, exit_mmap_return_event, ctx, at);
}

/* unmap_vmas() + free_pgtables() of every VMA of the child's mm; returns
 * the cycles, *@flush whether tlb_finish_mmu() flushes (anything cleared or
 * freed). */
static uint64_t exit_mmap_zap(struct fork_call *call, bool *flush)
{
	struct kernel *k = call->k;
	struct mm *mm = call->mm;
	struct cpu *cpu = call->cpu;
	const struct topology_costs *costs = &k->machine->topology->costs;
	uint64_t cycles = 0;
	*flush = false;
	for (unsigned v = 0; v < mm->nr_vmas; v++) {
		struct vma *vma = &mm->vmas[v];
		if (!vma->mapped)
			continue;
		uint64_t size = page_size_bytes(vma->page_size);
		for (uint64_t addr = vma->start; addr < vma->end; addr += size) {
			uint32_t held;
			mm_zap_pte_frame(mm, vma, addr, &held);
			held_frames_add(k, &call->held, vma->page_size, held);
		}
		uint64_t freed_start = 0, freed_end = 0;
		mm_unmap_vma(mm, vma, &freed_start, &freed_end);
		mm_vma_relink(mm, vma, cpu->id);
		/* Every VMA's page tables go (free_pgtables() to the ceiling):
		 * freed_tables, whoever else shared a PTE page. */
		*flush = true;
		cycles += costs->vma_op + vma_pages(vma) * costs->pte_op;
	}
	mm->total_vm = 0;
	return cycles;
}

/* exit_mmap() at a global event, as every page-table change is. */
static void exit_mmap_event(void *target, uint64_t unused)
{
	(void)unused;
	struct fork_call *call = target;
	struct kernel *k = call->k;
	bool flush = false;
	uint64_t t = engine_now(k->engine) + exit_mmap_zap(call, &flush);
	if (!flush) {
		exit_mmap_flushed(k, call, t);
		return;
	}
	struct kcont flushed = {.fn = exit_mmap_flushed, .ctx = call};
	flush_tlb_mm_range(k, call->cpu, call->mm, NULL, 0, FLUSH_ALL, PAGE_SHIFT_4K, true, t,
			   flushed);
}

void exit_mm(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t now, struct kcont done)
{
	uint64_t t = now + k->policy->lazy->enter_lazy_tlb(k, cpu, now);
	struct fork_call *call = kernel_alloc(k, sizeof(*call));
	*call = (struct fork_call){.k = k, .cpu = cpu, .mm = mm, .done = done};
	uint64_t at = kernel_global_time(k, t);
	engine_schedule(k->engine, at, LANE_GLOBAL, exit_mmap_event, call, 0);
}

/* ---- copy-on-write of a page tlbsim does not lay out ------------------------ */

static void fork_cow_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct fork_call *call = ctx;
	fork_call_finish(k, call, time + pti_return_to_user(k, call->cpu, true));
}

static void fork_cow_event(void *target, uint64_t addr)
{
	struct fork_call *call = target;
	struct kernel *k = call->k;
	uint64_t t = engine_now(k->engine) + lru_add_page(k, call->cpu, engine_now(k->engine));
	struct kcont flushed = {.fn = fork_cow_flushed, .ctx = call};
	flush_tlb_mm_range(k, call->cpu, call->mm, NULL, addr,
			   addr + (UINT64_C(1) << PAGE_SHIFT_4K), PAGE_SHIFT_4K, false, t, flushed);
}

void fork_cow_fault(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t addr, uint64_t now,
		    struct kcont done)
{
	cpu->counters.page_faults++;
	struct fork_call *call = kernel_alloc(k, sizeof(*call));
	*call = (struct fork_call){.k = k, .cpu = cpu, .mm = mm, .done = done};
	uint64_t t = now + k->machine->topology->costs.page_fault + pti_enter_kernel(k);
	uint64_t at = kernel_global_time(k, t);
	engine_schedule(k->engine, at, LANE_GLOBAL, fork_cow_event, call, addr);
}
