/*
 * Tests of src/kernel/policy.c: every bundled preset loads and picks the mechanisms
 * its name promises, mechanism names and knobs are checked with the JSON path
 * in the message, the sched block has the CFS defaults, and
 * policy_flushall_shift() picks the policy's or the CPU's shift.
 * Messages are compared whole.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/kernel/policy.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define POLICIES TLBSIM_SOURCE_DIR "/policies"
#define CUSTOM TLBSIM_TEST_DATA "/pol-custom.json"

/* The three required keys, for policies written inline. */
#define REQUIRED                                                                                   \
	"\"name\": \"t\", \"range_flush\": \"single_page_flush_ceiling\", "                        \
	"\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false"

/* ---- Helpers ---------------------------------------------------------------- */

static struct policy *load_text(const char *text, GError **err)
{
	cJSON *json = config_parse_string(text, "t.json", err);
	cr_assert_not_null(json, "not JSON: %s", *err != NULL ? (*err)->message : "?");
	struct policy *p = policy_from_json(json, "t.json", err);
	cJSON_Delete(json);
	return p;
}

static struct policy *load_ok(const char *text)
{
	GError *err = NULL;
	struct policy *p = load_text(text, &err);
	cr_assert_not_null(p, "%s", err != NULL ? err->message : "?");
	cr_assert_null(err);
	return p;
}

static struct policy *load_file(const char *path)
{
	GError *err = NULL;
	cJSON *json = config_load_file(path, NULL, &err);
	cr_assert_not_null(json, "%s", err != NULL ? err->message : "?");
	struct policy *p = policy_from_json(json, path, &err);
	cJSON_Delete(json);
	cr_assert_not_null(p, "%s", err != NULL ? err->message : "?");
	return p;
}

/* Loading @text fails with TLBSIM_ERROR_INVALID and exactly @message. */
static void expect_error(const char *text, const char *message)
{
	GError *err = NULL;
	struct policy *p = load_text(text, &err);
	cr_assert_null(p, "loaded, expected: %s", message);
	cr_assert_not_null(err, "no error, expected: %s", message);
	cr_expect_eq(err->domain, TLBSIM_ERROR);
	cr_expect_eq(err->code, TLBSIM_ERROR_INVALID, "code %d: %s", err->code, err->message);
	cr_expect_str_eq(err->message, message);
	g_error_free(err);
}

/* A policy with the required keys and @extra (members, without braces); with
 * the 3.x rule when @extra sets its shift, which no other rule reads. */
static char *with(const char *extra)
{
	char *text = g_strdup_printf("{" REQUIRED "%s%s}", *extra ? ", " : "", extra);
	if (strstr(extra, "\"tlb_flushall_shift\"")) {
		char **parts = g_strsplit(text, "\"range_flush\": \"single_page_flush_ceiling\"", 2);
		g_free(text);
		text = g_strjoinv("\"range_flush\": \"tlb_flushall_shift\"", parts);
		g_strfreev(parts);
	}
	return text;
}

static struct policy *with_ok(const char *extra)
{
	char *text = with(extra);
	struct policy *p = load_ok(text);
	g_free(text);
	return p;
}

static void expect_with_error(const char *extra, const char *message)
{
	char *text = with(extra);
	expect_error(text, message);
	g_free(text);
}

/* ---- Bundled presets -------------------------------------------------------- */

Test(policy_bundled, every_file_loads_under_its_own_name)
{
	GError *err = NULL;
	GDir *dir = g_dir_open(POLICIES, 0, &err);
	cr_assert_not_null(dir, "%s", err != NULL ? err->message : "?");
	unsigned loaded = 0;
	const char *entry;
	while ((entry = g_dir_read_name(dir)) != NULL) {
		if (!g_str_has_suffix(entry, ".json"))
			continue;
		char *path = g_build_filename(POLICIES, entry, NULL);
		char *name = g_strndup(entry, strlen(entry) - strlen(".json"));
		struct policy *p = load_file(path);
		cr_expect_str_eq(p->name, name, "%s", path);
		cr_expect_not_null(p->range, "%s", path);
		cr_expect_not_null(p->targets, "%s", path);
		cr_expect_gt(strlen(p->description), 0, "%s has a description", path);
		policy_free(p);
		g_free(name);
		g_free(path);
		loaded++;
	}
	g_dir_close(dir);
	cr_expect_geq(loaded, 3);
}

Test(policy_bundled, linux_3_11)
{
	struct policy *p = load_file(POLICIES "/linux-3.11.json");
	cr_expect_eq(p->range, &flush_range_tlb_flushall_shift);
	cr_expect_eq(p->tlb_flushall_shift, POLICY_SHIFT_FROM_CPU);
	cr_expect_eq(p->munmap_flush_range, MUNMAP_FLUSH_VMA);
	cr_expect_eq(p->targets, &flush_targets_mm_cpumask);
	cr_expect_eq(p->single_page_flush_ceiling, 33, "the default");
	policy_free(p);
}

