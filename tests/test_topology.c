/*
 * Tests of src/machine/topology.c: every shipped machine (each file in topologies/)
 * loads and carries a source for each of its numbers, the Haswell descriptions
 * load with the expected values, CPU numbering and distances follow the
 * Linux/Intel order, every validation error names its JSON path, and time
 * conversions round and saturate.  Invalid inputs are made from tests/data/tiny-2cpu.json with one
 * --set style edit each (config_apply_set) or one deleted key.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define TOPOLOGIES TLBSIM_SOURCE_DIR "/topologies"
#define HASWELL TLBSIM_SOURCE_DIR "/topologies/haswell-i7.json"
#define TINY TLBSIM_TEST_DATA "/tiny-2cpu.json"
#define TWO_SOCKET TLBSIM_TEST_DATA "/tiny-2socket.json"

static cJSON *load_json(const char *path)
{
	GError *err = NULL;
	cJSON *json = config_load_file(path, NULL, &err);
	cr_assert_not_null(json, "%s", err != NULL ? err->message : "?");
	return json;
}

static struct topology *load(const char *path)
{
	GError *err = NULL;
	cJSON *json = load_json(path);
	struct topology *t = topology_from_json(json, path, &err);
	cJSON_Delete(json);
	cr_assert_not_null(t, "%s", err != NULL ? err->message : "?");
	cr_assert_null(err);
	return t;
}

/* --------------------------------------------------------------------------
 * Shipped topologies
 * ------------------------------------------------------------------------ */

Test(topology_haswell, loads_with_expected_values)
{
	struct topology *t = load(HASWELL);

	cr_expect_str_eq(t->name, "haswell-i7");
	cr_expect(strstr(t->description, "i7-4770") != NULL);
	cr_expect_eq(topology_nr_cpus(t), 8);
	cr_expect_eq(t->sockets, 1);
	cr_expect_eq(t->cores_per_socket, 4);
	cr_expect_eq(t->threads_per_core, 2);
	cr_expect_eq(t->clock_ghz, 3.4);
	cr_expect_eq(t->hw_asids, 4096);
	cr_expect_eq(t->smt_invalidation, SMT_INVALIDATE_CORE);
	cr_expect_eq(t->tlb_lld_4k, 1024);
	cr_expect_eq(t->tlb_lli_4k, 1024);
	cr_expect_eq(t->tlb_flushall_shift, 6);

	cr_assert_eq(t->nr_tlbs, 4);
	static const struct {
		const char *name;
		unsigned level, entries, ways, page_sizes;
		bool per_core;
		uint64_t hit_cycles;
	} want[] = {
	    {"l1d", 1, 64, 4, 1u << PS_4K, false, 0},
	    {"l1d_2m", 1, 32, 4, 1u << PS_2M, false, 0},
	    {"l1d_1g", 1, 4, 4, 1u << PS_1G, false, 0},
	    {"stlb", 2, 1024, 8, (1u << PS_4K) | (1u << PS_2M), true, 12},
	};
	for (unsigned i = 0; i < 4; i++) {
		const struct topology_tlb *tlb = &t->tlbs[i];
		cr_expect_str_eq(tlb->name, want[i].name);
		cr_expect_eq(tlb->level, want[i].level, "%s", want[i].name);
		cr_expect_eq(tlb->geometry.entries, want[i].entries, "%s", want[i].name);
		cr_expect_eq(tlb->geometry.ways, want[i].ways, "%s", want[i].name);
		cr_expect_eq(tlb->geometry.page_sizes, want[i].page_sizes, "%s", want[i].name);
		cr_expect_eq(tlb->per_core, want[i].per_core, "%s", want[i].name);
		cr_expect_eq(tlb->hit_cycles, want[i].hit_cycles, "%s", want[i].name);
	}

	cr_assert_eq(t->nr_caches, 3);
	static const struct {
		const char *name;
		unsigned size_kib, ways, sets;
		enum topology_cache_sharing shared_by;
		uint64_t hit_cycles;
	} want_caches[] = {
	    {"l1d", 32, 8, 64, CACHE_SHARED_BY_CORE, 4},
	    {"l2", 256, 8, 512, CACHE_SHARED_BY_CORE, 12},
	    /* 8 MiB over 4 cores: 2 MiB a core, 32768 lines in 16 ways. */
	    {"l3", 8192, 16, 2048, CACHE_SHARED_BY_SOCKET, 36},
	};
	for (unsigned i = 0; i < G_N_ELEMENTS(want_caches); i++) {
		const struct topology_cache *l = &t->caches[i];
		cr_expect_str_eq(l->name, want_caches[i].name);
		cr_expect_eq(l->size_kib, want_caches[i].size_kib, "%s", l->name);
		cr_expect_eq(l->geometry.ways, want_caches[i].ways, "%s", l->name);
		cr_expect_eq(l->geometry.sets, want_caches[i].sets, "%s", l->name);
		cr_expect_eq(l->shared_by, want_caches[i].shared_by, "%s", l->name);
		cr_expect_eq(l->hit_cycles, want_caches[i].hit_cycles, "%s", l->name);
	}
	cr_expect_eq(t->cache_line_bytes, 64);
	cr_expect_eq(t->memory_cycles, 230);
	cr_expect_eq(t->resident_cycles, 12);

	const struct topology_costs *c = &t->costs;
	cr_expect_eq(c->page_walk, 30);
	cr_expect_eq(c->invlpg, 113);
	cr_expect_eq(c->flush_all, 120);
	cr_expect_eq(c->ipi_send, 200);
	cr_expect_eq(c->ipi_latency[DIST_SELF], 0);
	cr_expect_eq(c->ipi_latency[DIST_SMT], 1200);
	cr_expect_eq(c->ipi_latency[DIST_SOCKET], 1500);
	cr_expect_eq(c->ipi_latency[DIST_REMOTE], 2500);
	cr_expect_eq(c->irq_entry, 300);
	cr_expect_eq(c->irq_exit, 300);
	cr_expect_eq(c->line_transfer[DIST_SELF], 20);
	cr_expect_eq(c->line_transfer[DIST_SMT], 40);
	cr_expect_eq(c->line_transfer[DIST_SOCKET], 100);
	cr_expect_eq(c->line_transfer[DIST_REMOTE], 300);
	cr_expect_eq(c->context_switch, 2000);
	cr_expect_eq(c->syscall, 150);
	cr_expect_eq(c->page_fault, 1500);
	cr_expect_eq(c->vma_op, 3000);
	cr_expect_eq(c->pte_op, 10);
	cr_expect_eq(c->lru_page, 40);
	topology_free(t);
}

/*
 * Counts the numbers in @json (below its root) that are not exactly
 * {"value": N, "source": "..."} with a source of more than a few characters,
 * and appends one line per problem to @report.  "comment" members are free
 * text and skipped.
 */
