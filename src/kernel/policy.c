/*
 * Policy files: which kernel era's flush mechanisms to use, and their knobs.
 * A preset is a JSON file in policies/; every mechanism is named by the ops
 * table that implements it, so adding an era is a data change.
 */
#include <string.h>
#include "tlbsim/kernel/policy.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

static const struct flush_range_ops *const range_ops[] = {
	&flush_range_tlb_flushall_shift,
	&flush_range_single_page_ceiling,
	NULL,
};

static const struct flush_targets_ops *const targets_ops[] = {
	&flush_targets_mm_cpumask,
	&flush_targets_smt_dedup,
	&flush_targets_abis,
	&flush_targets_numapte,
	&flush_targets_directory,
	NULL,
};

static const struct lazy_tlb_ops *const lazy_ops[] = {
	&lazy_tlb_strict, &lazy_tlb_pcid,  &lazy_tlb_lazier,
	&lazy_tlb_trimmed, &lazy_tlb_arm64, &lazy_tlb_riscv, NULL,
};

static const struct flush_arch_ops *const arch_ops[] = {
	&flush_arch_x86,
	&flush_arch_arm64,
	&flush_arch_riscv,
	NULL,
};

static const struct flush_transport_ops *const transport_ops[] = {
	&flush_transport_ipi,
	&flush_transport_latr,
	&flush_transport_rar,
	&flush_transport_coherence,
	&flush_transport_multicast,
	&flush_transport_directory,
	NULL,
};

static const char *const completion_names[] = {
	[FLUSH_COMPLETION_REMOTE_DONE] = "remote_flush_done",
	[FLUSH_COMPLETION_HANDLER_ENTRY] = "handler_entry",
	[FLUSH_COMPLETION_NONE] = "none",
	NULL,
};
static const char *const release_gate_names[] = {
	[RELEASE_AFTER_COMPLETION] = "after_completion",
	[RELEASE_LAZY_EPOCH] = "lazy_epoch",
	NULL,
};
static const char *const pti_user_flush_names[] = {
	[PTI_USER_FLUSH_INVPCID] = "invpcid",
	[PTI_USER_FLUSH_DEFERRED] = "deferred",
	NULL,
};

static const char *const disturbance_names[] = {
	[DISTURBANCE_IRQ_HANDLER] = "irq_handler",
	[DISTURBANCE_TICK_SWEEP] = "tick_sweep",
	[DISTURBANCE_MICROCODE] = "microcode",
	[DISTURBANCE_NONE] = "none",
	[DISTURBANCE_MESSAGE_POLL] = "message_poll",
	NULL,
};

static const char *const munmap_range_names[] = {"vma", "gathered", NULL};
static const char *const huge_range_names[] = {
	[HUGE_RANGE_PER_4K] = "per_4k",
	[HUGE_RANGE_FLUSH_ALL] = "flush_all",
	[HUGE_RANGE_PER_STRIDE] = "per_stride",
	NULL,
};
static const char *const reclaim_names[] = {
	[RECLAIM_FLUSH_PER_PAGE] = "per_page",
	[RECLAIM_FLUSH_BATCHED] = "batched",
	NULL,
};

static const char *const nested_flush_names[] = {
	[NESTED_FLUSH_NONE] = "none",
	[NESTED_FLUSH_RANGE] = "range",
	[NESTED_FLUSH_FULL] = "full",
	NULL,
};

static const char *const policy_keys[] = {
	"name",
	"description",
	"comment",
	"arch",
	"range_flush",
	"tlb_flushall_shift",
	"single_page_flush_ceiling",
	"huge_page_range",
	"munmap_flush_range",
	"flush_targets",
	"lazy_tlb",
	"pcid",
	"pti",
	"pti_user_flush",
	"lazy_table_free_ipi",
	"concurrent_local_flush",
	"invlpgb",
	"lru_add_drain_on_free",
	"per_vma_lock",
	"munmap_downgrade",
	"flush_batched_pending",
	"reclaim_flush",
	"nested_flush",
	"riscv_flush_all_threshold",
	"arm64_max_tlbi_ops",
	"flush_transport",
	"flush_completion",
	"release_gate",
	"flush_disturbance",
	"latr_states",
	"tick_hz",
	"early_ack_freed_tables",
	"abis_track_cycles",
	"numapte_replica_cycles",
	"multicast_poll_ns",
	"sched",
	"$schema", /* the editor's: docs/schema/policy.schema.json */
	NULL,
};

