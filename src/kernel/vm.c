/*
 * munmap, mmap, mprotect, madvise(DONTNEED) and page faults over whole VMAs.
 *
 * Models: the per-PTE walk of zap_pte_range()/change_pte_range() (pte_op
 * cycles each), the mmu_gather range (4.0+: only present PTEs and freed
 * page-table pages widen it; 3.x: the whole unmapped range, policy knob
 * munmap_flush_range), free_pgtables() freeing PTE pages whose 2 MiB span has
 * no VMA left, one flush_tlb_mm_range() at tlb_finish_mmu(), and the commit of
 * the changed PTEs when the call returns; the pages a zap freed leave the LRU
 * after the flush, and a fault's new page joins it (swap.c).  A read fault in
 * a private anonymous VMA maps the zero page (do_anonymous_page()); a write
 * to it copies (wp_page_copy()): a new page, and ptep_clear_flush() flushing
 * the zero page's translation from every CPU of the mm.  MADV_PAGEOUT's walk
 * clears the young bits of the pages it hands to reclaim (rmap.c) and flushes
 * them at tlb_finish_mmu(), after the reclaim.  A walk that changes PTEs
 * (munmap, mprotect, madvise) first flushes what reclaim deferred for the mm
 * (flush_tlb_batched_pending()).
 * mmap maps an unmapped chunk's VMA again at its old address and touches no PTE.
 * Each call holds mmap_lock and, with per-VMA locks, its VMA's lock from entry
 * to return (rwsem.c; see "mmap_lock and the per-VMA lock" below).
 * Simplifies: page-table changes are applied at the call's start time, the
 * flush at its computed time.
 * Invariant: every PTE this call changed is committed exactly when it returns.
 */
#include <glib.h>
#include "tlbsim/kernel/frame_release.h"
#include "tlbsim/kernel/pti.h"
#include "tlbsim/kernel/rmap.h"
#include "tlbsim/kernel/rwsem.h"
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/swap.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"
#include "tlbsim/kernel/vm.h"

#define PAGE_4K (UINT64_C(1) << 12)
#define PMD_SIZE (UINT64_C(1) << 21)
/* The top of x86-64's 4-level user address space (TASK_SIZE_MAX, rounded). */
#define TASK_SIZE_END (UINT64_C(1) << 47)

struct mmu_gather {
	uint64_t start;
	uint64_t end;
	bool freed_tables;
	/* ABIS: the changed PTEs' old A bits and accessors; numaPTE: the nodes
	 * holding their PTE pages */
	struct tlb_access access;
};

static void tlb_gather_mmu(struct mmu_gather *tlb)
{
	tlb->start = UINT64_MAX;
	tlb->end = 0;
	tlb->freed_tables = false;
	tlb->access = (struct tlb_access){.accessed = false, .foreign = false, .nodes = 0};
}

/*
 * tlb_get_unmap_shift(): the smallest granule cleared.  A VMA has one page
 * size, so its PTEs (4K) or PMDs (THP/hugetlb 2M); a freed PTE page alone
 * leaves the 4K range entries (pte_free_tlb widens by a page).
 */
static unsigned tlb_get_unmap_shift(const struct vma *vma)
{
	return page_size_shift(vma->page_size);
}

/* __tlb_adjust_range() */
static void tlb_adjust_range(struct mmu_gather *tlb, uint64_t start, uint64_t end)
{
	if (start < tlb->start)
		tlb->start = start;
	if (end > tlb->end)
		tlb->end = end;
}

enum vm_kind { VM_MUNMAP, VM_MPROTECT, VM_DONTNEED, VM_PAGEOUT, VM_FAULT, VM_MMAP };

/* How a call holds mmap_lock or its VMA's lock. */
enum vm_hold { HOLD_NONE, HOLD_READ, HOLD_WRITE };

/* One call in flight, from entry to return. */
struct vm_call {
	struct kernel *k;
	struct cpu *cpu;
	struct mm *mm;
	struct vma *vma;
	enum vm_kind kind;
	bool writable;           /* mprotect target */
	bool write;              /* a write fault */
	uint64_t addr;           /* fault address */
	uint64_t start, end;     /* the range it changes: whole VMA but for madvise */
	uint32_t gen_lo, gen_hi; /* the PTE generations its changes allocated */
	uint64_t unmapped_pages; /* lowered from total_vm after the flush */
	uint64_t freed_start, freed_end; /* PTE pages freed: spans [start, end] (bytes) */
	uint64_t freed_pages;    /* present PTEs zapped: pages freed after the flush */
	struct held_frames held; /* their frames, of which it held the last reference */
	bool freed_tables;
	uint64_t flushed_at;     /* its flush done: the freed tables go then */
	/* PTI: its return to user's cycles, once pti_return_to_user() ran. */
	bool user_flushed;
	uint64_t pti_cycles;
	bool gathering;          /* counted in mm->tlb_flush_pending until flushed */
	struct mmu_gather tlb;   /* MADV_PAGEOUT's, flushed after its reclaim */
	/* Pages of [start, end) present but left as they were (no generation
	 * of this call): its return must not commit them, or a later call's
	 * change to them would look committed before that call's flush. */
	uint64_t *kept;
	enum vm_hold mmap_hold;     /* how it holds mmap_lock (or is being granted it) */
	struct vma_lock *vma_read;  /* the VMA lock a fault holds for reading */
	/* The VMA locks a munmap, mmap or mprotect write-locks (vma_start_write()):
	 * its VMA's and those of the neighbours it will merge with. */
	struct vma_lock *to_write[3];
	unsigned nr_to_write, nr_written;
	uint64_t asked;      /* when it asked for the lock it waits for */
	uint64_t entry_rest; /* entry cycles after the locks are taken */
	struct kcont done;
};

