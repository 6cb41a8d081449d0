/*
 * Which CPUs of mm_cpumask a shootdown interrupts (flush_targets_ops,
 * policy.h): every one, as native_flush_tlb_others() and the riscv IPI path
 * do, or one SMT sibling fewer per fully present core.
 */
#include <glib.h>
#include "tlbsim/kernel/kernel.h"

/* Every other CPU in mm_cpumask (smp_call_function_many skips the caller). */
static unsigned select_mm_cpumask(const struct kernel *k, const struct cpu *self,
				  const struct mm *mm, uint64_t nodes, unsigned *targets)
{
	(void)k;
	(void)nodes;
	unsigned n = 0;
	for (unsigned c = mm_cpumask_next(mm, 0); c < mm->nr_cpus; c = mm_cpumask_next(mm, c + 1))
		if (c != self->id)
			targets[n++] = c;
	return n;
}

const struct flush_targets_ops flush_targets_mm_cpumask = {
	.name = "mm_cpumask",
	.imitates = "native_flush_tlb_others() 4.5",
	.select = select_mm_cpumask,
};

/*
 * Alex Shi's 2016 "[REF PATCH] x86/tlb: just do tlb flush on one of siblings
 * of SMT": walk a copy of mm_cpumask (the caller included) in order; for each
 * CPU whose whole sibling set is still in the copy, clear its next sibling.
 * The caller is then skipped as smp_call_function_many() does.
 */
static unsigned select_smt_dedup(const struct kernel *k, const struct cpu *self,
				 const struct mm *mm, uint64_t nodes, unsigned *targets)
{
	(void)nodes;
	const struct machine *m = k->machine;
	unsigned nr_cpus = m->nr_cpus;
	bool *in = g_new0(bool, nr_cpus);
	for (unsigned c = mm_cpumask_next(mm, 0); c < nr_cpus; c = mm_cpumask_next(mm, c + 1))
		in[c] = true;
	unsigned threads = m->topology->threads_per_core;
	unsigned stride = m->topology->sockets * m->topology->cores_per_socket;
	if (threads > 1) {
		for (unsigned c = 0; c < nr_cpus; c++) {
			if (!in[c])
				continue;
			unsigned base = c % stride; /* thread 0 of this core */
			bool all = true;
			for (unsigned t = 0; t < threads; t++)
				all = all && in[base + t * stride];
			if (!all)
				continue;
			unsigned next_thread = (m->cpus[c].thread + 1) % threads;
			in[base + next_thread * stride] = false;
		}
	}
	unsigned n = 0;
	for (unsigned c = 0; c < nr_cpus; c++)
		if (in[c] && c != self->id)
			targets[n++] = c;
	g_free(in);
	return n;
}

const struct flush_targets_ops flush_targets_smt_dedup = {
	.name = "smt_dedup",
	.imitates = "native_flush_tlb_others() + Alex Shi's 2016 SMT-sibling patch (not merged)",
	.select = select_smt_dedup,
};