static const char *const sched_keys[] = {"latency_ns",
					 "min_granularity_ns",
					 "wakeup_granularity_ns",
					 "load_balance",
					 "migration_cost_ns",
					 "busy_factor",
					 "min_interval_ms",
					 "max_interval_ms",
					 "imbalance_pct_smt",
					 "imbalance_pct_llc",
					 "imbalance_pct_top",
					 "cache_nice_tries_smt",
					 "cache_nice_tries_llc",
					 "cache_nice_tries_top",
					 "comment",
					 NULL};

/*
 * Pick an ops struct by name.  Every ops struct starts with its name, and a
 * pointer to a struct may be read as a pointer to its first member.
 */
static bool policy_pick(const struct config_node *node, const char *key,
			const void *const *table, size_t n, int *index, GError **error)
{
	const char **names = g_new0(const char *, n + 1);
	for (size_t i = 0; i < n && table[i]; i++)
		names[i] = *(const char *const *)table[i];
	bool ok = config_get_enum(node, key, true, names, index, error);
	g_free(names);
	return ok;
}

static bool policy_read_shift(const struct config_node *node, struct policy *policy,
			      GError **error)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(node->json, "tlb_flushall_shift");
	policy->tlb_flushall_shift = POLICY_SHIFT_FROM_CPU;
	if (!item || (cJSON_IsString(item) && strcmp(item->valuestring, "cpu") == 0))
		return true;
	int64_t shift = 0;
	/* An object is a number with its source (config.h); config_get_i64 reads it. */
	if (!cJSON_IsNumber(item) && !cJSON_IsObject(item)) {
		struct config_node child = config_child(node, "tlb_flushall_shift");
		config_set_error(error, &child, "expected \"cpu\" or an integer in [-1, 16]");
		return false;
	}
	if (!config_get_i64(node, "tlb_flushall_shift", true, -1, 16, &shift, error))
		return false;
	policy->tlb_flushall_shift = (int)shift;
	return true;
}

/*
 * A knob the policy's mechanisms never read is refused: a --set of the 3.x
 * shift on a 3.16+ rule (or of one architecture's threshold on another)
 * would otherwise change nothing, silently.
 */
static bool policy_check_applies(const struct config_node *root, const struct policy *policy,
				 GError **error)
{
	char *range_arch = g_strdup_printf("range_flush \"%s\" and arch \"%s\"",
					   policy->range->name, policy->arch->name);
	char *transport = g_strdup_printf("flush_transport \"%s\"", policy->transport->name);
	char *disturbance = g_strdup_printf("flush_disturbance \"%s\"",
					    disturbance_names[policy->disturbance]);
	char *completion = g_strdup_printf("flush_completion \"%s\"",
					   completion_names[policy->completion]);
	char *targets = g_strdup_printf("flush_targets \"%s\"", policy->targets->name);
	const char *pti = policy->pti ? "pti true" : "pti false";
	const struct {
		const char *key;
		bool applies;
		const char *because;
		const char *has;
	} knobs[] = {
	    {"tlb_flushall_shift", policy->range == &flush_range_tlb_flushall_shift,
	     "range_flush \"tlb_flushall_shift\"", range_arch},
	    {"single_page_flush_ceiling", policy->range != &flush_range_tlb_flushall_shift,
	     "range_flush \"single_page_flush_ceiling\"", range_arch},
	    {"riscv_flush_all_threshold", policy->arch->arch == ARCH_RISCV, "arch \"riscv\"",
	     range_arch},
	    {"arm64_max_tlbi_ops", policy->arch->arch == ARCH_ARM64, "arch \"arm64\"", range_arch},
	    {"latr_states", policy->transport == &flush_transport_latr,
	     "flush_transport \"latr\"", transport},
	    {"tick_hz", policy->disturbance == DISTURBANCE_TICK_SWEEP,
	     "flush_disturbance \"tick_sweep\"", disturbance},
	    {"early_ack_freed_tables", policy->completion == FLUSH_COMPLETION_HANDLER_ENTRY,
	     "flush_completion \"handler_entry\"", completion},
	    {"abis_track_cycles", policy->targets == &flush_targets_abis, "flush_targets \"abis\"",
	     targets},
	    {"numapte_replica_cycles", policy->targets == &flush_targets_numapte,
	     "flush_targets \"numapte\"", targets},
	    {"multicast_poll_ns", policy->transport == &flush_transport_multicast,
	     "flush_transport \"multicast\"", transport},
	    {"pti_user_flush", policy->pti, "pti true", pti},
	};
	bool ok = true;
	for (unsigned i = 0; ok && i < G_N_ELEMENTS(knobs); i++) {
		if (knobs[i].applies || !cJSON_GetObjectItemCaseSensitive(root->json, knobs[i].key))
			continue;
		struct config_node node = config_child(root, knobs[i].key);
		config_set_error(error, &node, "only %s reads it; this policy has %s",
				 knobs[i].because, knobs[i].has);
		ok = false;
	}
	g_free(range_arch);
	g_free(transport);
	g_free(disturbance);
	g_free(completion);
	g_free(targets);
	return ok;
}

