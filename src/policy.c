/*
 * Policy files: which kernel era's flush mechanisms to use, and their knobs.
 * A preset is a JSON file in policies/; every mechanism is named by the ops
 * table that implements it, so adding an era is a data change.
 */
#include <string.h>
#include "tlbsim/config.h"
#include "tlbsim/error.h"
#include "tlbsim/policy.h"

static const struct flush_range_ops *const range_ops[] = {
	&flush_range_tlb_flushall_shift,
	&flush_range_single_page_ceiling,
	NULL,
};

static const struct flush_targets_ops *const targets_ops[] = {
	&flush_targets_mm_cpumask,
	&flush_targets_smt_dedup,
	NULL,
};

static const char *const munmap_range_names[] = {"vma", "gathered", NULL};

static const char *const policy_keys[] = {
	"name",	     "description",	  "comment",	"range_flush", "tlb_flushall_shift",
	"single_page_flush_ceiling", "munmap_flush_range", "flush_targets", "sched",	NULL,
};

static const char *const sched_keys[] = {"latency_ns", "min_granularity_ns",
					 "wakeup_granularity_ns", "comment", NULL};

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

static bool policy_read_sched(const struct config_node *node, struct sched_params *sched,
			      GError **error)
{
	/* CFS defaults (kernel/sched/fair.c, before the log2(cpus) scaling). */
	sched->latency_ns = 6000000;
	sched->min_granularity_ns = 750000;
	sched->wakeup_granularity_ns = 1000000;
	if (!cJSON_GetObjectItemCaseSensitive(node->json, "sched"))
		return true;
	struct config_node s = config_child(node, "sched");
	const uint64_t second = 1000000000;
	return config_check_keys(&s, sched_keys, error) &&
	       config_get_u64(&s, "latency_ns", false, 100000, second, &sched->latency_ns, error) &&
	       config_get_u64(&s, "min_granularity_ns", false, 10000, second,
			      &sched->min_granularity_ns, error) &&
	       config_get_u64(&s, "wakeup_granularity_ns", false, 0, second,
			      &sched->wakeup_granularity_ns, error);
}

struct policy *policy_from_json(const cJSON *json, const char *file, GError **error)
{
	struct config_node root = config_root(json, file);
	struct policy *policy = g_new0(struct policy, 1);
	uint64_t ceiling = 33;
	int munmap_range = MUNMAP_FLUSH_GATHERED;
	int range = 0, targets = 0;

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
	    !policy_read_sched(&root, &policy->sched, error))
		goto out_free_policy;
	policy->range = range_ops[range];
	policy->targets = targets_ops[targets];
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

int policy_flushall_shift(const struct policy *policy, int cpu_model_shift)
{
	if (policy->tlb_flushall_shift == POLICY_SHIFT_FROM_CPU)
		return cpu_model_shift;
	return policy->tlb_flushall_shift;
}
