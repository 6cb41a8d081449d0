/*
 * The shipped data together: every preset runs every shipped workload with
 * no stale translation on a machine where the preset is correct, and every
 * shipped machine runs every shipped workload under its architecture's
 * default preset.  Workloads are shrunk by --set so that the whole matrix
 * stays in CI's budget; the shrinking changes counts, not mechanisms.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <glib.h>
#include "tlbsim/sim/inputs.h"
#include "tlbsim/sim/sim.h"

/* Per shipped workload: the --set values that make it small. */
static const struct {
	const char *workload;
	const char *sets[5];
} shrink[] = {
	{"munmap16", {"workload.file_size=8M", "workload.tail_ms=1", NULL}},
	{"munmap", {"workload.file_size=8M", "workload.tail_ms=1", NULL}},
	{"mprotect-thp", {"workload.file_size=32M", "workload.threads=4", "workload.tail_ms=1"}},
	{"madv-pageout", {"workload.iterations=10", NULL}},
	{"madv-local-flush", {"workload.iterations=10", NULL}},
	{"smt-pair", {"workload.span=4M", "workload.rounds=4", NULL}},
	{"netperf-lazy", {"workload.requests=24", NULL}},
	{"tlb_flush1", {"workload.iterations=40", "workload.warmup=4", "workload.threads=4", NULL}},
	/* 16-page mappings: the 44 loops make two passes, with the munmap and mmap
	 * after each. */
	{"tlb_flush2",
	 {"workload.iterations=40", "workload.warmup=4", "workload.threads=4", "workload.pages=16",
	  NULL}},
	{"tlb_flush3", {"workload.iterations=40", "workload.warmup=4", "workload.threads=4", NULL}},
};

static const char *const *shrink_sets(const char *workload)
{
	for (size_t i = 0; i < G_N_ELEMENTS(shrink); i++)
		if (strcmp(shrink[i].workload, workload) == 0)
			return shrink[i].sets;
	cr_assert_fail("shipped workload %s has no shrink entry: add one", workload);
	return NULL;
}

/* Runs; NULL when the policy does not fit the machine's architecture. */
static struct sim_result *run(const char *topology, const char *workload, const char *policy,
			      bool *fits)
{
	GError *error = NULL;
	struct inputs in;
	struct inputs_request req = {.names = {topology, workload, policy},
				     .sets = shrink_sets(workload)};
	*fits = inputs_load(&req, &in, &error);
	if (!*fits) {
		/* The only acceptable refusal: another architecture's preset. */
		cr_assert(strstr(error->message, " but topology ") != NULL, "%s", error->message);
		g_error_free(error);
		return NULL;
	}
	struct sim_input input = {.topology = in.topology, .workload = in.workload,
				  .policy = in.policy,
				  .workload_file = in.paths[INPUT_WORKLOAD], .seed = 1,
				  .run_ahead = true};
	struct sim_result *r = sim_run(&input, &error);
	cr_assert_not_null(r, "%s on %s under %s: %s", workload, topology,
			   policy ? policy : "the default preset", error ? error->message : "");
	inputs_clear(&in);
	return r;
}

/*
 * Where each preset is correct: x86 presets on haswell-i7 (its SMT siblings
 * share invalidation, the premise of linux-4.5-smt-dedup), riscv on a part
 * with SBI fences, ASIDs and direct IPIs alike, arm64 on a broadcast part.
 */
static const char *const x86_machines[] = {"haswell-i7", "tiny-smt-invlpgb", NULL};
static const char *const riscv_machines[] = {"th1520", "sifive-unmatched", NULL};
static const char *const arm64_machines[] = {"tiny-arm64", NULL};

static char *machine_path(const char *name)
{
	if (g_str_has_prefix(name, "tiny-"))
		return g_strdup_printf("%s/%s.json", TLBSIM_TEST_DATA, name);
	return g_strdup(name);
}

Test(presets, every_preset_runs_every_workload_without_stale_translations, .timeout = 600)
{
	char **policies = inputs_list(INPUT_POLICY);
	char **workloads = inputs_list(INPUT_WORKLOAD);
	const char *const *groups[] = {x86_machines, riscv_machines, arm64_machines};
	unsigned runs = 0;
	for (char **p = policies; *p; p++) {
		for (size_t g = 0; g < G_N_ELEMENTS(groups); g++) {
			for (const char *const *m = groups[g]; *m; m++) {
				char *topology = machine_path(*m);
				for (char **w = workloads; *w; w++) {
					bool fits;
					struct sim_result *r = run(topology, *w, *p, &fits);
					if (!r)
						break; /* another architecture's preset */
					cr_expect_eq(r->total.stale_hits, 0, "%s / %s / %s: %lu",
						     *p, *m, *w,
						     (unsigned long)r->total.stale_hits);
					cr_expect_eq(r->total.stale_pwc, 0, "%s / %s / %s", *p, *m,
						     *w);
					runs++;
					sim_result_free(r);
				}
				g_free(topology);
			}
		}
	}
	/* 10 x86 presets x 2 machines, 2 riscv x 2, 1 arm64 x 1; every workload. */
	cr_expect_eq(runs, (10 * 2 + 2 * 2 + 1) * g_strv_length(workloads));
	g_strfreev(policies);
	g_strfreev(workloads);
}

Test(presets, every_machine_runs_every_workload, .timeout = 600)
{
	char **machines = inputs_list(INPUT_TOPOLOGY);
	char **workloads = inputs_list(INPUT_WORKLOAD);
	for (char **m = machines; *m; m++) {
		for (char **w = workloads; *w; w++) {
			bool fits;
			struct sim_result *r = run(*m, *w, NULL, &fits);
			cr_assert_not_null(r);
			cr_expect_gt(r->sim_cycles, 0, "%s / %s", *m, *w);
			sim_result_free(r);
		}
	}
	g_strfreev(machines);
	g_strfreev(workloads);
}