/*
 * numaPTE's multi-replica PTE write: a PTE written at @addr is written in
 * every node's replica of its PTE page, one pte_op per replica beyond the
 * one the caller already counts (0 under other target sets).
 */
static uint64_t vm_replica_writes(const struct vm_call *call, uint64_t addr)
{
	const struct kernel *k = call->k;
	if (k->policy->targets != &flush_targets_numapte)
		return 0;
	unsigned replicas = (unsigned)__builtin_popcountll(mm_pmd_nodes(call->mm, addr));
	return replicas > 1 ? (replicas - 1) * k->machine->topology->costs.pte_op : 0;
}

/*
 * Fold the PTE at @addr the gather changes, read before the change (ABIS:
 * its old value, as ptep_get_and_clear() returns it), into what the gather
 * has seen: the nodes holding its PTE page (numaPTE), any A bit, and any
 * accessor other than @call's CPU.
 */
static void tlb_gather_access(struct mmu_gather *tlb, const struct vm_call *call, uint64_t addr,
			      const struct pte *old)
{
	unsigned cpu = call->cpu->id;
	tlb->access.nodes |= mm_pmd_nodes(call->mm, addr);
	if (!old->accessed)
		return;
	tlb->access.accessed = true;
	tlb->access.foreign |= old->accessor != cpu;
}

static void vm_keep(struct vm_call *call, uint64_t addr)
{
	uint64_t i = (addr - call->start) >> page_size_shift(call->vma->page_size);
	if (!call->kept) {
		uint64_t pages = (call->end - call->start) >> page_size_shift(call->vma->page_size);
		call->kept = kernel_alloc(call->k, (pages + 63) / 64 * sizeof(uint64_t));
	}
	call->kept[i / 64] |= UINT64_C(1) << (i % 64);
}

static bool vm_kept(const struct vm_call *call, uint64_t addr)
{
	uint64_t i = (addr - call->start) >> page_size_shift(call->vma->page_size);
	return call->kept && (call->kept[i / 64] >> (i % 64) & 1);
}

static int vm_asid_of(const void *ctx, const struct cpu *cpu)
{
	const struct vm_call *call = ctx;
	return tlbflush_cpu_asid_of(call->k, cpu, call->mm);
}

/* The tag @cpu walks the call's mm under, or -1 if its tables are not loaded. */
static int vm_walking(const void *ctx, const struct cpu *cpu)
{
	const struct vm_call *call = ctx;
	const struct cpu_tlbstate *ts = tlbflush_state(call->k, cpu);
	return ts->loaded_mm == call->mm ? ts->loaded_asid : -1;
}

/* ---- mmap_lock and the per-VMA lock ---------------------------------------- */

/*
 * What a call locks (include/linux/mmap_lock.h, mm/memory.c): munmap, mmap
 * and mprotect take mmap_lock for writing and, with per-VMA locks (6.4+),
 * write-lock the VMAs they change (vma_start_write(): wait for the VMA's
 * readers to leave, then mark it; the marks end with mmap_lock,
 * vma_end_write_all()); madvise takes mmap_lock for reading (6.15 has no
 * per-VMA-locked madvise yet).  A fault with per-VMA locks tries its VMA's
 * lock (lock_vma_under_rcu()); if the VMA is write-locked, or a writer waits
 * for its readers, it gives up (vma_lock_abort) and takes mmap_lock for
 * reading, which the writer holds: it waits there, and then holds mmap_lock
 * against the next writer.  Without per-VMA locks a fault takes mmap_lock.
 */
static enum vm_hold vm_mmap_hold(const struct kernel *k, enum vm_kind kind)
{
	switch (kind) {
	case VM_MUNMAP:
	case VM_MPROTECT:
	case VM_MMAP:
		return HOLD_WRITE;
	case VM_DONTNEED:
	case VM_PAGEOUT:
		return HOLD_READ;
	case VM_FAULT:
		return k->policy->per_vma_lock ? HOLD_NONE : HOLD_READ;
	}
	g_assert_not_reached();
}

static void vm_apply_event(void *target, uint64_t unused);
static void vm_mmap_event(void *target, uint64_t unused);

/*
 * Every lock taken at @time: the rest of the entry (the VMA lookup, or the
 * fault's own work), then the call's global event (kernel_global_time()).
 */
static void vm_locked(struct vm_call *call, uint64_t time)
{
	struct kernel *k = call->k;
	uint64_t at = kernel_global_time(k, time + call->entry_rest);
	engine_schedule(k->engine, at, LANE_GLOBAL,
			call->kind == VM_MMAP ? vm_mmap_event : vm_apply_event, call, 0);
}

/* down_read() or down_write() @sem as @hold says; false (nothing asked) for
 * HOLD_NONE. */
static bool vm_down(struct vm_call *call, struct rw_semaphore *sem, enum vm_hold hold,
		    uint64_t now, struct kcont granted)
{
	call->asked = now;
	if (hold == HOLD_WRITE)
		down_write(call->k, call->cpu, sem, now, granted);
	else if (hold == HOLD_READ)
		down_read(call->k, call->cpu, sem, now, granted);
	return hold != HOLD_NONE;
}

