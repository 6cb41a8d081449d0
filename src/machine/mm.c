/*
 * Address spaces (struct mm): VMAs, PTEs with generations, page-table-page
 * occupancy and mm_cpumask.
 *
 * Simplifies: one level of page tables is tracked (PTE pages, one per 2 MiB
 * span); upper levels are never freed.  VMAs are laid out once before the run
 * and only ever unmapped or mapped again whole, at the same address, so the
 * VMA array never changes shape and pointers into it stay valid for the whole
 * run.
 * VMA merging decides only which VMAs share a lock (mm.h, mm_finish_layout()).
 * A populated PTE gets a frame from the mm's allocator (frame.h), fork's
 * copy shares its parent's, and a zap drops the reference; freeing a frame
 * whose last reference went is the zapper's business (after its flush).
 * Every change that bumps @pending clears the PTE's Accessed bit and accessor
 * (mm.h); a not-present PTE is never accessed.
 * Invariant: pmd_users[i] == number of mapped VMAs overlapping span i.
 */
#include <glib.h>
#include "tlbsim/machine/mm.h"

#define PMD_SHIFT 21

struct mm *mm_new(unsigned id, unsigned nr_cpus)
{
	struct mm *mm = g_new0(struct mm, 1);
	mm->id = id;
	mm->nr_cpus = nr_cpus;
	mm->cpumask = g_new0(uint64_t, (nr_cpus + 63) / 64);
	mm->cpumask_line = CACHELINE_INIT;
	mm->context_line = CACHELINE_INIT;
	mm->next_gen = 1;
	mm->mmap_lock = g_new(struct rw_semaphore, 1);
	*mm->mmap_lock = RWSEM_INITIALIZER;
	return mm;
}

void mm_free(struct mm *mm)
{
	if (!mm)
		return;
	for (unsigned i = 0; i < mm->nr_vmas; i++)
		g_free(mm->vmas[i].ptes);
	g_free(mm->vmas);
	g_free(mm->pmd_users);
	g_free(mm->pmd_nodes);
	g_free(mm->cpumask);
	g_free(mm->mmap_lock);
	for (struct vma_lock *l = mm->vma_locks, *next; l; l = next) {
		next = l->next;
		g_free(l);
	}
	g_free(mm);
}

struct vma *mm_add_vma(struct mm *mm, uint64_t start, uint64_t len, enum page_size ps,
		       bool hugetlb, unsigned region, unsigned chunk)
{
	uint64_t size = page_size_bytes(ps);
	g_assert(start % size == 0 && len % size == 0 && len > 0);
	g_assert(mm->nr_vmas == 0 || mm->vmas[mm->nr_vmas - 1].end <= start);
	g_assert(mm->pmd_users == NULL);

	/* Doubling: a region of millions of chunks is laid out in linear time. */
	if (mm->nr_vmas == mm->vmas_room) {
		mm->vmas_room = MAX(8u, mm->vmas_room * 2);
		mm->vmas = g_renew(struct vma, mm->vmas, mm->vmas_room);
	}
	struct vma *vma = &mm->vmas[mm->nr_vmas++];
	*vma = (struct vma){
		.mm = mm,
		.start = start,
		.end = start + len,
		.page_size = ps,
		.hugetlb = hugetlb,
		.mapped = true,
		.writable = true,
		.region = region,
		.chunk = chunk,
		.ptes = g_new0(struct pte, len / size),
	};
	mm->total_vm += len >> page_size_shift(PS_4K);
	return vma;
}

bool mm_vmas_merge(const struct vma *prev, const struct vma *vma)
{
	return prev->end == vma->start && prev->region == vma->region && prev->mapped &&
	       vma->mapped && prev->writable == vma->writable && !prev->shared && !vma->shared &&
	       !prev->hugetlb && !vma->hugetlb;
}

/* A lock nobody holds, its line last written by @writer (-1: nobody). */
static struct vma_lock *mm_vma_lock_get(struct mm *mm, int writer, uint64_t seq)
{
	struct vma_lock *lock = mm->free_vma_locks;
	if (lock) {
		mm->free_vma_locks = lock->next_free;
	} else {
		lock = g_new0(struct vma_lock, 1);
		lock->next = mm->vma_locks;
		mm->vma_locks = lock;
	}
	lock->sem = RWSEM_INITIALIZER;
	lock->sem.count.writer = writer;
	lock->vm_lock_seq = seq;
	lock->next_free = NULL;
	return lock;
}

