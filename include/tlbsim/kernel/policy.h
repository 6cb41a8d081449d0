#ifndef TLBSIM_POLICY_H
#define TLBSIM_POLICY_H
/*
 * A flush policy: which kernel's TLB-flush behaviour to imitate.  Each
 * mechanism is a small ops struct named after the kernel code it imitates; a
 * preset (policies/<name>.json) picks one per mechanism and sets the knobs.
 * Nothing outside the ops implementations tests a policy's name.
 */
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <glib.h>
#include "tlbsim/machine/topology.h"

struct kernel;
struct mm;
struct vma;
struct cpu;

#define FLUSH_ALL UINT64_MAX /* "flush everything" (the kernel's TLB_FLUSH_ALL) */

/*
 * Range rule: how many single-stride invalidations a range flush may use
 * before it becomes a full flush.  Returns the stride count (strides of
 * 1 << @stride_shift bytes), or FLUSH_ALL.
 */
struct flush_range_ops {
	const char *name;
	const char *imitates;
	uint64_t (*pages_to_flush)(const struct kernel *k, const struct mm *mm,
				   const struct vma *vma, uint64_t start, uint64_t end,
				   unsigned stride_shift);
};

/*
 * What an mmu_gather read from the old values of the PTEs it changed (ABIS,
 * docs/beyond.md): was any Accessed bit set, and was any accessed PTE's
 * accessor another CPU than the gathering one (or shared); and (numaPTE) the
 * sockets holding a replica of the PTE page of any PTE it changed, read at
 * the change (mm_pmd_nodes()).
 */
struct tlb_access {
	bool accessed;
	bool foreign;
	uint64_t nodes;
};

/* select()'s node mask when no replica knowledge narrows it: every socket. */
#define FLUSH_NODES_ALL UINT64_MAX

/* How far a gathered flush must reach (flush_tlb_gathered(), tlbflush.h). */
enum flush_reach {
	FLUSH_REACH_NONE,  /* no TLB can hold the range: no flush at all */
	FLUSH_REACH_LOCAL, /* only the initiator's TLB: a local flush, no targets */
	FLUSH_REACH_MM,    /* Linux's: the local flush and the selected targets */
	FLUSH_REACH_NODES, /* the local flush and the targets on the nodes @seen names */
};

/*
 * Which CPUs of mm_cpumask a shootdown interrupts: writes the targets (never
 * the initiator) to @targets and returns their number; a target set that
 * reads @nodes keeps only CPUs on those sockets (FLUSH_NODES_ALL: no
 * narrowing).  @reach (NULL: always FLUSH_REACH_MM) narrows a flush whose
 * caller gathered the PTEs' access bits and replica nodes (@seen), and
 * counts its verdict on @self; a flush that freed page tables is never
 * narrowed.
 */
struct flush_tlb_info;
struct flush_targets_ops {
	const char *name;
	const char *imitates;
	unsigned (*select)(const struct kernel *k, const struct cpu *self, const struct mm *mm,
			   uint64_t nodes, unsigned *targets);
	enum flush_reach (*reach)(const struct kernel *k, struct cpu *self,
				  const struct tlb_access *seen, bool freed_tables);
	/* The CPUs whose TLBs hold @info's range, exactly (a hardware TLB
	 * directory, DiDi): when set, native_flush_tlb_others() takes these
	 * instead of select() and the era's should_flush filter (NULL: unset). */
	unsigned (*sharers)(const struct kernel *k, const struct cpu *self,
			    const struct flush_tlb_info *info, unsigned *targets);
};

/*
 * Lazy TLB and mm switching in one kernel era: what switching to a kernel
 * thread or idle does (enter_lazy_tlb), what a real mm switch does
 * (switch_mm_irqs_off: cpumask atomics, ASID choice, CR3), which CPUs of
 * mm_cpumask a shootdown must interrupt, and what the handler on a target does
 * (flush_tlb_func).  Implemented in arch/x86/lazytlb.c and the other arches' files.
 */
struct flush_tlb_info;
struct lazy_tlb_ops {
	const char *name;
	const char *imitates;
	enum topology_arch arch;
	/* flush_tlb_mm_range() from a CPU not running the mm sends a full flush
	 * (3.x-4.13), instead of the range (4.14+). */
	bool remote_full_if_not_loaded;
	/* tlb_gen bookkeeping: flushes increment mm->tlb_gen and targets catch up. */
	bool tracks_tlb_gen;
	uint64_t (*enter_lazy_tlb)(struct kernel *k, struct cpu *cpu, uint64_t now);
	uint64_t (*switch_mm)(struct kernel *k, struct cpu *cpu, struct mm *prev, struct mm *next,
			      uint64_t now);
	/* Sender side: does @target (in the selected mask) get the IPI?  This
	 * and flush_tlb_func are NULL where flushes do not go through the x86
	 * handler (arm64, riscv). */
	bool (*should_flush)(const struct kernel *k, const struct cpu *target,
			     const struct flush_tlb_info *info);
	/* The handler, on a target (@local false) or the initiator itself. */
	uint64_t (*flush_tlb_func)(struct kernel *k, struct cpu *cpu,
				   const struct flush_tlb_info *info, bool local, uint64_t now);
};