/* up_read() or up_write() @sem as @hold says; the time the release's RMW
 * completes (@time for HOLD_NONE). */
static uint64_t vm_up(struct vm_call *call, struct rw_semaphore *sem, enum vm_hold hold,
		      uint64_t time)
{
	if (hold == HOLD_WRITE)
		return up_write(call->k, call->cpu, sem, time);
	if (hold == HOLD_READ)
		return up_read(call->k, call->cpu, sem, time);
	return time;
}

/* vma_end_write_all(): every VMA write lock of the mm ends at once. */
static void vma_end_write_all(struct mm *mm)
{
	mm->mm_lock_seq++;
}

static bool vma_write_locked(const struct mm *mm, const struct vma_lock *lock)
{
	return lock->vm_lock_seq == mm->mm_lock_seq;
}

static void vm_vma_write_locks(struct vm_call *call, uint64_t time);

static void vm_vma_write_granted(struct kernel *k, void *ctx, uint64_t time)
{
	struct vm_call *call = ctx;
	struct vma_lock *lock = call->to_write[call->nr_written - 1];
	call->cpu->counters.vma_lock_acquisitions++;
	call->cpu->counters.vma_lock_wait_cycles += time - call->asked;
	lock->vm_lock_seq = call->mm->mm_lock_seq;
	vm_vma_write_locks(call, up_write(k, call->cpu, &lock->sem, time));
}

/* vma_start_write() on each lock the call changes, one after the other:
 * down_write() waits for the readers, the mark keeps new ones out. */
static void vm_vma_write_locks(struct vm_call *call, uint64_t time)
{
	while (call->nr_written < call->nr_to_write) {
		struct vma_lock *lock = call->to_write[call->nr_written++];
		if (vma_write_locked(call->mm, lock))
			continue;
		struct kcont granted = {.fn = vm_vma_write_granted, .ctx = call};
		vm_down(call, &lock->sem, HOLD_WRITE, time, granted);
		return;
	}
	vm_locked(call, time);
}

static void vm_to_write(struct vm_call *call, struct vma_lock *lock)
{
	for (unsigned i = 0; i < call->nr_to_write; i++)
		if (call->to_write[i] == lock)
			return;
	g_assert(call->nr_to_write < G_N_ELEMENTS(call->to_write));
	call->to_write[call->nr_to_write++] = lock;
}

/*
 * The VMA locks a call that holds mmap_lock for writing will write-lock:
 * its VMA's, if mapped, and those of the neighbours the VMA will merge with
 * once changed (vma_merge() write-locks both VMAs it merges).
 */
static void vm_find_write_locks(struct vm_call *call)
{
	if (!call->k->policy->per_vma_lock)
		return;
	const struct vma *vma = call->vma;
	struct vma changed = *vma;
	changed.mapped = call->kind != VM_MUNMAP;
	if (call->kind == VM_MPROTECT)
		changed.writable = call->writable;
	else if (call->kind == VM_MMAP && !vma->mapped)
		changed.writable = true; /* mm_map_vma() */
	if (vma->mapped)
		vm_to_write(call, vma->vm_lock);
	const struct mm *mm = call->mm;
	unsigned i = (unsigned)(vma - mm->vmas);
	if (i > 0 && mm_vmas_merge(&mm->vmas[i - 1], &changed))
		vm_to_write(call, mm->vmas[i - 1].vm_lock);
	if (i + 1 < mm->nr_vmas && mm_vmas_merge(&changed, &mm->vmas[i + 1]))
		vm_to_write(call, mm->vmas[i + 1].vm_lock);
}

static void vm_mmap_locked(struct kernel *k, void *ctx, uint64_t time)
{
	(void)k;
	struct vm_call *call = ctx;
	call->cpu->counters.mmap_lock_acquisitions++;
	call->cpu->counters.mmap_lock_wait_cycles += time - call->asked;
	if (call->mmap_hold == HOLD_WRITE)
		vm_find_write_locks(call);
	vm_vma_write_locks(call, time);
}

/*
 * lock_vma_under_rcu() at @now: a fault's read of its VMA's lock, which
 * fails without an RMW on a marked VMA (vm_lock_seq is read first) and
 * without one on a waiting writer (the trylock reads the count first).
 * Returns false if the fault must take mmap_lock instead, at *@done.
 */
static bool vm_lock_vma_under_rcu(struct vm_call *call, uint64_t now, uint64_t *done)
{
	struct kernel *k = call->k;
	struct vma_lock *lock = call->vma->vm_lock;
	g_assert(lock);
	if (vma_write_locked(call->mm, lock)) {
		*done = fabric_line_read(k->machine->fabric, &lock->sem.count, call->cpu->id, now);
		return false;
	}
	if (!down_read_trylock(k, call->cpu, &lock->sem, now, done))
		return false;
	call->vma_read = lock;
	call->cpu->counters.vma_lock_acquisitions++;
	call->cpu->counters.vma_lock_wait_cycles += *done - now;
	return true;
}

/* Ask at @now for what the call locks: a fault's VMA lock, else (or failing
 * that) mmap_lock, then the VMA locks a writer marks. */
