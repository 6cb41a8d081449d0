/*
 * The reproductions of docs/validation.md (plots/report.sh), shrunk: the
 * directions of effect that follow from each policy, and the exact knees of
 * the x86 range rules, on the shipped machines, workloads and presets.  The
 * --set values only make the runs small (FILE_SIZE, iterations, requests);
 * none of these assertions depends on calibration, so they hold at full size
 * too, where plots/report.sh measures them.
 */
#include <stdarg.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/sim/inputs.h"
#include "tlbsim/sim/sim.h"

struct vrun {
	struct inputs in;
	struct sim_result *r;
};

/* Runs a bundled machine, workload and preset with --set values (NULL-ended). */
static struct vrun vrun(const char *topology, const char *workload, const char *policy, ...)
{
	GPtrArray *sets = g_ptr_array_new();
	va_list ap;
	va_start(ap, policy);
	for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
		g_ptr_array_add(sets, (gpointer)s);
	va_end(ap);
	g_ptr_array_add(sets, NULL);
	struct vrun v = {0};
	GError *error = NULL;
	struct inputs_request req = {.names = {topology, workload, policy},
				     .sets = (const char *const *)sets->pdata};
	cr_assert(inputs_load(&req, &v.in, &error), "%s / %s / %s: %s", topology, workload, policy,
		  error ? error->message : "");
	struct sim_input input = {.topology = v.in.topology, .workload = v.in.workload,
				  .policy = v.in.policy,
				  .workload_file = v.in.paths[INPUT_WORKLOAD], .seed = 1,
				  .run_ahead = true};
	v.r = sim_run(&input, &error);
	cr_assert_not_null(v.r, "%s / %s / %s: %s", topology, workload, policy,
			   error ? error->message : "");
	g_ptr_array_free(sets, TRUE);
	return v;
}

static void vrun_free(struct vrun *v)
{
	sim_result_free(v->r);
	inputs_clear(&v->in);
}

static uint64_t calls(const struct vrun *v)
{
	return histogram_count(v->r->op_cycles);
}

/* ---- Directions of effect -------------------------------------------------- */

/* Experiment 1: one IPI per fully targeted core instead of one per CPU. */
Test(validation, smt_dedup_roughly_halves_received_flushes)
{
	/* 7 readers instead of 16: with the munmap thread they fill the 8 CPUs
	 * without time-sharing, which keeps the run short (16 readers stretch
	 * it to CFS slices); the mask holds every CPU either way. */
	struct vrun plain = vrun("haswell-i7", "munmap16", "linux-4.5", "workload.file_size=8M",
				 "workload.tail_ms=1", "workload.threads=7", NULL);
	struct vrun dedup = vrun("haswell-i7", "munmap16", "linux-4.5-smt-dedup",
				 "workload.file_size=8M", "workload.tail_ms=1", "workload.threads=7",
				 NULL);
	uint64_t n = calls(&plain); /* 8 MiB / 4 KiB / 64 = 32 munmaps */
	cr_assert_eq(n, 32);
	cr_expect_eq(plain.r->total.nr_tlb_remote_flush, n);
	cr_expect_eq(dedup.r->total.nr_tlb_remote_flush, n);
	/* All 8 CPUs in the mask: 7 targets, or the caller's sibling plus one
	 * sibling of each of the 3 other cores. */
	cr_expect_eq(plain.r->total.nr_tlb_remote_flush_received, 7 * n);
	cr_expect_eq(dedup.r->total.nr_tlb_remote_flush_received, 3 * n);
	cr_expect_lt(dedup.r->total.ipis_sent, plain.r->total.ipis_sent);
	/* The munmap gets cheaper: fewer IPIs to send and wait for. */
	cr_expect_lt(dedup.r->phase_cycles, plain.r->phase_cycles);
	cr_expect_eq(dedup.r->total.stale_hits, 0);
	vrun_free(&plain);
	vrun_free(&dedup);
}