static unsigned count_unsourced(const cJSON *json, const char *path, GString *report)
{
	const cJSON *item;
	unsigned bad = 0;
	cJSON_ArrayForEach(item, json)
	{
		if (item->string != NULL && strcmp(item->string, "comment") == 0)
			continue;
		char *child = item->string != NULL ? g_strdup_printf("%s.%s", path, item->string)
						   : g_strdup_printf("%s[]", path);
		const char *problem = NULL;
		if (cJSON_IsNumber(item)) {
			problem = "is a plain number";
		} else if (cJSON_IsObject(item) &&
			   cJSON_GetObjectItemCaseSensitive(item, "value") != NULL) {
			const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, "value");
			const char *source =
			    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "source"));
			if (!cJSON_IsNumber(value))
				problem = "has a value that is not a number";
			else if (source == NULL || strlen(source) <= 10)
				problem = "has no source";
			else if (cJSON_GetArraySize(item) != 2)
				problem = "has members besides value and source";
		} else if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
			bad += count_unsourced(item, child, report);
		}
		if (problem != NULL) {
			g_string_append_printf(report, "\n  %s %s", child, problem);
			bad++;
		}
		g_free(child);
	}
	return bad;
}

/* Every number in @json is sourced; @file names it in the failure. */
static void check_sourced(const cJSON *json, const char *file)
{
	GString *report = g_string_new(NULL);
	cr_expect_eq(count_unsourced(json, "$", report), 0, "%s:%s", file, report->str);
	g_string_free(report, TRUE);
}

/* Does the file at @path extend another?  Such a file is merged with its base
 * in the sim layer, not here: tests/test_inputs.c checks those. */
static bool extends_another(const char *path)
{
	cJSON *json = load_json(path);
	bool extends = cJSON_GetObjectItemCaseSensitive(json, "extends") != NULL;
	cJSON_Delete(json);
	return extends;
}

/* The paths of every *.json in topologies/ but those that extend another,
 * sorted; at least one. */
static GPtrArray *shipped_topologies(void)
{
	GError *err = NULL;
	GDir *dir = g_dir_open(TOPOLOGIES, 0, &err);
	cr_assert_not_null(dir, "%s", err != NULL ? err->message : "?");
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	const char *name;
	while ((name = g_dir_read_name(dir)) != NULL) {
		char *path = g_build_filename(TOPOLOGIES, name, NULL);
		if (g_str_has_suffix(name, ".json") && !extends_another(path))
			g_ptr_array_add(paths, path);
		else
			g_free(path);
	}
	g_dir_close(dir);
	g_ptr_array_sort(paths, (GCompareFunc)g_strcmp0);
	cr_assert_gt(paths->len, 0, "no topology in %s", TOPOLOGIES);
	return paths;
}

/*
 * Each shipped machine loads, is named after its file, describes itself, and
 * gives every number a source: a machine is calibrated from cited facts or
 * says "estimate" with its reasoning.
 */
Test(topology_shipped, every_file_loads_and_every_number_has_a_source)
{
	GPtrArray *paths = shipped_topologies();
	for (unsigned i = 0; i < paths->len; i++) {
		const char *path = g_ptr_array_index(paths, i);
		char *base = g_path_get_basename(path);
		GError *err = NULL;
		cJSON *json = config_load_file(path, NULL, &err);
		cr_assert_not_null(json, "%s", err != NULL ? err->message : "?");
		struct topology *t = topology_from_json(json, path, &err);
		cr_expect_not_null(t, "%s", err != NULL ? err->message : "?");
		g_clear_error(&err);
		if (t != NULL) {
			char *want = g_strndup(base, strlen(base) - strlen(".json"));
			cr_expect_str_eq(t->name, want, "%s: name differs from the file name",
					 base);
			cr_expect(strlen(t->description) > 20, "%s: no description", base);
			g_free(want);
		}
		check_sourced(json, base);
		topology_free(t);
		cJSON_Delete(json);
		g_free(base);
	}
	g_ptr_array_unref(paths);
}

/*
 * The remote-flush costs match the mechanism: a machine pays for broadcasts
 * only if it has them (arm64, or x86 with INVLPGB) and for SBI calls only if
 * it flushes through SBI; unused costs are 0, as the files say.
 */
Test(topology_shipped, flush_costs_match_the_mechanism)
{
	GPtrArray *paths = shipped_topologies();
	for (unsigned i = 0; i < paths->len; i++) {
		const char *path = g_ptr_array_index(paths, i);
		struct topology *t = load(path);
		const struct topology_costs *c = &t->costs;
		bool broadcast =
		    t->remote_flush == REMOTE_FLUSH_BROADCAST || t->invlpgb_count_max > 0;
		bool sbi = t->remote_flush == REMOTE_FLUSH_SBI;
		cr_expect_eq(c->broadcast_issue > 0, broadcast, "%s: broadcast_issue", t->name);
		cr_expect_eq(c->broadcast_sync > 0, broadcast, "%s: broadcast_sync", t->name);
		cr_expect_eq(c->sbi_call > 0, sbi, "%s: sbi_call", t->name);
		if (t->arch != ARCH_X86)
			cr_expect_eq(t->tlb_flushall_shift, -1, "%s: an x86-only shift", t->name);
		topology_free(t);
	}
	g_ptr_array_unref(paths);
}

/* The checker itself: plain, unsourced and malformed numbers are found, comments skipped. */
Test(topology_shipped, unsourced_numbers_are_found)
{
	static const struct {
		const char *json;
		unsigned bad;
	} cases[] = {
	    {"{\"comment\": [\"1\"], \"a\": {\"value\": 1, \"source\": \"a long enough source\"}, "
	     "\"b\": [{\"c\": {\"value\": 2, \"source\": \"another long source\"}}], \"s\": \"x\", "
	     "\"t\": true}",
	     0},
	    {"{\"a\": 1}", 1},
	    {"{\"a\": {\"b\": [1, 2]}}", 2},
	    {"{\"a\": {\"value\": 1}}", 1},
	    {"{\"a\": {\"value\": 1, \"source\": \"short\"}}", 1},
	    {"{\"a\": {\"value\": \"1\", \"source\": \"a long enough source\"}}", 1},
	    {"{\"a\": {\"value\": 1, \"source\": \"a long enough source\", \"x\": 2}}", 1},
	    {"{\"a\": {\"comment\": \"c\", \"b\": {\"value\": 1, \"source\": \"\"}}}", 1},
	};
	for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
		cJSON *json = cJSON_Parse(cases[i].json);
		cr_assert_not_null(json, "case %u", i);
		GString *report = g_string_new(NULL);
		cr_expect_eq(count_unsourced(json, "$", report), cases[i].bad, "case %u:%s", i,
			     report->str);
		g_string_free(report, TRUE);
		cJSON_Delete(json);
	}
}

