/*
 * Tests of src/workload/workload.c: the bundled munmap workloads load with the values
 * their files describe, every op kind parses into the fields the interpreter
 * reads (tests/data/wl-all-ops.json), and every validation error names the
 * file, the JSON path and the reason.  Messages are compared whole.
 *
 * Workloads are parsed from strings with config_parse_string() under the name
 * "t.json"; most error cases wrap a few ops in a small valid workload.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"
#include "tlbsim/workload/workload.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif

#define MUNMAP16 TLBSIM_SOURCE_DIR "/workloads/munmap16.json"
#define MUNMAP TLBSIM_SOURCE_DIR "/workloads/munmap.json"
#define ALL_OPS TLBSIM_TEST_DATA "/wl-all-ops.json"

/* The haswell-i7's CPU count; what most tests pass as nr_cpus. */
#define CPUS 8

/* A program that loads, for tests about everything but the program. */
#define TASKS "\"tasks\": [{\"name\": \"main\", \"program\": [{\"op\": \"yield\"}]}]"

/* ---- Helpers ---------------------------------------------------------------- */

/* Parse @text and build the workload; NULL with *err set on failure. */
static struct workload *load_text(const char *text, const char *file, unsigned nr_cpus,
				  GError **err)
{
	cJSON *json = config_parse_string(text, file, err);
	cr_assert_not_null(json, "not JSON: %s", *err != NULL ? (*err)->message : "?");
	struct workload *w = workload_from_json(json, file, nr_cpus, NULL, err);
	cJSON_Delete(json);
	return w;
}

static struct workload *load_ok_cpus(const char *text, unsigned nr_cpus)
{
	GError *err = NULL;
	struct workload *w = load_text(text, "t.json", nr_cpus, &err);
	cr_assert_not_null(w, "%s", err != NULL ? err->message : "?");
	cr_assert_null(err);
	return w;
}

static struct workload *load_ok(const char *text)
{
	return load_ok_cpus(text, CPUS);
}

static struct workload *load_file(const char *path)
{
	char *text = NULL;
	GError *err = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, &err), "%s",
		  err != NULL ? err->message : "?");
	struct workload *w = load_text(text, path, CPUS, &err);
	g_free(text);
	cr_assert_not_null(w, "%s", err != NULL ? err->message : "?");
	return w;
}

/* Loading @text fails with TLBSIM_ERROR_INVALID and exactly @message. */
static void expect_error(const char *text, const char *message)
{
	GError *err = NULL;
	struct workload *w = load_text(text, "t.json", CPUS, &err);
	cr_assert_null(w, "loaded, expected: %s", message);
	cr_assert_not_null(err, "no error, expected: %s", message);
	cr_expect_eq(err->domain, TLBSIM_ERROR);
	cr_expect_eq(err->code, TLBSIM_ERROR_INVALID, "code %d: %s", err->code, err->message);
	cr_expect_str_eq(err->message, message);
	g_error_free(err);
}

/*
 * A workload with param p = 4, regions "data" (64K, 16 pages) and "chunks"
 * (4 x 8K), and one task running @program (ops without the brackets).
 */
static char *with_program(const char *program)
{
	return g_strdup_printf("{\"name\": \"t\", \"params\": {\"p\": 4}, \"regions\": ["
			       "{\"name\": \"data\", \"size\": \"64K\"}, "
			       "{\"name\": \"chunks\", \"chunks\": 4, \"chunk_size\": \"8K\"}], "
			       "\"tasks\": [{\"name\": \"main\", \"program\": [%s]}]}",
			       program);
}

static struct workload *program_ok(const char *program)
{
	char *text = with_program(program);
	struct workload *w = load_ok(text);
	g_free(text);
	return w;
}

static void expect_program_error(const char *program, const char *message)
{
	char *text = with_program(program);
	expect_error(text, message);
	g_free(text);
}

/* A workload with @regions (the array's contents) and a task that yields. */
static void expect_regions_error(const char *regions, const char *message)
{
	char *text = g_strdup_printf("{\"name\": \"t\", \"regions\": [%s], " TASKS "}", regions);
	expect_error(text, message);
	g_free(text);
}

/* A workload with @params (the object's contents) and a task that yields. */
static void expect_params_error(const char *params, const char *message)
{
	char *text = g_strdup_printf("{\"name\": \"t\", \"params\": {%s}, " TASKS "}", params);
	expect_error(text, message);
	g_free(text);
}

/* The constant value of @e, which must be one. */
static int64_t constant(const struct expr *e)
{
	int64_t v = 0;
	cr_assert_not_null(e);
	cr_assert(expr_is_constant(e, &v), "not a constant: %s", expr_text(e));
	return v;
}

/* The first op of @kind among @ops (not looking into loops), or NULL. */
static const struct op *find_op(const struct op *ops, unsigned nr, enum op_kind kind)
{
	for (unsigned i = 0; i < nr; i++)
		if (ops[i].kind == kind)
			return &ops[i];
	return NULL;
}

static unsigned flag_index(const struct workload *w, const char *name)
{
	for (unsigned f = 0; f < w->nr_flags; f++)
		if (strcmp(w->flag_names[f], name) == 0)
			return f;
	cr_assert_fail("no flag %s", name);
	return 0;
}

static int64_t param(const struct workload *w, const char *name)
{
	int64_t v = 0;
	cr_assert(workload_param(w, name, &v), "no parameter %s", name);
	return v;
}

/* ---- The bundled workloads ---------------------------------------------------- */

