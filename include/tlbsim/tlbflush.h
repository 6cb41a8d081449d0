#ifndef TLBSIM_TLBFLUSH_H
#define TLBSIM_TLBFLUSH_H
/*
 * TLB flushing and mm switching, after arch/x86/mm/tlb.c and
 * arch/x86/include/asm/mmu_context.h.  The era-specific decisions (range rule,
 * which CPUs to interrupt) are the policy's ops; the control flow here is the
 * kernel's.  Function names are the kernel's.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel.h"

/* Boot state: every CPU on init_mm, in init_mm's cpumask, lazy. */
void tlbflush_init(struct kernel *k);

/**
 * flush_tlb_mm_range() - make [start, end) of @mm (or all of it, end ==
 * FLUSH_ALL) leave every TLB, from @cpu at @now; then call @done with the time
 * the caller may go on.  @vma gives hugetlb/exec flags, may be NULL.
 */
void flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, bool freed_tables, uint64_t now,
			struct kcont done);

/*
 * The mm half of context_switch(): enter_lazy_tlb() when @next is NULL (a
 * kernel thread or idle), switch_mm() otherwise.  Returns the cycles it costs.
 */
uint64_t context_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *next, uint64_t now);

#endif