/* haswell-i7-smt-thread extends haswell-i7: tests/test_inputs.c checks it
 * (topology_from_json() reads merged trees; the merge is the sim layer's). */

/* --------------------------------------------------------------------------
 * Numbering and distance
 * ------------------------------------------------------------------------ */

/* Each CPU's (thread, socket, core) rebuilds it with the formula of topology.h. */
static void check_numbering(const struct topology *t)
{
	unsigned cores = t->sockets * t->cores_per_socket;
	for (unsigned cpu = 0; cpu < topology_nr_cpus(t); cpu++) {
		unsigned socket = topology_cpu_socket(t, cpu);
		unsigned core = topology_cpu_core(t, cpu);
		unsigned thread = topology_cpu_thread(t, cpu);
		cr_expect_lt(socket, t->sockets);
		cr_expect_lt(core, t->cores_per_socket);
		cr_expect_lt(thread, t->threads_per_core);
		cr_expect_eq(thread * cores + socket * t->cores_per_socket + core, cpu);
		cr_expect_eq(topology_cpu_core_id(t, cpu), socket * t->cores_per_socket + core);
		cr_expect_eq(topology_distance(t, cpu, cpu), DIST_SELF);
	}
}

Test(topology_numbering, haswell_siblings)
{
	struct topology *t = load(HASWELL);
	check_numbering(t);
	/* cpu 0 and cpu 4 are the two threads of core 0. */
	cr_expect_eq(topology_cpu_core_id(t, 0), 0);
	cr_expect_eq(topology_cpu_core_id(t, 4), 0);
	cr_expect_eq(topology_cpu_thread(t, 0), 0);
	cr_expect_eq(topology_cpu_thread(t, 4), 1);
	cr_expect_eq(topology_cpu_core(t, 7), 3);
	cr_expect_eq(topology_cpu_socket(t, 7), 0);
	cr_expect_eq(topology_distance(t, 0, 4), DIST_SMT);
	cr_expect_eq(topology_distance(t, 4, 0), DIST_SMT);
	cr_expect_eq(topology_distance(t, 3, 7), DIST_SMT);
	cr_expect_eq(topology_distance(t, 0, 1), DIST_SOCKET);
	cr_expect_eq(topology_distance(t, 0, 5), DIST_SOCKET);
	cr_expect_eq(topology_distance(t, 2, 2), DIST_SELF);
	topology_free(t);
}

Test(topology_numbering, two_sockets)
{
	struct topology *t = load(TWO_SOCKET);
	cr_assert_eq(topology_nr_cpus(t), 8);
	check_numbering(t);
	/* cpu: thread * 4 + socket * 2 + core */
	cr_expect_eq(topology_cpu_socket(t, 2), 1);
	cr_expect_eq(topology_cpu_core(t, 2), 0);
	cr_expect_eq(topology_cpu_core_id(t, 3), 3);
	cr_expect_eq(topology_cpu_socket(t, 6), 1);
	cr_expect_eq(topology_cpu_thread(t, 6), 1);
	cr_expect_eq(topology_distance(t, 0, 1), DIST_SOCKET);
	cr_expect_eq(topology_distance(t, 0, 2), DIST_REMOTE);
	cr_expect_eq(topology_distance(t, 0, 4), DIST_SMT);
	cr_expect_eq(topology_distance(t, 2, 6), DIST_SMT);
	cr_expect_eq(topology_distance(t, 1, 6), DIST_REMOTE);
	cr_expect_eq(topology_distance(t, 5, 0), DIST_SOCKET);
	cr_expect_eq(topology_distance(t, 7, 3), DIST_SMT);
	cr_expect_eq(topology_distance(t, 7, 4), DIST_REMOTE);
	/* Values from the {"value", "source"} form. */
	cr_expect_eq(t->clock_ghz, 2.5);
	cr_expect_eq(t->hw_asids, 4096);
	cr_expect_eq(t->smt_invalidation, SMT_INVALIDATE_THREAD);
	cr_expect_eq(t->tlb_flushall_shift, -1);
	cr_expect_eq(t->tlbs[1].geometry.page_sizes, (1u << PS_2M) | (1u << PS_1G));
	topology_free(t);
}

Test(topology_numbering, one_thread_per_core)
{
	struct topology *t = load(TINY);
	cr_assert_eq(topology_nr_cpus(t), 2);
	check_numbering(t);
	cr_expect_eq(topology_distance(t, 0, 1), DIST_SOCKET);
	cr_expect_eq(topology_cpu_thread(t, 1), 0);
	cr_expect_eq(topology_cpu_core(t, 1), 1);
	/* per_core with one thread per core is accepted: simply per CPU. */
	cr_expect(t->tlbs[1].per_core);
	topology_free(t);
}

Test(topology_numbering, cpu_out_of_range_aborts, .signal = SIGABRT)
{
	struct topology *t = load(TINY);
	topology_cpu_socket(t, 2);
}

/* --------------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------------ */

Test(topology_time, ns_to_cycles)
{
	struct topology *t = load(HASWELL);
	cr_expect_eq(topology_ns_to_cycles(t, 0), 0);
	cr_expect_eq(topology_ns_to_cycles(t, 1), 3);  /* 3.4 */
	cr_expect_eq(topology_ns_to_cycles(t, 3), 10); /* 10.2 */
	cr_expect_eq(topology_ns_to_cycles(t, 4), 14); /* 13.6 */
	cr_expect_eq(topology_ns_to_cycles(t, 1000), 3400);
	cr_expect_eq(topology_ns_to_cycles(t, UINT64_C(1000000000)), UINT64_C(3400000000));
	/* 2^64 / 3.4 ns and beyond saturate. */
	cr_expect_eq(topology_ns_to_cycles(t, UINT64_MAX), UINT64_MAX);
	cr_expect_eq(topology_ns_to_cycles(t, UINT64_MAX / 3), UINT64_MAX);
	cr_expect_lt(topology_ns_to_cycles(t, UINT64_MAX / 4), UINT64_MAX);
	topology_free(t);

	t = load(TWO_SOCKET); /* 2.5 GHz: halves round up */
	cr_expect_eq(topology_ns_to_cycles(t, 1), 3);
	cr_expect_eq(topology_ns_to_cycles(t, 2), 5);
	cr_expect_eq(topology_ns_to_cycles(t, 3), 8);
	topology_free(t);
}