Test(workload_bundled, munmap16)
{
	struct workload *w = load_file(MUNMAP16);

	cr_expect_str_eq(w->name, "munmap16");
	cr_expect(strstr(w->description, "munmap -t 16 -n 64") != NULL);
	cr_expect(strstr(w->imitates, "Alex Shi") != NULL);
	cr_expect_not_null(w->simplified);

	static const struct workload_param want[] = {
	    {"threads", 16},        {"pages_per_munmap", 64}, {"accessed_pages", 512},
	    {"file_size", 1 << 30}, {"munmaps", 4096},        {"write", 0},
	    {"tail_ms", 10},        {"access_cycles", 3},
	};
	cr_assert_eq(w->nr_params, G_N_ELEMENTS(want));
	for (unsigned i = 0; i < G_N_ELEMENTS(want); i++) {
		cr_expect_str_eq(w->params[i].name, want[i].name);
		cr_expect_eq(w->params[i].value, want[i].value, "%s", want[i].name);
	}
	cr_expect_eq(param(w, "munmaps"), 4096);

	cr_assert_eq(w->nr_mms, 1);
	cr_expect_str_eq(w->mm_names[0], "main");

	cr_assert_eq(w->nr_regions, 2);
	const struct region *big = &w->regions[0], *small = &w->regions[1];
	cr_expect_str_eq(big->name, "big");
	cr_expect_eq(big->chunks, 1);
	cr_expect_eq(big->chunk_bytes, UINT64_C(1) << 30);
	cr_expect_eq(big->populate, POPULATE_ALL);
	cr_expect_eq(big->page_size, PS_4K);
	cr_expect_not(big->hugetlb);
	cr_expect_eq(big->mm, 0);
	cr_expect_str_eq(small->name, "small");
	cr_expect_eq(small->chunks, 4096);
	cr_expect_eq(small->chunk_bytes, 64 * 4096);
	cr_expect_eq(small->populate, POPULATE_FIRST);

	/*
	 * The main thread: a measured phase around the munmap loop and the tail
	 * sleep, with flag "run" set before and cleared after.  Ops are found by
	 * kind, so that a comment-level change of the program keeps this valid.
	 */
	cr_assert_eq(w->nr_groups, 2);
	const struct task_group *main_group = &w->groups[0], *accessor = &w->groups[1];
	const struct op *ops = main_group->ops;
	unsigned nr = main_group->nr_ops;
	unsigned run = flag_index(w, "run");
	cr_expect_str_eq(main_group->name, "main");
	cr_expect_eq(main_group->count, 1);
	cr_expect_null(main_group->cpu);
	cr_assert_geq(nr, 6);
	cr_expect_eq(ops[0].kind, OP_PHASE);
	cr_expect(ops[0].begin);
	cr_expect_eq(ops[nr - 1].kind, OP_PHASE);
	cr_expect_not(ops[nr - 1].begin);
	cr_expect_eq(ops[0].phase, ops[nr - 1].phase);
	cr_expect_eq(ops[nr - 2].kind, OP_SET_FLAG);
	cr_expect_eq(ops[nr - 2].flag, run);
	cr_expect_eq(constant(ops[nr - 2].value), 0);

	const struct op *loop = find_op(ops, nr, OP_LOOP);
	cr_assert_not_null(loop);
	cr_expect_str_eq(expr_text(loop->count), "$munmaps");
	cr_expect_str_eq(loop->var, "i");
	cr_assert_eq(loop->nr_body, 1);
	cr_expect_eq(loop->body[0].kind, OP_MUNMAP);
	cr_expect_eq(loop->body[0].region, 1);
	cr_expect_str_eq(expr_text(loop->body[0].chunk), "$i");
	unsigned at = (unsigned)(loop - ops);
	char *path = g_strdup_printf("$.tasks[0].program[%u].body[0]", at);
	cr_expect_str_eq(loop->body[0].path, path);
	g_free(path);
	bool run_set_before = false;
	for (const struct op *set = ops; set < loop; set++)
		run_set_before |=
		    set->kind == OP_SET_FLAG && set->flag == run && constant(set->value) == 1;
	cr_expect(run_set_before, "\"run\" is set to 1 before the loop");

	const struct op *sleep = find_op(ops, nr, OP_SLEEP);
	cr_assert_not_null(sleep);
	cr_expect_gt(sleep, loop);
	cr_expect_eq(sleep->ns_scale, 1000000);
	cr_expect_str_eq(expr_text(sleep->ns), "$tail_ms");

	/* The accessors: wait for the start, then random accesses while "run". */
	cr_expect_str_eq(accessor->name, "accessor");
	cr_expect_eq(accessor->count, 16);
	cr_assert_eq(accessor->nr_ops, 2);
	cr_expect_eq(accessor->ops[0].kind, OP_WAIT_FLAG);
	cr_expect_eq(constant(accessor->ops[0].value), 1);
	const struct op *access = &accessor->ops[1];
	cr_expect_eq(access->kind, OP_ACCESS);
	cr_expect_eq(access->region, 0);
	cr_expect(access->random);
	cr_expect(access->independent, "the harness's loads index a table: independent");
	cr_expect_null(access->chunk);
	cr_expect_null(access->count);
	cr_expect_eq(access->while_flag, (int)run);
	cr_expect_str_eq(expr_text(access->pages), "$accessed_pages");
	cr_expect_str_eq(expr_text(access->cycles), "$access_cycles");
	cr_expect_str_eq(expr_text(access->write), "$write");

	cr_assert_eq(w->nr_phases, 1);
	cr_expect_str_eq(w->phase_names[0], "measure");
	cr_expect_eq(w->report_op, OP_MUNMAP);
	cr_expect_eq(w->report_phase, 0);
	cr_expect_str_eq(w->summary,
			 "munmap use {phase_ms}ms {op_ns_per_call}ns/time, memory access "
			 "uses {accesses_per_thread_ms} times/thread/ms, cost "
			 "{access_cost_ns}ns/time");
	workload_free(w);
}

Test(workload_bundled, munmap_defaults_are_t12_n8)
{
	struct workload *w = load_file(MUNMAP);

	cr_expect_str_eq(w->name, "munmap");
	cr_expect_eq(param(w, "threads"), 12);
	cr_expect_eq(param(w, "pages_per_munmap"), 8);
	cr_expect_eq(param(w, "munmaps"), 32768);
	cr_assert_eq(w->nr_regions, 2);
	cr_expect_eq(w->regions[1].chunks, 32768);
	cr_expect_eq(w->regions[1].chunk_bytes, 8 * 4096);
	cr_assert_eq(w->nr_groups, 2);
	cr_expect_eq(w->groups[1].count, 12);
	const struct op *loop = find_op(w->groups[0].ops, w->groups[0].nr_ops, OP_LOOP);
	cr_assert_not_null(loop);
	cr_expect_eq(loop->body[0].kind, OP_MUNMAP);
	cr_expect_eq(w->report_op, OP_MUNMAP);
	cr_expect_eq(w->report_phase, 0);
	workload_free(w);
}

Test(workload_bundled, op_names_and_params)
{
	static const char *const names[NR_OP_KINDS] = {
	    "access",  "munmap",  "mmap",     "mprotect",  "madvise", "sleep",
	    "yield",   "compute", "set_flag", "wait_flag", "loop",    "phase",
	    "fork",
	};
	for (int k = 0; k < NR_OP_KINDS; k++)
		cr_expect_str_eq(workload_op_name((enum op_kind)k), names[k]);

	struct workload *w = load_file(MUNMAP16);
	int64_t v = 42;
	cr_expect_not(workload_param(w, "thread", &v));
	cr_expect_not(workload_param(w, "cpus", &v));
	cr_expect_eq(v, 42, "untouched when absent");
	workload_free(w);
	workload_free(NULL);
}

/* ---- One example of every op (tests/data/wl-all-ops.json) -------------------- */

Test(workload_ops, header_params_processes_regions)
{
	struct workload *w = load_file(ALL_OPS);

	cr_expect_str_eq(w->name, "all-ops");
	cr_expect_null(w->imitates);
	cr_expect_eq(param(w, "threads"), 3);
	cr_expect_eq(param(w, "pages"), 2 * CPUS);
	cr_expect_eq(param(w, "spin"), 100);

	cr_assert_eq(w->nr_mms, 2);
	cr_expect_str_eq(w->mm_names[0], "main");
	cr_expect_str_eq(w->mm_names[1], "other");

	cr_assert_eq(w->nr_regions, 4);
	const struct region *r = w->regions;
	cr_expect_eq(r[0].chunks, 1);
	cr_expect_eq(r[0].chunk_bytes, 65536);
	cr_expect_eq(r[0].populate, POPULATE_ALL);
	cr_expect_eq(r[0].placement, PLACEMENT_ALIGNED);
	cr_expect_eq(r[1].placement, PLACEMENT_ASLR);
	cr_expect_eq(r[1].chunks, 4);
	cr_expect_eq(r[1].chunk_bytes, 8192);
	cr_expect_eq(r[1].populate, POPULATE_FIRST);
	cr_expect_str_eq(r[2].name, "huge");
	cr_expect_eq(r[2].page_size, PS_2M);
	cr_expect(r[2].hugetlb);
	cr_expect_eq(r[2].chunk_bytes, 4 << 20);
	cr_expect_eq(r[2].populate, POPULATE_NONE);
	cr_expect_eq(r[3].mm, 1);
	cr_expect_eq(r[0].mm, 0);

	cr_assert_eq(w->nr_groups, 3);
	cr_expect_eq(w->groups[0].count, 1, "count defaults to 1");
	cr_expect_eq(w->groups[1].count, 3);
	cr_expect_str_eq(expr_text(w->groups[1].cpu), "$thread % $cpus");
	cr_expect_eq(w->groups[2].mm, 1);
	cr_expect_eq(w->groups[2].count, 2);

	cr_assert_eq(w->nr_flags, 1);
	cr_expect_str_eq(w->flag_names[0], "go");
	cr_assert_eq(w->nr_phases, 1);
	cr_expect_str_eq(w->phase_names[0], "work");
	cr_expect_eq(w->report_op, OP_MADVISE);
	cr_expect_eq(w->report_phase, 0);
	cr_expect_str_eq(w->summary, "{op} {op_count} times in {phase_ms} ms");
	workload_free(w);
}