/*
 * The frame's axes must fit together: each transport has one way to disturb
 * its receivers and the completion points it can offer, and only a lazy
 * transport can hold frames for a lazy epoch.
 */
static bool policy_check_frame(const struct config_node *root, const struct policy *policy,
			       GError **error)
{
	/* Per transport: the one disturbance it has and the completion it needs
	 * (-1: any the ipi transport offers). */
	static const struct {
		const struct flush_transport_ops *transport;
		enum flush_disturbance disturbance;
		int completion;
		const char *needs;
	} fits[] = {
	    {&flush_transport_ipi, DISTURBANCE_IRQ_HANDLER, -1, NULL},
	    {&flush_transport_latr, DISTURBANCE_TICK_SWEEP, FLUSH_COMPLETION_NONE, NULL},
	    {&flush_transport_rar, DISTURBANCE_MICROCODE, FLUSH_COMPLETION_REMOTE_DONE,
	     " (the targets' status bytes)"},
	    {&flush_transport_coherence, DISTURBANCE_NONE, FLUSH_COMPLETION_REMOTE_DONE,
	     " (the PTE stores globally performed)"},
	    {&flush_transport_multicast, DISTURBANCE_MESSAGE_POLL, FLUSH_COMPLETION_REMOTE_DONE,
	     " (every socket's aggregated reply: a one-phase commit)"},
	    {&flush_transport_directory, DISTURBANCE_NONE, FLUSH_COMPLETION_REMOTE_DONE,
	     " (every sharer's ack)"},
	};
	/* Only the directory knows its sharers, and it forwards to nobody else. */
	bool directory_targets = policy->targets == &flush_targets_directory;
	bool directory_transport = policy->transport == &flush_transport_directory;
	unsigned f = 0;
	while (fits[f].transport != policy->transport)
		f++;
	const char *name = policy->transport->name;
	char *expected = NULL;
	const char *key = NULL;
	if (f > 0 && policy->arch->arch != ARCH_X86) {
		key = "flush_transport";
		expected = g_strdup("\"ipi\" (the other transports are modelled on x86 only)");
	} else if (policy->disturbance != fits[f].disturbance) {
		key = "flush_disturbance";
		expected = g_strdup_printf("\"%s\" with flush_transport \"%s\"",
					   disturbance_names[fits[f].disturbance], name);
	} else if (fits[f].completion >= 0 && (int)policy->completion != fits[f].completion) {
		key = "flush_completion";
		expected = g_strdup_printf("\"%s\" with flush_transport \"%s\"%s",
					   completion_names[fits[f].completion], name,
					   fits[f].needs ? fits[f].needs : "");
	} else if (directory_targets != directory_transport) {
		key = directory_targets ? "flush_transport" : "flush_targets";
		expected = g_strdup_printf("\"directory\" with %s \"directory\" (only the TLB "
					   "directory knows the sharers, and it sends to them "
					   "alone)",
					   directory_targets ? "flush_targets" : "flush_transport");
	} else if (f != 1 && policy->release_gate == RELEASE_LAZY_EPOCH) {
		key = "release_gate";
		expected = g_strdup("\"after_completion\": only flush_transport \"latr\" has a "
				    "lazy epoch");
	}
	if (!key)
		return true;
	struct config_node node = config_child(root, key);
	config_set_error(error, &node, "expected %s", expected);
	g_free(expected);
	return false;
}