Test(topology_time, cycles_to_ns)
{
	struct topology *t = load(HASWELL);
	cr_expect_eq(topology_cycles_to_ns(t, 0), 0.0);
	cr_expect_float_eq(topology_cycles_to_ns(t, 3400), 1000.0, 1e-9);
	cr_expect_float_eq(topology_cycles_to_ns(t, 17), 5.0, 1e-9);
	cr_expect_float_eq(topology_cycles_to_ns(t, 1), 1.0 / 3.4, 1e-12);
	/* Round trip through whole nanoseconds. */
	for (uint64_t ns = 0; ns < 2000; ns += 7) {
		double back = topology_cycles_to_ns(t, topology_ns_to_cycles(t, ns));
		cr_expect_float_eq(back, (double)ns, 0.5 / 3.4 + 1e-9, "ns %lu", (unsigned long)ns);
	}
	topology_free(t);
}

/* --------------------------------------------------------------------------
 * Validation: each error names the JSON path
 * ------------------------------------------------------------------------ */

/* topology_from_json(@json) fails with exactly "tiny.json: " @message. */
static void check_refused(cJSON *json, const char *message)
{
	GError *err = NULL;
	struct topology *t = topology_from_json(json, "tiny.json", &err);
	cr_expect_null(t, "accepted; expected: %s", message);
	topology_free(t);
	cr_assert_not_null(err, "no error; expected: %s", message);
	char *want = g_strdup_printf("tiny.json: %s", message);
	cr_expect_str_eq(err->message, want);
	cr_expect_eq(err->domain, TLBSIM_ERROR);
	cr_expect_eq(err->code, TLBSIM_ERROR_INVALID);
	g_free(want);
	g_error_free(err);
}

/* tiny-2cpu.json with --set @path=@value must be refused with @message. */
static void check_set_refused(const char *path, const char *value, const char *message)
{
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, path, value, &err), "--set %s: %s", path,
		  err != NULL ? err->message : "?");
	check_refused(json, message);
	cJSON_Delete(json);
}

/* tiny-2cpu.json with --set @path=@value must load. */
static void check_set_accepted(const char *path, const char *value)
{
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, path, value, &err));
	struct topology *t = topology_from_json(json, "tiny.json", &err);
	cr_expect_not_null(t, "--set %s=%s: %s", path, value, err != NULL ? err->message : "?");
	g_clear_error(&err);
	topology_free(t);
	cJSON_Delete(json);
}

/* tiny-2cpu.json without key @key of the object at dotted @object ("" = root). */
static void check_removed_refused(const char *object, const char *key, const char *message)
{
	cJSON *json = load_json(TINY);
	cJSON *parent = json;
	char **parts = g_strsplit(object, ".", -1);
	for (char **p = parts; *p != NULL && **p != '\0'; p++) {
		char *end;
		long index = strtol(*p, &end, 10);
		parent = *end == '\0' ? cJSON_GetArrayItem(parent, (int)index)
				      : cJSON_GetObjectItemCaseSensitive(parent, *p);
		cr_assert_not_null(parent, "%s", object);
	}
	g_strfreev(parts);
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(parent, key), "%s.%s", object, key);
	cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	check_refused(json, message);
	cJSON_Delete(json);
}

Test(topology_validate, fixture_is_valid)
{
	struct topology *t = load(TINY);
	cr_expect_eq(t->nr_tlbs, 2);
	topology_free(t);
}

Test(topology_validate, root)
{
	cJSON *json = cJSON_Parse("[1]");
	check_refused(json, "$: expected an object, got an array");
	cJSON_Delete(json);
	check_set_refused("socket", "1", "$: unknown key \"socket\" (did you mean \"sockets\"?)");
	check_set_refused(
	    "colour", "1",
	    "$: unknown key \"colour\" (expected one of: name, description, sockets, "
	    "cores_per_socket, threads_per_core, clock_ghz, hw_asids, page_walkers, "
	    "smt_invalidation, "
	    "cpuid, flush_hw, tlbs, caches, costs, comment, $schema)");
	check_set_refused("name", "\"\"", "$.name: must not be empty");
	check_set_refused("name", "3", "$.name: expected a string, got 3");
	check_set_refused("description", "[]", "$.description: expected a string, got an array");
	check_removed_refused("", "name", "$: missing required key \"name\"");
	check_removed_refused("", "description", "$: missing required key \"description\"");
}

/* A level of tiny-2cpu.json's caches (1 socket x 2 cores), as JSON. */
#define LEVEL(name, kib, ways, shared, hit)                                                    \
	"{\"name\": \"" name "\", \"size_kib\": " #kib ", \"ways\": " #ways                    \
	", \"shared_by\": \"" shared "\", \"hit_cycles\": " #hit "}"

Test(topology_validate, caches)
{
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, "caches.levels",
				   "[" LEVEL("l1d", 1, 2, "core", 2) "," LEVEL("l3", 3, 4, "socket", 20) "]",
				   &err));
	cr_assert(config_apply_set(json, "caches.memory_cycles", "100", &err));
	struct topology *t = topology_from_json(json, "tiny.json", &err);
	cr_assert_not_null(t, "%s", err ? err->message : "?");
	cr_assert_eq(t->nr_caches, 2);
	cr_expect_eq(t->caches[0].geometry.sets, 8);  /* 16 lines in 2 ways */
	/* 48 lines over 2 cores: 24 a core, 6 sets of 4. */
	cr_expect_eq(t->caches[1].geometry.sets, 6);
	cr_expect_eq(t->caches[1].shared_by, CACHE_SHARED_BY_SOCKET);
	topology_free(t);
	cJSON_Delete(json);

	check_removed_refused("", "caches", "$: missing required key \"caches\"");
	check_removed_refused("caches", "levels", "$.caches: missing required key \"levels\"");
	check_removed_refused("caches", "memory_cycles",
			      "$.caches: missing required key \"memory_cycles\"");
	check_removed_refused("caches", "resident_cycles",
			      "$.caches: missing required key \"resident_cycles\"");
	check_set_refused("caches.resident_cycles", "1",
			  "$.caches.resident_cycles: a walk's loads cannot be resident beyond "
			  "memory: 1 cycles, memory 0");
	check_set_refused("caches.line_bytes", "48",
			  "$.caches.line_bytes: expected a power of two, got 48");
	check_set_refused("caches.line_bytes", "8",
			  "$.caches.line_bytes: expected an integer in [16, 256], got 8");
	check_set_refused("caches.levles", "1",
			  "$.caches: unknown key \"levles\" (did you mean \"levels\"?)");
	check_set_refused("caches.levels", "{}",
			  "$.caches.levels: expected an array of 0 to 4 cache levels, nearest first");
	check_set_refused("caches.levels",
			  "[" LEVEL("a", 1, 1, "core", 1) "," LEVEL("b", 1, 1, "core", 1) "," LEVEL(
			      "c", 1, 1, "core", 1) "," LEVEL("d", 1, 1, "core", 1) "," LEVEL("e", 1, 1,
											      "core", 1) "]",
			  "$.caches.levels: expected an array of 0 to 4 cache levels, nearest first");
	check_set_refused("caches.levels", "[" LEVEL("l1d", 1, 32, "core", 1) "]",
			  "$.caches.levels[0].size_kib: 1 KiB of 64-byte lines shared by 1 core leave "
			  "each core less than one set of 32 ways");
	check_set_refused("caches.levels", "[" LEVEL("l3", 1, 16, "socket", 1) "]",
			  "$.caches.levels[0].size_kib: 1 KiB of 64-byte lines shared by 2 cores "
			  "leave each core less than one set of 16 ways");
	check_set_refused("caches.levels", "[" LEVEL("l1d", 1, 2, "sockets", 1) "]",
			  "$.caches.levels[0].shared_by: expected one of \"core\", \"socket\", got "
			  "\"sockets\" (did you mean \"socket\"?)");
	check_set_refused("caches.levels",
			  "[{\"name\": \"l1d\", \"size\": 1, \"ways\": 2, \"shared_by\": \"core\", "
			  "\"hit_cycles\": 1}]",
			  "$.caches.levels[0]: unknown key \"size\" (did you mean \"size_kib\"?)");
	check_set_refused("caches.levels",
			  "[" LEVEL("l1d", 1, 2, "core", 5) "," LEVEL("l1d", 4, 2, "core", 9) "]",
			  "$.caches.levels[1].name: \"l1d\" is already the name of $.caches.levels[0]");
	check_set_refused("caches.levels",
			  "[" LEVEL("l1d", 1, 2, "core", 5) "," LEVEL("l2", 4, 2, "core", 4) "]",
			  "$.caches.levels[1].hit_cycles: a level is not faster than the one before "
			  "it: 4 cycles after 5 at \"l1d\"");
	check_set_refused("caches.levels", "[" LEVEL("l1d", 1, 2, "core", 5) "]",
			  "$.caches.memory_cycles: memory (0 cycles) is not slower than the last "
			  "level, \"l1d\" (5)");
	/* 2^20 KiB of 16-byte lines in each of 2 cores: 2^27 lines, over the limit. */
	json = load_json(TINY);
	cr_assert(config_apply_set(json, "caches.line_bytes", "16", &err));
	cr_assert(config_apply_set(json, "caches.memory_cycles", "1", &err));
	cr_assert(config_apply_set(json, "caches.levels",
				   "[" LEVEL("big", 1048576, 1, "core", 0) "]", &err));
	check_refused(json, "$.caches.levels: the caches of all 2 cores hold 134217728 lines, "
			    "more than the 67108864 supported (512 MiB of host memory)");
	cJSON_Delete(json);
}