Test(workload_ops, access_sequential_with_rounds)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *op = &w->groups[0].ops[2];

	cr_expect_eq(op->kind, OP_ACCESS);
	cr_expect_eq(op->region, 0);
	cr_expect_not(op->random);
	cr_expect_eq(constant(op->first), 2);
	cr_expect_eq(constant(op->pages), 4);
	cr_expect_eq(constant(op->count), 3);
	cr_expect_eq(constant(op->write), 1, "write: true is 1");
	cr_expect_eq(constant(op->cycles), 5);
	cr_expect_null(op->chunk);
	cr_expect_eq(op->while_flag, -1);
	cr_expect_str_eq(op->path, "$.tasks[0].program[2]");
	workload_free(w);
}

Test(workload_ops, access_random_with_rounds_and_while_flag)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *op = &w->groups[1].ops[1];

	cr_expect_eq(op->kind, OP_ACCESS);
	cr_expect(op->random, "random is the default pattern");
	cr_expect_eq(constant(op->chunk), 0);
	cr_expect_str_eq(expr_text(op->pages), "$pages");
	cr_expect_eq(constant(op->count), 2);
	cr_expect_eq(op->while_flag, 0);
	cr_expect_eq(constant(op->write), 0, "write defaults to 0");
	cr_expect_null(op->first);

	const struct op *only_flag = &w->groups[2].ops[0];
	cr_expect_eq(only_flag->region, 3);
	cr_expect(only_flag->random);
	cr_expect_null(only_flag->count);
	cr_expect_eq(only_flag->while_flag, 0);
	workload_free(w);
}

Test(workload_ops, chunk_ops)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *ops = w->groups[0].ops;

	cr_expect_eq(ops[3].kind, OP_MPROTECT);
	cr_expect_eq(ops[3].region, 1);
	cr_expect_eq(constant(ops[3].chunk), 1);
	cr_expect_not(ops[3].writable, "prot read");
	cr_expect_eq(ops[4].kind, OP_MPROTECT);
	cr_expect(ops[4].writable, "prot write");
	cr_expect_eq(ops[5].kind, OP_MADVISE);
	cr_expect_eq(constant(ops[5].chunk), 2);

	const struct op *munmap = &ops[6].body[0];
	cr_expect_eq(munmap->kind, OP_MUNMAP);
	cr_expect_eq(munmap->region, 1);
	cr_expect_str_eq(expr_text(munmap->chunk), "$i");
	workload_free(w);
}

/* mmap takes munmap's keys: the region and, in a chunked one, the chunk. */
Test(workload_ops, mmap_names_a_chunk)
{
	struct workload *w =
	    program_ok("{\"op\": \"munmap\", \"region\": \"chunks\", \"chunk\": 1}, "
		       "{\"op\": \"mmap\", \"region\": \"chunks\", \"chunk\": \"$p - 3\","
		       " \"comment\": \"again\"}, "
		       "{\"op\": \"mmap\", \"region\": \"data\"}");
	const struct op *ops = w->groups[0].ops;
	cr_expect_eq(ops[1].kind, OP_MMAP);
	cr_expect_eq(ops[1].region, 1);
	cr_expect_str_eq(expr_text(ops[1].chunk), "$p - 3");
	cr_expect_str_eq(ops[1].path, "$.tasks[0].program[1]");
	cr_expect_eq(ops[2].kind, OP_MMAP);
	cr_expect_eq(constant(ops[2].chunk), 0, "a plain region's one chunk");
	cr_expect_eq(w->report_op, OP_MUNMAP, "the first syscall");
	workload_free(w);
	w = program_ok("{\"op\": \"yield\"}, {\"op\": \"mmap\", \"region\": \"data\"}");
	cr_expect_eq(w->report_op, OP_MMAP, "mmap is a syscall too");
	workload_free(w);

	/* with_program() ends in "]}]}": put the report before the last '}'. */
	char *text = with_program("{\"op\": \"mmap\", \"region\": \"data\"}");
	text[strlen(text) - 1] = '\0';
	char *with_report = g_strdup_printf("%s, \"report\": {\"op\": \"mmap\"}}", text);
	w = load_ok(with_report);
	cr_expect_eq(w->report_op, OP_MMAP);
	workload_free(w);
	g_free(with_report);
	g_free(text);
}

Test(workload_ops, chunk_defaults_to_0_in_a_plain_region)
{
	struct workload *w = program_ok("{\"op\": \"munmap\", \"region\": \"data\"}");
	cr_expect_eq(constant(w->groups[0].ops[0].chunk), 0);
	workload_free(w);
}

Test(workload_ops, sleep_units)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *ns = &w->groups[0].ops[7], *us = &w->groups[0].ops[8];
	const struct op *ms = &w->groups[2].ops[1];

	cr_expect_eq(ns->kind, OP_SLEEP);
	cr_expect_eq(constant(ns->ns), 500);
	cr_expect_eq(ns->ns_scale, 1);
	cr_expect_eq(constant(us->ns), 7);
	cr_expect_eq(us->ns_scale, 1000);
	cr_expect_eq(ms->kind, OP_SLEEP);
	cr_expect_eq(constant(ms->ns), 2);
	cr_expect_eq(ms->ns_scale, 1000000);
	workload_free(w);
}

Test(workload_ops, yield_compute_flags_phases)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *main_ops = w->groups[0].ops, *worker = w->groups[1].ops;

	cr_expect_eq(main_ops[0].kind, OP_PHASE);
	cr_expect_eq(main_ops[0].phase, 0);
	cr_expect(main_ops[0].begin);
	cr_expect_eq(main_ops[10].kind, OP_PHASE);
	cr_expect_not(main_ops[10].begin);

	cr_expect_eq(main_ops[1].kind, OP_SET_FLAG);
	cr_expect_eq(constant(main_ops[1].value), 1, "value defaults to 1");
	cr_expect_eq(main_ops[9].kind, OP_SET_FLAG);
	cr_expect_eq(constant(main_ops[9].value), 0);
	cr_expect_eq(worker[0].kind, OP_WAIT_FLAG);
	cr_expect_eq(worker[0].flag, 0);
	cr_expect_eq(constant(worker[0].value), 1);

	cr_expect_eq(worker[2].kind, OP_COMPUTE);
	cr_expect_str_eq(expr_text(worker[2].cycles), "$spin * ($thread + 1)");

	const struct op *yield = &main_ops[6].body[1].body[0];
	cr_expect_eq(yield->kind, OP_YIELD);
	cr_expect_str_eq(yield->path, "$.tasks[0].program[6].body[1].body[0]");
	workload_free(w);
}

Test(workload_ops, loops_with_and_without_var)
{
	struct workload *w = load_file(ALL_OPS);
	const struct op *outer = &w->groups[0].ops[6];

	cr_expect_eq(outer->kind, OP_LOOP);
	cr_expect_eq(constant(outer->count), 4);
	cr_expect_str_eq(outer->var, "i");
	cr_assert_eq(outer->nr_body, 3);
	const struct op *inner = &outer->body[1];
	cr_expect_eq(inner->kind, OP_LOOP);
	cr_expect_null(inner->var);
	cr_expect_str_eq(expr_text(inner->count), "$i + 1");
	cr_expect_eq(inner->nr_body, 1);
	const struct op *mmap = &outer->body[2];
	cr_expect_eq(mmap->kind, OP_MMAP);
	cr_expect_eq(mmap->region, 1);
	cr_expect_str_eq(expr_text(mmap->chunk), "$i");
	cr_expect_str_eq(mmap->path, "$.tasks[0].program[6].body[2]");
	workload_free(w);
}