static void mm_vma_lock_put(struct mm *mm, struct vma_lock *lock)
{
	g_assert(lock->sem.readers == 0 && !lock->sem.writer && !lock->sem.head);
	lock->next_free = mm->free_vma_locks;
	mm->free_vma_locks = lock;
}

/* Before the run: every run of merged VMAs gets a lock of its own, unlocked
 * (a sequence the mm's never reaches) and in nobody's cache. */
static void mm_assign_vma_locks(struct mm *mm)
{
	for (unsigned i = 0; i < mm->nr_vmas; i++) {
		struct vma *vma = &mm->vmas[i];
		if (i > 0 && mm_vmas_merge(&mm->vmas[i - 1], vma))
			vma->vm_lock = mm->vmas[i - 1].vm_lock;
		else
			vma->vm_lock = mm_vma_lock_get(mm, -1, UINT64_MAX);
	}
}

/*
 * The shorter of the run of @left_lock ending at @i - 1 and the run of
 * @right_lock starting at @i + 1, scanned outwards from @i in step so that
 * the work is the shorter run's length: its first and last index.
 */
static void mm_shorter_run(const struct mm *mm, unsigned i, const struct vma_lock *left_lock,
			   const struct vma_lock *right_lock, unsigned *first, unsigned *last)
{
	const struct vma *vmas = mm->vmas;
	for (unsigned lo = i, hi = i;; lo--, hi++) {
		if (lo == 0 || vmas[lo - 1].vm_lock != left_lock) {
			*first = lo;
			*last = i - 1;
			return;
		}
		if (hi + 1 >= mm->nr_vmas || vmas[hi + 1].vm_lock != right_lock) {
			*first = i + 1;
			*last = hi;
			return;
		}
	}
}

static void mm_set_run_lock(struct mm *mm, unsigned first, unsigned last, struct vma_lock *lock)
{
	for (unsigned j = first; j <= last; j++)
		mm->vmas[j].vm_lock = lock;
}

void mm_vma_relink(struct mm *mm, struct vma *vma, unsigned cpu)
{
	struct vma *vmas = mm->vmas;
	unsigned i = (unsigned)(vma - vmas), n = mm->nr_vmas;
	g_assert(i < n);
	/* Take @vma out of its kernel VMA; a run it was inside splits, and the
	 * shorter part gets the new lock. */
	struct vma_lock *old = vma->vm_lock;
	if (old) {
		vma->vm_lock = NULL;
		bool left = i > 0 && vmas[i - 1].vm_lock == old;
		bool right = i + 1 < n && vmas[i + 1].vm_lock == old;
		if (left && right) {
			unsigned first, last;
			mm_shorter_run(mm, i, old, old, &first, &last);
			mm_set_run_lock(mm, first, last, mm_vma_lock_get(mm, (int)cpu, mm->mm_lock_seq));
		} else if (!left && !right) {
			mm_vma_lock_put(mm, old);
		}
	}
	if (!vma->mapped)
		return;
	/* Put it back, merged with the neighbours it now merges with; of two
	 * runs it joins, the longer keeps its lock. */
	struct vma_lock *prev = i > 0 && mm_vmas_merge(&vmas[i - 1], vma) ? vmas[i - 1].vm_lock
									: NULL;
	struct vma_lock *next = i + 1 < n && mm_vmas_merge(vma, &vmas[i + 1]) ? vmas[i + 1].vm_lock
									     : NULL;
	if (prev && next) {
		g_assert(prev != next);
		unsigned first, last;
		mm_shorter_run(mm, i, prev, next, &first, &last);
		struct vma_lock *keep = first < i ? next : prev;
		mm_vma_lock_put(mm, first < i ? prev : next);
		mm_set_run_lock(mm, first, last, keep);
		vma->vm_lock = keep;
	} else {
		vma->vm_lock = prev   ? prev
			       : next ? next
				      : mm_vma_lock_get(mm, (int)cpu, mm->mm_lock_seq);
	}
}