static void vm_lock(struct vm_call *call, uint64_t now)
{
	struct kcont granted = {.fn = vm_mmap_locked, .ctx = call};
	call->mmap_hold = vm_mmap_hold(call->k, call->kind);
	if (call->kind == VM_FAULT && call->mmap_hold == HOLD_NONE) {
		if (vm_lock_vma_under_rcu(call, now, &now)) {
			vm_locked(call, now);
			return;
		}
		call->cpu->counters.vma_lock_abort++;
		call->mmap_hold = HOLD_READ;
	}
	if (!vm_down(call, call->mm->mmap_lock, call->mmap_hold, now, granted))
		vm_locked(call, now);
}

/* Drop what the call holds at @time, the VMA's lock first (mmap_write_unlock()
 * ends the VMA write locks, then releases mmap_lock); returns when the
 * caller's last RMW completes. */
static uint64_t vm_unlock(struct vm_call *call, uint64_t time)
{
	uint64_t t = time;
	if (call->vma_read)
		t = up_read(call->k, call->cpu, &call->vma_read->sem, t);
	if (call->mmap_hold == HOLD_WRITE)
		vma_end_write_all(call->mm);
	t = vm_up(call, call->mm->mmap_lock, call->mmap_hold, t);
	call->vma_read = NULL;
	call->mmap_hold = HOLD_NONE;
	return t;
}

/*
 * 4.20+ (dd2283f2605e, "mm: mmap: zap pages with read mmap_sem in munmap"):
 * once the VMAs are detached, munmap downgrades mmap_lock to reading (which
 * ends the VMA write locks too) and zaps and flushes under it.  Returns the
 * time the zap starts.
 */
static uint64_t vm_munmap_downgrade(struct vm_call *call, uint64_t now)
{
	struct kernel *k = call->k;
	if (!k->policy->munmap_downgrade || call->mmap_hold != HOLD_WRITE)
		return now;
	vma_end_write_all(call->mm);
	call->mmap_hold = HOLD_READ;
	return downgrade_write(k, call->cpu, call->mm->mmap_lock, now);
}

/* munmap() and madvise(MADV_DONTNEED): LATR's "free-type" calls, whose
 * flushes it may make lazy (mm->munmap_inprogress). */
static bool vm_frees_memory(enum vm_kind kind)
{
	return kind == VM_MUNMAP || kind == VM_DONTNEED;
}

/* PTI's return to user (pti_return_to_user()), done once per call: before
 * the call's stale count, so that a user flush it kept for the return is
 * not counted as a translation its CPU could use; charged after the unlock. */
static void vm_return_to_user(struct vm_call *call)
{
	if (call->user_flushed)
		return;
	call->user_flushed = true;
	call->pti_cycles = pti_return_to_user(call->k, call->cpu, true);
}

/* The call drops its locks at @time and returns to user space once their
 * releases complete; @call is freed. */
static void vm_call_return(struct vm_call *call, uint64_t time)
{
	struct kernel *k = call->k;
	struct kcont done = call->done;
	time = vm_unlock(call, time);
	vm_return_to_user(call);
	time += call->pti_cycles;
	call->mm->munmap_inprogress -= vm_frees_memory(call->kind);
	trace_syscall_exit(k, call->cpu->id, time);
	if (call->kept)
		kernel_release(k, call->kept);
	kernel_release(k, call);
	kcont_call(k, done, time);
}

/* The call returns to user space: its PTE changes become globally visible;
 * any entry still older than them could be hit stale (counted).  Its locks
 * go at the same time. */
static void vm_return_event(void *target, uint64_t time)
{
	struct vm_call *call = target;
	struct kernel *k = call->k;
	uint64_t size = page_size_bytes(call->vma->page_size);
	vm_return_to_user(call);
	for (uint64_t addr = call->start; call->gen_hi >= call->gen_lo && addr < call->end;
	     addr += size) {
		if (vm_kept(call, addr))
			continue;
		struct pte *pte = vma_pte(call->vma, addr);
		mm_commit_change(pte, call->gen_lo, call->gen_hi);
		if (pte->committed >= call->gen_lo) /* this call's change is now visible */
			machine_count_stale_entries(k->machine, call->vma, addr, pte->committed,
						    vm_asid_of, call);
	}
	call->mm->total_vm -= call->unmapped_pages;
	/* free_pgtables() ran after the flush: no CPU may still walk into them. */
	for (uint64_t span = call->freed_start >> 21; call->freed_tables &&
						       span <= call->freed_end >> 21;
	     span++)
		if (mm_pmd_freed(call->mm, span)) {
			machine_check_freed_table(k->machine, call->mm, span, time, vm_walking,
						  call);
			/* An early ack let the call go on before the flush was done. */
			tlbflush_check_acked_flushes(k, call->mm, span, call->flushed_at);
		}
	vm_call_return(call, time);
}

/*
 * The flush is done at @time, which may lie ahead of the engine's clock (the
 * last acknowledgement is seen later than it is sent): commit at @time exactly,
 * so that no access before the return is judged against the new PTEs.
 */
static void vm_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	struct vm_call *call = ctx;
	call->flushed_at = time;
	if (call->gathering) /* dec_tlb_flush_pending() */
		call->mm->tlb_flush_pending--;
	/* tlb_finish_mmu() frees the zapped pages only now, after the flush;
	 * hugetlb pages never were on the LRU. */
	if (!call->vma->hugetlb)
		time += lru_free_pages(k, call->cpu, call->freed_pages, time);
	held_frames_release(k, call->cpu, call->mm, &call->held, time);
	/* The last acknowledgement may come from the caller's SMT sibling, a
	 * shorter transfer than the lookahead. */
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, vm_return_event, ctx, at);
}

