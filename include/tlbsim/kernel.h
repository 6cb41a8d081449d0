#ifndef TLBSIM_KERNEL_H
#define TLBSIM_KERNEL_H
/*
 * The simulated kernel: the objects every kernel mechanism (scheduler,
 * cross-calls, TLB flushing, VM syscalls) works on, bundled so that each
 * mechanism's functions take one context like the kernel's implicit globals.
 * Owned by sim.c, which builds and frees them.
 */
#include <glib.h>
#include "tlbsim/engine.h"
#include "tlbsim/machine.h"
#include "tlbsim/mm.h"
#include "tlbsim/policy.h"

struct lru;
struct sched;
struct smp;
struct trace;

struct kernel {
	struct engine *engine;
	struct machine *machine;
	const struct policy *policy;
	struct sched *sched;
	struct smp *smp;
	struct lru *lru;
	struct mm *init_mm; /* swapper_pg_dir: no user mappings */
	GHashTable *inflight; /* see kernel_alloc() */
	struct trace *trace;  /* NULL: tracing off (trace.h); owned by sim.c */
};

/*
 * Objects that live while a call is in flight (a syscall, a cross-call and its
 * acknowledgements).  A run stopped early (error, budget) leaves some behind;
 * kernel_free_inflight() frees them so that no run leaks.
 */
void kernel_init_inflight(struct kernel *k);
void *kernel_alloc(struct kernel *k, size_t size);
void kernel_release(struct kernel *k, void *object);
void kernel_free_inflight(struct kernel *k);

/* A continuation: "the operation finished at @time". */
struct kcont {
	void (*fn)(struct kernel *k, void *ctx, uint64_t time);
	void *ctx;
};

static inline void kcont_call(struct kernel *k, struct kcont cont, uint64_t time)
{
	cont.fn(k, cont.ctx, time);
}

#endif
