/*
 * The shipped data together: every preset runs every shipped workload with
 * no stale translation on a machine where the preset is correct, and every
 * shipped machine runs every shipped workload under its architecture's
 * default preset.  Workloads are shrunk by --set so that the whole matrix
 * stays in CI's budget; the shrinking changes counts, not mechanisms.  One
 * test per preset and per machine, so that Criterion's jobs share them out.
 * In the sanitizer build (support_small()) each preset runs on one machine
 * of its architecture, and each machine, and each preset but the newest of
 * its architecture, runs the workloads that exercise its flush path (munmap,
 * madv-pageout, netperf-lazy, tlb_flush2); every workload still runs under
 * the newest preset of every architecture.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/sim/sim.h"

/*
 * Per shipped workload: the --set values that make it small.  The munmap
 * harnesses crowd more readers than CPUs, and a reader then waits for a CFS
 * slice (6 ms, scaled) whatever the file size: shorter slices keep the
 * crowding, and its context switches and lazy mms, in a millisecond.
 */
#define SHORT_SLICES "policy.sched.latency_ns=200000", "policy.sched.min_granularity_ns=50000"
static const struct {
	const char *workload;
	const char *sets[5];
} shrink[] = {
	/* No tail: the readers run while the munmaps flush, and not after. */
	{"munmap16", {"workload.file_size=2M", "workload.tail_ms=0", SHORT_SLICES, NULL}},
	{"munmap", {"workload.file_size=2M", "workload.tail_ms=0", SHORT_SLICES, NULL}},
	{"mprotect-thp", {"workload.file_size=16M", "workload.threads=4", "workload.tail_ms=1"}},
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
	/* Imported traces (docs/import.md): the gaps between calls ten times
	 * shorter, the same calls. */
	{"import-churn", {"workload.cycles_per_us=340", NULL}},
	{"import-xz", {"workload.cycles_per_us=340", NULL}},
	/* The kernel oracle's own scenarios (scripts/oracle/). */
	{"munmap-sleepers", {"workload.munmaps=16", "workload.threads=3", NULL}},
	{"pingpong", {"workload.rounds=20", NULL}},
	{"fork-exit", {"workload.forks=10", NULL}},
	/* The "Beyond Linux" papers' workloads (docs/inputs.md). */
	{"latr-micro", {"workload.iterations=20", NULL}},
	{"madv-dontneed-touch", {"workload.iterations=20", "workload.threads=4", NULL}},
	{"apache-churn", {"workload.requests=10", "workload.threads=8", NULL}},
	{"numa-migrate", {"workload.scans=10", NULL}},
};

/* The workloads a machine runs in the small matrix. */
static const char *const small_workloads[] = {"munmap", "madv-pageout", "netperf-lazy",
					      "tlb_flush2", NULL};

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
static const char *const rar_machines[] = {"tiny-2cpu-rar", "skylake-sp-2s-48-rar", NULL};
static const char *const coherent_machines[] = {"tiny-2cpu-unitd", "skylake-sp-2s-48-unitd", NULL};
static const char *const directory_machines[] = {"tiny-2cpu-didi", "skylake-sp-2s-48-didi", NULL};

static char *machine_path(const char *name)
{
	if (g_str_has_prefix(name, "tiny-"))
		return g_strdup_printf("%s/%s.json", TLBSIM_TEST_DATA, name);
	return g_strdup(name);
}

/* The machines a preset of @arch is correct on (small: the first only). */
static const char *const *machines_for(const char *policy)
{
	if (g_str_has_prefix(policy, "riscv"))
		return riscv_machines;
	if (g_str_has_prefix(policy, "arm64"))
		return arm64_machines;
	if (strcmp(policy, "intel-rar") == 0)
		return rar_machines;
	if (strcmp(policy, "unitd") == 0)
		return coherent_machines;
	if (strcmp(policy, "didi") == 0)
		return directory_machines;
	return x86_machines;
}

/* A test's parameter: a name held in the parameter itself, since Criterion
 * may run the test in a process of its own where pointers do not carry. */
struct name {
	char s[40];
};

/* Every shipped preset, by name (Criterion needs the parameters up front:
 * a test below checks that this list is the shipped one). */
static const char *const presets[] = {
	"arm64-6.5", "linux-3.11", "linux-3.4",	 "linux-3.6",  "linux-4.19", "linux-4.20",
	"linux-4.5", "linux-4.5-smt-dedup",	 "linux-6.1",  "linux-6.14", "linux-6.15",
	"linux-6.8", "riscv-6.7",  "riscv-6.8", "latr", "latr-released", "early-ack", "intel-rar",
	"abis", "numapte", "unitd", "didi", "barrelfish-multicast", "linux-5.2-pti", "deferred-pti",
};

