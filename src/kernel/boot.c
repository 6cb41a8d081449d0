/*
 * start_kernel() for one run, and its undoing: the kernel's objects on a
 * machine that exists.  Apart from kernel.c, whose in-flight objects the
 * mechanisms built here use, so that no file of this layer calls one that
 * calls it back.
 */
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/swap.h"
#include "tlbsim/kernel/tlbflush.h"

void kernel_boot(struct kernel *k, const struct policy *policy, struct engine *engine,
		 struct machine *machine)
{
	*k = (struct kernel){.engine = engine, .machine = machine, .policy = policy};
	machine->replica_cycles = policy->numapte_replica_cycles; /* 0 but under numaPTE */
	kernel_init_inflight(k);
	k->init_mm = mm_new(0, machine->nr_cpus);
	sched_new(k);
	smp_new(k);
	lru_new(k);
	tlbflush_init(k);
	if (policy->transport->boot)
		policy->transport->boot(k);
}

void kernel_shutdown(struct kernel *k)
{
	kernel_free_inflight(k);
	if (k->policy->transport->shutdown)
		k->policy->transport->shutdown(k);
	tlbflush_exit(k);
	lru_free(k->lru);
	smp_free(k->smp);
	sched_free(k->sched);
	mm_free(k->init_mm);
	*k = (struct kernel){0};
}