/*
 * How a range of an mm leaves every TLB on this architecture, and the reclaim
 * batch (arch_tlbbatch_*).  x86: IPIs (arch/x86/tlb.c); arm64: broadcast TLBI
 * (arch/arm64/tlbflush.c); riscv: IPIs or an SBI remote fence
 * (arch/riscv/tlbflush.c).
 */
struct tlbflush_unmap_batch;
struct kcont;
struct flush_names;
struct flush_arch_ops {
	const char *name;
	const char *imitates;
	enum topology_arch arch;
	/* flush_tlb_mm_range() / flush_tlb_range(): @stride_shift is the
	 * mapping granule (12 or 21); @done gets the time the caller goes on. */
	void (*flush_range)(struct kernel *k, struct cpu *cpu, struct mm *mm,
			    const struct vma *vma, uint64_t start, uint64_t end,
			    unsigned stride_shift, bool freed_tables, uint64_t now,
			    const struct kcont *done);
	/* flush_range() narrowed to the initiator's own TLB: the range rule
	 * and the local flush, no remote one (ABIS's local-only flush; NULL
	 * where no such path is modelled). */
	void (*flush_range_local)(struct kernel *k, struct cpu *cpu, struct mm *mm,
				  const struct vma *vma, uint64_t start, uint64_t end,
				  unsigned stride_shift, bool freed_tables, uint64_t now,
				  const struct kcont *done);
	/* should_defer_flush() -> arch_tlbbatch_should_defer() */
	bool (*should_defer)(const struct kernel *k, const struct cpu *cpu, const struct mm *mm);
	/* arch_tlbbatch_add_pending(): returns the cycles it costs now. */
	uint64_t (*batch_add_pending)(struct kernel *k, struct cpu *cpu,
				      struct tlbflush_unmap_batch *batch, struct mm *mm,
				      uint64_t addr, uint64_t now);
	/* arch_tlbbatch_flush() */
	void (*batch_flush)(struct kernel *k, struct cpu *cpu, struct tlbflush_unmap_batch *batch,
			    uint64_t now, const struct kcont *done);
	/* arch_flush_tlb_batched_pending(): flush_tlb_mm() (x86, riscv), or
	 * only the dsb that waits for TLBIs already issued (arm64). */
	bool batched_pending_flushes_mm;
	/* What the kernel calls its flush interrupt and functions on @topology
	 * (tracepoint.h). */
	void (*names)(const struct topology *topology, struct flush_names *names);
	/* The tag @mm's entries carry in @cpu's TLBs, or -1 if it can hold
	 * none (tlbflush_cpu_asid_of()). */
	int (*cpu_asid_of)(const struct kernel *k, const struct cpu *cpu, const struct mm *mm);
};

/*
 * The shootdown frame (docs/beyond.md): a shootdown is a target set (struct
 * flush_targets_ops), a transport, a completion point the initiator waits
 * for, a release gate for the frames it freed, and a receiver disturbance.
 * Linux's choices are the defaults: IPIs, the remote flush done, frames freed
 * after it, an interrupt and handler on each target.
 */
enum local_flush_start {
	LOCAL_FLUSH_AFTER_EACH_SEND, /* an ICR write per target first (IPIs) */
	LOCAL_FLUSH_AFTER_ONE_SEND,  /* one multicast ICR write first (RAR's signal) */
	LOCAL_FLUSH_AT_ONCE,         /* nothing to send first (a directory request, coherence) */
	LOCAL_FLUSH_BY_TRANSPORT,    /* the transport's send() moves local_done (multicast) */
};

struct flush_transport_ops {
	const char *name;
	const char *imitates;
	/* When the initiator's concurrent local flush (5.13+) starts: after
	 * what it must send first. */
	enum local_flush_start local_flush_start;
	/* Per-run state (NULL: none); called by kernel_boot()/kernel_shutdown(). */
	void (*boot)(struct kernel *k);
	void (*shutdown)(struct kernel *k);
	/* Make @targets flush as @info says; ends with shootdown_complete()
	 * (shootdown.h) at the policy's completion point.  Owns @info. */
	void (*send)(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
		     struct flush_tlb_info *info, uint64_t now);
	/* __schedule() on @cpu at @now: the cycles the transport adds (NULL: none). */
	uint64_t (*schedule)(struct kernel *k, struct cpu *cpu, uint64_t now);
	/* The release gate "lazy_epoch": keep @nr frames of @mm freed by @cpu
	 * until every CPU has applied the flush that covers them; false if no
	 * such flush is pending (NULL: never). */
	bool (*hold_frames)(struct kernel *k, struct cpu *cpu, const struct mm *mm,
			    const uint32_t *pfns, unsigned nr, enum page_size ps);
};

