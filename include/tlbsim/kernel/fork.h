#ifndef TLBSIM_FORK_H
#define TLBSIM_FORK_H
/*
 * fork()'s and exit()'s address-space work, after kernel/fork.c (dup_mmap())
 * and kernel/exit.c + mm/mmap.c (exit_mm(), exit_mmap()) of Linux 6.1: what
 * decides their TLB flushes.  The tasks themselves (the child, the parent's
 * wait) are the caller's.
 */
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

/*
 * fork_mm_new() - an address space for the children of @oldmm: its VMAs at
 * the same addresses (index i of one is index i of the other), every one
 * unmapped and without PTEs until dup_mmap() fills them.  A child's mm is
 * reused fork after fork (see fork.c).  Call once @oldmm's layout is final.
 * Free with mm_free().
 */
struct mm *fork_mm_new(const struct mm *oldmm, unsigned id);

/**
 * dup_mmap() - the address-space half of fork() by @cpu at @now: mmap_lock
 * of @oldmm taken for writing, each VMA and its page tables copied into @mm
 * (unmapped since its last exit_mmap()), the parent's present writable
 * private PTEs write-protected for copy-on-write, then flush_tlb_mm(@oldmm),
 * a full flush of the parent's mm on every CPU of its mm_cpumask (lazy ones
 * too: it says freed_tables), and the lock dropped.  @done runs when the
 * syscall returns to the parent; the write-protection is committed then.
 */
void dup_mmap(struct kernel *k, struct cpu *cpu, struct mm *oldmm, struct mm *mm, uint64_t now,
	      struct kcont done);

/**
 * exit_mm() - the exiting task's last use of @mm on @cpu at @now:
 * enter_lazy_tlb() (current->mm = NULL), then exit_mmap(): every PTE zapped
 * into a fullmm mmu_gather, the page tables freed, and tlb_finish_mmu()'s
 * flush_tlb_mm_range(@mm, 0, TLB_FLUSH_ALL, freed_tables).  @done runs when
 * the flush is done; @mm is then empty and may be forked into again.
 */
void exit_mm(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t now, struct kcont done);

/**
 * fork_cow_fault() - a write fault at @addr of @mm on @cpu at @now to a page
 * shared with a live child that tlbsim does not lay out (a stack, an rseq
 * area): do_wp_page() copies it (wp_page_copy(), the new page joins the
 * LRU) and ptep_clear_flush() flushes that page from @mm's CPUs.  @done runs
 * when the flush is done.  Counted in page_faults.
 */
void fork_cow_fault(struct kernel *k, struct cpu *cpu, struct mm *mm, uint64_t addr, uint64_t now,
		    struct kcont done);

#endif