Test(workload_ops, report_op_defaults_to_the_first_syscall)
{
	struct workload *w =
	    program_ok("{\"op\": \"yield\"}, "
		       "{\"op\": \"loop\", \"count\": 2, \"body\": ["
		       "{\"op\": \"mprotect\", \"region\": \"data\", \"prot\": \"read\"}]}, "
		       "{\"op\": \"munmap\", \"region\": \"data\"}");
	cr_expect_eq(w->report_op, OP_MPROTECT);
	cr_expect_eq(w->report_phase, -1);
	cr_expect_null(w->summary);
	workload_free(w);

	w = program_ok("{\"op\": \"yield\"}");
	cr_expect_eq(w->report_op, NR_OP_KINDS, "no syscall: nothing to report");
	workload_free(w);
}

Test(workload_ops, cpus_in_params_and_counts)
{
	const char *text =
	    "{\"name\": \"t\", \"params\": {\"n\": \"$cpus * 2\", \"half\": \"$n / 4\"},"
	    " \"tasks\": [{\"name\": \"a\", \"count\": \"$cpus\", \"program\": "
	    "[{\"op\": \"yield\"}]}, {\"name\": \"b\", \"count\": \"$half\", "
	    "\"program\": [{\"op\": \"yield\"}]}]}";
	struct workload *w = load_ok_cpus(text, 8);
	cr_expect_eq(param(w, "n"), 16);
	cr_expect_eq(param(w, "half"), 4);
	cr_expect_eq(w->groups[0].count, 8);
	cr_expect_eq(w->groups[1].count, 4);
	workload_free(w);

	w = load_ok_cpus(text, 4);
	cr_expect_eq(param(w, "n"), 8);
	cr_expect_eq(w->groups[0].count, 4);
	cr_expect_eq(w->groups[1].count, 2);
	workload_free(w);
}

Test(workload_ops, sizes_with_suffixes_and_params)
{
	const char *text =
	    "{\"name\": \"t\", \"params\": {\"mb\": 3}, \"regions\": ["
	    "{\"name\": \"a\", \"size\": \"$mb * 1M\"},"
	    " {\"name\": \"b\", \"chunks\": \"$mb + 1\", \"chunk_size\": 4096, \"page_size\": "
	    "\"4K\"},"
	    " {\"name\": \"c\", \"size\": \"1G\", \"page_size\": \"2M\"}], " TASKS "}";
	struct workload *w = load_ok(text);
	cr_expect_eq(w->regions[0].chunk_bytes, 3 << 20);
	cr_expect_eq(w->regions[1].chunks, 4);
	cr_expect_eq(w->regions[1].chunk_bytes, 4096);
	cr_expect_eq(w->regions[2].chunk_bytes, UINT64_C(1) << 30);
	cr_expect_eq(w->regions[2].page_size, PS_2M);
	workload_free(w);
}

/* ---- Names: top-level keys, ops, regions, processes --------------------------- */

Test(workload_errors, unknown_top_level_key)
{
	expect_error("{\"name\": \"t\", \"taks\": []}",
		     "t.json: $: unknown key \"taks\" (did you mean \"tasks\"?)");
	expect_error("{\"name\": \"t\", \"paramz\": {}, " TASKS "}",
		     "t.json: $: unknown key \"paramz\" (did you mean \"params\"?)");
}

/* The region key "shared" (MAP_SHARED) is a boolean and a near-miss is named. */
Test(workload_errors, region_shared_key)
{
	expect_error("{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": 4096,"
		     " \"shared\": \"yes\"}], " TASKS "}",
		     "t.json: $.regions[0].shared: expected true or false, got \"yes\" (a string)");
	expect_error("{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": 4096,"
		     " \"shard\": true}], " TASKS "}",
		     "t.json: $.regions[0]: unknown key \"shard\" (did you mean \"shared\"?)");
}

Test(workload_errors, missing_name_and_tasks)
{
	expect_error("{" TASKS "}", "t.json: $: missing required key \"name\"");
	expect_error("{\"name\": \"t\"}",
		     "t.json: $.tasks: expected a non-empty array of task groups");
	expect_error("{\"name\": \"t\", \"tasks\": []}",
		     "t.json: $.tasks: expected a non-empty array of task groups");
}

Test(workload_errors, unknown_op_key)
{
	expect_program_error("{\"op\": \"munmap\", \"region\": \"chunks\", \"chunks\": 1}",
			     "t.json: $.tasks[0].program[0]: unknown key \"chunks\" "
			     "(did you mean \"chunk\"?)");
	/* A key of another op is refused too. */
	expect_program_error("{\"op\": \"yield\", \"ms\": 1}",
			     "t.json: $.tasks[0].program[0]: unknown key \"ms\" "
			     "(expected one of: op, comment)");
}

Test(workload_errors, mmap_keys)
{
	expect_program_error("{\"op\": \"mmap\", \"region\": \"chunks\", \"chunk\": 0,"
			     " \"size\": 8192}",
			     "t.json: $.tasks[0].program[0]: unknown key \"size\" "
			     "(expected one of: op, comment, region, chunk)");
	expect_program_error("{\"op\": \"mmap\", \"region\": \"chunks\", \"chnk\": 0}",
			     "t.json: $.tasks[0].program[0]: unknown key \"chnk\" "
			     "(did you mean \"chunk\"?)");
	expect_program_error("{\"op\": \"mmap\", \"region\": \"chunks\"}",
			     "t.json: $.tasks[0].program[0]: missing required key \"chunk\"");
	expect_program_error("{\"op\": \"mmap\", \"region\": \"chunk\", \"chunk\": 0}",
			     "t.json: $.tasks[0].program[0].region: no region named \"chunk\" "
			     "(did you mean \"chunks\"?)");
	expect_program_error("{\"op\": \"mmap\", \"region\": \"chunks\", \"chunk\": \"$q\"}",
			     "t.json: $.tasks[0].program[0].chunk: unknown variable '$q' "
			     "(did you mean '$p'?)");
}

Test(workload_errors, unknown_op_name)
{
	expect_program_error("{\"op\": \"yield\"}, {\"op\": \"munmapp\", \"region\": \"data\"}",
			     "t.json: $.tasks[0].program[1].op: expected one of \"access\", "
			     "\"munmap\", \"mmap\", \"mprotect\", \"madvise\", \"sleep\", "
			     "\"yield\", \"compute\", \"set_flag\", \"wait_flag\", \"loop\", "
			     "\"phase\", \"fork\", got "
			     "\"munmapp\" (did you mean \"munmap\"?)");
	expect_program_error("{\"sleep\": 1}",
			     "t.json: $.tasks[0].program[0]: missing required key \"op\"");
	expect_program_error("\"yield\"", "t.json: $.tasks[0].program[0]: expected an op object "
					  "such as {\"op\": \"sleep\", \"ms\": 1}");
}

Test(workload_errors, missing_region_with_suggestion)
{
	expect_program_error("{\"op\": \"munmap\", \"region\": \"chunk\", \"chunk\": 0}",
			     "t.json: $.tasks[0].program[0].region: no region named \"chunk\" "
			     "(did you mean \"chunks\"?)");
	expect_program_error("{\"op\": \"access\", \"region\": \"elsewhere\", \"pages\": 1, "
			     "\"rounds\": 1, \"cycles\": 0}",
			     "t.json: $.tasks[0].program[0].region: no region named \"elsewhere\"");
	/* No regions at all. */
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"program\": "
		     "[{\"op\": \"madvise\", \"region\": \"data\", \"advice\": \"dontneed\"}]}]}",
		     "t.json: $.tasks[0].program[0].region: no region named \"data\"");
}