enum flush_completion {
	FLUSH_COMPLETION_REMOTE_DONE, /* every target has flushed (csd unlocked after the flush) */
	FLUSH_COMPLETION_HANDLER_ENTRY, /* every target has entered its handler (early ack) */
	FLUSH_COMPLETION_NONE,        /* nothing: the initiator goes on once sent or posted */
};

enum release_gate {
	RELEASE_AFTER_COMPLETION, /* tlb_finish_mmu(): free once the completion point is reached */
	RELEASE_LAZY_EPOCH,       /* LATR (paper): hold until every target has swept the flush */
};

enum flush_disturbance {
	DISTURBANCE_IRQ_HANDLER, /* interrupt entry and exit around the flush handler */
	DISTURBANCE_TICK_SWEEP,  /* a sweep of posted flushes at the next tick or switch */
	DISTURBANCE_MICROCODE,   /* the target's microcode performs the action: no handler */
	DISTURBANCE_NONE,        /* nothing: the hardware's coherence drops the entries */
	DISTURBANCE_MESSAGE_POLL, /* the receiver handles a message at its next poll: no
				   * interrupt entry or exit, only the handling's cycles */
};

/* How PTI flushes a range of the user PCID (pti.c). */
enum pti_user_flush {
	PTI_USER_FLUSH_INVPCID,  /* flush_tlb_one_user(): INVPCID, or the whole PCID if none */
	PTI_USER_FLUSH_DEFERRED, /* Amit's RFC [E5]: INVLPGs at the next return to user */
};

/* THP ranges in the range rule (references.md, 'Linux: tlb_flushall_shift (3.6-3.15)' and
 * 'Linux: stride-aware ranges (4.19+)'). */
enum huge_page_range {
	HUGE_RANGE_PER_4K,      /* count and INVLPG 4K steps (2.6-3.5, 3.14-4.18) */
	HUGE_RANGE_FLUSH_ALL,   /* has_large_page(): a huge page in range => full (3.6-3.13) */
	HUGE_RANGE_PER_STRIDE,  /* one INVLPG per mapping stride (4.19+) */
};

/* try_to_unmap() during reclaim (references.md, 'Linux: batched reclaim flushes (4.3+)'). */
enum reclaim_flush {
	RECLAIM_FLUSH_PER_PAGE, /* ptep_clear_flush(): one flush per page */
	RECLAIM_FLUSH_BATCHED,  /* set_tlb_ubc_flush_pending() + try_to_unmap_flush() */
};

enum munmap_flush_range {
	MUNMAP_FLUSH_VMA,      /* 3.x: the whole unmapped range */
	MUNMAP_FLUSH_GATHERED, /* 4.0+: only what mmu_gather saw (present PTEs, freed tables) */
};

/*
 * tlb_finish_mmu() when another mmu_gather of the same mm is in flight
 * (mm_tlb_flush_nested(): references.md, 'Linux: nested mmu_gather flushes').
 */
enum nested_flush {
	NESTED_FLUSH_NONE,  /* before 4.13: each gather flushes what it gathered */
	NESTED_FLUSH_RANGE, /* 4.13-5.1: the call's whole range, not only what it gathered */
	NESTED_FLUSH_FULL,  /* 5.2+: fullmm with freed_tables: everything, lazy CPUs too */
};

/* The scheduling-domain levels a machine can have (kernel/sched/topology.c). */
enum sched_level { SCHED_LEVEL_SMT, SCHED_LEVEL_LLC, SCHED_LEVEL_TOP, NR_SCHED_LEVELS };

struct sched_params {
	/* CFS tunables before scaling; scaled by 1 + ilog2(min(cpus, 8)) like
	 * SCHED_TUNABLESCALING_LOG. */
	uint64_t latency_ns;
	uint64_t min_granularity_ns;
	uint64_t wakeup_granularity_ns;
	/* Load balancing (sched_balance.c): off places each task once. */
	bool load_balance;
	uint64_t migration_cost_ns; /* sysctl_sched_migration_cost: task_hot() */
	/* sd_init()'s per-domain values; the intervals in ms, 0 for the
	 * domain's CPU count (min) and twice the minimum (max). */
	uint64_t busy_factor;
	uint64_t min_interval_ms;
	uint64_t max_interval_ms;
	uint64_t imbalance_pct[NR_SCHED_LEVELS];
	uint64_t cache_nice_tries[NR_SCHED_LEVELS];
};

