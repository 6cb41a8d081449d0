#ifndef TLBSIM_WORKLOAD_INTERP_IMPL_H
#define TLBSIM_WORKLOAD_INTERP_IMPL_H
/*
 * The interpreter's state, shared by its ops (interp.c), its access op
 * (access.c) and what every task's op needs (interp_task.c); private to
 * workload/.
 */
#include <string.h>
#include "tlbsim/kernel/sched.h"
#include "tlbsim/util/rng.h"
#include "tlbsim/workload/interp.h"

/*
 * Work one dispatch may do before handing back to the engine even when
 * nothing bounds it, so that budgets and signals are checked: a program
 * looping on ops that take no time, or an access loop nobody stops.
 * Returning early is a resume at the same local time: results do not change.
 */
#define OPS_PER_DISPATCH 4096
#define ACCESSES_PER_DISPATCH 65536
/*
 * Ops a task may execute in a row at one simulated time.  Ops that take no
 * time (compute 0, a loop of phase marks, an access op of 0 rounds) in a
 * loop of a large count would never reach --max-sim-ns, and only the event
 * budget after hours; 2^24 of them, about a second of host time, is no
 * program but a mistake.
 */
#define OPS_AT_ONE_TIME (UINT64_C(1) << 24)

struct frame {
	const struct op *ops;
	unsigned nr;
	unsigned index;
	int64_t iter;
	int64_t count;
	const char *var;
};

struct access_state {
	bool active;
	const struct op *op;
	/* The table of addresses: access_addr() of 0 .. nr - 1, as page
	 * numbers from @base (4 bytes each: a 1024-CPU run holds a table per
	 * task; the loader caps a run's pages far below 2^32). */
	uint32_t *pages;
	uint64_t base;
	unsigned page_shift;
	uint64_t nr;
	uint64_t pos;
	uint64_t rounds_left; /* UINT64_MAX: until the flag clears */
	struct vma *vma;      /* the one VMA every address is in, or NULL */
	bool write;
	uint64_t cycles;
	bool fault_seen; /* the current access faulted; handle it at the exact time */
	bool fault_done; /* the kernel handled it: retire the access */
	/* Cache for access_quiet(): every page present (and writable for
	 * writes) as of this epoch of @quiet_vma (or of the mm if NULL). */
	bool all_mapped;
	bool checked;
	const struct vma *quiet_vma;
	uint64_t quiet_epoch;
	/* Sampled mode (access.c, access_skip()): rounds of the table simulated
	 * access by access, and the last disturbance of its TLBs seen: on which
	 * CPU, its signature there, and the task's accesses then. */
	uint64_t rounds_simulated;
	unsigned disturb_cpu;
	uint64_t disturb_signature, disturb_accesses;
};

/* Where a task is in its fork op (interp_fork.c). */
enum fork_step { FORK_IDLE, FORK_IN_SYSCALL, FORK_WAITING };

struct fork_child;

struct itask {
	_Alignas(HOST_LINE) struct task task; /* tasks of other cores run on other host threads */
	struct interp *interp;
	/* This task's flag stores not yet seen by the other cores, newest
	 * first: the task itself reads them at once (store forwarding). */
	struct flag_store *own_stores;
	unsigned group;
	unsigned thread;
	unsigned mm_index;
	struct rng rng;
	unsigned depth;
	struct frame frames[WORKLOAD_MAX_DEPTH + 1];
	struct access_state access;
	uint64_t syscall_start;
	enum op_kind syscall_kind;
	bool syscall_counted; /* issued inside the report phase (or there is none) */
	bool in_report_phase; /* between this task's begin and end of it */
	bool accessor;        /* its program has an access op */
	bool began_access;    /* it has started an access op */
	uint64_t accesses;
	uint64_t round_accesses; /* in completed rounds */
	uint64_t still_at;  /* the local time of the ops counted in @still_ops */
	uint64_t still_ops; /* ops executed in a row at @still_at */
	/* The fork op: the task's child (NULL if its program has no fork),
	 * forks still to do in the current op, and how far the current one is. */
	struct fork_child *child;
	int64_t forks_left;
	enum fork_step fork_step;
	bool child_exited; /* since the current fork: waitpid() may return */
};