Test(workload_errors, chunk_required_for_a_chunked_region)
{
	expect_program_error("{\"op\": \"munmap\", \"region\": \"chunks\"}",
			     "t.json: $.tasks[0].program[0]: missing required key \"chunk\"");
}

Test(workload_errors, chunk_op_enums)
{
	expect_program_error("{\"op\": \"mprotect\", \"region\": \"data\", \"prot\": \"rw\"}",
			     "t.json: $.tasks[0].program[0].prot: expected one of \"read\", "
			     "\"write\", got \"rw\"");
	expect_program_error("{\"op\": \"mprotect\", \"region\": \"data\"}",
			     "t.json: $.tasks[0].program[0]: missing required key \"prot\"");
	expect_program_error("{\"op\": \"madvise\", \"region\": \"data\", \"advice\": \"dontned\"}",
			     "t.json: $.tasks[0].program[0].advice: expected one of \"dontneed\", \"pageout\", "
			     "got \"dontned\" (did you mean \"dontneed\"?)");
}

Test(workload_errors, access_loads)
{
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"pages\": 1, "
			     "\"rounds\": 1, \"cycles\": 3, \"loads\": \"independant\"}",
			     "t.json: $.tasks[0].program[0].loads: expected one of \"dependent\", "
			     "\"independent\", got \"independant\" (did you mean \"independent\"?)");
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"pages\": 1, "
			     "\"rounds\": 1, \"cycles\": 3, \"loads\": true}",
			     "t.json: $.tasks[0].program[0].loads: expected one of \"dependent\", "
			     "\"independent\", got true (a boolean)");
}

Test(workload_errors, processes)
{
	expect_error("{\"name\": \"t\", \"processes\": [\"a\", \"b\"], \"tasks\": [{\"name\": "
		     "\"m\", \"process\": \"bb\", \"program\": [{\"op\": \"yield\"}]}]}",
		     "t.json: $.tasks[0].process: no process named \"bb\" (did you mean \"b\"?)");
	expect_error("{\"name\": \"t\", \"processes\": [\"a\", \"a\"], " TASKS "}",
		     "t.json: $.processes[1]: duplicate process \"a\"");
	expect_error("{\"name\": \"t\", \"processes\": [], " TASKS "}",
		     "t.json: $.processes: expected a non-empty array of process names");
	expect_regions_error("{\"name\": \"r\", \"size\": 4096, \"process\": \"other\"}",
			     "t.json: $.regions[0].process: no process named \"other\"");
}

Test(workload_errors, region_of_another_process)
{
	/* A task can only touch its own address space. */
	expect_error(
	    "{\"name\": \"t\", \"processes\": [\"a\", \"b\"], \"regions\": [{\"name\": "
	    "\"r\", \"process\": \"a\", \"size\": 4096}], \"tasks\": [{\"name\": \"m\", "
	    "\"process\": \"b\", \"program\": [{\"op\": \"munmap\", \"region\": \"r\"}]}]}",
	    "t.json: $.tasks[0].program[0].region: region \"r\" belongs to process \"a\", "
	    "but this task runs in process \"b\"");
	expect_error("{\"name\": \"t\", \"processes\": [\"a\", \"b\"], \"regions\": [{\"name\": "
		     "\"r\", \"process\": \"b\", \"size\": 4096}], \"tasks\": [{\"name\": \"m\", "
		     "\"program\": [{\"op\": \"access\", \"region\": \"r\", \"pages\": 1, "
		     "\"rounds\": 1, \"cycles\": 0}]}]}",
		     "t.json: $.tasks[0].program[0].region: region \"r\" belongs to process \"b\", "
		     "but this task runs in process \"a\"");
}

/* ---- Expressions and variables -------------------------------------------- */

Test(workload_errors, unknown_variable_with_suggestion)
{
	expect_program_error("{\"op\": \"compute\", \"cycles\": \"$thred * 2\"}",
			     "t.json: $.tasks[0].program[0].cycles: unknown variable '$thred' "
			     "(did you mean '$thread'?)");
	expect_program_error("{\"op\": \"compute\", \"cycles\": \"$q\"}",
			     "t.json: $.tasks[0].program[0].cycles: unknown variable '$q' "
			     "(did you mean '$p'?)");
	expect_program_error("{\"op\": \"compute\", \"cycles\": \"$nothing_like_it\"}",
			     "t.json: $.tasks[0].program[0].cycles: unknown variable "
			     "'$nothing_like_it'");
}

Test(workload_errors, loop_variable_out_of_scope)
{
	/* Inside the loop $i exists ... */
	struct workload *w =
	    program_ok("{\"op\": \"loop\", \"count\": 2, \"var\": \"i\", \"body\": "
		       "[{\"op\": \"compute\", \"cycles\": \"$i\"}]}");
	workload_free(w);
	/* ... after it, not. */
	expect_program_error("{\"op\": \"loop\", \"count\": 2, \"var\": \"idx\", \"body\": "
			     "[{\"op\": \"yield\"}]}, {\"op\": \"compute\", \"cycles\": \"$idx\"}",
			     "t.json: $.tasks[0].program[1].cycles: unknown variable '$idx'");
	/* A loop's own count cannot use its variable. */
	expect_program_error("{\"op\": \"loop\", \"count\": \"$idx\", \"var\": \"idx\", \"body\": "
			     "[{\"op\": \"yield\"}]}",
			     "t.json: $.tasks[0].program[0].count: unknown variable '$idx'");
	/* Nor can another task's program. */
	expect_error(
	    "{\"name\": \"t\", \"tasks\": [{\"name\": \"a\", \"program\": [{\"op\": "
	    "\"loop\", \"count\": 1, \"var\": \"k\", \"body\": [{\"op\": \"yield\"}]}]}, "
	    "{\"name\": \"b\", \"program\": [{\"op\": \"compute\", \"cycles\": \"$k\"}]}]}",
	    "t.json: $.tasks[1].program[0].cycles: unknown variable '$k'");
}

Test(workload_errors, loop_variable_names)
{
	expect_program_error(
	    "{\"op\": \"loop\", \"count\": 2, \"var\": \"p\", \"body\": "
	    "[{\"op\": \"yield\"}]}",
	    "t.json: $.tasks[0].program[0].var: \"p\" already names a variable here");
	expect_program_error(
	    "{\"op\": \"loop\", \"count\": 2, \"var\": \"thread\", \"body\": "
	    "[{\"op\": \"yield\"}]}",
	    "t.json: $.tasks[0].program[0].var: \"thread\" already names a variable "
	    "here");
	expect_program_error(
	    "{\"op\": \"loop\", \"count\": 2, \"var\": \"i\", \"body\": [{\"op\": "
	    "\"loop\", \"count\": 2, \"var\": \"i\", \"body\": [{\"op\": \"yield\"}]}]}",
	    "t.json: $.tasks[0].program[0].body[0].var: \"i\" already names a "
	    "variable here");
	expect_program_error(
	    "{\"op\": \"loop\", \"count\": 2, \"var\": \"$i\", \"body\": "
	    "[{\"op\": \"yield\"}]}",
	    "t.json: $.tasks[0].program[0].var: a variable name is letters, digits "
	    "and _");
}

Test(workload_errors, thread_only_at_run_time)
{
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"count\": \"$thread + 1\", "
		     "\"program\": [{\"op\": \"yield\"}]}]}",
		     "t.json: $.tasks[0].count: unknown variable '$thread'");
	expect_params_error("\"x\": \"$task\"", "t.json: $.params.x: unknown variable '$task'");
}