Test(policy_bundled, linux_4_5)
{
	struct policy *p = load_file(POLICIES "/linux-4.5.json");
	cr_expect_str_eq(p->name, "linux-4.5");
	cr_expect_eq(p->range, &flush_range_single_page_ceiling);
	cr_expect_eq(p->single_page_flush_ceiling, 33);
	cr_expect_eq(p->munmap_flush_range, MUNMAP_FLUSH_GATHERED);
	cr_expect_eq(p->targets, &flush_targets_mm_cpumask);
	cr_expect_eq(p->sched.latency_ns, 6000000);
	policy_free(p);
}

/* 6.15 took Rik van Riel's LRU fix along with INVLPGB; 6.14 drained on free. */
Test(policy_bundled, lru_drain_on_free_ends_with_6_15)
{
	struct policy *p = load_file(POLICIES "/linux-6.14.json");
	cr_expect(p->lru_add_drain_on_free);
	cr_expect_not(p->invlpgb);
	policy_free(p);
	p = load_file(POLICIES "/linux-6.15.json");
	cr_expect_not(p->lru_add_drain_on_free);
	cr_expect(p->invlpgb);
	policy_free(p);
}

Test(policy_bundled, linux_4_5_smt_dedup)
{
	struct policy *p = load_file(POLICIES "/linux-4.5-smt-dedup.json");
	cr_expect_eq(p->range, &flush_range_single_page_ceiling);
	cr_expect_eq(p->munmap_flush_range, MUNMAP_FLUSH_GATHERED);
	cr_expect_eq(p->targets, &flush_targets_smt_dedup);
	policy_free(p);
}

Test(policy_bundled, ops_tables_are_named)
{
	cr_expect_str_eq(flush_range_tlb_flushall_shift.name, "tlb_flushall_shift");
	cr_expect_str_eq(flush_range_single_page_ceiling.name, "single_page_flush_ceiling");
	cr_expect_str_eq(flush_targets_mm_cpumask.name, "mm_cpumask");
	cr_expect_str_eq(flush_targets_smt_dedup.name, "smt_dedup");
	cr_expect_not_null(flush_targets_smt_dedup.imitates);
}

Test(policy_bundled, custom_fixture_sets_every_knob)
{
	struct policy *p = load_file(CUSTOM);
	cr_expect_str_eq(p->name, "pol-custom");
	cr_expect_eq(p->range, &flush_range_tlb_flushall_shift);
	cr_expect_eq(p->tlb_flushall_shift, 2, "a number with its source");
	cr_expect_eq(p->single_page_flush_ceiling, 33, "the 3.x rule does not read it");
	cr_expect_eq(p->munmap_flush_range, MUNMAP_FLUSH_VMA);
	cr_expect_eq(p->targets, &flush_targets_smt_dedup);
	cr_expect_eq(p->sched.latency_ns, 24000000);
	cr_expect_eq(p->sched.min_granularity_ns, 3000000);
	cr_expect_eq(p->sched.wakeup_granularity_ns, 0);
	policy_free(p);
}

/* ---- Mechanism names ---------------------------------------------------------- */

Test(policy_names, minimal_policy_defaults)
{
	struct policy *p = with_ok("");
	cr_expect_str_eq(p->name, "t");
	cr_expect_str_eq(p->description, "", "description defaults to empty");
	cr_expect_eq(p->range, &flush_range_single_page_ceiling);
	cr_expect_eq(p->single_page_flush_ceiling, 33);
	cr_expect_eq(p->tlb_flushall_shift, POLICY_SHIFT_FROM_CPU);
	cr_expect_eq(p->munmap_flush_range, MUNMAP_FLUSH_GATHERED);
	cr_expect_eq(p->targets, &flush_targets_mm_cpumask);
	policy_free(p);
	policy_free(NULL);
}

Test(policy_names, range_flush)
{
	expect_error("{\"name\": \"t\", \"range_flush\": \"single_page_ceiling\", "
		     "\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $.range_flush: expected one of \"tlb_flushall_shift\", "
		     "\"single_page_flush_ceiling\", got \"single_page_ceiling\" (did you mean "
		     "\"single_page_flush_ceiling\"?)");
	expect_error("{\"name\": \"t\", \"range_flush\": 1, \"munmap_flush_range\": \"gathered\", "
		     "\"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $.range_flush: expected one of \"tlb_flushall_shift\", "
		     "\"single_page_flush_ceiling\", got 1");
	expect_error("{\"name\": \"t\", \"munmap_flush_range\": \"gathered\", "
		     "\"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $: missing required key \"range_flush\"");
}

Test(policy_names, flush_targets)
{
	expect_error("{\"name\": \"t\", \"range_flush\": \"tlb_flushall_shift\", "
		     "\"munmap_flush_range\": \"vma\", \"flush_targets\": \"smt-dedup\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $.flush_targets: expected one of \"mm_cpumask\", \"smt_dedup\", "
		     "\"abis\", \"numapte\", \"directory\", got \"smt-dedup\" (did you mean "
		     "\"smt_dedup\"?)");
	expect_error("{\"name\": \"t\", \"range_flush\": \"tlb_flushall_shift\", "
		     "\"munmap_flush_range\": \"vma\"}",
		     "t.json: $: missing required key \"flush_targets\"");
}

