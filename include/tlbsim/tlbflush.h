#ifndef TLBSIM_TLBFLUSH_H
#define TLBSIM_TLBFLUSH_H
/*
 * TLB flushing and mm switching, after arch/x86/mm/tlb.c,
 * arch/x86/include/asm/mmu_context.h and their arm64/riscv counterparts.  The
 * era- and arch-specific decisions are the policy's ops (policy.h); the
 * control flow that every era shares is here.  Function names are the
 * kernel's.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel.h"

#define PAGE_SHIFT_4K 12
#define PMD_SHIFT_2M 21
#define TLB_GENERATION_INVALID 0

/* What one flush request asks of each CPU (x86 struct flush_tlb_info). */
struct flush_tlb_info {
	struct mm *mm; /* NULL: every mm (reclaim batch, 4.5 "flush all") */
	uint64_t start;
	uint64_t end; /* FLUSH_ALL: everything */
	unsigned stride_shift;
	bool freed_tables;
	bool trim_cpumask;    /* 6.14+: also interrupt CPUs that switched away */
	uint64_t new_tlb_gen; /* TLB_GENERATION_INVALID: catch up to the mm's */
	unsigned initiator;
	struct kcont done;
	uint64_t local_done; /* concurrent local flush: when it finishes */
};

/* Boot state: every CPU on init_mm, lazy. */
void tlbflush_init(struct kernel *k);

/**
 * flush_tlb_mm_range() - make [start, end) of @mm (or all of it, end ==
 * FLUSH_ALL) leave every TLB, from @cpu at @now, by the policy's architecture;
 * then call @done with the time the caller may go on.  @vma gives the
 * hugetlb flag and page size, may be NULL.  @stride_shift: the mapping granule
 * of the range (tlb_get_unmap_shift()).
 */
void flush_tlb_mm_range(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, unsigned stride_shift, bool freed_tables,
			uint64_t now, struct kcont done);

/*
 * The mm half of context_switch(): enter_lazy_tlb() when @next is NULL (a
 * kernel thread or idle), switch_mm() otherwise.  Returns the cycles it costs.
 */
uint64_t context_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *next, uint64_t now);

/*
 * Building blocks for the era and arch ops (lazytlb.c, tlbflush_*.c); each
 * returns the cycles it costs the CPU that executes it.
 */
/* INVLPG every stride of [start, end) on @cpu's loaded ASID. */
uint64_t tlbflush_local_range(struct kernel *k, struct cpu *cpu, uint64_t start, uint64_t end,
			      unsigned stride_shift);
/* CR3 reload / sfence.vma with the ASID: drop the loaded ASID's entries. */
uint64_t tlbflush_local_all(struct kernel *k, struct cpu *cpu);
/* cpumask_set_cpu()/cpumask_clear_cpu() on @mm's mask: a contended atomic. */
uint64_t tlbflush_cpumask_atomic(struct kernel *k, struct cpu *cpu, struct mm *mm, bool set,
				 uint64_t now);
/* Every CPU of mm_cpumask but @self, through the policy's target selection. */
unsigned tlbflush_select_targets(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, unsigned *targets);
/* The tag @mm's entries carry in @cpu's TLBs, or -1 if it can hold none
 * (x86: the PCID slot holding it, or 0 while loaded without PCIDs). */
int tlbflush_cpu_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm);
/* enter_lazy_tlb() that keeps the old mm loaded (3.x x86, arm64, riscv). */
uint64_t lazy_tlb_keep_loaded(struct kernel *k, struct cpu *cpu, uint64_t now);
/* The mm's ASID on architectures with one ASID per mm (arm64, riscv). */
uint16_t tlbflush_mm_asid(const struct kernel *k, const struct mm *mm);

#endif