/* Experiment 2: below the knee, shift 2 INVLPGs and spares the readers' TLBs. */
Test(validation, shift2_spares_the_readers_below_the_knee)
{
	struct vrun s2 = vrun("ivybridge-ep-2s", "munmap", "linux-3.11", "workload.file_size=8M",
			      "workload.tail_ms=1", "workload.pages_per_munmap=16",
			      "policy.tlb_flushall_shift=2", NULL);
	struct vrun s1 = vrun("ivybridge-ep-2s", "munmap", "linux-3.11", "workload.file_size=8M",
			      "workload.tail_ms=1", "workload.pages_per_munmap=16",
			      "policy.tlb_flushall_shift=-1", NULL);
	cr_expect_eq(s2.r->total.nr_tlb_local_flush_all, 0);
	cr_expect_eq(s2.r->total.nr_tlb_local_flush_one, 16 * calls(&s2));
	cr_expect_eq(s1.r->total.nr_tlb_local_flush_all, calls(&s1));
	cr_expect_lt(s2.r->total.tlb_entries_invalidated, s1.r->total.tlb_entries_invalidated);
	/* Per access: shift 2's readers make more accesses in the same time. */
	cr_expect_lt((double)s2.r->total.tlb_misses / (double)s2.r->total.accesses,
		     (double)s1.r->total.tlb_misses / (double)s1.r->total.accesses);
	/* accesses per thread per ms: higher with shift 2 */
	cr_expect_gt((double)s2.r->round_accesses / (double)s2.r->phase_cycles,
		     (double)s1.r->round_accesses / (double)s1.r->phase_cycles);
	vrun_free(&s2);
	vrun_free(&s1);
}

/* Experiment 5: the lazier era makes no cpumask atomics on idle round trips. */
Test(validation, lazier_has_fewer_cpumask_atomics_than_4_19)
{
	struct vrun old = vrun("skylake-sp-2s-48", "netperf-lazy", "linux-4.19",
			       "workload.requests=24", NULL);
	struct vrun lazier = vrun("skylake-sp-2s-48", "netperf-lazy", "linux-4.20",
				  "workload.requests=24", NULL);
	cr_expect_lt(lazier.r->total.cpumask_atomics * 10, old.r->total.cpumask_atomics);
	cr_expect_lt(lazier.r->total.switch_mm_cycles, old.r->total.switch_mm_cycles);
	cr_expect_lt(lazier.r->total.switch_mm, old.r->total.switch_mm);
	cr_expect_eq(lazier.r->total.stale_hits, 0);
	vrun_free(&old);
	vrun_free(&lazier);
}

/*
 * Experiment 6: batched reclaim makes one SBI fence per MADV_PAGEOUT for the
 * batch, not one per page, when the pages are clean (read touches).  Every
 * call also fences once for the young bits its walk cleared (tlb_finish_mmu()),
 * and 6.8 once more from the second call on for the batch the previous call
 * left (flush_tlb_batched_pending(): riscv harts never leave mm_cpumask, so
 * every call defers).
 */
Test(validation, riscv_6_8_makes_fewer_sbi_rfences_than_6_7)
{
	static const char *const machines[] = {"sifive-unmatched", "th1520", "qemu-riscv-virt"};
	for (size_t i = 0; i < G_N_ELEMENTS(machines); i++) {
		struct vrun a = vrun(machines[i], "madv-pageout", "riscv-6.7",
				     "workload.iterations=10", "workload.write=0", NULL);
		struct vrun b = vrun(machines[i], "madv-pageout", "riscv-6.8",
				     "workload.iterations=10", "workload.write=0", NULL);
		/* 10 calls x (64 pages + the walk's flush); 10 x (batch + walk's) + 9. */
		cr_expect_eq(a.r->total.sbi_rfences, 10 * (64 + 1), "%s", machines[i]);
		cr_expect_eq(b.r->total.sbi_rfences, 10 * 2 + 9, "%s", machines[i]);
		cr_expect_eq(a.r->total.pages_reclaimed, b.r->total.pages_reclaimed, "%s",
			     machines[i]);
		cr_expect_lt(b.r->phase_cycles, a.r->phase_cycles, "%s", machines[i]);
		vrun_free(&a);
		vrun_free(&b);
	}
}

/* Written pages are dirty: try_to_unmap_flush_dirty() flushes the batch
 * before each is written out, so 6.8 fences once per page as 6.7 does, plus
 * the batch the previous call left. */
Test(validation, riscv_6_8_saves_no_fence_on_dirty_pages)
{
	struct vrun a = vrun("sifive-unmatched", "madv-pageout", "riscv-6.7",
			     "workload.iterations=10", NULL);
	struct vrun b = vrun("sifive-unmatched", "madv-pageout", "riscv-6.8",
			     "workload.iterations=10", NULL);
	cr_expect_eq(a.r->total.sbi_rfences, 10 * (64 + 1));
	cr_expect_eq(b.r->total.sbi_rfences, 10 * (64 + 1) + 9);
	vrun_free(&a);
	vrun_free(&b);
}