Test(policy_names, munmap_flush_range)
{
	expect_error("{\"name\": \"t\", \"range_flush\": \"tlb_flushall_shift\", "
		     "\"munmap_flush_range\": \"gather\", \"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $.munmap_flush_range: expected one of \"vma\", \"gathered\", got "
		     "\"gather\" (did you mean \"gathered\"?)");
	expect_error("{\"name\": \"t\", \"range_flush\": \"tlb_flushall_shift\", "
		     "\"flush_targets\": \"mm_cpumask\", \"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $: missing required key \"munmap_flush_range\"");
}

Test(policy_names, unknown_keys)
{
	expect_with_error("\"single_page_flush_cieling\": 3",
			  "t.json: $: unknown key \"single_page_flush_cieling\" (did you mean "
			  "\"single_page_flush_ceiling\"?)");
	expect_error("{\"range_flush\": \"tlb_flushall_shift\"}",
		     "t.json: $: missing required key \"name\"");
	expect_error("[]", "t.json: $: expected an object, got an array");
}

/* ---- tlb_flushall_shift ------------------------------------------------------ */

Test(policy_shift, cpu_or_integer)
{
	struct policy *p = with_ok("\"tlb_flushall_shift\": \"cpu\"");
	cr_expect_eq(p->tlb_flushall_shift, POLICY_SHIFT_FROM_CPU);
	policy_free(p);

	static const int allowed[] = {-1, 0, 6, 16};
	for (size_t i = 0; i < G_N_ELEMENTS(allowed); i++) {
		char *extra = g_strdup_printf("\"tlb_flushall_shift\": %d", allowed[i]);
		p = with_ok(extra);
		cr_expect_eq(p->tlb_flushall_shift, allowed[i]);
		policy_free(p);
		g_free(extra);
	}

	p = with_ok("\"tlb_flushall_shift\": {\"value\": 5, \"source\": \"a table\"}");
	cr_expect_eq(p->tlb_flushall_shift, 5);
	policy_free(p);
}

/* Knobs no mechanism of the policy reads are refused, not ignored. */
Test(policy_shift, knobs_of_other_rules_are_refused)
{
	expect_error("{" REQUIRED ", \"tlb_flushall_shift\": 2}",
		     "t.json: $.tlb_flushall_shift: only range_flush \"tlb_flushall_shift\" reads "
		     "it; this policy has range_flush \"single_page_flush_ceiling\" and arch "
		     "\"x86\"");
	expect_with_error("\"tlb_flushall_shift\": 2, \"single_page_flush_ceiling\": 8",
			  "t.json: $.single_page_flush_ceiling: only range_flush "
			  "\"single_page_flush_ceiling\" reads it; this policy has range_flush "
			  "\"tlb_flushall_shift\" and arch \"x86\"");
	expect_with_error("\"riscv_flush_all_threshold\": 4",
			  "t.json: $.riscv_flush_all_threshold: only arch \"riscv\" reads it; this "
			  "policy has range_flush \"single_page_flush_ceiling\" and arch \"x86\"");
	expect_with_error("\"arm64_max_tlbi_ops\": 4",
			  "t.json: $.arm64_max_tlbi_ops: only arch \"arm64\" reads it; this policy "
			  "has range_flush \"single_page_flush_ceiling\" and arch \"x86\"");
}

Test(policy_shift, refused_values)
{
	expect_with_error("\"tlb_flushall_shift\": 17",
			  "t.json: $.tlb_flushall_shift: expected an integer in [-1, 16], got 17");
	expect_with_error("\"tlb_flushall_shift\": -2",
			  "t.json: $.tlb_flushall_shift: expected an integer in [-1, 16], got -2");
	expect_with_error("\"tlb_flushall_shift\": 1.5",
			  "t.json: $.tlb_flushall_shift: expected an integer in [-1, 16], got 1.5");
	expect_with_error(
	    "\"tlb_flushall_shift\": \"abc\"",
	    "t.json: $.tlb_flushall_shift: expected \"cpu\" or an integer in [-1, 16]");
	expect_with_error(
	    "\"tlb_flushall_shift\": true",
	    "t.json: $.tlb_flushall_shift: expected \"cpu\" or an integer in [-1, 16]");
	expect_with_error("\"tlb_flushall_shift\": {\"value\": 99, \"source\": \"x\"}",
			  "t.json: $.tlb_flushall_shift.value: expected an integer in [-1, 16], "
			  "got 99");
}

Test(policy_shift, policy_flushall_shift)
{
	struct policy *p = with_ok("\"tlb_flushall_shift\": \"cpu\"");
	cr_expect_eq(policy_flushall_shift(p, 6), 6);
	cr_expect_eq(policy_flushall_shift(p, 2), 2);
	cr_expect_eq(policy_flushall_shift(p, -1), -1);
	policy_free(p);

	p = with_ok("\"tlb_flushall_shift\": 3");
	cr_expect_eq(policy_flushall_shift(p, 6), 3);
	policy_free(p);

	p = with_ok("\"tlb_flushall_shift\": -1");
	cr_expect_eq(policy_flushall_shift(p, 6), -1);
	policy_free(p);

	p = with_ok("");
	cr_expect_eq(policy_flushall_shift(p, 1), 1, "absent means the CPU's");
	policy_free(p);
}

/* ---- single_page_flush_ceiling -------------------------------------------- */

