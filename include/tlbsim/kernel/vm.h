#ifndef TLBSIM_VM_H
#define TLBSIM_VM_H
/*
 * The VM syscalls and the page fault, after mm/mmap.c, mm/mprotect.c,
 * mm/madvise.c and mm/memory.c: page-table changes gathered in an mmu_gather
 * and flushed with flush_tlb_mm_range() before the call returns.  When @done
 * runs, the call has returned and its changes are committed: from then on a
 * CPU that still uses an old translation is counted as a stale hit.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/* munmap() of the whole @vma. */
void do_munmap(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma, uint64_t now,
	       struct kcont done);
/*
 * mmap() of an unmapped @vma again, at its old address: a fresh mapping with
 * no PTE present.  Visible to other CPUs, and returned, at one global event.
 */
void do_mmap(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma, uint64_t now,
	     struct kcont done);
/* mprotect() of the whole @vma to read-only (@writable false) or read-write. */
void do_mprotect(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		 bool writable, uint64_t now, struct kcont done);
/* madvise(MADV_DONTNEED) of [start, end) inside @vma: zap, keep the mapping. */
/* madvise(MADV_PAGEOUT): reclaim the present pages of [start, end) (rmap.h). */
void madvise_pageout(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		     uint64_t start, uint64_t end, uint64_t now, struct kcont done);
void madvise_dontneed(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		      uint64_t start, uint64_t end, uint64_t now, struct kcont done);

/*
 * handle_mm_fault(): populate the PTE for @addr (a @write, or a read: the
 * zero page in a private VMA) and fill @cpu's TLBs; @done runs when the
 * faulting access may be retired.  A write to the zero page copies it and
 * flushes its translation from the mm's CPUs first.  The caller refuses
 * writes to read-only VMAs first (a real program would get SIGSEGV).
 */
void handle_mm_fault(struct kernel *k, struct cpu *cpu, struct mm *mm, struct vma *vma,
		     uint64_t addr, bool write, uint64_t now, struct kcont done);

#endif