/* An optional boolean with the kernel's default. */
static bool policy_read_bool(const struct config_node *node, const char *key, bool fallback,
			     bool *out, GError **error)
{
	*out = fallback;
	if (!cJSON_GetObjectItemCaseSensitive(node->json, key))
		return true;
	return config_get_bool(node, key, true, out, error);
}

/*
 * The load balancer's defaults are sd_init()'s from 3.16 on (kernel/sched/
 * topology.c): busy_factor 32, intervals of the domain's CPU count up to twice
 * that in ms, imbalance_pct 110 between SMT siblings, 117 within the LLC, 125
 * above it; cache_nice_tries 0, 1, 2.  Presets of other eras set theirs.
 */
static void policy_sched_defaults(struct sched_params *sched)
{
	/* CFS defaults (kernel/sched/fair.c, before the log2(cpus) scaling). */
	*sched = (struct sched_params){
	    .latency_ns = 6000000,
	    .min_granularity_ns = 750000,
	    .wakeup_granularity_ns = 1000000,
	    .load_balance = true,
	    .migration_cost_ns = 500000,
	    .busy_factor = 32,
	    .imbalance_pct = {110, 117, 125},
	    .cache_nice_tries = {0, 1, 2},
	};
}

static bool policy_read_balance(const struct config_node *s, struct sched_params *sched,
				GError **error)
{
	static const char *const level_suffix[NR_SCHED_LEVELS] = {"smt", "llc", "top"};
	const uint64_t second = 1000000000;
	if (!(config_get_u64(s, "migration_cost_ns", false, 0, second, &sched->migration_cost_ns,
			     error) &&
	      config_get_u64(s, "busy_factor", false, 1, 1024, &sched->busy_factor, error) &&
	      config_get_u64(s, "min_interval_ms", false, 1, 10000, &sched->min_interval_ms,
			     error) &&
	      config_get_u64(s, "max_interval_ms", false, 1, 10000, &sched->max_interval_ms,
			     error)))
		return false;
	for (unsigned l = 0; l < NR_SCHED_LEVELS; l++) {
		char *pct = g_strdup_printf("imbalance_pct_%s", level_suffix[l]);
		char *tries = g_strdup_printf("cache_nice_tries_%s", level_suffix[l]);
		uint64_t *imbalance = &sched->imbalance_pct[l], *nice = &sched->cache_nice_tries[l];
		bool ok = config_get_u64(s, pct, false, 100, 1000, imbalance, error) &&
			  config_get_u64(s, tries, false, 0, 100, nice, error);
		g_free(pct);
		g_free(tries);
		if (!ok)
			return false;
	}
	if (sched->max_interval_ms && sched->min_interval_ms > sched->max_interval_ms) {
		struct config_node child = config_child(s, "max_interval_ms");
		config_set_error(error, &child,
				 "expected at least min_interval_ms (%" G_GUINT64_FORMAT ")",
				 sched->min_interval_ms);
		return false;
	}
	return true;
}

static bool policy_read_sched(const struct config_node *node, struct sched_params *sched,
			      GError **error)
{
	policy_sched_defaults(sched);
	if (!cJSON_GetObjectItemCaseSensitive(node->json, "sched"))
		return true;
	struct config_node s = config_child(node, "sched");
	const uint64_t second = 1000000000;
	return config_check_keys(&s, sched_keys, error) &&
	       config_get_u64(&s, "latency_ns", false, 100000, second, &sched->latency_ns, error) &&
	       config_get_u64(&s, "min_granularity_ns", false, 10000, second,
			      &sched->min_granularity_ns, error) &&
	       config_get_u64(&s, "wakeup_granularity_ns", false, 0, second,
			      &sched->wakeup_granularity_ns, error) &&
	       policy_read_bool(&s, "load_balance", true, &sched->load_balance, error) &&
	       policy_read_balance(&s, sched, error);
}