/* zap_pte_range(): clear [start, end) of @call's VMA into @tlb, counting
 * the pages it will free into freed_pages and keeping the frames whose last
 * reference went (a page fork still shares is not freed); returns the cycles. */
static uint64_t zap_ptes(struct vm_call *call, uint64_t start, uint64_t end,
			 struct mmu_gather *tlb)
{
	struct vma *vma = call->vma;
	uint64_t size = page_size_bytes(vma->page_size);
	uint64_t cycles = (end - start) / size * call->k->machine->topology->costs.pte_op;
	for (uint64_t addr = start; addr < end; addr += size) {
		const struct pte old = *vma_pte(vma, addr);
		bool zero_page = old.zero_page; /* not ours to free */
		uint32_t held;
		if (mm_zap_pte_frame(call->mm, vma, addr, &held)) {
			tlb_adjust_range(tlb, addr, addr + size);
			tlb_gather_access(tlb, call, addr, &old);
			cycles += vm_replica_writes(call, addr);
			if (!zero_page)
				call->freed_pages++;
			held_frames_add(call->k, &call->held, vma->page_size, held);
		}
	}
	return cycles;
}

/* The range flush_tlb_mm_range() gets: what mmu_gather saw, or (3.x) all of it. */
static void vm_gathered_range(const struct kernel *k, const struct vm_call *call,
			      const struct mmu_gather *tlb, uint64_t *start, uint64_t *end)
{
	*start = tlb->start;
	*end = tlb->end;
	if (k->policy->munmap_flush_range == MUNMAP_FLUSH_VMA) {
		*start = call->start;
		*end = call->end;
	}
}

static uint64_t vm_munmap_apply(struct vm_call *call, struct mmu_gather *tlb)
{
	uint64_t cycles = zap_ptes(call, call->start, call->end, tlb);
	uint64_t freed_start = 0, freed_end = 0;
	if (mm_unmap_vma(call->mm, call->vma, &freed_start, &freed_end) > 0) {
		/* pte_free_tlb(): each freed table widens the range by a page at
		 * the address it mapped. */
		tlb_adjust_range(tlb, freed_start, freed_start + PAGE_4K);
		tlb_adjust_range(tlb, freed_end - PMD_SIZE, freed_end - PMD_SIZE + PAGE_4K);
		tlb->freed_tables = true;
		call->freed_tables = true;
		call->freed_start = freed_start;
		call->freed_end = freed_end - PMD_SIZE;
	}
	call->unmapped_pages = (call->vma->end - call->vma->start) / PAGE_4K;
	return cycles;
}

/* change_protection(): every present PTE is rewritten; only a downgrade needs
 * old translations gone.  The whole range is flushed if any PTE changed.
 * Every present PTE's A bit and accessor enter the gather (the kernel reads
 * each with ptep_modify_prot_start()); only a downgrade clears them, since
 * after an upgrade the old read-only entries stay in the TLBs. */
static uint64_t vm_mprotect_apply(struct vm_call *call, struct mmu_gather *tlb)
{
	struct vma *vma = call->vma;
	uint64_t size = page_size_bytes(vma->page_size);
	uint64_t n = vma_pages(vma);
	bool changed = false;
	uint64_t replicas = 0;
	vma->writable = call->writable;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t addr = vma->start + i * size;
		struct pte *pte = vma_pte(vma, addr);
		if (!pte->present)
			continue;
		changed = true;
		tlb_gather_access(tlb, call, addr, pte);
		replicas += vm_replica_writes(call, addr);
		/* Making a PTE writable allocates no generation (older
		 * translations stay right); the zero page stays read-only. */
		if (call->writable) {
			if (!pte->zero_page)
				pte->writable = true;
			vm_keep(call, addr);
		} else if (!mm_wrprotect_pte(call->mm, vma, addr)) {
			vm_keep(call, addr);
		}
	}
	if (changed)
		tlb_adjust_range(tlb, vma->start, vma->end);
	return n * call->k->machine->topology->costs.pte_op + replicas;
}

/* The tag @call's CPU fills its TLB with for the call's mm. */
static uint16_t vm_asid(const struct vm_call *call)
{
	return tlbflush_state(call->k, call->cpu)->loaded_asid;
}

/*
 * Does the fault copy the zero page (a write to it in a writable VMA)?  (An
 * mprotect() since the fault was taken may have made the VMA read-only: then,
 * as for other write faults that race with one, the access is let through on
 * what is mapped.)
 */
static bool vm_fault_copies(const struct vm_call *call)
{
	const struct pte *pte = vma_pte(call->vma, call->addr);
	return call->write && pte->present && pte->zero_page && call->vma->writable;
}

/*
 * wp_page_copy() of the zero page at @t: the PTE now maps a new writable
 * page, which joins the LRU, and ptep_clear_flush() flushes the old
 * translation (flush_tlb_page(): one page, every CPU of the mm), gathered
 * into @tlb.  Quiet accessors may hold it: their promises go.  Returns the
 * cycles.
 */