/* Experiment 6: at shift 0 the THP patch flushes a huge page whole instead of
 * stepping 512 INVLPGs over it; at Nehalem's own shift 6 both flush whole. */
Test(validation, thp_patch_flushes_huge_pages_whole)
{
	struct vrun before = vrun("nehalem-ep-2s", "mprotect-thp", "linux-3.6",
				  "workload.file_size=32M", "workload.threads=4",
				  "workload.tail_ms=1", "policy.huge_page_range=per_4k",
				  "policy.tlb_flushall_shift=0", NULL);
	struct vrun after = vrun("nehalem-ep-2s", "mprotect-thp", "linux-3.6",
				 "workload.file_size=32M", "workload.threads=4",
				 "workload.tail_ms=1", "policy.tlb_flushall_shift=0", NULL);
	struct vrun cpu = vrun("nehalem-ep-2s", "mprotect-thp", "linux-3.6",
			       "workload.file_size=32M", "workload.threads=4", "workload.tail_ms=1",
			       "policy.huge_page_range=per_4k", NULL);
	uint64_t n = calls(&after); /* 32 MiB / 2 MiB = 16 mprotects */
	cr_assert_eq(n, 16);
	cr_expect_eq(before.r->total.nr_tlb_local_flush_one, 512 * n);
	cr_expect_eq(before.r->total.nr_tlb_local_flush_all, 0);
	cr_expect_eq(after.r->total.nr_tlb_local_flush_all, n);
	cr_expect_eq(cpu.r->total.nr_tlb_local_flush_all, n); /* 512 > 512 >> 6 */
	uint64_t t_before, t_after, hi;
	histogram_sum(before.r->op_cycles, &hi, &t_before);
	histogram_sum(after.r->op_cycles, &hi, &t_after);
	cr_expect_lt(t_after, t_before, "flushing all is cheaper than 512 INVLPGs");
	vrun_free(&before);
	vrun_free(&after);
	vrun_free(&cpu);
}

/* Experiment 7: an mm on more than 3 CPUs gets a global ASID and INVLPGB. */
Test(validation, linux_6_15_sends_fewer_ipis_than_6_14_on_milan)
{
	struct vrun ipi = vrun("amd-milan-36c", "tlb_flush2", "linux-6.14", "workload.threads=36",
			       "workload.iterations=20", "workload.warmup=4", NULL);
	struct vrun bcast = vrun("amd-milan-36c", "tlb_flush2", "linux-6.15",
				 "workload.threads=36", "workload.iterations=20",
				 "workload.warmup=4", NULL);
	cr_expect_eq(ipi.r->total.tlbi_broadcasts, 0);
	cr_expect_gt(bcast.r->total.tlbi_broadcasts, 0);
	cr_expect_lt(bcast.r->total.ipis_sent * 10, ipi.r->total.ipis_sent);
	cr_expect_lt(bcast.r->total.irq_cycles, ipi.r->total.irq_cycles);
	cr_expect_lt(bcast.r->phase_cycles, ipi.r->phase_cycles);
	cr_expect_eq(bcast.r->total.stale_hits, 0);
	vrun_free(&ipi);
	vrun_free(&bcast);
}

/* ---- Knees of the range rules ---------------------------------------------- */

/* Flushes of the munmap harness with N pages per call: INVLPG'd pages and
 * whole flushes on the initiator. */
static void munmap_flushes(const char *shift, unsigned n, uint64_t *one, uint64_t *all,
			   uint64_t *nr_calls)
{
	char *pages = g_strdup_printf("workload.pages_per_munmap=%u", n);
	char *sh = g_strdup_printf("policy.tlb_flushall_shift=%s", shift);
	struct vrun v = vrun("ivybridge-ep-2s", "munmap", "linux-3.11", "workload.file_size=4M",
			     "workload.tail_ms=1", "workload.threads=2", pages, sh, NULL);
	*one = v.r->total.nr_tlb_local_flush_one;
	*all = v.r->total.nr_tlb_local_flush_all;
	*nr_calls = calls(&v);
	vrun_free(&v);
	g_free(pages);
	g_free(sh);
}