Test(workload_errors, expression_syntax_error)
{
	expect_program_error("{\"op\": \"compute\", \"cycles\": \"10 * * 2\"}",
			     "t.json: $.tasks[0].program[0].cycles: column 6: expected a number, "
			     "'$name' or '(' but found '*' in \"10 * * 2\"");
	expect_params_error("\"x\": \"(1 + 2\"",
			    "t.json: $.params.x: column 7: expected ')' before end of expression "
			    "in \"(1 + 2\"");
}

Test(workload_errors, non_integer_values)
{
	expect_program_error("{\"op\": \"compute\", \"cycles\": 1.5}",
			     "t.json: $.tasks[0].program[0].cycles: expected an integer, got 1.5");
	/* Out of int64's range: refused before any conversion. */
	expect_program_error(
	    "{\"op\": \"compute\", \"cycles\": 1e30}",
	    "t.json: $.tasks[0].program[0].cycles: expected an integer within +-9.2e18, got "
	    "1e+30 (write a larger product as an expression string)");
	expect_program_error(
	    "{\"op\": \"compute\", \"cycles\": -1e19}",
	    "t.json: $.tasks[0].program[0].cycles: expected an integer within +-9.2e18, got "
	    "-1e+19 (write a larger product as an expression string)");
	/* INT64_MAX as a literal is 2^63 as a double: outside, said so. */
	expect_program_error(
	    "{\"op\": \"compute\", \"cycles\": 9223372036854775807}",
	    "t.json: $.tasks[0].program[0].cycles: expected an integer within +-9.2e18, got "
	    "9.2233720368547758e+18 (write a larger product as an expression string)");
	expect_program_error("{\"op\": \"compute\", \"cycles\": [1]}",
			     "t.json: $.tasks[0].program[0].cycles: expected an integer or an "
			     "expression string such as \"$pages * 2\"");
}

Test(workload_errors, load_time_evaluation_errors)
{
	expect_params_error("\"a\": 0, \"b\": \"4 / $a\"",
			    "t.json: $.params.b: column 3: division by zero (4 / 0) in expression "
			    "'4 / $a'");
}

/* ---- Params ----------------------------------------------------------------- */

Test(workload_errors, param_referencing_a_later_param)
{
	expect_params_error("\"a\": \"$b * 2\", \"b\": 3",
			    "t.json: $.params.a: unknown variable '$b'");
	expect_params_error("\"a\": \"$a\"", "t.json: $.params.a: unknown variable '$a'");
}

Test(workload_errors, reserved_param_names)
{
	expect_params_error("\"thread\": 1", "t.json: $.params.thread: \"thread\" is a built-in "
					     "variable");
	expect_params_error("\"task\": 1",
			    "t.json: $.params.task: \"task\" is a built-in variable");
	expect_params_error("\"cpus\": 4",
			    "t.json: $.params.cpus: \"cpus\" is a built-in variable");
	expect_params_error("\"a-b\": 4", "t.json: $.params.a-b: a parameter name is letters, "
					  "digits and _");
	expect_error("{\"name\": \"t\", \"params\": [1], " TASKS "}",
		     "t.json: $.params: expected an object of name: value");
}

/* ---- Regions ------------------------------------------------------------------ */

Test(workload_errors, size_not_a_multiple_of_the_page_size)
{
	expect_regions_error("{\"name\": \"r\", \"size\": 5000}",
			     "t.json: $.regions[0].size: 5000 bytes is not a multiple of the 4K "
			     "page size");
	expect_regions_error("{\"name\": \"r\", \"size\": \"3M\", \"page_size\": \"2M\"}",
			     "t.json: $.regions[0].size: 3145728 bytes is not a multiple of the 2M "
			     "page size");
	expect_regions_error("{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": \"6K\"}",
			     "t.json: $.regions[0].chunk_size: 6144 bytes is not a multiple of the "
			     "4K page size");
}

Test(workload_errors, region_sizes)
{
	expect_regions_error(
	    "{\"name\": \"r\", \"size\": 4096, \"chunks\": 2, \"chunk_size\": 4096}",
	    "t.json: $.regions[0]: give either \"size\" or \"chunks\" with "
	    "\"chunk_size\"");
	expect_regions_error("{\"name\": \"r\", \"size\": 4096, \"chunks\": 2}",
			     "t.json: $.regions[0]: give either \"size\" or \"chunks\" with "
			     "\"chunk_size\"");
	expect_regions_error("{\"name\": \"r\", \"chunks\": 2}",
			     "t.json: $.regions[0]: missing \"size\" (or \"chunks\" with "
			     "\"chunk_size\")");
	expect_regions_error("{\"name\": \"r\"}", "t.json: $.regions[0]: missing \"size\" (or "
						  "\"chunks\" with \"chunk_size\")");
	expect_regions_error(
	    "{\"name\": \"r\", \"size\": \"1K\"}",
	    "t.json: $.regions[0].size: expected a value in [4096, 70368744177664], "
	    "got 1024 (from \"1K\")");
	expect_regions_error("{\"name\": \"r\", \"chunks\": 0, \"chunk_size\": 4096}",
			     "t.json: $.regions[0].chunks: expected a value in [1, 4194304], got 0 "
			     "(from \"0\")");
}

Test(workload_errors, region_keys_and_names)
{
	expect_regions_error(
	    "{\"name\": \"r\", \"sizes\": 4096}",
	    "t.json: $.regions[0]: unknown key \"sizes\" (did you mean \"size\"?)");
	expect_regions_error(
	    "{\"name\": \"r\", \"size\": 4096, \"page_size\": \"1G\"}",
	    "t.json: $.regions[0].page_size: expected \"4K\" or \"2M\", got \"1G\"");
	expect_regions_error("{\"name\": \"r\", \"size\": 4096, \"populate\": \"al\"}",
			     "t.json: $.regions[0].populate: expected one of \"none\", \"first\", "
			     "\"all\", got \"al\" (did you mean \"all\"?)");
	expect_regions_error("{\"name\": \"r\", \"size\": 4096, \"placement\": \"random\"}",
			     "t.json: $.regions[0].placement: expected one of \"aligned\", \"aslr\", "
			     "got \"random\"");
	expect_regions_error("{\"name\": \"r\", \"size\": \"4M\", \"page_size\": \"2M\", "
			     "\"placement\": \"aslr\"}",
			     "t.json: $.regions[0].placement: \"aslr\" needs 4K pages: a 2M region "
			     "is always 2 MiB aligned");
	expect_regions_error("{\"name\": \"r\", \"size\": 4096}, {\"name\": \"r\", \"size\": 8192}",
			     "t.json: $.regions[1]: duplicate region name \"r\"");
}

Test(workload_errors, too_many_ptes)
{
	/* 512 GiB of 4K pages is 2^27 PTEs, twice the limit ... */
	expect_regions_error("{\"name\": \"r\", \"size\": \"512G\"}",
			     "t.json: $.regions[0]: the regions so far need 134217728 page-table "
			     "entries; the limit is 67108864 (about 1 GiB of host memory)");
	/* ... and the limit holds for all regions together ... */
	expect_regions_error("{\"name\": \"a\", \"size\": \"160G\"}, "
			     "{\"name\": \"b\", \"chunks\": 2, \"chunk_size\": \"80G\"}",
			     "t.json: $.regions[1]: the regions so far need 83886080 page-table "
			     "entries; the limit is 67108864 (about 1 GiB of host memory)");
	/* ... but 2M pages need 512 times fewer. */
	struct workload *w = load_ok("{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": "
				     "\"512G\", \"page_size\": \"2M\"}], " TASKS "}");
	cr_expect_eq(w->regions[0].chunk_bytes, UINT64_C(512) << 30);
	workload_free(w);
	/* Exactly at the limit loads. */
	w = load_ok("{\"name\": \"t\", \"regions\": [{\"name\": \"r\", \"size\": \"256G\"}], " TASKS
		    "}");
	workload_free(w);
}