Test(topology_validate, comments)
{
	check_set_accepted("comment", "free text");
	check_set_accepted("comment", "[\"line 1\", \"line 2\"]");
	check_set_accepted("tlbs[0].comment", "x");
	check_set_accepted("cpuid.comment", "x");
	check_set_accepted("costs.comment", "x");
	check_set_accepted("costs.ipi_latency.comment", "x");
	check_set_refused("comment", "3", "$.comment: expected a string or an array of strings");
	check_set_refused("comment", "[\"a\", 1]",
			  "$.comment: expected a string or an array of strings");
	check_set_refused("tlbs[1].comment", "{}",
			  "$.tlbs[1].comment: expected a string or an array of strings");
}

Test(topology_validate, shape)
{
	check_set_refused("sockets", "0", "$.sockets: expected an integer in [1, 64], got 0");
	check_set_refused("sockets", "65", "$.sockets: expected an integer in [1, 64], got 65");
	check_set_refused("cores_per_socket", "1025",
			  "$.cores_per_socket: expected an integer in [1, 1024], got 1025");
	check_set_refused("cores_per_socket", "2.5",
			  "$.cores_per_socket: expected an integer in [1, 1024], got 2.5");
	check_set_refused("threads_per_core", "9",
			  "$.threads_per_core: expected an integer in [1, 8], got 9");
	check_set_refused("threads_per_core", "0",
			  "$.threads_per_core: expected an integer in [1, 8], got 0");
	check_removed_refused("", "threads_per_core",
			      "$: missing required key \"threads_per_core\"");
	check_set_accepted("sockets", "2");

	/* 64 * 32 * 2 = 4096 is the limit; one more core per socket is over. */
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, "sockets", "64", &err));
	cr_assert(config_apply_set(json, "cores_per_socket", "32", &err));
	cr_assert(config_apply_set(json, "threads_per_core", "2", &err));
	struct topology *t = topology_from_json(json, "tiny.json", &err);
	cr_expect_not_null(t, "%s", err != NULL ? err->message : "?");
	cr_expect_eq(topology_nr_cpus(t), 4096);
	cr_expect_eq(topology_distance(t, 0, 4095), DIST_REMOTE);
	cr_expect_eq(topology_distance(t, 0, 2048), DIST_SMT);
	topology_free(t);
	/* Within every per-structure bound, but 2^27 entries in all: refused
	 * before anything is allocated (the STLB is one per core). */
	cr_assert(config_apply_set(json, "tlbs[1].entries", "65536", &err));
	cr_assert(config_apply_set(json, "tlbs[1].ways", "16", &err));
	check_refused(json, "$.tlbs: the TLBs of all 4096 CPUs hold 134234112 entries, more than "
			    "the 33554432 supported (about 1 GiB of host memory)");
	cr_assert(config_apply_set(json, "tlbs[1].entries", "16", &err));
	cr_assert(config_apply_set(json, "tlbs[1].ways", "4", &err));
	cr_assert(config_apply_set(json, "cores_per_socket", "33", &err));
	check_refused(json, "$: sockets * cores_per_socket * threads_per_core = 64 * 33 * 2 = "
			    "4224 CPUs, more than the 4096 supported");
	cJSON_Delete(json);
}

Test(topology_validate, clock_asids_smt)
{
	check_set_refused("clock_ghz", "0.05",
			  "$.clock_ghz: expected a number in [0.1, 10], got 0.05");
	check_set_refused("clock_ghz", "10.5",
			  "$.clock_ghz: expected a number in [0.1, 10], got 10.5");
	check_set_refused("clock_ghz", "fast",
			  "$.clock_ghz: expected a number in [0.1, 10], got \"fast\" (a string)");
	check_set_refused("clock_ghz", "{\"value\": 3, \"src\": \"x\"}",
			  "$.clock_ghz: unknown key \"src\" (expected one of: value, source)");
	check_set_accepted("clock_ghz", "{\"value\": 3, \"source\": \"x\"}");
	check_set_accepted("clock_ghz", "0.1");
	check_set_accepted("clock_ghz", "10");
	check_set_refused("hw_asids", "65537",
			  "$.hw_asids: expected an integer in [0, 65536], got 65537");
	check_set_refused("hw_asids", "-1",
			  "$.hw_asids: expected an integer in [0, 65536], got -1");
	check_set_accepted("hw_asids", "65536");
	check_set_refused("page_walkers", "0",
			  "$.page_walkers: expected an integer in [1, 16], got 0");
	check_set_refused("page_walkers", "17",
			  "$.page_walkers: expected an integer in [1, 16], got 17");
	check_set_accepted("page_walkers", "16");
	check_set_refused("smt_invalidation", "cor",
			  "$.smt_invalidation: expected one of \"core\", \"thread\", got \"cor\" "
			  "(did you mean \"core\"?)");
	check_set_refused("smt_invalidation", "true",
			  "$.smt_invalidation: expected one of \"core\", \"thread\", got true (a "
			  "boolean)");
	check_set_accepted("smt_invalidation", "thread");
	check_removed_refused("", "smt_invalidation",
			      "$: missing required key \"smt_invalidation\"");
	check_removed_refused("", "clock_ghz", "$: missing required key \"clock_ghz\"");
	check_removed_refused("", "hw_asids", "$: missing required key \"hw_asids\"");
	check_removed_refused("", "page_walkers", "$: missing required key \"page_walkers\"");
}