static uint64_t vm_fault_copy(struct vm_call *call, struct mmu_gather *tlb, uint64_t t)
{
	struct kernel *k = call->k;
	uint64_t size = page_size_bytes(call->vma->page_size);
	sched_revoke_quiet(k);
	tlb_gather_access(tlb, call, call->addr, vma_pte(call->vma, call->addr));
	mm_cow_zero_page(call->mm, call->vma, call->addr);
	vma_pte(call->vma, call->addr)->dirty = true; /* maybe_mkwrite(pte_mkdirty()) */
	call->start = call->addr;
	call->end = call->addr + size;
	tlb_adjust_range(tlb, call->start, call->end);
	uint64_t cycles = lru_add_page(k, call->cpu, t) + vm_replica_writes(call, call->addr);
	/* The retried access's walk, taken now, while the new PTE is surely
	 * there (another call may zap it before this one returns); the local
	 * part of the flush drops it again. */
	machine_fill(call->cpu, vm_asid(call), call->vma, call->addr);
	return cycles;
}

/*
 * The rest of handle_mm_fault() at @t: a fresh PTE (the zero page for a read
 * in a private VMA, else a new page that joins the LRU), or a write made
 * writable in place; the TLB filled; and the fault returns.  A fresh PTE
 * needs no flush and invalidates nothing.
 */
static void vm_fault_return(struct vm_call *call, uint64_t t)
{
	struct kernel *k = call->k;
	struct pte *pte = vma_pte(call->vma, call->addr);
	/* Another CPU's fault may have mapped it first: nothing to do then
	 * but fill (a spurious fault). */
	if (!pte->present) {
		t += vm_replica_writes(call, call->addr);
		if (!call->write && !call->vma->hugetlb && !call->vma->shared) {
			mm_map_zero_page(call->mm, call->vma, call->addr);
		} else {
			mm_populate(call->mm, call->vma, call->addr, call->vma->writable);
			if (!call->vma->hugetlb) /* a new page joins the LRU */
				t += lru_add_page(k, call->cpu, t);
		}
	} else if (call->write && call->vma->writable) {
		pte->writable = true; /* do_wp_page() reusing the only mapping */
		t += vm_replica_writes(call, call->addr);
	}
	/* The retried write goes through the new entry: pte_mkdirty() (the
	 * access itself is not translated again). */
	pte->dirty |= call->write && pte->writable;
	machine_fill(call->cpu, vm_asid(call), call->vma, call->addr);
	vm_call_return(call, t);
}

/* The calls that change PTEs under an mmu_gather (inc_tlb_flush_pending()
 * at tlb_gather_mmu()): munmap and madvise; mprotect from 6.0, which the
 * presets with NESTED_FLUSH_FULL all are. */
static bool vm_gathers(const struct kernel *k, enum vm_kind kind)
{
	return kind == VM_MUNMAP || kind == VM_DONTNEED || kind == VM_PAGEOUT ||
	       (kind == VM_MPROTECT && k->policy->nested_flush == NESTED_FLUSH_FULL);
}

/* The calls whose page-table walk starts with flush_tlb_batched_pending():
 * zap_pte_range() (munmap, MADV_DONTNEED), change_pte_range() (mprotect) and
 * madvise_cold_or_pageout_pte_range(). */
static bool vm_walks(enum vm_kind kind)
{
	return kind == VM_MUNMAP || kind == VM_DONTNEED || kind == VM_MPROTECT ||
	       kind == VM_PAGEOUT;
}

/*
 * tlb_finish_mmu(): another gather of the mm still in flight may have left a
 * PTE cleared but not yet flushed that this call skipped, so the flush widens
 * (mm_tlb_flush_nested()).  Returns whether the call flushes at all.
 */
static bool tlb_finish_mmu_range(struct kernel *k, struct vm_call *call, uint64_t *start,
				 uint64_t *end, bool *freed_tables)
{
	if (!call->gathering || call->mm->tlb_flush_pending < 2 ||
	    k->policy->nested_flush == NESTED_FLUSH_NONE)
		return *start < *end;
	if (k->policy->nested_flush == NESTED_FLUSH_RANGE) {
		*start = call->start;
		*end = call->end;
	} else {
		*start = 0;
		*end = TASK_SIZE_END; /* fullmm: beyond any ceiling, a full flush */
		*freed_tables = true;
	}
	return true;
}

/*
 * Is this call's flush the only one the mm may still owe?  No other gather
 * in flight (whose flush may not yet have reached entries older than the A
 * bits this call read: mm_tlb_flush_pending()) and no reclaim flush
 * deferred.  Only then can ABIS trust the A bits alone; else a narrowed
 * flush could return, and commit, before the other flush lands.
 */
static bool vm_flush_alone(const struct vm_call *call)
{
	return call->mm->tlb_flush_pending == (call->gathering ? 1u : 0u) &&
	       !call->mm->tlb_flush_batched;
}

/* tlb_finish_mmu() at @t: flush [start, end) (widened for nested gathers),
 * then the call returns (vm_flushed()).  @seen: what the gather read of the
 * changed PTEs' A bits (ABIS), or NULL if it read none. */
static void vm_finish_mmu(struct kernel *k, struct vm_call *call, uint64_t start, uint64_t end,
			  bool freed_tables, const struct tlb_access *seen, uint64_t t)
{
	struct kcont flushed = {.fn = vm_flushed, .ctx = call};
	unsigned shift = tlb_get_unmap_shift(call->vma);
	if (!tlb_finish_mmu_range(k, call, &start, &end, &freed_tables))
		vm_flushed(k, call, t);
	else if (seen && vm_flush_alone(call))
		flush_tlb_gathered(k, call->cpu, call->mm, call->vma, start, end, shift,
				   freed_tables, seen, t, flushed);
	else
		flush_tlb_mm_range(k, call->cpu, call->mm, call->vma, start, end, shift,
				   freed_tables, t, flushed);
}