/* ---- Tasks ------------------------------------------------------------------- */

Test(workload_errors, too_many_tasks)
{
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"count\": 70000, "
		     "\"program\": [{\"op\": \"yield\"}]}]}",
		     "t.json: $.tasks[0].count: expected a value in [1, 65536], got 70000 (from "
		     "\"70000\")");
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"a\", \"count\": 40000, "
		     "\"program\": [{\"op\": \"yield\"}]}, {\"name\": \"b\", \"count\": \"40K\", "
		     "\"program\": [{\"op\": \"yield\"}]}]}",
		     "t.json: $.tasks[1]: more than 65536 tasks in all");
	expect_error(
	    "{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"count\": 0, "
	    "\"program\": [{\"op\": \"yield\"}]}]}",
	    "t.json: $.tasks[0].count: expected a value in [1, 65536], got 0 (from \"0\")");
	struct workload *w = load_ok("{\"name\": \"t\", \"tasks\": [{\"name\": \"a\", \"count\": "
				     "\"64K - 1\", \"program\": [{\"op\": \"yield\"}]}, {\"name\": "
				     "\"b\", \"program\": [{\"op\": \"yield\"}]}]}");
	cr_expect_eq(w->groups[0].count + w->groups[1].count, 65536);
	workload_free(w);
}

Test(workload_errors, empty_program)
{
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"program\": []}]}",
		     "t.json: $.tasks[0].program: expected a non-empty array of ops");
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\"}]}",
		     "t.json: $.tasks[0].program: expected a non-empty array of ops");
	expect_program_error(
	    "{\"op\": \"loop\", \"count\": 1, \"body\": []}",
	    "t.json: $.tasks[0].program[0].body: expected a non-empty array of ops");
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"m\", \"progam\": []}]}",
		     "t.json: $.tasks[0]: unknown key \"progam\" (did you mean \"program\"?)");
}

/*
 * @n loops nested in one another, each with a variable v<k>, the innermost
 * computing with the first and last variables.
 */
static char *nested_loops(int n)
{
	GString *s = g_string_new(NULL);
	for (int k = 0; k < n; k++)
		g_string_append_printf(s,
				       "{\"op\": \"loop\", \"count\": 1, \"var\": \"v%d\", "
				       "\"body\": [",
				       k);
	g_string_append_printf(s, "{\"op\": \"compute\", \"cycles\": \"$v0 + $v%d\"}", n - 1);
	for (int k = 0; k < n; k++)
		g_string_append(s, "]}");
	return g_string_free(s, FALSE);
}

Test(workload_errors, loop_nesting)
{
	/* WORKLOAD_MAX_DEPTH loops, each with its variable, load ... */
	char *ops = nested_loops(WORKLOAD_MAX_DEPTH);
	struct workload *w = program_ok(ops);
	const struct op *op = &w->groups[0].ops[0];
	for (int k = 1; k < WORKLOAD_MAX_DEPTH; k++)
		op = &op->body[0];
	cr_expect_str_eq(op->var, "v15");
	cr_expect_eq(op->body[0].kind, OP_COMPUTE);
	cr_expect_str_eq(expr_text(op->body[0].cycles), "$v0 + $v15");
	workload_free(w);
	g_free(ops);

	/* ... one more does not: the 17th loop is refused. */
	ops = nested_loops(WORKLOAD_MAX_DEPTH + 1);
	GString *path = g_string_new("t.json: $.tasks[0].program[0]");
	for (int k = 0; k < WORKLOAD_MAX_DEPTH; k++)
		g_string_append(path, ".body[0]");
	g_string_append(path, ": loops nested deeper than 16");
	expect_program_error(ops, path->str);
	g_string_free(path, TRUE);
	g_free(ops);
}

/* ---- Ops ------------------------------------------------------------------- */

Test(workload_errors, access_needs_rounds_or_while_flag)
{
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"pages\": 1, "
			     "\"cycles\": 0}",
			     "t.json: $.tasks[0].program[0]: an access op needs \"rounds\" or "
			     "\"while_flag\" (or both)");
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"rounds\": 1, "
			     "\"cycles\": 0}",
			     "t.json: $.tasks[0].program[0]: missing required key \"pages\"");
}

Test(workload_errors, first_with_random_pattern)
{
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"pattern\": \"random\", "
			     "\"first\": 1, \"pages\": 1, \"rounds\": 1, \"cycles\": 0}",
			     "t.json: $.tasks[0].program[0].first: \"first\" applies to the "
			     "sequential pattern only");
	/* random is the default */
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"first\": 1, "
			     "\"pages\": 1, \"rounds\": 1, \"cycles\": 0}",
			     "t.json: $.tasks[0].program[0].first: \"first\" applies to the "
			     "sequential pattern only");
	expect_program_error("{\"op\": \"access\", \"region\": \"data\", \"pattern\": \"seq\", "
			     "\"pages\": 1, \"rounds\": 1, \"cycles\": 0}",
			     "t.json: $.tasks[0].program[0].pattern: expected one of \"random\", "
			     "\"sequential\", got \"seq\" (did you mean \"sequential\"?)");
}

Test(workload_errors, sleep_units)
{
	expect_program_error(
	    "{\"op\": \"sleep\", \"ms\": 1, \"us\": 5}",
	    "t.json: $.tasks[0].program[0]: give the duration once, in ns, us or ms");
	expect_program_error(
	    "{\"op\": \"sleep\"}",
	    "t.json: $.tasks[0].program[0]: missing the duration: \"ns\", \"us\" or "
	    "\"ms\"");
	expect_program_error("{\"op\": \"sleep\", \"s\": 1}",
			     "t.json: $.tasks[0].program[0]: unknown key \"s\" (did you mean "
			     "\"ns\"?)");
}

/* A long bad expression is quoted by its start: the column says where. */
Test(workload_errors, long_bad_expression_is_quoted_short)
{
	GString *deep = g_string_new(NULL);
	for (int i = 0; i < 200; i++)
		g_string_append(deep, "(");
	char *program = g_strdup_printf("{\"op\": \"compute\", \"cycles\": \"%s1\"}", deep->str);
	char *text = with_program(program);
	GError *err = NULL;
	cJSON *json = config_parse_string(text, "t.json", &err);
	cr_assert_not_null(json);
	cr_assert_null(workload_from_json(json, "t.json", 2, NULL, &err));
	cr_expect_lt(strlen(err->message), 200, "%s", err->message);
	cr_expect(strstr(err->message, "((((...\"") != NULL, "%s", err->message);
	g_error_free(err);
	cJSON_Delete(json);
	g_free(text);
	g_free(program);
	g_string_free(deep, TRUE);
}

Test(workload_errors, duplicate_task_names)
{
	expect_error("{\"name\": \"t\", \"tasks\": [{\"name\": \"a\", \"program\": "
		     "[{\"op\": \"yield\"}]}, {\"name\": \"a\", \"program\": [{\"op\": "
		     "\"yield\"}]}]}",
		     "t.json: $.tasks[1]: duplicate task name \"a\"");
}