Test(policy_ceiling, range)
{
	struct policy *p = with_ok("\"single_page_flush_ceiling\": 0");
	cr_expect_eq(p->single_page_flush_ceiling, 0);
	policy_free(p);
	p = with_ok("\"single_page_flush_ceiling\": 1048576");
	cr_expect_eq(p->single_page_flush_ceiling, 1048576);
	policy_free(p);
	expect_with_error("\"single_page_flush_ceiling\": 1048577",
			  "t.json: $.single_page_flush_ceiling: expected an integer in [0, "
			  "1048576], got 1048577");
	expect_with_error("\"single_page_flush_ceiling\": -1",
			  "t.json: $.single_page_flush_ceiling: expected an integer in [0, "
			  "1048576], got -1");
	expect_with_error("\"single_page_flush_ceiling\": \"33\"",
			  "t.json: $.single_page_flush_ceiling: expected an integer in [0, "
			  "1048576], got \"33\" (a string)");
}

/* ---- sched ----------------------------------------------------------------------- */

Test(policy_sched, cfs_defaults)
{
	struct policy *p = with_ok("");
	cr_expect_eq(p->sched.latency_ns, 6000000);
	cr_expect_eq(p->sched.min_granularity_ns, 750000);
	cr_expect_eq(p->sched.wakeup_granularity_ns, 1000000);
	policy_free(p);

	p = with_ok("\"sched\": {}");
	cr_expect_eq(p->sched.latency_ns, 6000000);
	cr_expect_eq(p->sched.min_granularity_ns, 750000);
	cr_expect_eq(p->sched.wakeup_granularity_ns, 1000000);
	policy_free(p);
}

Test(policy_sched, overrides)
{
	struct policy *p = with_ok("\"sched\": {\"latency_ns\": 12000000, \"comment\": \"x\"}");
	cr_expect_eq(p->sched.latency_ns, 12000000);
	cr_expect_eq(p->sched.min_granularity_ns, 750000, "others keep their defaults");
	cr_expect_eq(p->sched.wakeup_granularity_ns, 1000000);
	policy_free(p);

	p = with_ok("\"sched\": {\"latency_ns\": 100000, \"min_granularity_ns\": 10000, "
		    "\"wakeup_granularity_ns\": 0}");
	cr_expect_eq(p->sched.latency_ns, 100000);
	cr_expect_eq(p->sched.min_granularity_ns, 10000);
	cr_expect_eq(p->sched.wakeup_granularity_ns, 0);
	policy_free(p);

	p = with_ok("\"sched\": {\"latency_ns\": 1000000000, \"min_granularity_ns\": 1000000000, "
		    "\"wakeup_granularity_ns\": {\"value\": 1000000000, \"source\": \"1 s\"}}");
	cr_expect_eq(p->sched.latency_ns, 1000000000);
	cr_expect_eq(p->sched.wakeup_granularity_ns, 1000000000);
	policy_free(p);
}

Test(policy_sched, range_errors)
{
	expect_with_error(
	    "\"sched\": {\"latency_ns\": 99999}",
	    "t.json: $.sched.latency_ns: expected an integer in [100000, 1000000000], "
	    "got 99999");
	expect_with_error(
	    "\"sched\": {\"latency_ns\": 1000000001}",
	    "t.json: $.sched.latency_ns: expected an integer in [100000, 1000000000], "
	    "got 1000000001");
	expect_with_error("\"sched\": {\"min_granularity_ns\": 9999}",
			  "t.json: $.sched.min_granularity_ns: expected an integer in [10000, "
			  "1000000000], got 9999");
	expect_with_error("\"sched\": {\"wakeup_granularity_ns\": -1}",
			  "t.json: $.sched.wakeup_granularity_ns: expected an integer in [0, "
			  "1000000000], got -1");
	expect_with_error(
	    "\"sched\": {\"latency\": 6000000}",
	    "t.json: $.sched: unknown key \"latency\" (did you mean \"latency_ns\"?)");
	expect_with_error("\"sched\": 6000000", "t.json: $.sched: expected an object, got 6000000");
}

Test(policy_names, lazy_era_must_match_the_arch)
{
	expect_error("{\"name\": \"t\", \"range_flush\": \"single_page_flush_ceiling\", "
		     "\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"mm_cpumask\", "
		     "\"arch\": \"x86\", \"lazy_tlb\": \"riscv\", \"huge_page_range\": \"per_4k\", "
		     "\"reclaim_flush\": \"batched\", \"pcid\": false}",
		     "t.json: $.lazy_tlb: lazy_tlb \"riscv\" is for riscv, but arch is \"x86\"");
}