/* flush_tlb_batched_pending() done at @time: the walk goes on from a global
 * event then (or the lookahead bound), as the call's page-table work is. */
static void vm_batched_flushed(struct kernel *k, void *ctx, uint64_t time)
{
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, vm_apply_event, ctx, 0);
}

/*
 * madvise_cold_or_pageout_pte_range()'s walk before reclaim: each page it will
 * reclaim has its young bit cleared (ptep_get_and_clear_full(), pte_mkold())
 * and enters the mmu_gather (tlb_remove_tlb_entry()), which tlb_finish_mmu()
 * flushes after the reclaim.  Every such page is young here: it was mapped
 * (young) since the last MADV_PAGEOUT, which reclaimed them all, and nothing
 * else ages a PTE in this model.  Making a PTE old invalidates no
 * translation: no generation.  The zero page is no normal page: skipped, and
 * kept as it is.
 */
static void vm_pageout_walk(struct vm_call *call)
{
	uint64_t size = page_size_bytes(call->vma->page_size);
	for (uint64_t addr = call->start; addr < call->end; addr += size) {
		const struct pte *pte = vma_pte(call->vma, addr);
		if (pte->zero_page)
			vm_keep(call, addr);
		else if (pte->present)
			tlb_adjust_range(&call->tlb, addr, addr + size);
	}
}

static void vm_pageout_finish_event(void *target, uint64_t time)
{
	struct vm_call *call = target;
	/* Aging clears no A bit ABIS reads: Linux's flush. */
	vm_finish_mmu(call->k, call, call->tlb.start, call->tlb.end, call->tlb.freed_tables, NULL,
		      time);
}

/* reclaim_pages() done at @time: tlb_finish_mmu() from an event at that time
 * (or the lookahead bound: the last ack may be a short transfer). */
static void vm_pageout_reclaimed(struct kernel *k, void *ctx, uint64_t time)
{
	struct vm_call *call = ctx;
	if (time == engine_now(k->engine)) {
		vm_pageout_finish_event(call, time);
		return;
	}
	uint64_t at = kernel_global_time(k, time);
	engine_schedule(k->engine, at, LANE_GLOBAL, vm_pageout_finish_event, call, at);
}

/*
 * The call's page-table work, at a global event: from here on every CPU's page
 * walks see the new PTEs.  Then the flush, then the return.  A walk that finds
 * a reclaim flush of the mm still owed does it first, and starts again from
 * a global event when it completes.
 */
static void vm_apply_event(void *target, uint64_t unused)
{
	(void)unused;
	struct vm_call *call = target;
	struct kernel *k = call->k;
	uint64_t t = engine_now(k->engine);
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb);
	if (call->kind != VM_FAULT)
		sched_revoke_quiet(k); /* the PTEs quiet accessors rely on may change */
	if (!call->vma->mapped) {
		/* Another task unmapped it since this call entered the kernel:
		 * munmap finds nothing (and returns 0), the others fail (ENOMEM);
		 * either way nothing changes and nothing is flushed. */
		call->start = call->end = 0;
		vm_flushed(k, call, t);
		return;
	}
	if (vm_walks(call->kind) && call->mm->tlb_flush_batched) {
		struct kcont walk = {.fn = vm_batched_flushed, .ctx = call};
		flush_tlb_batched_pending(k, call->cpu, call->mm, t, walk);
		return;
	}
	call->gen_lo = call->mm->next_gen;
	if (vm_gathers(k, call->kind)) {
		call->gathering = true;
		call->mm->tlb_flush_pending++;
	}
	switch (call->kind) {
	case VM_MUNMAP: {
		/* The VMA is split off and detached before the downgrade. */
		uint64_t cycles = vm_munmap_apply(call, &tlb);
		mm_vma_relink(call->mm, call->vma, call->cpu->id);
		t = vm_munmap_downgrade(call, t) + cycles;
		break;
	}
	case VM_MPROTECT:
		t += vm_mprotect_apply(call, &tlb);
		mm_vma_relink(call->mm, call->vma, call->cpu->id);
		break;
	case VM_DONTNEED:
		t += zap_ptes(call, call->start, call->end, &tlb);
		break;
	case VM_PAGEOUT: {
		struct kcont reclaimed = {.fn = vm_pageout_reclaimed, .ctx = call};
		tlb_gather_mmu(&call->tlb);
		vm_pageout_walk(call);
		reclaim_pages(k, call->cpu, call->mm, call->vma, call->start, call->end, t,
			      reclaimed);
		call->gen_hi = call->mm->next_gen - 1;
		return;
	}
	case VM_FAULT:
		if (!vm_fault_copies(call)) {
			vm_fault_return(call, t);
			return;
		}
		t += vm_fault_copy(call, &tlb, t);
		break;
	case VM_MMAP:
		g_assert_not_reached(); /* vm_mmap_event() */
	}
	call->gen_hi = call->mm->next_gen - 1; /* < gen_lo: nothing changed */
	uint64_t start, end;
	vm_gathered_range(k, call, &tlb, &start, &end);
	if (call->kind == VM_MPROTECT) {
		start = tlb.start;
		end = tlb.end;
	}
	vm_finish_mmu(k, call, start, end, tlb.freed_tables, &tlb.access, t);
}