Test(workload_errors, flags)
{
	expect_program_error("{\"op\": \"wait_flag\", \"flag\": \"go\"}",
			     "t.json: $: flag \"go\" is waited for but never set: the run would "
			     "never end");
	/* Set by another task: fine. */
	struct workload *w =
	    load_ok("{\"name\": \"t\", \"tasks\": [{\"name\": \"a\", \"program\": "
		    "[{\"op\": \"wait_flag\", \"flag\": \"go\"}]}, {\"name\": \"b\", "
		    "\"program\": [{\"op\": \"set_flag\", \"flag\": \"go\"}]}]}");
	cr_expect_eq(w->nr_flags, 1);
	workload_free(w);
	expect_program_error("{\"op\": \"set_flag\"}",
			     "t.json: $.tasks[0].program[0]: missing required key \"flag\"");
	/* A loop on a flag nobody sets would make no round: a typo, most likely. */
	expect_program_error(
	    "{\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1}, "
	    "{\"op\": \"access\", \"region\": \"data\", \"pattern\": \"random\", "
	    "\"pages\": 4, \"cycles\": 3, \"while_flag\": \"rnu\"}",
	    "t.json: $: flag \"rnu\" is an access's while_flag but never set: the loop would "
	    "make no round (did you mean \"run\"?)");
}

Test(workload_errors, phases)
{
	expect_program_error("{\"op\": \"phase\", \"name\": \"p\", \"action\": \"begin\"}",
			     "t.json: $: phase \"p\" has no \"end\" op");
	expect_program_error("{\"op\": \"phase\", \"name\": \"p\", \"action\": \"end\"}",
			     "t.json: $: phase \"p\" has no \"begin\" op");
	expect_program_error("{\"op\": \"phase\", \"name\": \"p\", \"action\": \"start\"}",
			     "t.json: $.tasks[0].program[0].action: expected one of \"begin\", "
			     "\"end\", got \"start\"");
}

Test(workload_errors, report)
{
	const char *ops = "{\"op\": \"phase\", \"name\": \"m\", \"action\": \"begin\"}, "
			  "{\"op\": \"phase\", \"name\": \"m\", \"action\": \"end\"}";
	char *text = with_program(ops);
	/* with_program() ends in "]}]}": put the report before the last '}'. */
	text[strlen(text) - 1] = '\0';
	char *with_report;

	with_report = g_strdup_printf("%s, \"report\": {\"summary\": \"{phase_mss} ms\"}}", text);
	expect_error(with_report, "t.json: $.report.summary: unknown placeholder {phase_mss} "
				  "(did you mean {phase_ms}?)");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"summary\": \"{x} ms\"}}", text);
	expect_error(with_report, "t.json: $.report.summary: unknown placeholder {x}");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"summary\": \"{op\"}}", text);
	expect_error(with_report, "t.json: $.report.summary: unclosed '{' in the summary template");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"phase\": \"n\"}}", text);
	expect_error(with_report, "t.json: $.report.phase: no phase named \"n\" (did you mean "
				  "\"m\"?)");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"op\": \"access\"}}", text);
	expect_error(with_report, "t.json: $.report.op: expected one of \"munmap\", \"mmap\", "
				  "\"mprotect\", \"madvise\", \"fork\", got \"access\"");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"summery\": \"\"}}", text);
	expect_error(with_report, "t.json: $.report: unknown key \"summery\" (did you mean "
				  "\"summary\"?)");
	g_free(with_report);

	with_report = g_strdup_printf("%s, \"report\": {\"op\": \"mprotect\", \"phase\": \"m\", "
				      "\"summary\": \"{threads} x {accesses}\"}}",
				      text);
	struct workload *w = load_ok(with_report);
	cr_expect_eq(w->report_op, OP_MPROTECT);
	cr_expect_eq(w->report_phase, 0);
	cr_expect_str_eq(w->summary, "{threads} x {accesses}");
	workload_free(w);
	g_free(with_report);
	g_free(text);
}

Test(workload, hugetlb_needs_2m_pages)
{
	expect_regions_error("{\"name\": \"h\", \"size\": \"2M\", \"hugetlb\": true}",
			     "t.json: $.regions[0].hugetlb: a hugetlb region needs \"page_size\": \"2M\"");
}

/* Many names of each kind: found, and duplicates refused, by their index
 * (loading 100 000 regions took 82 s when each was compared with every
 * other). */
Test(workload, many_names_resolve_through_the_index)
{
	enum { N = 3000 };
	GString *text = g_string_new("{\"name\": \"many\", \"params\": {");
	for (int i = 0; i < N; i++)
		g_string_append_printf(text, "%s\"p%d\": %d", i ? ", " : "", i, i);
	g_string_append(text, "}, \"regions\": [");
	for (int i = 0; i < N; i++)
		g_string_append_printf(text, "%s{\"name\": \"r%d\", \"size\": 4096}", i ? ", " : "",
				       i);
	g_string_append(text, "], \"tasks\": [{\"name\": \"t\", \"program\": [");
	for (int i = 0; i < N; i++)
		g_string_append_printf(
		    text,
		    "%s{\"op\": \"munmap\", \"region\": \"r%d\"}, "
		    "{\"op\": \"set_flag\", \"flag\": \"f%d\", \"value\": \"$p%d\"}",
		    i ? ", " : "", N - 1 - i, i, i);
	g_string_append(text, "]}]}");
	struct workload *w = load_ok(text->str);
	cr_expect_eq(w->nr_regions, N);
	cr_expect_eq(w->nr_flags, N);
	cr_expect_eq(w->groups[0].ops[0].region, N - 1);
	cr_expect_eq(w->groups[0].ops[2 * N - 2].region, 0);
	cr_expect_eq(w->groups[0].ops[2 * N - 1].flag, N - 1);
	cr_expect_str_eq(w->flag_names[N - 1], "f2999");
	cr_expect_null(w->flag_names[N]);
	int64_t v = 0;
	cr_expect(workload_param(w, "p2999", &v) && v == 2999);
	cr_expect_not(workload_param(w, "p3000", &v));
	workload_free(w);
	/* The last region named like the first. */
	char *dup = strstr(text->str, "\"r2999\", \"size\"");
	memcpy(dup, "\"r0\",   ", 8);
	GError *err = NULL;
	cr_assert_null(load_text(text->str, "t.json", CPUS, &err));
	cr_expect_str_eq(err->message, "t.json: $.regions[2999]: duplicate region name \"r0\"");
	g_clear_error(&err);
	g_string_free(text, TRUE);
}

/* A stop (a signal, the wall-time budget) ends loading with its error. */
Test(workload, stop_interrupts_loading)
{
	cJSON *json = config_parse_string("{\"name\": \"w\", " TASKS "}", "t.json", NULL);
	atomic_int cancel = 1;
	struct stop stop = stop_from_now(&cancel, 0);
	GError *err = NULL;
	cr_assert_null(workload_from_json(json, "t.json", CPUS, &stop, &err));
	cr_assert(g_error_matches(err, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED));
	g_clear_error(&err);
	cJSON_Delete(json);
}

/* The fork op: "count" is optional (1), an expression; other keys are refused. */
Test(workload_errors, fork_keys)
{
	struct workload *w =
	    program_ok("{\"op\": \"fork\"}, {\"op\": \"fork\", \"count\": \"$p\"}");
	cr_assert_eq(w->groups[0].ops[0].kind, OP_FORK);
	cr_assert_str_eq(expr_text(w->groups[0].ops[0].count), "1");
	cr_assert_str_eq(expr_text(w->groups[0].ops[1].count), "$p");
	cr_assert_eq(w->report_op, OP_FORK, "fork is the first syscall op: reported");
	workload_free(w);
	expect_program_error("{\"op\": \"fork\", \"cuont\": 2}",
			     "t.json: $.tasks[0].program[0]: unknown key \"cuont\" "
			     "(did you mean \"count\"?)");
	char *text = with_program("{\"op\": \"fork\", \"count\": \"$q\"}");
	GError *err = NULL;
	cr_assert_null(load_text(text, "t.json", CPUS, &err));
	cr_assert(g_str_has_prefix(err->message, "t.json: $.tasks[0].program[0].count: unknown "
						  "variable '$q'"),
		  "%s", err->message);
	g_error_free(err);
	g_free(text);
}
