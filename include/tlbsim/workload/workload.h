#ifndef TLBSIM_WORKLOAD_H
#define TLBSIM_WORKLOAD_H
/*
 * Workload files (workloads/<name>.json), parsed and validated: named
 * parameters, memory regions, groups of tasks each running a small program of
 * ops.  Numeric fields are integer expressions (expr.h) over the parameters,
 * the task's $thread (index in its group), $task (global index), $cpus and loop
 * variables.  Sizes are evaluated at load time; per-op values at run time.
 * The format with one example per op is documented in README.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <glib.h>
#include "tlbsim/util/stop.h"
#include "tlbsim/util/types.h"
#include "tlbsim/workload/expr.h"

/* Loops may nest this deep. */
#define WORKLOAD_MAX_DEPTH 16

enum op_kind {
	OP_ACCESS,    /* read/write pages of a region */
	OP_MUNMAP,    /* munmap one chunk */
	OP_MMAP,      /* mmap an unmapped chunk again, at its old address */
	OP_MPROTECT,  /* mprotect one chunk read-only or read-write */
	OP_MADVISE,   /* madvise(MADV_DONTNEED) one chunk */
	OP_SLEEP,     /* block for a duration */
	OP_YIELD,     /* sched_yield() */
	OP_COMPUTE,   /* burn cycles in user mode */
	OP_SET_FLAG,  /* store to a shared flag, waking its waiters */
	OP_WAIT_FLAG, /* block until a flag has a value */
	OP_LOOP,      /* repeat a body */
	OP_PHASE,     /* begin/end a measured phase */
	OP_FORK,      /* fork a child that exits at once, and wait for it */
	NR_OP_KINDS,
};

enum region_populate { POPULATE_NONE, POPULATE_FIRST, POPULATE_ALL };
/* Where the region's mapping starts: on a 2 MiB boundary, or where mmap()
 * puts it under address-space randomization, a random number of pages into a
 * 2 MiB span (drawn from the run's seed). */
enum region_placement { PLACEMENT_ALIGNED, PLACEMENT_ASLR };

struct op {
	enum op_kind kind;
	char *path; /* JSON path, for run-time messages */
	unsigned region;
	struct expr *chunk;  /* munmap/mmap/mprotect/madvise; access: NULL = whole region */
	struct expr *count;  /* loop: iterations; access: rounds (NULL = until flag); fork */
	struct expr *pages;  /* access: pages per round; madvise: pages (NULL = to the end) */
	struct expr *first;  /* access sequential, madvise: first page (of the chunk) */
	struct expr *cycles; /* access: cycles per access besides translation; compute */
	struct expr *ns;     /* sleep, times ns_scale */
	int64_t ns_scale;    /* 1 for "ns", 1000 for "us", 10^6 for "ms" */
	struct expr *value;  /* set_flag / wait_flag */
	struct expr *write;  /* access: non-zero = writes */
	bool random;         /* access pattern */
	bool independent;    /* access: "loads": "independent" (overlap TLB hits) */
	int while_flag;      /* access: keep going while this flag is non-zero; -1 */
	unsigned flag;
	bool writable;       /* mprotect */
	bool pageout;        /* madvise: MADV_PAGEOUT (reclaim) instead of MADV_DONTNEED */
	unsigned phase;
	bool begin;
	char *var;           /* loop variable, or NULL */
	unsigned nr_body;
	struct op *body;
};

struct region {
	char *name;
	unsigned mm;           /* address space index */
	enum page_size page_size;
	bool hugetlb;
	bool shared; /* MAP_SHARED: read faults allocate instead of mapping the zero page */
	enum region_populate populate;
	enum region_placement placement;
	uint64_t chunks;       /* VMAs in the region (1 for a plain region) */
	uint64_t chunk_bytes;  /* size of each */
};

struct task_group {
	char *name;
	uint64_t count;
	struct expr *cpu; /* pinning, NULL = unpinned */
	unsigned mm;
	unsigned nr_ops;
	struct op *ops;
};

struct workload_param {
	char *name;
	int64_t value;
};

struct workload {
	char *name;
	char *description;
	char *imitates;
	char *simplified;
	unsigned nr_params;
	struct workload_param *params;
	unsigned nr_mms;
	char **mm_names;
	unsigned nr_regions;
	struct region *regions;
	unsigned nr_groups;
	struct task_group *groups;
	unsigned nr_flags;
	char **flag_names;
	unsigned nr_phases;
	char **phase_names;
	/* Lookups by name, built as the names are read: name (the strings
	 * above, borrowed) -> index + 1 (GUINT_TO_POINTER).  @region_names
	 * borrows the regions' names, NULL-terminated, for suggestions. */
	GHashTable *param_index;
	GHashTable *mm_index;
	GHashTable *region_index;
	char **region_names;
	GHashTable *flag_index;
	GHashTable *phase_index;
	GHashTable *group_index;
	/* What the CSV's op_* columns and the summary describe. */
	enum op_kind report_op;
	int report_phase; /* -1: the whole run */
	char *summary;    /* template, see README; NULL: a generic line */
};

/*
 * Parse and validate.  @nr_cpus is the machine's, for $cpus and pinning
 * checks.  Errors name @file and the JSON path.  Takes time linear in the
 * size of @json.  @stop (may be NULL) is polled once per region and per op:
 * a stop fails with stop_check()'s error.
 */
struct workload *workload_from_json(const cJSON *json, const char *file, unsigned nr_cpus,
				    const struct stop *stop, GError **error);
void workload_free(struct workload *workload);

const char *workload_op_name(enum op_kind kind);
/* Does @ops (loop bodies included) have an access op?  (The threads column
 * counts the tasks that have one.) */
bool workload_ops_access(const struct op *ops, unsigned nr);
/* Value of parameter @name; false if there is none. */
bool workload_param(const struct workload *workload, const char *name, int64_t *value);

#endif