/* The frame's axes (b)-(e) and their knobs; absent keys are Linux's choices. */
static bool policy_read_frame(const struct config_node *root, struct policy *policy,
			      GError **error)
{
	int transport = 0, completion = 0, gate = 0, disturbance = 0;
	/* 1000 ns between polls: an estimate, justified in
	 * policies/barrelfish-multicast.json. */
	uint64_t latr_states = 256, tick_hz = 1000, poll_ns = 1000;
	if (!((!cJSON_GetObjectItemCaseSensitive(root->json, "flush_transport") ||
	       policy_pick(root, "flush_transport", (const void *const *)transport_ops,
			   G_N_ELEMENTS(transport_ops), &transport, error)) &&
	      config_get_enum(root, "flush_completion", false, completion_names, &completion,
			      error) &&
	      config_get_enum(root, "release_gate", false, release_gate_names, &gate, error) &&
	      config_get_enum(root, "flush_disturbance", false, disturbance_names, &disturbance,
			      error) &&
	      config_get_u64(root, "latr_states", false, 1, 4096, &latr_states, error) &&
	      config_get_u64(root, "tick_hz", false, 100, 1000, &tick_hz, error) &&
	      config_get_u64(root, "multicast_poll_ns", false, 0, 1000000000, &poll_ns, error) &&
	      policy_read_bool(root, "early_ack_freed_tables", false,
			       &policy->early_ack_freed_tables, error)))
		return false;
	policy->transport = transport_ops[transport];
	policy->completion = (enum flush_completion)completion;
	policy->release_gate = (enum release_gate)gate;
	policy->disturbance = (enum flush_disturbance)disturbance;
	policy->latr_states = (unsigned)latr_states;
	policy->tick_hz = (unsigned)tick_hz;
	policy->multicast_poll_ns = policy->transport == &flush_transport_multicast ? poll_ns : 0;
	return true;
}

/* The knobs of the target sets that narrow flushes; 0 under the others. */
static bool policy_read_target_knobs(const struct config_node *root, struct policy *policy,
				     GError **error)
{
	/* Estimates, each justified in its preset (policies/abis.json, numapte.json). */
	uint64_t abis_track_cycles = 200, numapte_replica_cycles = 2000;
	if (!config_get_u64(root, "abis_track_cycles", false, 0, 1000000, &abis_track_cycles,
			    error) ||
	    !config_get_u64(root, "numapte_replica_cycles", false, 0, 1000000,
			    &numapte_replica_cycles, error))
		return false;
	bool abis = policy->targets == &flush_targets_abis;
	bool numapte = policy->targets == &flush_targets_numapte;
	policy->abis_track_cycles = abis ? abis_track_cycles : 0;
	policy->numapte_replica_cycles = numapte ? numapte_replica_cycles : 0;
	return true;
}

/*
 * PTI is modelled where Linux has it and where the model has its pieces: x86
 * (the only architecture with PTI), a 4.15+ lazy TLB (the 3.x-4.13 one flushes
 * on paths pti.c does not see), with PCIDs (without them every entry
 * and exit flushes the TLB, not modelled), and with IPIs (the other
 * transports flush remote TLBs without a handler that could defer).
 */
static bool policy_check_pti(const struct config_node *root, const struct policy *policy,
			     GError **error)
{
	const char *expected = NULL;
	if (!policy->pti)
		return true;
	if (policy->arch->arch != ARCH_X86)
		expected = "false: PTI is x86's";
	else if (!policy->lazy->tracks_tlb_gen)
		expected = "false with lazy_tlb \"strict\": PTI came with 4.15, whose lazy TLB "
			   "is \"pcid\" or later";
	else if (!policy->pcid)
		expected = "false with pcid false: PTI is modelled with PCIDs only";
	else if (policy->transport != &flush_transport_ipi)
		expected = "false with a flush_transport other than \"ipi\": PTI is modelled "
			   "with IPIs only";
	if (!expected)
		return true;
	struct config_node node = config_child(root, "pti");
	config_set_error(error, &node, "expected %s", expected);
	return false;
}