Test(topology_validate, flush_hw)
{
	check_set_refused("flush_hw.arch", "\"arm\"",
			  "$.flush_hw.arch: expected one of \"x86\", \"arm64\", \"riscv\", got "
			  "\"arm\" (did you mean \"arm64\"?)");
	check_set_refused("flush_hw.remote", "\"broadcast\"",
			  "$.flush_hw.remote: x86 has no \"broadcast\" remote flush (x86: \"ipi\", "
			  "arm64: \"broadcast\", riscv: \"ipi\" or \"sbi\")");
	check_set_refused("flush_hw.remote", "\"smi\"",
			  "$.flush_hw.remote: expected one of \"ipi\", \"sbi\", \"broadcast\", got "
			  "\"smi\" (did you mean \"sbi\"?)");
	check_set_refused("flush_hw.invlpgb_count_max", "65537",
			  "$.flush_hw.invlpgb_count_max: expected an integer in [0, 65536], got 65537");
	check_set_accepted("flush_hw.invlpgb_count_max", "8");
	check_set_accepted("flush_hw.full_flush_only", "true");
	/* INVLPGB only on x86: an arm64 part declaring it is refused. */
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, "flush_hw.arch", "\"arm64\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.remote", "\"broadcast\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.invlpgb_count_max", "8", &err));
	check_refused(json, "$.flush_hw.invlpgb_count_max: INVLPGB is an x86 (AMD) instruction; "
			    "expected 0 on arm64");
	cJSON_Delete(json);
	/* RAR likewise. */
	check_set_refused("flush_hw.rar_payloads", "257",
			  "$.flush_hw.rar_payloads: expected an integer in [0, 256], got 257");
	check_set_accepted("flush_hw.rar_payloads", "64");
	json = load_json(TINY);
	cr_assert(config_apply_set(json, "flush_hw.arch", "\"arm64\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.remote", "\"broadcast\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.rar_payloads", "64", &err));
	check_refused(json, "$.flush_hw.rar_payloads: RAR is an x86 (Intel) facility; expected 0 "
			    "on arm64");
	cJSON_Delete(json);
	check_removed_refused("flush_hw", "rar_payloads",
			      "$.flush_hw: missing required key \"rar_payloads\"");
	check_set_accepted("flush_hw.coherent_tlbs", "true");
	check_set_refused("flush_hw.coherent_tlbs", "1",
			  "$.flush_hw.coherent_tlbs: expected true or false, got 1");
	check_removed_refused("flush_hw", "coherent_tlbs",
			      "$.flush_hw: missing required key \"coherent_tlbs\"");
	check_set_accepted("flush_hw.tlb_directory_entries", "36864");
	check_set_refused("flush_hw.tlb_directory_entries", "16777217",
			  "$.flush_hw.tlb_directory_entries: expected an integer in [0, 16777216], "
			  "got 16777217");
	check_removed_refused("flush_hw", "tlb_directory_entries",
			      "$.flush_hw: missing required key \"tlb_directory_entries\"");
	json = load_json(TINY);
	cr_assert(config_apply_set(json, "flush_hw.arch", "\"arm64\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.remote", "\"broadcast\"", &err));
	cr_assert(config_apply_set(json, "flush_hw.tlb_directory_entries", "64", &err));
	check_refused(json, "$.flush_hw.tlb_directory_entries: the TLB directory (DiDi) is "
			    "modelled on x86 only; expected 0 on arm64");
	cJSON_Delete(json);
	check_removed_refused("costs", "directory_lookup",
			      "$.costs: missing required key \"directory_lookup\"");
	check_removed_refused("costs", "lsq_drain", "$.costs: missing required key \"lsq_drain\"");
	/* PTI's costs, required everywhere (0: no INVPCID). */
	check_removed_refused("costs", "invpcid_addr",
			      "$.costs: missing required key \"invpcid_addr\"");
	check_removed_refused("costs", "cr3_switch",
			      "$.costs: missing required key \"cr3_switch\"");
	check_removed_refused("", "flush_hw", "$: missing required key \"flush_hw\"");
	check_removed_refused("flush_hw", "pwc_entries",
			      "$.flush_hw: missing required key \"pwc_entries\"");
}

Test(topology_validate, cpuid)
{
	check_set_refused("cpuid.tlb_lld_4k", "65537",
			  "$.cpuid.tlb_lld_4k: expected an integer in [0, 65536], got 65537");
	check_set_refused("cpuid.tlb_lli_4k", "-1",
			  "$.cpuid.tlb_lli_4k: expected an integer in [0, 65536], got -1");
	check_set_refused("cpuid.tlb_flushall_shift", "-2",
			  "$.cpuid.tlb_flushall_shift: expected an integer in [-1, 16], got -2");
	check_set_refused("cpuid.tlb_flushall_shift", "17",
			  "$.cpuid.tlb_flushall_shift: expected an integer in [-1, 16], got 17");
	check_set_accepted("cpuid.tlb_lld_4k", "0");
	check_set_refused("cpuid.tlb_lld", "1",
			  "$.cpuid: unknown key \"tlb_lld\" (did you mean \"tlb_lld_4k\"?)");
	check_set_refused("cpuid", "5", "$.cpuid: expected an object, got 5");
	check_removed_refused("", "cpuid", "$: missing required key \"cpuid\"");
	check_removed_refused("cpuid", "tlb_flushall_shift",
			      "$.cpuid: missing required key \"tlb_flushall_shift\"");
}