struct policy {
	char *name;
	char *description;
	const struct flush_range_ops *range;
	const struct flush_targets_ops *targets;
	const struct lazy_tlb_ops *lazy;
	const struct flush_arch_ops *arch;
	const struct flush_transport_ops *transport;
	enum flush_completion completion;
	enum release_gate release_gate;
	enum flush_disturbance disturbance;
	unsigned latr_states; /* LATR: states per CPU ring (LAZY_TLB_NUM_ENTRIES) */
	unsigned tick_hz;     /* the scheduler tick, where a mechanism sweeps at it */
	/* Early ack even for a flush that freed page tables (the RFC forbids it). */
	bool early_ack_freed_tables;
	uint64_t abis_track_cycles; /* ABIS: accessor bookkeeping per page fault (0 elsewhere) */
	/* numaPTE: copying a PTE page to a walking node (0 elsewhere). */
	uint64_t numapte_replica_cycles;
	/* Multicast: ns between two polls of a receiver's message channels. */
	uint64_t multicast_poll_ns;
	/* Knobs read by the ops. */
	int tlb_flushall_shift;      /* POLICY_SHIFT_FROM_CPU: the topology's cpuid value */
	unsigned single_page_flush_ceiling;
	enum huge_page_range huge_page_range;
	enum munmap_flush_range munmap_flush_range;
	enum reclaim_flush reclaim_flush;
	enum nested_flush nested_flush;
	bool pcid;                   /* use the hardware's PCIDs (4.14+), 6 per CPU */
	bool pti;                    /* page-table isolation (4.15+): a user PCID beside each */
	enum pti_user_flush pti_user_flush;
	bool lazy_table_free_ipi;    /* lazier eras: IPI lazy CPUs when tables were freed */
	bool concurrent_local_flush; /* 5.13+: local flush overlaps the remote ones */
	bool invlpgb;                /* 6.15+: broadcast flushes for mms with a global ASID */
	bool lru_add_drain_on_free;  /* before 6.15: freeing pages drains the LRU batch first */
	bool per_vma_lock;           /* 6.4+: faults take the VMA's lock, not mmap_lock */
	bool munmap_downgrade;       /* 4.20+: munmap zaps and flushes under mmap_lock for reading */
	bool flush_batched_pending;  /* 4.12+: a walk after deferred reclaim flushes the mm first */
	unsigned riscv_flush_all_threshold; /* tlb_flush_all_threshold, pages */
	unsigned arm64_max_tlbi_ops;        /* MAX_TLBI_OPS: more strides => flush the ASID */
	struct sched_params sched;
};

#define POLICY_SHIFT_FROM_CPU (-1000)

/* The ops tables (defined with their implementations). */
extern const struct flush_range_ops flush_range_tlb_flushall_shift;
extern const struct flush_range_ops flush_range_single_page_ceiling;
extern const struct flush_targets_ops flush_targets_mm_cpumask;
extern const struct flush_targets_ops flush_targets_smt_dedup;
extern const struct flush_targets_ops flush_targets_abis;
extern const struct flush_targets_ops flush_targets_numapte;
extern const struct flush_targets_ops flush_targets_directory;
extern const struct lazy_tlb_ops lazy_tlb_strict;
extern const struct lazy_tlb_ops lazy_tlb_pcid;
extern const struct lazy_tlb_ops lazy_tlb_lazier;
extern const struct lazy_tlb_ops lazy_tlb_trimmed;
extern const struct lazy_tlb_ops lazy_tlb_arm64;
extern const struct lazy_tlb_ops lazy_tlb_riscv;
extern const struct flush_arch_ops flush_arch_x86;
extern const struct flush_arch_ops flush_arch_arm64;
extern const struct flush_arch_ops flush_arch_riscv;
extern const struct flush_transport_ops flush_transport_ipi;
extern const struct flush_transport_ops flush_transport_latr;
extern const struct flush_transport_ops flush_transport_rar;
extern const struct flush_transport_ops flush_transport_coherence;
extern const struct flush_transport_ops flush_transport_multicast;
extern const struct flush_transport_ops flush_transport_directory;

/* Parse and validate a policy file's tree; NULL on error. */
struct policy *policy_from_json(const cJSON *json, const char *file, GError **error);
void policy_free(struct policy *policy);

/* The policy can run on this machine (same architecture); else an error naming both. */
bool policy_check_topology(const struct policy *policy, const struct topology *topology,
			   GError **error);

/* Effective shift for the 3.x rule on a CPU model whose own is @cpu_model_shift. */
static inline int policy_flushall_shift(const struct policy *policy, int cpu_model_shift)
{
	if (policy->tlb_flushall_shift == POLICY_SHIFT_FROM_CPU)
		return cpu_model_shift;
	return policy->tlb_flushall_shift;
}

#endif