static const char *arch_name(enum topology_arch arch)
{
	static const char *const names[] = {[ARCH_X86] = "x86", [ARCH_ARM64] = "arm64",
					    [ARCH_RISCV] = "riscv"};
	return names[arch];
}

/* Transports that need the machine's hardware, and how a machine says so. */
static bool has_rar(const struct topology *t)
{
	return t->rar_payloads > 0;
}

static bool has_coherent_tlbs(const struct topology *t)
{
	return t->coherent_tlbs;
}

static bool has_tlb_directory(const struct topology *t)
{
	return t->tlb_directory_entries > 0;
}

static const struct {
	const struct flush_transport_ops *transport;
	bool (*has)(const struct topology *t);
	const char *relies, *lacks, *fix;
} hardware_needs[] = {
    {&flush_transport_rar, has_rar, "sends its flushes by Intel RAR",
     "flush_hw.rar_payloads is 0",
     "pick a machine with RAR, or set one (--set topology.flush_hw.rar_payloads=64)"},
    {&flush_transport_coherence, has_coherent_tlbs, "relies on TLBs kept coherent by hardware",
     "flush_hw.coherent_tlbs is false",
     "pick a machine with them, or set it (--set topology.flush_hw.coherent_tlbs=true)"},
    {&flush_transport_directory, has_tlb_directory,
     "sends its flushes through a shared TLB directory (DiDi)",
     "flush_hw.tlb_directory_entries is 0",
     "pick a machine with one (skylake-sp-2s-48-didi), or set one "
     "(--set topology.flush_hw.tlb_directory_entries=8192)"},
};

bool policy_check_topology(const struct policy *policy, const struct topology *topology,
			   GError **error)
{
	if (policy->arch->arch != topology->arch) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "policy %s is for %s, but topology %s is %s: pick a %s policy "
			    "(tlbsim --list-policies)",
			    policy->name, arch_name(policy->arch->arch), topology->name,
			    arch_name(topology->arch), arch_name(topology->arch));
		return false;
	}
	if (policy->pti && topology->hw_asids == 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "policy %s runs PTI with a user PCID beside each mm's, but topology "
			    "%s has no PCIDs (hw_asids is 0): pick a machine with them",
			    policy->name, topology->name);
		return false;
	}
	for (unsigned i = 0; i < G_N_ELEMENTS(hardware_needs); i++) {
		if (policy->transport != hardware_needs[i].transport ||
		    hardware_needs[i].has(topology))
			continue;
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "policy %s %s, which topology %s does not have (%s): %s", policy->name,
			    hardware_needs[i].relies, topology->name, hardware_needs[i].lacks,
			    hardware_needs[i].fix);
		return false;
	}
	return true;
}

struct policy *policy_from_json(const cJSON *json, const char *file, GError **error)
{
	struct config_node root = config_root(json, file);
	struct policy *policy = g_new0(struct policy, 1);
	uint64_t ceiling = 33, riscv_threshold = 64, max_tlbi = 512;
	int munmap_range = MUNMAP_FLUSH_GATHERED, huge_range = 0, reclaim = 0, nested = 0;
	int range = 0, targets = 0, lazy = 0, arch = 0, pti_flush = PTI_USER_FLUSH_INVPCID;