/* The load balancer's tunables: sd_init()'s values from 3.16 on by default. */
Test(policy_sched, balance_defaults_and_overrides)
{
	struct policy *p = with_ok("");
	cr_expect(p->sched.load_balance);
	cr_expect_eq(p->sched.migration_cost_ns, 500000);
	cr_expect_eq(p->sched.busy_factor, 32);
	cr_expect_eq(p->sched.min_interval_ms, 0, "0: the domain's CPU count");
	cr_expect_eq(p->sched.max_interval_ms, 0, "0: twice the minimum");
	cr_expect_eq(p->sched.imbalance_pct[SCHED_LEVEL_SMT], 110);
	cr_expect_eq(p->sched.imbalance_pct[SCHED_LEVEL_LLC], 117);
	cr_expect_eq(p->sched.imbalance_pct[SCHED_LEVEL_TOP], 125);
	cr_expect_eq(p->sched.cache_nice_tries[SCHED_LEVEL_SMT], 0);
	cr_expect_eq(p->sched.cache_nice_tries[SCHED_LEVEL_LLC], 1);
	cr_expect_eq(p->sched.cache_nice_tries[SCHED_LEVEL_TOP], 2);
	policy_free(p);

	p = with_ok("\"sched\": {\"load_balance\": false, \"busy_factor\": 64, "
		    "\"min_interval_ms\": 1, \"max_interval_ms\": 4, \"imbalance_pct_llc\": 125, "
		    "\"cache_nice_tries_top\": 1}");
	cr_expect(!p->sched.load_balance);
	cr_expect_eq(p->sched.busy_factor, 64);
	cr_expect_eq(p->sched.min_interval_ms, 1);
	cr_expect_eq(p->sched.max_interval_ms, 4);
	cr_expect_eq(p->sched.imbalance_pct[SCHED_LEVEL_LLC], 125);
	cr_expect_eq(p->sched.imbalance_pct[SCHED_LEVEL_SMT], 110, "others keep their defaults");
	cr_expect_eq(p->sched.cache_nice_tries[SCHED_LEVEL_TOP], 1);
	policy_free(p);
}

Test(policy_sched, balance_errors)
{
	expect_with_error("\"sched\": {\"load_balance\": 1}",
			  "t.json: $.sched.load_balance: expected true or false, got 1");
	expect_with_error("\"sched\": {\"imbalance_pct_llc\": 99}",
			  "t.json: $.sched.imbalance_pct_llc: expected an integer in [100, 1000], "
			  "got 99");
	expect_with_error("\"sched\": {\"min_interval_ms\": 8, \"max_interval_ms\": 4}",
			  "t.json: $.sched.max_interval_ms: expected at least min_interval_ms (8)");
	expect_with_error(
	    "\"sched\": {\"busy_factr\": 16}",
	    "t.json: $.sched: unknown key \"busy_factr\" (did you mean \"busy_factor\"?)");
}

/* ---- The shootdown frame's axes ---------------------------------------------- */

Test(policy_frame, linux_choices_are_the_defaults)
{
	struct policy *p = with_ok("");
	cr_expect_eq(p->transport, &flush_transport_ipi);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	cr_expect_eq(p->release_gate, RELEASE_AFTER_COMPLETION);
	cr_expect_eq(p->disturbance, DISTURBANCE_IRQ_HANDLER);
	policy_free(p);
	p = with_ok("\"flush_completion\": \"none\"");
	cr_expect_eq(p->completion, FLUSH_COMPLETION_NONE);
	policy_free(p);
}

Test(policy_frame, latr_presets)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/latr.json");
	cr_expect_eq(p->transport, &flush_transport_latr);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_NONE);
	cr_expect_eq(p->release_gate, RELEASE_LAZY_EPOCH);
	cr_expect_eq(p->disturbance, DISTURBANCE_TICK_SWEEP);
	cr_expect_eq(p->latr_states, 64);
	cr_expect_eq(p->tick_hz, 1000);
	policy_free(p);
	p = load_file(TLBSIM_SOURCE_DIR "/policies/latr-released.json");
	cr_expect_eq(p->release_gate, RELEASE_AFTER_COMPLETION);
	cr_expect_eq(p->latr_states, 256);
	policy_free(p);
}

#define LATR_AXES                                                                              \
	"\"flush_transport\": \"latr\", \"flush_completion\": \"none\", "                     \
	"\"flush_disturbance\": \"tick_sweep\""

Test(policy_frame, axes_must_fit_together)
{
	expect_with_error("\"flush_transport\": \"lat\"",
			  "t.json: $.flush_transport: expected one of \"ipi\", \"latr\", \"rar\", "
			  "\"coherence\", \"multicast\", \"directory\", got \"lat\" (did you "
			  "mean \"latr\"?)");
	expect_with_error("\"flush_transport\": \"latr\"",
			  "t.json: $.flush_disturbance: expected \"tick_sweep\" with "
			  "flush_transport \"latr\"");
	expect_with_error("\"flush_transport\": \"latr\", \"flush_disturbance\": \"tick_sweep\"",
			  "t.json: $.flush_completion: expected \"none\" with flush_transport "
			  "\"latr\"");
	expect_with_error("\"flush_disturbance\": \"tick_sweep\"",
			  "t.json: $.flush_disturbance: expected \"irq_handler\" with "
			  "flush_transport \"ipi\"");
	expect_with_error("\"release_gate\": \"lazy_epoch\"",
			  "t.json: $.release_gate: expected \"after_completion\": only "
			  "flush_transport \"latr\" has a lazy epoch");
	expect_with_error("\"release_gate\": \"lazy\"",
			  "t.json: $.release_gate: expected one of \"after_completion\", "
			  "\"lazy_epoch\", got \"lazy\" (did you mean \"lazy_epoch\"?)");
	struct policy *p = with_ok(LATR_AXES ", \"release_gate\": \"lazy_epoch\"");
	cr_expect_eq(p->latr_states, 256, "the released code's LAZY_TLB_NUM_ENTRIES");
	policy_free(p);
}

