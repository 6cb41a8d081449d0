#ifndef TLBSIM_KERNEL_H
#define TLBSIM_KERNEL_H
/*
 * The simulated kernel: the objects every kernel mechanism (scheduler,
 * cross-calls, TLB flushing, VM syscalls) works on, bundled so that each
 * mechanism's functions take one context like the kernel's implicit globals.
 * kernel_boot() builds them on a machine that exists, whose fabric delivers
 * interrupts to smp_deliver_ipi() with the kernel as context.
 */
#include <glib.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/machine.h"
#include "tlbsim/machine/mm.h"

struct cpu_tlbstate;
struct latr;
struct lru;
struct rar;
struct sched;
struct smp;
struct tracepoint_ops;

struct kernel {
	struct engine *engine;
	struct machine *machine;
	const struct policy *policy;
	struct sched *sched;
	struct smp *smp;
	struct lru *lru;
	struct latr *latr; /* the "latr" transport's rings (latr.c), or NULL */
	struct rar *rar;   /* the "rar" transport's payload table (arch/x86/rar.c), or NULL */
	struct mm *init_mm; /* swapper_pg_dir: no user mappings */
	struct cpu_tlbstate *tlbstate; /* per CPU (tlbflush.h) */
	GHashTable *inflight; /* see kernel_alloc() */
	/* The probes registered on the tracepoints (tracepoint.h) and their
	 * data; NULL: nobody listens. */
	const struct tracepoint_ops *tp;
	void *tp_data;
};

/*
 * start_kernel(): the scheduler, the cross-call queues, the LRU, init_mm and
 * every CPU running it lazily (boot.c).  @policy, @engine and @machine are
 * borrowed.  kernel_shutdown() frees everything, in-flight objects too.
 */
void kernel_boot(struct kernel *k, const struct policy *policy, struct engine *engine,
		 struct machine *machine);
void kernel_shutdown(struct kernel *k);

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

/*
 * When an effect on other cores that is ready at @time may land: no sooner
 * than the lookahead after the event deciding it (machine.h, "Lookahead": a
 * store by one core reaches the others no faster than a line transfer).
 */
static inline uint64_t kernel_global_time(const struct kernel *k, uint64_t time)
{
	return MAX(time, engine_now(k->engine) + k->machine->lookahead);
}

#endif