Test(topology_validate, tlb_list)
{
	check_set_refused("tlbs", "[]", "$.tlbs: expected 1 to 16 TLB structures, got 0");
	check_set_refused("tlbs", "{}", "$.tlbs: expected an array of 1 to 16 TLB structures");
	check_removed_refused("", "tlbs", "$: missing required key \"tlbs\"");

	GString *many = g_string_new("[");
	for (int i = 0; i < 17; i++)
		g_string_append_printf(
		    many,
		    "%s{\"name\": \"t%d\", \"level\": 1, \"entries\": 4, "
		    "\"ways\": 4, \"page_sizes\": [\"4K\"], \"per_core\": false, \"replacement\": \"lru\", "
		    "\"hit_cycles\": 0}",
		    i ? ", " : "", i);
	g_string_append(many, "]");
	check_set_refused("tlbs", many->str, "$.tlbs: expected 1 to 16 TLB structures, got 17");
	g_string_free(many, TRUE);

	check_set_refused("tlbs[1]", "3", "$.tlbs[1]: expected an object, got 3");
	check_set_refused("tlbs[1].name", "l1d",
			  "$.tlbs[1].name: \"l1d\" is already the name of $.tlbs[0]");
	check_set_refused("tlbs[0].page_sizes", "[\"2M\"]",
			  "$.tlbs: no level-1 structure holds 4K pages");
	check_set_refused("tlbs[0].level", "2", "$.tlbs: no level-1 structure holds 4K pages");
	/* Only level 2 holding 4K is not enough, any level 1 holding 4K is. */
	check_set_accepted("tlbs[1].level", "1");
}

Test(topology_validate, tlb_fields)
{
	check_set_refused("tlbs[1].entrees", "4",
			  "$.tlbs[1]: unknown key \"entrees\" (did you mean \"entries\"?)");
	check_set_refused("tlbs[0].level", "3",
			  "$.tlbs[0].level: expected an integer in [1, 2], got 3");
	check_set_refused("tlbs[0].level", "0",
			  "$.tlbs[0].level: expected an integer in [1, 2], got 0");
	check_set_refused("tlbs[1].entries", "0",
			  "$.tlbs[1].entries: expected an integer in [1, 65536], got 0");
	check_set_refused("tlbs[1].entries", "65537",
			  "$.tlbs[1].entries: expected an integer in [1, 65536], got 65537");
	check_set_refused("tlbs[1].ways", "0",
			  "$.tlbs[1].ways: expected an integer in [1, 16], got 0");
	check_set_refused("tlbs[1].ways", "32",
			  "$.tlbs[1].ways: expected an integer in [1, 16], got 32");
	check_set_refused("tlbs[1].ways", "3",
			  "$.tlbs[1].ways: 3 ways do not divide 16 entries into whole sets");
	check_set_accepted("tlbs[1].ways", "16"); /* fully associative */
	check_set_accepted("tlbs[1].ways", "1");  /* direct-mapped */
	check_set_accepted("tlbs[1].entries", "65536");
	check_set_refused("tlbs[1].per_core", "yes",
			  "$.tlbs[1].per_core: expected true or false, got \"yes\" (a string)");
	check_set_refused("tlbs[1].hit_cycles", "1000000001",
			  "$.tlbs[1].hit_cycles: expected an integer in [0, 1000000000], got "
			  "1000000001");
	check_set_refused("tlbs[0].name", "", "$.tlbs[0].name: must not be empty");
	check_removed_refused("tlbs.1", "ways", "$.tlbs[1]: missing required key \"ways\"");
	check_removed_refused("tlbs.1", "per_core", "$.tlbs[1]: missing required key \"per_core\"");
	check_removed_refused("tlbs.0", "hit_cycles",
			      "$.tlbs[0]: missing required key \"hit_cycles\"");
	check_removed_refused("tlbs.0", "name", "$.tlbs[0]: missing required key \"name\"");
	check_removed_refused("tlbs.0", "level", "$.tlbs[0]: missing required key \"level\"");
	check_removed_refused("tlbs.1", "replacement",
			      "$.tlbs[1]: missing required key \"replacement\"");
	check_set_refused("tlbs[1].replacement", "plru",
			  "$.tlbs[1].replacement: expected one of \"lru\", \"tree_plru\", got "
			  "\"plru\" (did you mean \"lru\"?)");
	check_set_accepted("tlbs[1].replacement", "tree_plru"); /* 4 ways */
	check_set_accepted("tlbs[0].replacement", "tree_plru"); /* 2 ways */
}

/* Tree PLRU splits a set's ways in halves at every node: a power of two, never 6. */
Test(topology_validate, tree_plru_needs_power_of_two_ways)
{
	GError *err = NULL;
	cJSON *json = load_json(TINY);
	cr_assert(config_apply_set(json, "tlbs[1].entries", "12", &err));
	cr_assert(config_apply_set(json, "tlbs[1].ways", "6", &err));
	cr_assert(config_apply_set(json, "tlbs[1].replacement", "tree_plru", &err));
	check_refused(json, "$.tlbs[1].replacement: \"tree_plru\" needs a power-of-two number of "
			    "ways up to 64, not 6 (use \"lru\")");
	cr_assert(config_apply_set(json, "tlbs[1].replacement", "lru", &err));
	struct topology *t = topology_from_json(json, "t.json", &err);
	cr_assert_not_null(t, "%s", err != NULL ? err->message : "?");
	cr_expect_eq(t->tlbs[1].geometry.replacement, TLB_REPLACE_LRU);
	topology_free(t);
	cJSON_Delete(json);
}

Test(topology_validate, page_sizes)
{
	check_set_refused("tlbs[1].page_sizes", "[]",
			  "$.tlbs[1].page_sizes: expected a non-empty array of page sizes (\"4K\", "
			  "\"2M\", \"1G\")");
	check_set_refused("tlbs[1].page_sizes", "4K",
			  "$.tlbs[1].page_sizes: expected a non-empty array of page sizes (\"4K\", "
			  "\"2M\", \"1G\")");
	check_set_refused("tlbs[1].page_sizes", "[\"4K\", \"4k\"]",
			  "$.tlbs[1].page_sizes[1]: expected one of \"4K\", \"2M\", \"1G\", got "
			  "\"4k\" (did you mean \"4K\"?)");
	check_set_refused("tlbs[1].page_sizes", "[\"4K\", \"8K\"]",
			  "$.tlbs[1].page_sizes[1]: expected one of \"4K\", \"2M\", \"1G\", got "
			  "\"8K\" (did you mean \"4K\"?)");
	check_set_refused("tlbs[1].page_sizes", "[\"4K\", \"huge\"]",
			  "$.tlbs[1].page_sizes[1]: expected one of \"4K\", \"2M\", \"1G\", got "
			  "\"huge\"");
	check_set_refused(
	    "tlbs[1].page_sizes", "[4096]",
	    "$.tlbs[1].page_sizes[0]: expected one of \"4K\", \"2M\", \"1G\", got 4096");
	check_set_refused("tlbs[1].page_sizes", "[\"2M\", \"4K\", \"2M\"]",
			  "$.tlbs[1].page_sizes[2]: \"2M\" is listed twice");
	check_set_accepted("tlbs[1].page_sizes", "[\"1G\", \"2M\", \"4K\"]");
	check_removed_refused("tlbs.1", "page_sizes",
			      "$.tlbs[1]: missing required key \"page_sizes\"");
}