Test(policy_frame, knobs_of_other_axes_are_refused)
{
	expect_with_error("\"latr_states\": 8",
			  "t.json: $.latr_states: only flush_transport \"latr\" reads it; this "
			  "policy has flush_transport \"ipi\"");
	expect_with_error("\"tick_hz\": 250",
			  "t.json: $.tick_hz: only flush_disturbance \"tick_sweep\" reads it; this "
			  "policy has flush_disturbance \"irq_handler\"");
	expect_with_error(LATR_AXES ", \"latr_states\": 0",
			  "t.json: $.latr_states: expected an integer in [1, 4096], got 0");
}

Test(policy_frame, early_ack)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/early-ack.json");
	cr_expect_eq(p->completion, FLUSH_COMPLETION_HANDLER_ENTRY);
	cr_expect_eq(p->transport, &flush_transport_ipi);
	cr_expect(p->concurrent_local_flush);
	cr_expect_not(p->early_ack_freed_tables, "the RFC's rule by default");
	policy_free(p);
	p = with_ok("\"flush_completion\": \"handler_entry\", \"early_ack_freed_tables\": true");
	cr_expect(p->early_ack_freed_tables);
	policy_free(p);
	expect_with_error("\"early_ack_freed_tables\": true",
			  "t.json: $.early_ack_freed_tables: only flush_completion "
			  "\"handler_entry\" reads it; this policy has flush_completion "
			  "\"remote_flush_done\"");
	expect_with_error("\"flush_transport\": \"latr\", \"flush_completion\": \"handler_entry\", "
			  "\"flush_disturbance\": \"tick_sweep\"",
			  "t.json: $.flush_completion: expected \"none\" with flush_transport "
			  "\"latr\"");
}

Test(policy_frame, rar)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/intel-rar.json");
	cr_expect_eq(p->transport, &flush_transport_rar);
	cr_expect_eq(p->disturbance, DISTURBANCE_MICROCODE);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	cr_expect_not(p->invlpgb, "an Intel machine's kernel");
	policy_free(p);
	expect_with_error("\"flush_transport\": \"rar\"",
			  "t.json: $.flush_disturbance: expected \"microcode\" with "
			  "flush_transport \"rar\"");
	expect_with_error("\"flush_transport\": \"rar\", \"flush_disturbance\": \"microcode\", "
			  "\"flush_completion\": \"none\"",
			  "t.json: $.flush_completion: expected \"remote_flush_done\" with "
			  "flush_transport \"rar\" (the targets' status bytes)");
}

/* ---- ABIS (flush_targets "abis") ----------------------------------------------- */

#define ABIS_BASE                                                                              \
	"{\"name\": \"t\", \"range_flush\": \"single_page_flush_ceiling\", "                      \
	"\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"abis\", "                    \
	"\"huge_page_range\": \"per_4k\", \"reclaim_flush\": \"batched\", \"pcid\": false, "

Test(policy_abis, preset_and_default_cost)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/abis.json");
	cr_expect_eq(p->targets, &flush_targets_abis);
	cr_expect_not_null(p->targets->reach);
	cr_expect_eq(p->transport, &flush_transport_ipi, "Linux's transport, waited for");
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	cr_expect_eq(p->abis_track_cycles, 200);
	cr_expect_eq(p->single_page_flush_ceiling, 33, "linux-4.5's other choices");
	policy_free(p);
	p = load_ok(ABIS_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"strict\"}");
	cr_expect_eq(p->abis_track_cycles, 200, "the estimate is the default");
	policy_free(p);
	p = load_ok(ABIS_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"strict\", "
			      "\"abis_track_cycles\": 0}");
	cr_expect_eq(p->abis_track_cycles, 0);
	policy_free(p);
	p = with_ok("");
	cr_expect_eq(p->abis_track_cycles, 0, "no tracking cost outside ABIS");
	cr_expect_null(p->targets->reach);
	policy_free(p);
}

Test(policy_abis, knob_and_names_are_checked)
{
	expect_with_error("\"abis_track_cycles\": 100",
			  "t.json: $.abis_track_cycles: only flush_targets \"abis\" reads it; "
			  "this policy has flush_targets \"mm_cpumask\"");
	expect_error(ABIS_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"strict\", "
			       "\"abis_track_cycle\": 100}",
		     "t.json: $: unknown key \"abis_track_cycle\" (did you mean "
		     "\"abis_track_cycles\"?)");
	expect_error(ABIS_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"strict\", "
			       "\"abis_track_cycles\": -1}",
		     "t.json: $.abis_track_cycles: expected an integer in [0, 1000000], got -1");
	char *typo = with("");
	char **parts = g_strsplit(typo, "\"flush_targets\": \"mm_cpumask\"", 2);
	g_free(typo);
	typo = g_strjoinv("\"flush_targets\": \"abs\"", parts);
	g_strfreev(parts);
	expect_error(typo, "t.json: $.flush_targets: expected one of \"mm_cpumask\", "
			   "\"smt_dedup\", \"abis\", \"numapte\", \"directory\", got \"abs\" "
			   "(did you mean \"abis\"?)");
	g_free(typo);
	expect_error(ABIS_BASE "\"arch\": \"arm64\", \"lazy_tlb\": \"arm64\"}",
		     "t.json: $.flush_targets: flush_targets \"abis\" narrows flushes to the "
		     "local TLB, which only arch \"x86\" models; arch is \"arm64\"");
}

