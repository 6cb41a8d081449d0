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
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/kernel/tracepoint.h"

#define PAGE_SHIFT_4K 12
#define PMD_SHIFT_2M 21
#define TLB_GENERATION_INVALID 0

/* x86 TLB_NR_DYN_ASIDS: "6 should be plenty and struct tlb_state will fit in
 * two cache lines" (Lutomirski, 4.14). */
#define TLB_NR_DYN_ASIDS 6

/* One x86 cpu_tlbstate.ctxs[] slot: which mm a PCID holds, and up to which
 * flush generation its entries are current. */
struct tlb_context {
	struct mm *mm;
	uint64_t tlb_gen;
};

/*
 * What the kernel keeps about one CPU's TLB (x86 cpu_tlbstate and
 * cpu_tlbstate_shared; arm64 and riscv use the mm and ASID fields): the page
 * tables it has loaded, under which hardware tag, and whether it runs them
 * lazily.  tlbflush_init() makes every CPU run init_mm lazily.
 */
struct cpu_tlbstate {
	struct mm *loaded_mm; /* page tables in use (init_mm: swapper_pg_dir) */
	struct mm *active_mm; /* mm borrowed by a kernel thread, or the task's own */
	bool is_lazy;         /* running a kernel thread/idle on a borrowed mm */
	uint16_t loaded_asid; /* hardware tag of loaded_mm's entries */
	unsigned loaded_slot; /* ctxs[] index of loaded_mm (PCID eras) */
	unsigned next_asid;   /* choose_new_asid()'s round-robin victim */
	/* The latest flush this CPU acknowledged on entry, before running it
	 * (flush_completion "handler_entry"): its mm and when it ended. */
	const struct mm *acked_mm;
	uint64_t acked_flush_end;
	/* The sockets this CPU's flush in progress reaches (numaPTE): set by
	 * flush_tlb_gathered() around its synchronous flush_tlb_mm_range(),
	 * FLUSH_NODES_ALL otherwise. */
	uint64_t flush_nodes;
	struct tlb_context ctxs[TLB_NR_DYN_ASIDS];
	/* PTI (pti.c): ctxs[] slots whose user PCID the next return to user with
	 * them loaded flushes whole (user_pcid_flush_mask), and the deferred
	 * range of one slot's user PCID (deferred_end 0: none). */
	unsigned user_pcid_flush_mask;
	unsigned deferred_slot, deferred_shift;
	uint64_t deferred_start, deferred_end;
};

static inline struct cpu_tlbstate *tlbflush_state(const struct kernel *k, const struct cpu *cpu)
{
	return &k->tlbstate[cpu->id];
}

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
	bool initiator_waits; /* other CPUs are sent it: the initiator waits for acks */
	struct kcont done;
	uint64_t local_done; /* concurrent local flush: when it finishes */
	uint64_t local_cost; /* concurrent local flush: its cycles */
};

/* Boot state: every CPU on init_mm, lazy (allocates k->tlbstate). */
void tlbflush_init(struct kernel *k);
void tlbflush_exit(struct kernel *k);

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

/**
 * flush_tlb_gathered() - flush_tlb_mm_range() for an mmu_gather that read the
 * Accessed bit and accessor of every PTE it changed, and the nodes holding
 * their PTE pages (@seen): the policy's target set may narrow it to the
 * initiator's TLB or drop it (flush_targets_ops.reach: ABIS), or to the CPUs
 * on those nodes (numaPTE); else, and always for other target sets,
 * flush_tlb_mm_range().
 */
void flush_tlb_gathered(struct kernel *k, struct cpu *cpu, struct mm *mm, const struct vma *vma,
			uint64_t start, uint64_t end, unsigned stride_shift, bool freed_tables,
			const struct tlb_access *seen, uint64_t now, struct kcont done);


/*
 * Building blocks for the era and arch ops (kernel/arch/); each
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
/* Every CPU of mm_cpumask but @self, through the policy's target selection
 * (narrowed to the nodes of @self's flush in progress, if any). */
unsigned tlbflush_select_targets(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, unsigned *targets);
/* The tag @mm's entries carry in @cpu's TLBs, or -1 if it can hold none
 * (x86: the PCID slot holding it, or 0 while loaded without PCIDs). */
int tlbflush_cpu_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm);
/* The same where each mm has one ASID on every CPU (arm64, riscv): the mm's,
 * or with no hardware ASIDs, 0 while loaded and -1 otherwise. */
int tlbflush_mm_asid_of(const struct kernel *k, const struct cpu *cpu, const struct mm *mm);
/* enter_lazy_tlb() that keeps the old mm loaded (3.x x86, arm64, riscv). */
uint64_t lazy_tlb_keep_loaded(struct kernel *k, struct cpu *cpu, uint64_t now);
/*
 * The kernel's count_vm_tlb_event() + trace_tlb_flush(): one tlb:tlb_flush
 * event of @reason on @cpu, counted in tlb_flush_events and in the reason's
 * counter (and its _full one when @end is FLUSH_ALL), and passed to the
 * tracepoint with its "pages": the 4 KiB pages of [start, end), -1 when @end
 * is FLUSH_ALL, 0 for an empty range (start == end: nothing to flush).  @at:
 * when, or TRACE_CURSOR for the start of the CPU's current kernel step.
 */
void tlbflush_event(struct kernel *k, struct cpu *cpu, enum tlb_flush_reason reason,
		    uint64_t start, uint64_t end, uint64_t at);
/*
 * What hardware invalidation (INVLPGB's TLBSYNC, an Intel RAR action) does
 * to @cpu: drop [start, end) (or everything, @end FLUSH_ALL) of @mm (NULL:
 * every user mm) under every tag @cpu holds it with, whatever it runs, and
 * bring a slot that missed only this flush up to @new_tlb_gen.  No handler
 * runs, nothing is counted but the entries removed.
 */
void tlbflush_hw_invalidate_cpu(struct kernel *k, struct cpu *cpu, const struct mm *mm,
				uint64_t start, uint64_t end, unsigned stride_shift,
				uint64_t new_tlb_gen);
/*
 * Would tlbflush_hw_invalidate_cpu() drop anything of @cpu's TLBs (or, if
 * @pwc, of its paging-structure caches)?  Changes nothing: the sharer check
 * of an exact TLB directory (DiDi, didi.c).
 */
bool tlbflush_hw_holds(const struct kernel *k, const struct cpu *cpu, const struct mm *mm,
		       uint64_t start, uint64_t end, unsigned stride_shift, bool pwc);
/* tlbflush_hw_invalidate_cpu()'s tlb_gen step alone, for a CPU the hardware
 * knows holds nothing of the range: it is as current as if it had dropped it. */
void tlbflush_hw_catch_up_cpu(struct kernel *k, struct cpu *cpu, const struct mm *mm,
			      uint64_t new_tlb_gen);

/*
 * A page-table page of @mm (2 MiB span @span) is freed at @time: a CPU that
 * acknowledged a flush of @mm on entry and ended it only after @time could
 * still walk through the freed table meanwhile (counted as stale_pwc, with a
 * report); returns how many.
 */
unsigned tlbflush_check_acked_flushes(struct kernel *k, const struct mm *mm, uint64_t span,
				      uint64_t time);

/* The mm's ASID on architectures with one ASID per mm (arm64, riscv). */
uint16_t tlbflush_mm_asid(const struct kernel *k, const struct mm *mm);

#endif