static const char *const machines[] = {
	"amd-milan-36c",     "arm64-n1",	"haswell-i5-4350u", "haswell-i7",
	"haswell-i7-smt-thread", "ivybridge-ep-2s", "ivybridge-ex-8s", "ivybridge-i3-3240",
	"ivybridge-i7-3770",
	"nehalem-ep-2s",     "qemu-riscv-virt", "qemu-x86-16",	   "qemu-x86-4",
	"qemu-x86-8",	     "sifive-unmatched", "skylake-sp-2s-48", "skylake-sp-2s-48-rar",
	"skylake-sp-2s-48-unitd", "skylake-sp-2s-48-didi",
	"synthetic-1024",    "th1520",
};

/* The lists above hold exactly the shipped files: a new one needs a line. */
static void expect_shipped(enum inputs_kind kind, const char *const *names, size_t n)
{
	char **shipped = inputs_list(kind);
	cr_assert_eq(g_strv_length(shipped), n, "the shipped %s and this test's list differ",
		     inputs_folder(kind));
	for (size_t i = 0; i < n; i++)
		cr_expect(g_strv_contains((const char *const *)shipped, names[i]), "%s",
			  names[i]);
	g_strfreev(shipped);
}

Test(presets, lists_are_the_shipped_files)
{
	expect_shipped(INPUT_POLICY, presets, G_N_ELEMENTS(presets));
	expect_shipped(INPUT_TOPOLOGY, machines, G_N_ELEMENTS(machines));
}

static bool small_workload(const char *workload)
{
	return !support_small() || g_strv_contains(small_workloads, workload);
}

/* The preset that runs every workload in the sanitizer build. */
static bool newest_of_its_arch(const char *policy)
{
	static const char *const newest[] = {"linux-6.15", "arm64-6.5", "riscv-6.8", NULL};
	return g_strv_contains(newest, policy);
}

/* @names as parameters, in memory Criterion hands to the test's process. */
static void free_names(struct criterion_test_params *params)
{
	cr_free(params->params);
}

static struct criterion_test_params names_param(const char *const *names, size_t n)
{
	struct name *params = cr_malloc(n * sizeof(*params));
	for (size_t i = 0; i < n; i++)
		g_strlcpy(params[i].s, names[i], sizeof(params[i].s));
	return cr_make_param_array(struct name, params, n, free_names);
}

ParameterizedTestParameters(presets, every_workload_without_stale_translations)
{
	return names_param(presets, G_N_ELEMENTS(presets));
}

ParameterizedTest(struct name *preset, presets, every_workload_without_stale_translations)
{
	const char *const *policy = (const char *const[]){preset->s};
	char **workloads = inputs_list(INPUT_WORKLOAD);
	unsigned runs = 0, machines_run = 0;
	struct policy *p = support_policy(*policy);
	bool synchronous = p->completion != FLUSH_COMPLETION_NONE;
	bool gated = p->release_gate == RELEASE_LAZY_EPOCH;
	policy_free(p);
	for (const char *const *m = machines_for(*policy); *m; m++) {
		if (support_small() && m != machines_for(*policy))
			break;
		char *topology = machine_path(*m);
		machines_run++;
		for (char **w = workloads; *w; w++) {
			if (!newest_of_its_arch(*policy) && !small_workload(*w))
				continue;
			bool fits;
			struct sim_result *r = run(topology, *w, *policy, &fits);
			cr_assert(fits, "%s is for %s's architecture", *policy, *m);
			/* A lazy mechanism's stale hits are its design; the frames
			 * they reach must still be held, if its gate holds them
			 * (latr-released's do not: test_latr shows it). */
			if (synchronous)
				cr_expect_eq(r->total.stale_hits, 0, "%s / %s / %s: %lu", *policy,
					     *m, *w, (unsigned long)r->total.stale_hits);
			if (synchronous || gated)
				cr_expect_eq(r->total.stale_reuse, 0, "%s / %s / %s", *policy, *m,
					     *w);
			cr_expect_eq(r->total.stale_pwc, 0, "%s / %s / %s", *policy, *m, *w);
			runs++;
			sim_result_free(r);
		}
		g_free(topology);
	}
	unsigned per_machine = newest_of_its_arch(*policy) || !support_small()
				       ? g_strv_length(workloads)
				       : g_strv_length((char **)small_workloads);
	cr_expect_eq(runs, machines_run * per_machine);
	g_strfreev(workloads);
}

ParameterizedTestParameters(presets, machine_runs_every_workload)
{
	return names_param(machines, G_N_ELEMENTS(machines));
}

ParameterizedTest(struct name *param, presets, machine_runs_every_workload)
{
	const char *const *machine = (const char *const[]){param->s};
	char **workloads = inputs_list(INPUT_WORKLOAD);
	for (char **w = workloads; *w; w++) {
		if (!small_workload(*w))
			continue;
		bool fits;
		struct sim_result *r = run(*machine, *w, NULL, &fits);
		cr_assert_not_null(r);
		cr_expect_gt(r->sim_cycles, 0, "%s / %s", *machine, *w);
		sim_result_free(r);
	}
	g_strfreev(workloads);
}