/*
 * A call of @kind entering the kernel on @cpu at @now, over [start, end) of
 * @vma (a fault: at @start): counted (syscalls or page_faults) and traced,
 * as every syscall's entry is.  The caller fills in the rest of its
 * arguments, then vm_call_enter().
 */
static struct vm_call *vm_call_new(struct kernel *k, struct cpu *cpu, struct mm *mm,
				   struct vma *vma, enum vm_kind kind, const char *name,
				   uint64_t start, uint64_t end, uint64_t now, struct kcont done)
{
	bool fault = kind == VM_FAULT;
	if (fault)
		cpu->counters.page_faults++;
	else
		cpu->counters.syscalls++;
	trace_syscall_enter(k, cpu->id, name, fault ? NULL : vma, start, end, now);
	struct vm_call *call = kernel_alloc(k, sizeof(*call));
	*call = (struct vm_call){
		.k = k, .cpu = cpu, .mm = mm, .vma = vma, .kind = kind, .done = done,
		.start = start, .end = end,
	};
	mm->munmap_inprogress += vm_frees_memory(kind);
	return call;
}

/*
 * Enter the kernel at @now.  A syscall asks for its locks once in the kernel
 * (syscall cycles), and looks up the VMA under them (vma_op); a fault asks at
 * once, and its handling (page_fault cycles) is done under them.  The
 * page-table work is a global event after that (vm_locked()).
 */
static void vm_call_enter(struct vm_call *call, uint64_t now)
{
	const struct topology_costs *costs = &call->k->machine->topology->costs;
	if (call->kind == VM_FAULT) {
		/* ABIS's accessor bookkeeping (0 under other policies). */
		call->entry_rest = costs->page_fault + call->k->policy->abis_track_cycles;
		vm_lock(call, now + pti_enter_kernel(call->k));
	} else {
		call->entry_rest = costs->vma_op;
		vm_lock(call, now + costs->syscall + pti_enter_kernel(call->k));
	}
}

void do_munmap(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma, uint64_t now,
	       struct kcont done)
{
	g_assert(vma->mapped);
	vm_call_enter(vm_call_new(k, cpu, mm, vma, VM_MUNMAP, "munmap", vma->start, vma->end, now,
				  done),
		      now);
}

void do_mprotect(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		 bool writable, uint64_t now, struct kcont done)
{
	g_assert(vma->mapped);
	struct vm_call *call = vm_call_new(k, cpu, mm, vma, VM_MPROTECT, "mprotect", vma->start,
					   vma->end, now, done);
	call->writable = writable;
	vm_call_enter(call, now);
}

void madvise_dontneed(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		      uint64_t start, uint64_t end, uint64_t now, struct kcont done)
{
	g_assert(vma->mapped && vma->start <= start && start < end && end <= vma->end);
	vm_call_enter(vm_call_new(k, cpu, mm, vma, VM_DONTNEED, "madvise(MADV_DONTNEED)", start,
				  end, now, done),
		      now);
}

void madvise_pageout(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		     uint64_t start, uint64_t end, uint64_t now, struct kcont done)
{
	g_assert(vma->mapped && vma->start <= start && start < end && end <= vma->end);
	vm_call_enter(vm_call_new(k, cpu, mm, vma, VM_PAGEOUT, "madvise(MADV_PAGEOUT)", start, end,
				  now, done),
		      now);
}

void handle_mm_fault(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		     uint64_t addr, bool write, uint64_t now, struct kcont done)
{
	g_assert(vma->mapped);
	/* [addr, addr): nothing to commit (but a copy-on-write) */
	struct vm_call *call = vm_call_new(k, cpu, mm, vma, VM_FAULT, "page_fault", addr, addr,
					   now, done);
	call->addr = addr;
	call->write = write;
	vm_call_enter(call, now);
}

/* ---- mmap ------------------------------------------------------------------ */

/*
 * The new VMA becomes visible to every CPU's faults at this global event, and
 * the call returns.  Nothing is revoked (sched_revoke_quiet()): as with a
 * fault, mapping takes nothing away, and a quiet accessor's pages are all
 * present, so none lies in a VMA that was unmapped.  mmap changes no PTE, so
 * it has nothing to gather, flush or commit.
 */
static void vm_mmap_event(void *target, uint64_t unused)
{
	(void)unused;
	struct vm_call *call = target;
	struct kernel *k = call->k;
	uint64_t t = engine_now(k->engine);
	/* Another task mapped it again since this call entered the kernel: the
	 * kernel would place this mapping elsewhere, and tlbsim has one address
	 * per chunk, so the call changes nothing. */
	if (!call->vma->mapped) {
		mm_map_vma(call->mm, call->vma);
		mm_vma_relink(call->mm, call->vma, call->cpu->id);
	}
	vm_call_return(call, t);
}

/*
 * mmap() of an anonymous private mapping, mapping @vma again at its old
 * address.  The kernel's do_mmap() takes mmap_lock for writing (and, merging
 * the mapping with its neighbour, write-locks that VMA), finds the range, and
 * links a new VMA (vma_op cycles); no PTE is touched, so nothing is flushed
 * and no CPU is interrupted.
 */
void do_mmap(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma, uint64_t now,
	     struct kcont done)
{
	g_assert(!vma->mapped);
	vm_call_enter(vm_call_new(k, cpu, mm, vma, VM_MMAP, "mmap", vma->start, vma->end, now,
				  done),
		      now);
}