/* linux-3.11 with shift 2 on ivybridge-ep-2s: INVLPG iff N <= min(512,
 * total_vm) >> 2 = 128 (3.x munmap flushes the whole VMA: N pages). */
Test(validation, knee_of_shift_2_on_ivybridge_is_128_pages)
{
	uint64_t one, all, n;
	munmap_flushes("2", 128, &one, &all, &n);
	cr_expect_eq(all, 0, "128 pages: INVLPG");
	cr_expect_eq(one, 128 * n);
	munmap_flushes("2", 129, &one, &all, &n);
	cr_expect_eq(one, 0, "129 pages: whole");
	cr_expect_eq(all, n);
}

/* The munmap harness on @machine under @policy with its own shift, N pages a call. */
static void munmap_flushes_on(const char *machine, const char *policy, unsigned n, uint64_t *one,
			      uint64_t *all, uint64_t *nr_calls)
{
	char *pages = g_strdup_printf("workload.pages_per_munmap=%u", n);
	struct vrun v = vrun(machine, "munmap", policy, "workload.file_size=4M",
			     "workload.tail_ms=1", "workload.threads=2", pages, NULL);
	*one = v.r->total.nr_tlb_local_flush_one;
	*all = v.r->total.nr_tlb_local_flush_all;
	*nr_calls = calls(&v);
	vrun_free(&v);
	g_free(pages);
}

/* Mel Gorman's 3.13-rc3 on client Ivy Bridge (model 0x3A, shift 1 from the
 * topology's cpuid): INVLPG iff N <= 512 >> 1 = 256; 3.4 never INVLPGs. */
Test(validation, knee_of_3_13_on_client_ivybridge_is_256_pages)
{
	uint64_t one, all, n;
	munmap_flushes_on("ivybridge-i7-3770", "linux-3.11", 256, &one, &all, &n);
	cr_expect_eq(all, 0, "256 pages: INVLPG");
	cr_expect_eq(one, 256 * n);
	munmap_flushes_on("ivybridge-i7-3770", "linux-3.11", 257, &one, &all, &n);
	cr_expect_eq(one, 0, "257 pages: whole");
	cr_expect_eq(all, n);
	munmap_flushes_on("ivybridge-i3-3240", "linux-3.4", 1, &one, &all, &n);
	cr_expect_eq(one, 0, "3.4: flush_tlb_mm() even for one page");
	cr_expect_eq(all, n);
}

Test(validation, shift_minus_1_always_flushes_whole)
{
	static const unsigned sizes[] = {1, 8, 128};
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		uint64_t one, all, n;
		munmap_flushes("-1", sizes[i], &one, &all, &n);
		cr_expect_eq(one, 0, "%u pages", sizes[i]);
		cr_expect_eq(all, n, "%u pages", sizes[i]);
	}
}

/* The 33-page ceiling of linux-4.5 (a5102476a24b), on the local-flush harness
 * of experiment 4 (every page present, so mmu_gather's range is N pages), and
 * Hansen's cycles as tlbsim prices them: N INVLPGs, or one CR3 write. */
Test(validation, ceiling_of_linux_4_5_is_33_pages)
{
	static const unsigned sizes[] = {1, 32, 33, 34, 64};
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		unsigned n = sizes[i];
		char *pages = g_strdup_printf("workload.pages=%u", n);
		struct vrun v = vrun("ivybridge-ep-2s", "madv-local-flush", "linux-4.5", pages,
				     "workload.iterations=20", NULL);
		const struct topology_costs *c = &v.in.topology->costs;
		uint64_t k = calls(&v);
		cr_assert_eq(k, 20);
		cr_expect_eq(v.r->total.nr_tlb_remote_flush, 0, "one task: local flushes only");
		if (n <= 33) {
			cr_expect_eq(v.r->total.nr_tlb_local_flush_one, n * k, "%u pages", n);
			cr_expect_eq(v.r->total.nr_tlb_local_flush_all, 0, "%u pages", n);
			cr_expect_eq(v.r->total.local_flush_cycles, n * c->invlpg * k, "%u pages", n);
		} else {
			cr_expect_eq(v.r->total.nr_tlb_local_flush_one, 0, "%u pages", n);
			cr_expect_eq(v.r->total.nr_tlb_local_flush_all, k, "%u pages", n);
			cr_expect_eq(v.r->total.local_flush_cycles, c->flush_all * k, "%u pages", n);
		}
		vrun_free(&v);
		g_free(pages);
	}
}