/* ---- numaPTE (flush_targets "numapte") ----------------------------------------- */

#define NUMAPTE_BASE                                                                           \
	"{\"name\": \"t\", \"range_flush\": \"single_page_flush_ceiling\", "                      \
	"\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"numapte\", "                 \
	"\"huge_page_range\": \"per_stride\", \"reclaim_flush\": \"batched\", \"pcid\": true, "

Test(policy_numapte, preset_and_default_cost)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/numapte.json");
	cr_expect_eq(p->targets, &flush_targets_numapte);
	cr_expect_not_null(p->targets->reach);
	cr_expect_eq(p->transport, &flush_transport_ipi, "Linux's transport, waited for");
	cr_expect_eq(p->numapte_replica_cycles, 2000);
	cr_expect_eq(p->abis_track_cycles, 0);
	cr_expect(p->concurrent_local_flush, "linux-6.8's other choices");
	policy_free(p);
	p = load_ok(NUMAPTE_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\"}");
	cr_expect_eq(p->numapte_replica_cycles, 2000, "the estimate is the default");
	policy_free(p);
	p = load_ok(NUMAPTE_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", "
				 "\"numapte_replica_cycles\": 0}");
	cr_expect_eq(p->numapte_replica_cycles, 0);
	policy_free(p);
	p = with_ok("");
	cr_expect_eq(p->numapte_replica_cycles, 0, "no replicas to pay for outside numaPTE");
	policy_free(p);
}

Test(policy_numapte, knob_and_names_are_checked)
{
	expect_with_error("\"numapte_replica_cycles\": 100",
			  "t.json: $.numapte_replica_cycles: only flush_targets \"numapte\" reads "
			  "it; this policy has flush_targets \"mm_cpumask\"");
	expect_error(NUMAPTE_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", "
				  "\"numapte_replica_cycle\": 100}",
		     "t.json: $: unknown key \"numapte_replica_cycle\" (did you mean "
		     "\"numapte_replica_cycles\"?)");
	expect_error(NUMAPTE_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", "
				  "\"numapte_replica_cycles\": 1000001}",
		     "t.json: $.numapte_replica_cycles: expected an integer in [0, 1000000], "
		     "got 1000001");
	char *typo = with("");
	char **parts = g_strsplit(typo, "\"flush_targets\": \"mm_cpumask\"", 2);
	g_free(typo);
	typo = g_strjoinv("\"flush_targets\": \"numa_pte\"", parts);
	g_strfreev(parts);
	expect_error(typo, "t.json: $.flush_targets: expected one of \"mm_cpumask\", "
			   "\"smt_dedup\", \"abis\", \"numapte\", \"directory\", got \"numa_pte\" "
			   "(did you mean \"numapte\"?)");
	g_free(typo);
	expect_error(NUMAPTE_BASE "\"arch\": \"arm64\", \"lazy_tlb\": \"arm64\"}",
		     "t.json: $.flush_targets: flush_targets \"numapte\" narrows flushes to the "
		     "local TLB, which only arch \"x86\" models; arch is \"arm64\"");
}

Test(policy_frame, coherence)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/unitd.json");
	cr_expect_eq(p->transport, &flush_transport_coherence);
	cr_expect_eq(p->disturbance, DISTURBANCE_NONE);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	policy_free(p);
	expect_with_error("\"flush_transport\": \"coherence\"",
			  "t.json: $.flush_disturbance: expected \"none\" with flush_transport "
			  "\"coherence\"");
	expect_with_error("\"flush_transport\": \"coherence\", \"flush_disturbance\": "
			  "\"none\", \"flush_completion\": \"handler_entry\"",
			  "t.json: $.flush_completion: expected \"remote_flush_done\" with "
			  "flush_transport \"coherence\" (the PTE stores globally performed)");
}

#define MULTICAST_AXES                                                                         \
	"\"flush_transport\": \"multicast\", \"flush_disturbance\": \"message_poll\""

Test(policy_frame, multicast)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/barrelfish-multicast.json");
	cr_expect_eq(p->transport, &flush_transport_multicast);
	cr_expect_eq(p->disturbance, DISTURBANCE_MESSAGE_POLL);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	cr_expect_eq(p->multicast_poll_ns, 1000);
	policy_free(p);
	p = with_ok(MULTICAST_AXES ", \"multicast_poll_ns\": 0");
	cr_expect_eq(p->multicast_poll_ns, 0, "spinning monitors");
	policy_free(p);
	expect_with_error("\"flush_transport\": \"multicast\"",
			  "t.json: $.flush_disturbance: expected \"message_poll\" with "
			  "flush_transport \"multicast\"");
	expect_with_error(MULTICAST_AXES ", \"flush_completion\": \"none\"",
			  "t.json: $.flush_completion: expected \"remote_flush_done\" with "
			  "flush_transport \"multicast\" (every socket's aggregated reply: a "
			  "one-phase commit)");
	expect_with_error("\"flush_disturbance\": \"message_poll\"",
			  "t.json: $.flush_disturbance: expected \"irq_handler\" with "
			  "flush_transport \"ipi\"");
	expect_with_error("\"multicast_poll_ns\": 500",
			  "t.json: $.multicast_poll_ns: only flush_transport \"multicast\" reads "
			  "it; this policy has flush_transport \"ipi\"");
	expect_with_error(MULTICAST_AXES ", \"multicast_poll_n\": 500",
			  "t.json: $: unknown key \"multicast_poll_n\" (did you mean "
			  "\"multicast_poll_ns\"?)");
}