void mm_finish_layout(struct mm *mm)
{
	g_assert(mm->pmd_users == NULL);
	if (mm->nr_vmas == 0)
		return;
	mm_assign_vma_locks(mm);
	mm->pmd_base = mm->vmas[0].start >> PMD_SHIFT;
	uint64_t last = (mm->vmas[mm->nr_vmas - 1].end - 1) >> PMD_SHIFT;
	mm->nr_pmds = (unsigned)(last - mm->pmd_base + 1);
	mm->pmd_users = g_new0(uint32_t, mm->nr_pmds);
	mm->pmd_nodes = g_new0(uint64_t, mm->nr_pmds);
	for (unsigned i = 0; i < mm->nr_vmas; i++) {
		const struct vma *vma = &mm->vmas[i];
		uint64_t first = (vma->start >> PMD_SHIFT) - mm->pmd_base;
		uint64_t end = ((vma->end - 1) >> PMD_SHIFT) - mm->pmd_base;
		for (uint64_t p = first; p <= end; p++)
			mm->pmd_users[p]++;
	}
}

static uint32_t mm_next_gen(struct mm *mm)
{
	/* 2^32 PTE changes in one run would need days of simulated time. */
	g_assert(mm->next_gen != UINT32_MAX);
	return mm->next_gen++;
}

/* The PTE of @addr present with a fresh generation, no frame yet. */
static struct pte *mm_set_present(struct mm *mm, struct vma *vma, uint64_t addr, bool writable)
{
	struct pte *pte = vma_pte(vma, addr);
	/* A present PTE's frame would lose a reference nobody puts. */
	g_assert(!(pte->present && pte->pfn && mm->frames));
	/* A not-present PTE was cleared (or never walked): no TLB holds it, so
	 * the new page starts with A clear, as the kernel's mk_pte() makes it. */
	g_assert(pte->present || !pte->accessed);
	pte->present = true;
	pte->writable = writable && vma->writable;
	pte->zero_page = false;
	pte->dirty = false;
	pte->pfn = 0;
	pte->gen = mm_next_gen(mm);
	return pte;
}

/* A new frame for @pte of @vma, allocated for its current generation. */
static void mm_alloc_frame(struct mm *mm, const struct vma *vma, struct pte *pte)
{
	if (mm->frames)
		pte->pfn = frame_alloc(mm->frames, vma->page_size, mm->id, pte->gen);
}

void mm_populate(struct mm *mm, struct vma *vma, uint64_t addr, bool writable)
{
	mm_alloc_frame(mm, vma, mm_set_present(mm, vma, addr, writable));
}

void mm_map_zero_page(struct mm *mm, struct vma *vma, uint64_t addr)
{
	mm_set_present(mm, vma, addr, false)->zero_page = true;
}

void mm_copy_pte(struct mm *mm, struct vma *vma, uint64_t addr, const struct pte *src)
{
	g_assert(src->present);
	struct pte *pte = mm_set_present(mm, vma, addr, src->writable);
	pte->zero_page = src->zero_page;
	pte->dirty = src->dirty;
	pte->pfn = src->pfn;
	if (pte->pfn && mm->frames)
		frame_get(mm->frames, vma->page_size, pte->pfn, mm->id, pte->gen);
}

/* A change that makes older translations of @pte wrong (see mm.h); A and
 * the accessor go with it (the caller read them first, as the old value of
 * ptep_get_and_clear()). */
static void mm_invalidating_change(struct mm *mm, struct vma *vma, struct pte *pte)
{
	pte->accessed = false;
	pte->accessor = 0;
	pte->gen = mm_next_gen(mm);
	pte->pending = pte->gen;
	vma->epoch++;
	mm->epoch++;
}

bool mm_zap_pte_frame(struct mm *mm, struct vma *vma, uint64_t addr, uint32_t *held)
{
	struct pte *pte = vma_pte(vma, addr);
	*held = 0;
	if (!pte->present)
		return false;
	if (pte->pfn && mm->frames && frame_put(mm->frames, vma->page_size, pte->pfn))
		*held = pte->pfn;
	pte->present = false;
	pte->writable = false;
	pte->zero_page = false;
	pte->dirty = false;
	mm_invalidating_change(mm, vma, pte);
	return true;
}

bool mm_zap_pte(struct mm *mm, struct vma *vma, uint64_t addr)
{
	uint32_t held;
	return mm_zap_pte_frame(mm, vma, addr, &held);
}

void mm_cow_zero_page(struct mm *mm, struct vma *vma, uint64_t addr)
{
	struct pte *pte = vma_pte(vma, addr);
	g_assert(pte->present && pte->zero_page && vma->writable);
	pte->zero_page = false;
	pte->writable = true;
	mm_invalidating_change(mm, vma, pte);
	mm_alloc_frame(mm, vma, pte);
}

