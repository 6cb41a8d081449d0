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

struct kernel;
struct mm;
struct vma;
struct cpu;

#define FLUSH_ALL UINT64_MAX /* "flush everything" (the kernel's TLB_FLUSH_ALL) */

/*
 * Range rule: how many single-page invalidations a range flush may use before
 * it becomes a full flush.  Returns the page count, or FLUSH_ALL.
 */
struct flush_range_ops {
	const char *name;
	const char *imitates;
	uint64_t (*pages_to_flush)(const struct kernel *k, const struct mm *mm,
				   const struct vma *vma, uint64_t start, uint64_t end);
};

/*
 * Which CPUs of mm_cpumask a shootdown interrupts: writes the targets (never
 * the initiator) to @targets and returns their number.
 */
struct flush_targets_ops {
	const char *name;
	const char *imitates;
	unsigned (*select)(const struct kernel *k, const struct cpu *self, const struct mm *mm,
			   unsigned *targets);
};

enum munmap_flush_range {
	MUNMAP_FLUSH_VMA,      /* 3.x: the whole unmapped range */
	MUNMAP_FLUSH_GATHERED, /* 4.0+: only what mmu_gather saw (present PTEs, freed tables) */
};

struct sched_params {
	/* CFS tunables before scaling; scaled by 1 + ilog2(min(cpus, 8)) like
	 * SCHED_TUNABLESCALING_LOG. */
	uint64_t latency_ns;
	uint64_t min_granularity_ns;
	uint64_t wakeup_granularity_ns;
};

struct policy {
	char *name;
	char *description;
	const struct flush_range_ops *range;
	const struct flush_targets_ops *targets;
	/* Knobs read by the ops. */
	int tlb_flushall_shift;      /* POLICY_SHIFT_FROM_CPU: the topology's cpuid value */
	unsigned single_page_flush_ceiling;
	enum munmap_flush_range munmap_flush_range;
	struct sched_params sched;
};

#define POLICY_SHIFT_FROM_CPU (-1000)

/* The ops tables (defined with their implementations). */
extern const struct flush_range_ops flush_range_tlb_flushall_shift;
extern const struct flush_range_ops flush_range_single_page_ceiling;
extern const struct flush_targets_ops flush_targets_mm_cpumask;
extern const struct flush_targets_ops flush_targets_smt_dedup;

/* Parse and validate a policy file's tree; NULL on error. */
struct policy *policy_from_json(const cJSON *json, const char *file, GError **error);
void policy_free(struct policy *policy);

/* Effective shift for the 3.x rule on this machine. */
int policy_flushall_shift(const struct policy *policy, int cpu_model_shift);

#endif