/* Every cost, by its path below "costs". */
static const char *const cost_paths[] = {
    "page_walk",
    "invlpg",
    "flush_all",
    "ipi_send",
    "irq_entry",
    "irq_exit",
    "context_switch",
    "syscall",
    "page_fault",
    "vma_op",
    "pte_op",
    "lru_page",
    "broadcast_issue",
    "broadcast_sync",
    "sbi_call",
    "ipi_latency.smt",
    "ipi_latency.socket",
    "ipi_latency.remote",
    "line_transfer.self",
    "line_transfer.smt",
    "line_transfer.socket",
    "line_transfer.remote",
};

Test(topology_validate, costs_range_and_presence)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(cost_paths); i++) {
		char *path = g_strdup_printf("costs.%s", cost_paths[i]);
		char *message = g_strdup_printf(
		    "$.%s: expected an integer in [0, 1000000000], got 1000000001", path);
		check_set_refused(path, "1000000001", message);
		g_free(message);

		message =
		    g_strdup_printf("$.%s: expected an integer in [0, 1000000000], got -1", path);
		check_set_refused(path, "-1", message);
		g_free(message);
		check_set_accepted(path, "0");
		check_set_accepted(path, "1000000000");

		/* Remove it: "costs.ipi_latency" + "smt", or "costs" + "invlpg". */
		char *dot = strrchr(path, '.');
		*dot = '\0';
		message = g_strdup_printf("$.%s: missing required key \"%s\"", path, dot + 1);
		check_removed_refused(path, dot + 1, message);
		g_free(message);
		g_free(path);
	}
}

Test(topology_validate, costs_structure)
{
	check_removed_refused("", "costs", "$: missing required key \"costs\"");
	check_set_refused("costs", "[]", "$.costs: expected an object, got an array");
	check_set_refused("costs.invlgp", "1",
			  "$.costs: unknown key \"invlgp\" (did you mean \"invlpg\"?)");
	check_set_refused(
	    "costs.ipi_latency.self", "1",
	    "$.costs.ipi_latency: unknown key \"self\" (expected one of: smt, socket, "
	    "remote, comment)");
	check_set_refused("costs.line_transfer.far", "1",
			  "$.costs.line_transfer: unknown key \"far\" (expected one of: self, smt, "
			  "socket, remote, comment)");
	check_set_refused("costs.ipi_latency", "1500",
			  "$.costs.ipi_latency: expected an object, got 1500");
	check_set_refused("costs.invlpg", "{\"value\": 113, \"source\": 7}",
			  "$.costs.invlpg.source: expected a string, got 7");
	check_set_refused(
	    "costs.invlpg", "{\"source\": \"Hansen\"}",
	    "$.costs.invlpg: missing required key \"value\" (a number with its source "
	    "is written {\"value\": N, \"source\": \"...\"})");
	check_set_refused("costs.invlpg", "113.5",
			  "$.costs.invlpg: expected an integer in [0, 1000000000], got 113.5");
	check_set_accepted("costs.invlpg", "{\"value\": 113, \"source\": \"Hansen 2014\"}");
}

Test(topology_validate, set_through_sourced_value)
{
	GError *err = NULL;
	cJSON *json = load_json(HASWELL);
	cr_assert(config_apply_set(json, "costs.invlpg", "200", &err));
	cr_assert(config_apply_set(json, "tlbs[3].entries", "1536", &err));
	cr_assert(config_apply_set(json, "tlbs[3].ways", "12", &err));
	struct topology *t = topology_from_json(json, "haswell-i7.json", &err);
	cr_assert_not_null(t, "%s", err != NULL ? err->message : "?");
	cr_expect_eq(t->costs.invlpg, 200);
	cr_expect_eq(t->tlbs[3].geometry.entries, 1536);
	cr_expect_eq(t->tlbs[3].geometry.ways, 12);
	topology_free(t);

	cr_assert(config_apply_set(json, "tlbs[3].ways", "7", &err));
	t = topology_from_json(json, "haswell-i7.json", &err);
	cr_expect_null(t);
	cr_assert_not_null(err);
	cr_expect_str_eq(err->message, "haswell-i7.json: $.tlbs[3].ways: 7 ways do not "
				       "divide 1536 entries into whole sets");
	g_error_free(err);
	cJSON_Delete(json);
}

/* Times in cycles may carry a unit: converted once, at clock_ghz (3.4 on haswell-i7). */
Test(topology_validate, times_with_units)
{
	GError *err = NULL;
	cJSON *json = load_json(HASWELL);
	static const char *const sets[][2] = {
	    {"costs.ipi_latency.socket", "350ns"}, /* a sourced number: its "value" */
	    {"costs.invlpg", "0.1us"},
	    {"costs.line_transfer.remote", "\"2000cycles\""},
	    {"tlbs[0].hit_cycles", "1 cycles"},
	    {"caches.memory_cycles", "{\"value\": \"60ns\", \"source\": \"test\"}"},
	    {"caches.levels[0].hit_cycles", "1.3ns"},
	};
	for (unsigned i = 0; i < G_N_ELEMENTS(sets); i++)
		cr_assert(config_apply_set(json, sets[i][0], sets[i][1], &err), "%s", sets[i][0]);
	struct topology *t = topology_from_json(json, "haswell-i7.json", &err);
	cr_assert_not_null(t, "%s", err != NULL ? err->message : "?");
	cr_expect_eq(t->costs.ipi_latency[DIST_SOCKET], 1190);
	cr_expect_eq(t->costs.invlpg, 340);
	cr_expect_eq(t->costs.line_transfer[DIST_REMOTE], 2000);
	cr_expect_eq(t->tlbs[0].hit_cycles, 1);
	cr_expect_eq(t->memory_cycles, 204);
	cr_expect_eq(t->caches[0].hit_cycles, 4, "4.42 cycles round to 4");
	topology_free(t);
	cJSON_Delete(json);

	/* tiny-2cpu.json runs at 1 GHz. */
	check_set_refused("costs.ipi_latency.socket", "1s",
			  "$.costs.ipi_latency.socket: unknown unit \"s\": expected cycles, ns, "
			  "us or ms (did you mean \"ns\"?)");
	check_set_refused("costs.invlpg", "1000.0000005ms",
			  "$.costs.invlpg: \"1000.0000005ms\" = 1000000001 cycles at 1000 MHz: "
			  "above the limit of 1000000000 cycles");
	check_set_accepted("costs.invlpg", "1000.0000004ms");
}

Test(topology_validate, free_null)
{
	topology_free(NULL);
}