struct region_map {
	uint64_t base;
	struct vma **vmas; /* one per chunk, into the owning mm's VMA array */
};

struct interp {
	struct kernel *k;
	const struct workload *w;
	bool run_ahead;
	unsigned nr_mms;
	struct mm **mms;
	struct region_map *regions;
	unsigned nr_tasks;
	struct itask *tasks;
	unsigned nr_children;
	struct fork_child *children; /* one per task whose program forks */
	int64_t *flags;
	GPtrArray **flag_waiters; /* struct itask * */
	GError *error;
	struct interp_results results;
};

struct flag_store {
	struct itask *writer;
	unsigned flag;
	int64_t value;
	struct flag_store *next_own; /* the writer's older stores in flight */
};

/*
 * What an op did: STEP_NEXT, finished (the caller moves to the next op);
 * STEP_PUSHED, entered a loop body (already moved); STEP_RETURNED, handed the
 * CPU to the scheduler; STEP_FAILED, recorded a run-time error.
 */
enum step { STEP_NEXT, STEP_PUSHED, STEP_RETURNED, STEP_FAILED };

/* An expression variable of task @ctx (struct itask): expr_eval()'s lookup. */
bool interp_task_lookup(void *ctx, const char *name, int64_t *value);
/* Record a run-time error at @op of @ts (the first one wins) and stop the
 * engine. */
void interp_fail(struct interp *ip, const struct itask *ts, const struct op *op, const char *fmt,
		 ...) G_GNUC_PRINTF(4, 5);
/* @expr in @ts's scope, within [@min, @max] (@what names it in messages);
 * false after interp_fail(). */
bool interp_eval(struct itask *ts, const struct op *op, const struct expr *expr, int64_t min,
		 int64_t max, const char *what, int64_t *out);
/* Resume at @local: used before any op other CPUs can observe.  True if
 * the task is in step with the engine already. */
bool interp_in_step(struct kernel *k, struct cpu *cpu, uint64_t local, uint64_t now);

/* The VMA of @addr in @region (VMA arrays never move). */
static inline struct vma *interp_region_vma(const struct interp *ip, unsigned region,
					    uint64_t addr)
{
	const struct region *r = &ip->w->regions[region];
	const struct region_map *map = &ip->regions[region];
	uint64_t slot = r->chunks == 1 ? 0 : (addr - map->base) / r->chunk_bytes;
	return map->vmas[r->chunks - 1 - slot];
}

/* A flag as @ts reads it: its own latest store, else what every core sees. */
static inline int64_t interp_flag_value(const struct itask *ts, unsigned flag)
{
	for (const struct flag_store *st = ts->own_stores; st; st = st->next_own)
		if (st->flag == flag)
			return st->value;
	return ts->interp->flags[flag];
}

/* The fork op (interp_fork.c): a child task, created before the run, per
 * task whose program forks; the op; the child told to go when its parent
 * exits; the children's labels and their end. */
/* Tasks that fork: one child (and mm) each. */
unsigned interp_fork_children_count(const struct interp *ip);
/* The children of @ip->nr_children (interp_fork_children_count()) forking tasks. */
void interp_fork_children_new(struct interp *ip);
enum step interp_fork_op(struct kernel *k, struct itask *ts, struct cpu *cpu,
			 const struct op *op, uint64_t *local, uint64_t now);
void interp_fork_parent_exit(struct kernel *k, struct itask *ts, uint64_t now);
void interp_fork_labels(const struct interp *ip, char **labels);
void interp_fork_children_free(struct interp *ip);

/* The access op (access.c): draw its addresses, then run them. */
bool access_begin(struct itask *ts, const struct op *op);
enum step access_run(struct kernel *k, struct itask *ts, struct cpu *cpu, uint64_t *local,
		     uint64_t now);

#endif