	if (!config_check_keys(&root, policy_keys, error) ||
	    !config_get_string(&root, "name", true, &policy->name, error) ||
	    !config_get_string(&root, "description", false, &policy->description, error) ||
	    !policy_pick(&root, "range_flush", (const void *const *)range_ops,
			 G_N_ELEMENTS(range_ops), &range, error) ||
	    !policy_read_shift(&root, policy, error) ||
	    !config_get_u64(&root, "single_page_flush_ceiling", false, 0, 1u << 20, &ceiling,
			    error) ||
	    !config_get_enum(&root, "munmap_flush_range", true, munmap_range_names, &munmap_range,
			     error) ||
	    !policy_pick(&root, "flush_targets", (const void *const *)targets_ops,
			 G_N_ELEMENTS(targets_ops), &targets, error) ||
	    !policy_read_sched(&root, &policy->sched, error) ||
	    !policy_pick(&root, "arch", (const void *const *)arch_ops, G_N_ELEMENTS(arch_ops),
			 &arch, error) ||
	    !policy_pick(&root, "lazy_tlb", (const void *const *)lazy_ops, G_N_ELEMENTS(lazy_ops),
			 &lazy, error) ||
	    !config_get_enum(&root, "huge_page_range", true, huge_range_names, &huge_range,
			     error) ||
	    !config_get_enum(&root, "reclaim_flush", true, reclaim_names, &reclaim, error) ||
	    !config_get_enum(&root, "nested_flush", false, nested_flush_names, &nested, error) ||
	    !config_get_bool(&root, "pcid", true, &policy->pcid, error) ||
	    !policy_read_bool(&root, "pti", false, &policy->pti, error) ||
	    !config_get_enum(&root, "pti_user_flush", false, pti_user_flush_names, &pti_flush,
			     error) ||
	    !policy_read_bool(&root, "lazy_table_free_ipi", true, &policy->lazy_table_free_ipi,
			      error) ||
	    !policy_read_bool(&root, "concurrent_local_flush", false,
			      &policy->concurrent_local_flush, error) ||
	    !policy_read_bool(&root, "invlpgb", false, &policy->invlpgb, error) ||
	    !policy_read_bool(&root, "lru_add_drain_on_free", true,
			      &policy->lru_add_drain_on_free, error) ||
	    !policy_read_bool(&root, "per_vma_lock", false, &policy->per_vma_lock, error) ||
	    !policy_read_bool(&root, "munmap_downgrade", false, &policy->munmap_downgrade,
			      error) ||
	    !policy_read_bool(&root, "flush_batched_pending", true,
			      &policy->flush_batched_pending, error) ||
	    !config_get_u64(&root, "riscv_flush_all_threshold", false, 0, 1u << 20,
			    &riscv_threshold, error) ||
	    !config_get_u64(&root, "arm64_max_tlbi_ops", false, 1, 1u << 20, &max_tlbi, error) ||
	    !policy_read_frame(&root, policy, error))
		goto out_free_policy;
	policy->range = range_ops[range];
	policy->targets = targets_ops[targets];
	if (!policy_read_target_knobs(&root, policy, error))
		goto out_free_policy;
	policy->arch = arch_ops[arch];
	policy->lazy = lazy_ops[lazy];
	policy->huge_page_range = (enum huge_page_range)huge_range;
	policy->reclaim_flush = (enum reclaim_flush)reclaim;
	policy->nested_flush = (enum nested_flush)nested;
	policy->riscv_flush_all_threshold = (unsigned)riscv_threshold;
	policy->arm64_max_tlbi_ops = (unsigned)max_tlbi;
	policy->pti_user_flush = (enum pti_user_flush)pti_flush;
	if (policy->lazy->arch != policy->arch->arch) {
		struct config_node node = config_child(&root, "lazy_tlb");
		config_set_error(error, &node, "lazy_tlb \"%s\" is for %s, but arch is \"%s\"",
				 policy->lazy->name, arch_name(policy->lazy->arch),
				 policy->arch->name);
		goto out_free_policy;
	}
	if (policy->targets->reach && !policy->arch->flush_range_local) {
		struct config_node node = config_child(&root, "flush_targets");
		config_set_error(error, &node, "flush_targets \"%s\" narrows flushes to the local "
				 "TLB, which only arch \"x86\" models; arch is \"%s\"",
				 policy->targets->name, policy->arch->name);
		goto out_free_policy;
	}
	if (!policy_check_applies(&root, policy, error) ||
	    !policy_check_frame(&root, policy, error) || !policy_check_pti(&root, policy, error))
		goto out_free_policy;
	policy->single_page_flush_ceiling = (unsigned)ceiling;
	policy->munmap_flush_range = (enum munmap_flush_range)munmap_range;
	if (!policy->description)
		policy->description = g_strdup("");
	return policy;

out_free_policy:
	policy_free(policy);
	return NULL;
}

void policy_free(struct policy *policy)
{
	if (!policy)
		return;
	g_free(policy->name);
	g_free(policy->description);
	g_free(policy);
}