/* PTI: the base's keys but pcid, arch and lazy_tlb, which each case sets. */
#define PTI_BASE                                                                               \
	"{\"name\": \"t\", \"range_flush\": \"single_page_flush_ceiling\", "                      \
	"\"munmap_flush_range\": \"gathered\", \"flush_targets\": \"mm_cpumask\", "              \
	"\"huge_page_range\": \"per_stride\", \"reclaim_flush\": \"batched\", "

Test(policy_pti, presets_and_defaults)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/linux-5.2-pti.json");
	cr_expect(p->pti);
	cr_expect_eq(p->pti_user_flush, PTI_USER_FLUSH_INVPCID);
	policy_free(p);
	p = load_file(TLBSIM_SOURCE_DIR "/policies/deferred-pti.json");
	cr_expect(p->pti);
	cr_expect_eq(p->pti_user_flush, PTI_USER_FLUSH_DEFERRED);
	policy_free(p);
	p = load_file(TLBSIM_SOURCE_DIR "/policies/linux-6.8.json");
	cr_expect_not(p->pti, "off unless a policy says so");
	policy_free(p);
}

Test(policy_pti, refused_where_not_modelled)
{
	expect_error(PTI_BASE "\"arch\": \"arm64\", \"lazy_tlb\": \"arm64\", \"pcid\": false, "
			      "\"pti\": true}",
		     "t.json: $.pti: expected false: PTI is x86's");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"strict\", \"pcid\": false, "
			      "\"pti\": true}",
		     "t.json: $.pti: expected false with lazy_tlb \"strict\": PTI came with 4.15, "
		     "whose lazy TLB is \"pcid\" or later");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", \"pcid\": false, "
			      "\"pti\": true}",
		     "t.json: $.pti: expected false with pcid false: PTI is modelled with PCIDs "
		     "only");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", \"pcid\": true, "
			      "\"pti\": true, \"flush_transport\": \"rar\", \"flush_disturbance\": "
			      "\"microcode\"}",
		     "t.json: $.pti: expected false with a flush_transport other than \"ipi\": "
		     "PTI is modelled with IPIs only");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", \"pcid\": true, "
			      "\"pti_user_flush\": \"deferred\"}",
		     "t.json: $.pti_user_flush: only pti true reads it; this policy has pti false");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", \"pcid\": true, "
			      "\"pti\": true, \"pti_user_flush\": \"defered\"}",
		     "t.json: $.pti_user_flush: expected one of \"invpcid\", \"deferred\", got "
		     "\"defered\" (did you mean \"deferred\"?)");
	expect_error(PTI_BASE "\"arch\": \"x86\", \"lazy_tlb\": \"lazier\", \"pcid\": true, "
			      "\"pti\": 1}",
		     "t.json: $.pti: expected true or false, got 1");
}

/* with(@extra), its flush_targets "directory" instead of "mm_cpumask". */
static void expect_directory_error(const char *extra, const char *message)
{
	char *text = with(extra);
	char **parts = g_strsplit(text, "\"flush_targets\": \"mm_cpumask\"", 2);
	g_free(text);
	text = g_strjoinv("\"flush_targets\": \"directory\"", parts);
	g_strfreev(parts);
	expect_error(text, message);
	g_free(text);
}

Test(policy_frame, directory)
{
	struct policy *p = load_file(TLBSIM_SOURCE_DIR "/policies/didi.json");
	cr_expect_eq(p->targets, &flush_targets_directory);
	cr_expect_eq(p->transport, &flush_transport_directory);
	cr_expect_eq(p->transport->local_flush_start, LOCAL_FLUSH_AT_ONCE);
	cr_expect_eq(p->disturbance, DISTURBANCE_NONE);
	cr_expect_eq(p->completion, FLUSH_COMPLETION_REMOTE_DONE);
	policy_free(p);
	expect_directory_error("\"flush_transport\": \"directory\"",
			       "t.json: $.flush_disturbance: expected \"none\" with "
			       "flush_transport \"directory\"");
	expect_with_error("\"flush_transport\": \"directory\", \"flush_disturbance\": \"none\"",
			  "t.json: $.flush_targets: expected \"directory\" with flush_transport "
			  "\"directory\" (only the TLB directory knows the sharers, and it sends "
			  "to them alone)");
	expect_directory_error("",
			       "t.json: $.flush_transport: expected \"directory\" with "
			       "flush_targets \"directory\" (only the TLB directory knows the "
			       "sharers, and it sends to them alone)");
	expect_directory_error("\"flush_transport\": \"directory\", \"flush_disturbance\": "
			       "\"none\", \"flush_completion\": \"none\"",
			       "t.json: $.flush_completion: expected \"remote_flush_done\" with "
			       "flush_transport \"directory\" (every sharer's ack)");
}