bool mm_wrprotect_pte(struct mm *mm, struct vma *vma, uint64_t addr)
{
	struct pte *pte = vma_pte(vma, addr);
	if (!pte->present || !pte->writable)
		return false;
	pte->writable = false;
	mm_invalidating_change(mm, vma, pte);
	return true;
}

unsigned mm_unmap_vma(struct mm *mm, struct vma *vma, uint64_t *freed_start, uint64_t *freed_end)
{
	g_assert(vma->mapped && mm->pmd_users);
	vma->mapped = false;
	vma->epoch++;
	mm->epoch++;

	unsigned freed = 0;
	uint64_t first = (vma->start >> PMD_SHIFT) - mm->pmd_base;
	uint64_t last = ((vma->end - 1) >> PMD_SHIFT) - mm->pmd_base;
	for (uint64_t p = first; p <= last; p++) {
		g_assert(mm->pmd_users[p] > 0);
		if (--mm->pmd_users[p] > 0)
			continue;
		uint64_t span = (p + mm->pmd_base) << PMD_SHIFT;
		mm->pmd_nodes[p] = 0; /* numaPTE: every replica goes with the table */
		if (freed == 0)
			*freed_start = span;
		*freed_end = span + (UINT64_C(1) << PMD_SHIFT);
		freed++;
	}
	return freed;
}

bool mm_pmd_replicate(const struct mm *mm, uint64_t vaddr, unsigned node)
{
	uint64_t span = vaddr >> PMD_SHIFT;
	if (!mm->pmd_nodes || span < mm->pmd_base || span - mm->pmd_base >= mm->nr_pmds)
		return false;
	/* Atomic: walks of different cores may run on different host threads
	 * (machine_run_group()); the bits end the same in any order. */
	uint64_t *nodes = &mm->pmd_nodes[span - mm->pmd_base];
	uint64_t bit = UINT64_C(1) << (node % 64);
	uint64_t seen = __atomic_load_n(nodes, __ATOMIC_RELAXED);
	if (seen & bit)
		return false;
	seen = __atomic_fetch_or(nodes, bit, __ATOMIC_RELAXED);
	return seen != 0 && !(seen & bit);
}

void mm_cpumask_set(struct mm *mm, unsigned cpu)
{
	g_assert(cpu < mm->nr_cpus);
	mm->cpumask[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

void mm_cpumask_clear(struct mm *mm, unsigned cpu)
{
	g_assert(cpu < mm->nr_cpus);
	mm->cpumask[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

unsigned mm_cpumask_weight(const struct mm *mm)
{
	unsigned weight = 0;
	for (unsigned w = 0; w < (mm->nr_cpus + 63) / 64; w++)
		weight += (unsigned)__builtin_popcountll(mm->cpumask[w]);
	return weight;
}

unsigned mm_cpumask_next(const struct mm *mm, unsigned from)
{
	for (unsigned w = from / 64; w < (mm->nr_cpus + 63) / 64; w++) {
		uint64_t bits = mm->cpumask[w];
		if (w == from / 64)
			bits &= ~UINT64_C(0) << (from % 64);
		if (bits) {
			unsigned cpu = w * 64 + (unsigned)__builtin_ctzll(bits);
			return cpu < mm->nr_cpus ? cpu : mm->nr_cpus;
		}
	}
	return mm->nr_cpus;
}

/*
 * The page-table references come back with the VMA, where the kernel would
 * allocate a PTE page at the first fault (__pte_alloc()): here a PTE page
 * exists for every span a mapped VMA covers (the invariant above), so the
 * next munmap frees it, and widens its flush, again.
 */
void mm_map_vma(struct mm *mm, struct vma *vma)
{
	g_assert(!vma->mapped && mm->pmd_users);
	/* munmap zapped every PTE, and nothing populates an unmapped VMA. */
	for (uint64_t i = 0; i < vma_pages(vma); i++)
		g_assert(!vma->ptes[i].present);
	vma->mapped = true;
	vma->writable = true; /* PROT_READ | PROT_WRITE, as the layout maps it */
	vma->epoch++;
	mm->epoch++;
	mm->total_vm += (vma->end - vma->start) >> page_size_shift(PS_4K);

	uint64_t first = (vma->start >> PMD_SHIFT) - mm->pmd_base;
	uint64_t last = ((vma->end - 1) >> PMD_SHIFT) - mm->pmd_base;
	for (uint64_t p = first; p <= last; p++)
		mm->pmd_users[p]++;
}
