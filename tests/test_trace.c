/*
 * Tests of the timeline (src/observe/trace.c): a tiny run against a golden file, and
 * on bigger runs the properties every trace must have: valid JSON, slices
 * that nest strictly on each track (Perfetto drops partly overlapping ones),
 * each IPI's flow from its send through its handler to its acknowledgement,
 * one instant per tlb:tlb_flush the counters saw, byte-identical repeats,
 * the window and event budget, and what streaming the file has to get
 * right (ties that only the slices' ends decide, a stream that cannot seek).
 *
 * The golden file: tests/data/trace-golden.json.  After a deliberate change
 * of the trace's content, regenerate it with
 *     TLBSIM_UPDATE_GOLDEN=1 build/tests/test_trace --filter 'trace/golden*'
 * and review the diff like code.
 */
#define _GNU_SOURCE /* open_memstream(), fopencookie() */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/observe/trace.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/config.h"

#define GOLDEN TLBSIM_TEST_DATA "/trace-golden.json"

/* One munmap of two pages on CPU 0 while a reader keeps the mm live on CPU 1. */
static const char *const tiny_workload =
	"{\"name\": \"trace-tiny\", \"description\": \"one munmap, one reader\","
	" \"regions\": ["
	"  {\"name\": \"big\", \"size\": \"16K\", \"populate\": \"all\"},"
	"  {\"name\": \"small\", \"chunks\": 1, \"chunk_size\": \"8K\", \"populate\": \"all\"}],"
	" \"tasks\": ["
	"  {\"name\": \"main\", \"count\": 1, \"cpu\": 0, \"program\": ["
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"compute\", \"cycles\": 3000},"
	"    {\"op\": \"munmap\", \"region\": \"small\", \"chunk\": 0},"
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	"  {\"name\": \"reader\", \"count\": 1, \"cpu\": 1, \"program\": ["
	"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"big\", \"pattern\": \"sequential\", \"pages\": 4,"
	"     \"while_flag\": \"run\", \"cycles\": 10}]}]}";

static const struct trace_options all_events = {.window_end_ns = UINT64_MAX};

/* Run and return the trace's text (g_free it); *@run keeps the results. */
static char *traced_run_sets(const char *topology, const char *policy, const char *const *sets,
			     const char *workload_json, const struct trace_options *options,
			     struct support_run *run)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct support_outputs outputs = {.trace = options, .trace_out = out};
	*run = support_run_outputs(topology, policy, sets, workload_json, &outputs);
	cr_assert_eq(fclose(out), 0);
	char *copy = g_strndup(text, len);
	free(text);
	return copy;
}

static char *traced_run(const char *topology, const char *policy, const char *workload_json,
			const struct trace_options *options, struct support_run *run)
{
	return traced_run_sets(topology, policy, NULL, workload_json, options, run);
}

/* A bundled workload's JSON with some parameters changed ("name=value"). */
static char *bundled_workload(const char *name, const char *const *params)
{
	GError *error = NULL;
	char *path = inputs_resolve(INPUT_WORKLOAD, name, &error);
	cr_assert_not_null(path, "%s", error ? error->message : "");
	cJSON *json = config_load_file(path, NULL, &error);
	cr_assert_not_null(json, "%s", error ? error->message : "");
	for (const char *const *p = params; p && *p; p++) {
		char **kv = g_strsplit(*p, "=", 2);
		char *key = g_strconcat("params.", kv[0], NULL);
		cr_assert(config_apply_set(json, key, kv[1], &error), "%s", error->message);
		g_free(key);
		g_strfreev(kv);
	}
	char *text = cJSON_PrintUnformatted(json);
	char *copy = g_strdup(text);
	cJSON_free(text);
	cJSON_Delete(json);
	g_free(path);
	return copy;
}

/* ---- reading a trace -------------------------------------------------------- */

static cJSON *parse_trace(const char *text)
{
	cJSON *json = cJSON_Parse(text);
	cr_assert_not_null(json, "not valid JSON near: %.80s", cJSON_GetErrorPtr());
	cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(json, "traceEvents")));
	cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(json, "otherData")));
	const cJSON *unit = cJSON_GetObjectItemCaseSensitive(json, "displayTimeUnit");
	cr_assert(cJSON_IsString(unit) && strcmp(unit->valuestring, "ns") == 0);
	return json;
}

static const cJSON *events_of(const cJSON *json)
{
	return cJSON_GetObjectItemCaseSensitive(json, "traceEvents");
}

static const char *str_of(const cJSON *event, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(event, key);
	return cJSON_IsString(item) ? item->valuestring : "";
}

static double num_of(const cJSON *event, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(event, key);
	cr_assert(cJSON_IsNumber(item), "no number \"%s\"", key);
	return item->valuedouble;
}

static bool has(const cJSON *event, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(event, key) != NULL;
}

static double arg_of(const cJSON *event, const char *key)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(event, "args");
	return num_of(args, key);
}

/* ts and dur are µs with three decimals: exact integers in ns. */
static int64_t ns_of(const cJSON *event, const char *key)
{
	return has(event, key) ? llround(num_of(event, key) * 1000) : 0;
}

static bool is(const cJSON *event, const char *ph, const char *name)
{
	return strcmp(str_of(event, "ph"), ph) == 0 && (!name || strcmp(str_of(event, "name"), name) == 0);
}

static unsigned count(const cJSON *json, const char *ph, const char *name)
{
	unsigned n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json))
		n += is(e, ph, name);
	return n;
}

/* The @nth (from 0) event with this phase and name, or NULL. */
static const cJSON *find(const cJSON *json, const char *ph, const char *name, unsigned nth)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json))
		if (is(e, ph, name) && nth-- == 0)
			return e;
	return NULL;
}

static int index_of(const cJSON *json, const cJSON *event)
{
	int i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (e == event)
			return i;
		i++;
	}
	return -1;
}

/* ---- properties every trace has --------------------------------------------- */

/* A slice as the file describes it: its begin event and where it ends. */
struct slice {
	const cJSON *begin;
	const char *name;
	int tid;
	int64_t start, end;
};

struct slices {
	GArray *all;          /* struct slice, in order of their begins */
	GHashTable *by_begin; /* begin event -> index + 1 */
};

static void slices_free(struct slices *s)
{
	g_array_free(s->all, TRUE);
	g_hash_table_destroy(s->by_begin);
}

static const struct slice *slice_of(const struct slices *s, const cJSON *begin)
{
	guint index = GPOINTER_TO_UINT(g_hash_table_lookup(s->by_begin, begin));
	cr_assert_gt(index, 0, "%s is no slice's begin", str_of(begin, "name"));
	return &g_array_index(s->all, struct slice, index - 1);
}

/* The @nth (from 0) slice named @name. */
static const struct slice *find_slice(const struct slices *s, const char *name, unsigned nth)
{
	for (unsigned i = 0; i < s->all->len; i++) {
		const struct slice *sl = &g_array_index(s->all, struct slice, i);
		if (strcmp(sl->name, name) == 0 && nth-- == 0)
			return sl;
	}
	cr_assert_fail("no slice %s", name);
	return NULL;
}

/*
 * Events come sorted by time, and each track's B/E events pair up like
 * brackets: every E closes the slice last opened on its track, under the same
 * name, and nothing is left open at the end.  That is strict nesting, as
 * Perfetto's slice tracker needs it.
 */
static struct slices expect_strict_nesting(const cJSON *json)
{
	struct slices s = {
		.all = g_array_new(FALSE, FALSE, sizeof(struct slice)),
		.by_begin = g_hash_table_new(g_direct_hash, g_direct_equal),
	};
	GHashTable *stacks = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
						   (GDestroyNotify)g_array_unref);
	int64_t last_ts = -1;
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (is(e, "M", NULL))
			continue;
		int64_t ts = ns_of(e, "ts");
		cr_assert_geq(ts, last_ts, "events out of order at %s ts %" G_GINT64_FORMAT,
			      str_of(e, "name"), ts);
		last_ts = ts;
		cr_assert(!has(e, "dur"), "%s: slices are B/E pairs", str_of(e, "name"));
		if (!is(e, "B", NULL) && !is(e, "E", NULL))
			continue;
		gpointer tid = GINT_TO_POINTER((int)num_of(e, "tid"));
		GArray *stack = g_hash_table_lookup(stacks, tid);
		if (!stack) {
			stack = g_array_new(FALSE, FALSE, sizeof(guint));
			g_hash_table_insert(stacks, tid, stack);
		}
		if (is(e, "B", NULL)) {
			struct slice sl = {.begin = e, .name = str_of(e, "name"),
					   .tid = GPOINTER_TO_INT(tid), .start = ts, .end = -1};
			g_array_append_val(s.all, sl);
			guint index = s.all->len;
			g_hash_table_insert(s.by_begin, (gpointer)e, GUINT_TO_POINTER(index));
			g_array_append_val(stack, index);
			continue;
		}
		cr_assert_gt(stack->len, 0, "tid %d: %s ends at %" G_GINT64_FORMAT
			     " with nothing open", GPOINTER_TO_INT(tid), str_of(e, "name"), ts);
		guint top = g_array_index(stack, guint, stack->len - 1);
		struct slice *open = &g_array_index(s.all, struct slice, top - 1);
		cr_assert_str_eq(str_of(e, "name"), open->name,
				 "tid %d at %" G_GINT64_FORMAT ": %s ends while %s (from %"
				 G_GINT64_FORMAT ") is open inside it", GPOINTER_TO_INT(tid), ts,
				 str_of(e, "name"), open->name, open->start);
		open->end = ts;
		g_array_set_size(stack, stack->len - 1);
	}
	GHashTableIter iter;
	gpointer key, value;
	g_hash_table_iter_init(&iter, stacks);
	while (g_hash_table_iter_next(&iter, &key, &value))
		cr_assert_eq(((GArray *)value)->len, 0, "tid %d: slices left open",
			     GPOINTER_TO_INT(key));
	g_hash_table_destroy(stacks);
	return s;
}

struct flow {
	const cJSON *out, *step, *in;
	unsigned nr_out, nr_step, nr_in;
};

static void collect_flows(const cJSON *json, GHashTable *flows)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (!has(e, "bind_id"))
			continue;
		cr_assert(is(e, "B", NULL), "%s: flows bind to slice begins", str_of(e, "name"));
		gint64 *id = g_new(gint64, 1);
		*id = (gint64)num_of(e, "bind_id");
		struct flow *f = g_hash_table_lookup(flows, id);
		if (!f) {
			f = g_new0(struct flow, 1);
			g_hash_table_insert(flows, id, f);
		} else {
			g_free(id);
		}
		bool in = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "flow_in"));
		bool out = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "flow_out"));
		if (in && out) {
			f->step = e;
			f->nr_step++;
		} else if (out) {
			f->out = e;
			f->nr_out++;
		} else {
			cr_assert(in, "bind_id without a direction");
			f->in = e;
			f->nr_in++;
		}
	}
}

/*
 * Every flow runs from a "send IPI" on the initiator through the handler's
 * slice on the target it names back to an "ack" on the initiator, naming
 * that target.  Returns the number of flows.
 */
static unsigned expect_complete_flows(const cJSON *json, const struct slices *slices,
				      const char *handler)
{
	GHashTable *flows = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	collect_flows(json, flows);
	GHashTableIter iter;
	gpointer key, value;
	g_hash_table_iter_init(&iter, flows);
	while (g_hash_table_iter_next(&iter, &key, &value)) {
		const struct flow *f = value;
		gint64 id = *(gint64 *)key;
		cr_assert(f->nr_out == 1 && f->nr_step == 1 && f->nr_in == 1,
			  "flow %" G_GINT64_FORMAT ": %u out, %u through, %u in", id, f->nr_out,
			  f->nr_step, f->nr_in);
		cr_assert(is(f->out, "B", "send IPI") && is(f->step, "B", handler) &&
			  is(f->in, "B", "ack"), "flow %" G_GINT64_FORMAT ": %s -> %s -> %s", id,
			  str_of(f->out, "name"), str_of(f->step, "name"), str_of(f->in, "name"));
		double initiator = num_of(f->out, "tid"), target = num_of(f->step, "tid");
		cr_assert_eq(num_of(f->in, "tid"), initiator);
		cr_assert_eq(arg_of(f->out, "to") + 1, target, "tids are CPU + 1");
		cr_assert_eq(arg_of(f->step, "from") + 1, initiator);
		cr_assert_eq(arg_of(f->in, "from") + 1, target);
		/* The acknowledgement is seen after the handler took the request. */
		cr_assert_geq(slice_of(slices, f->in)->end, slice_of(slices, f->step)->end);
	}
	unsigned n = g_hash_table_size(flows);
	g_hash_table_destroy(flows);
	return n;
}

/* One tlb:tlb_flush instant per event the counters counted. */
static void expect_tracepoints_counted(const cJSON *json, const struct sim_result *r)
{
	unsigned instants = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (!is(e, "i", NULL) || strcmp(str_of(e, "s"), "t") != 0)
			continue;
		instants++;
		cr_assert(g_str_has_prefix(str_of(e, "name"), "TLB_"), "%s", str_of(e, "name"));
		cr_assert_geq(arg_of(e, "pages"), -1);
	}
	cr_expect_eq(instants, r->total.tlb_flush_events);
}

static void expect_valid(const char *text, const struct sim_result *r, const char *handler,
			 unsigned expected_flows)
{
	cJSON *json = parse_trace(text);
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(json, "otherData");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(other, "truncated")));
	struct slices slices = expect_strict_nesting(json);
	unsigned flows = expect_complete_flows(json, &slices, handler);
	cr_expect_eq(flows, expected_flows);
	expect_tracepoints_counted(json, r);
	slices_free(&slices);
	cJSON_Delete(json);
}

/* ---- the golden run ----------------------------------------------------------- */

Test(trace, golden_tiny_munmap)
{
	struct support_run run;
	char *text = traced_run("tiny-2cpu.json", "linux-4.5", tiny_workload, &all_events, &run);
	if (getenv("TLBSIM_UPDATE_GOLDEN")) {
		GError *error = NULL;
		cr_assert(g_file_set_contents(GOLDEN, text, -1, &error), "%s", error->message);
		cr_log_warn("rewrote %s", GOLDEN);
	}
	char *golden = NULL;
	cr_assert(g_file_get_contents(GOLDEN, &golden, NULL, NULL), "cannot read %s", GOLDEN);
	cr_expect_str_eq(text, golden,
			 "the trace differs from %s; if the change is meant, regenerate it with "
			 "TLBSIM_UPDATE_GOLDEN=1 (see the top of this file)", GOLDEN);
	expect_valid(text, run.result, "flush_tlb_func", 1);
	g_free(golden);
	g_free(text);
	support_run_free(&run);
}

/* What the golden file shows, in the order it shows it. */
Test(trace, golden_tiny_munmap_story)
{
	struct support_run run;
	char *text = traced_run("tiny-2cpu.json", "linux-4.5", tiny_workload, &all_events, &run);
	cJSON *json = parse_trace(text);
	struct slices s = expect_strict_nesting(json);

	const cJSON *process = find(json, "M", "process_name", 0);
	cr_assert_not_null(process);
	const char *pname = str_of(cJSON_GetObjectItemCaseSensitive(process, "args"), "name");
	cr_expect(strstr(pname, "tiny-2cpu") && strstr(pname, "trace-tiny") &&
		  strstr(pname, "linux-4.5"), "%s", pname);
	const cJSON *cpu1 = find(json, "M", "thread_name", 1);
	cr_assert_eq(num_of(cpu1, "tid"), 2);
	cr_expect_str_eq(str_of(cJSON_GetObjectItemCaseSensitive(cpu1, "args"), "name"),
			 "cpu 1 (socket 0 core 1 thread 0)");
	cr_expect_eq(count(json, "M", "thread_sort_index"), 2);

	/* CPU 0: the munmap, its local flush, the call with one send and one ack. */
	const struct slice *munmap = find_slice(&s, "munmap", 0);
	const struct slice *local = find_slice(&s, "flush_tlb_func (local)", 0);
	const struct slice *call = find_slice(&s, "smp_call_function_many", 0);
	const struct slice *send = find_slice(&s, "send IPI", 0);
	const struct slice *ack = find_slice(&s, "ack", 0);
	/* CPU 1: the interrupt, the handler inside it, the reader around it. */
	const struct slice *irq = find_slice(&s, "call_function_interrupt", 0);
	const struct slice *handler = find_slice(&s, "flush_tlb_func", 0);
	const cJSON *shootdown = find(json, "i", "TLB_REMOTE_SHOOTDOWN", 0);
	cr_assert_not_null(shootdown);
	cr_expect_eq(count(json, "B", "munmap"), 1);
	cr_expect_eq(count(json, "B", "send IPI"), 1);
	cr_expect_str_eq(str_of(cJSON_GetObjectItemCaseSensitive(munmap->begin, "args"), "range"),
			 "0x100400000-0x100402000");
	cr_expect_eq(arg_of(munmap->begin, "pages"), 2);
	cr_expect_eq(arg_of(shootdown, "pages"), 2);
	cr_expect_eq(arg_of(find(json, "i", "TLB_REMOTE_SEND_IPI", 0), "pages"), 2);
	cr_expect_eq(arg_of(find(json, "i", "TLB_LOCAL_MM_SHOOTDOWN", 0), "pages"), 2);
	const struct slice *story[] = {munmap, local, call, send, irq, handler, ack};
	for (size_t i = 1; i < G_N_ELEMENTS(story); i++)
		cr_expect_lt(index_of(json, story[i - 1]->begin), index_of(json, story[i]->begin),
			     "%s begins after %s", story[i - 1]->name, story[i]->name);
	cr_expect_eq(munmap->tid, 1);
	cr_expect_eq(irq->tid, 2);
	cr_expect_eq(num_of(handler->begin, "bind_id"), num_of(send->begin, "bind_id"));
	cr_expect_eq(num_of(ack->begin, "bind_id"), num_of(send->begin, "bind_id"));
	/* The handler lies inside the interrupt; the ack ends the wait. */
	cr_expect(handler->start >= irq->start && handler->end <= irq->end);
	cr_expect_eq(ack->end, call->end);
	/* The reader's user work stops for the interrupt and goes on after it. */
	cr_assert_eq(count(json, "B", "reader 0"), 2);
	cr_expect_eq(find_slice(&s, "reader 0", 0)->end, irq->start);
	cr_expect_eq(find_slice(&s, "reader 0", 1)->start, irq->end);
	/* 1 GHz: cycles are nanoseconds.  The munmap lasts its op latency. */
	cr_expect_eq(munmap->end - munmap->start,
		     (int64_t)histogram_min(run.result->op_cycles));
	slices_free(&s);
	cJSON_Delete(json);
	g_free(text);
	support_run_free(&run);
}

/* ---- bigger runs ------------------------------------------------------------------ */

/*
 * The munmap harness, 4 MiB: 128 munmaps of 8 pages with 12 readers on 8
 * CPUs.  Short scheduler slices keep the crowding (the munmap thread and its
 * readers take turns on CPU 0) in a millisecond instead of twelve.
 */
Test(trace, munmap_nests_and_flows)
{
	const char *params[] = {"file_size=\"4M\"", "tail_ms=1", NULL};
	const char *short_slices[] = {"sched.latency_ns=200000", "sched.min_granularity_ns=50000",
				      NULL};
	char *workload = bundled_workload("munmap", params);
	struct support_run run;
	char *text = traced_run_sets("haswell-i7", "linux-4.5", short_slices, workload, &all_events,
				     &run);
	/* Every other CPU runs the mm: 7 IPIs per munmap. */
	expect_valid(text, run.result, "flush_tlb_func", 128 * 7);
	cJSON *json = parse_trace(text);
	cr_expect_eq(count(json, "B", "munmap"), 128);
	cr_expect_eq(count(json, "B", "call_function_interrupt"), run.result->total.ipis_received);
	cr_expect_gt(count(json, "C", "cpu 1 TLB"), 0);
	cJSON_Delete(json);
	g_free(text);
	g_free(workload);
	support_run_free(&run);
}

/*
 * A munmap that waits for mmap_lock (cpu 0's munmap holds it) sleeps inside
 * the call: cpu 1's munmap slice ends at the switch to idle, after the
 * syscall entry, and opens again when the release wakes it, so there are two
 * on its track, both strictly nested.
 */
Test(trace, a_syscall_slept_in_reopens_its_slice)
{
	const char *w =
		"{\"name\": \"sleeper\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": 16384}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"r\", \"chunk\": 0, \"pattern\": \"sequential\","
		"     \"pages\": 4, \"rounds\": 1, \"write\": 1, \"cycles\": 10},"
		"    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 0}]},"
		"  {\"name\": \"faulter\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 1000},"
		"    {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 1}]}]}";
	struct support_run run;
	char *text = traced_run("tiny-2cpu.json", "linux-4.5", w, &all_events, &run);
	cr_assert_eq(CPU(run, 1, syscalls), 1);
	cr_assert_eq(CPU(run, 1, mmap_lock_acquisitions), 1);
	cJSON *json = parse_trace(text);
	struct slices slices = expect_strict_nesting(json);
	unsigned on_cpu1 = 0;
	for (unsigned n = 0; find(json, "B", "munmap", n); n++)
		on_cpu1 += num_of(find(json, "B", "munmap", n), "tid") == 2;
	cr_expect_eq(on_cpu1, 2, "entry and resume after the sleep");
	slices_free(&slices);
	cJSON_Delete(json);
	g_free(text);
	support_run_free(&run);
}

/*
 * Every thread an initiator (will-it-scale tlb_flush2 on 16 CPUs): shootdowns
 * cross, handlers interrupt syscalls whose kernel work the model computed
 * ahead, and 6.8 flushes locally while the IPIs fly (15 iterations in the
 * sanitizer build, 40 otherwise).
 */
Test(trace, crossing_shootdowns_nest_and_flow)
{
	const char *params[] = {support_small() ? "iterations=15" : "iterations=40", "warmup=5",
				NULL};
	char *workload = bundled_workload("tlb_flush2", params);
	const char *policies[] = {"linux-4.5", "linux-6.8", "linux-6.14"};
	for (size_t i = 0; i < G_N_ELEMENTS(policies); i++) {
		struct support_run run;
		char *text = traced_run("nehalem-ep-2s", policies[i], workload, &all_events, &run);
		expect_valid(text, run.result, "flush_tlb_func", (unsigned)run.result->total.ipis_sent);
		g_free(text);
		support_run_free(&run);
	}
	g_free(workload);
}

/* riscv names its handlers after the riscv kernel and flushes through SBI. */
Test(trace, riscv_sbi_nests_and_flows)
{
	const char *params[] = {"iterations=30", "warmup=5", NULL};
	char *workload = bundled_workload("tlb_flush2", params);
	struct support_run run;
	char *text = traced_run("sifive-unmatched", "riscv-6.8", workload, &all_events, &run);
	expect_valid(text, run.result, "sbi_tlb_flush (M-mode)",
		     (unsigned)run.result->total.ipis_sent);
	g_free(text);
	support_run_free(&run);
}

/*
 * Every way a machine flushes: IPIs with lazy-TLB eras and PCIDs, SMT de-dup,
 * INVLPGB broadcasts, arm64 TLBI broadcasts (no IPI at all), riscv IPIs.
 */
Test(trace, every_flush_mechanism_nests_and_flows)
{
	static const struct {
		const char *topology, *policy, *handler;
	} cases[] = {
		{"skylake-sp-2s-48", "linux-4.19", "flush_tlb_func"},
		{"haswell-i7", "linux-4.5-smt-dedup", "flush_tlb_func"},
		{"amd-milan-36c", "linux-6.15", "flush_tlb_func"},
		{"arm64-n1", "arm64-6.5", "none"},
		{"tiny-riscv-ipi.json", "riscv-6.8", "ipi_flush_tlb_range_asid"},
	};
	const char *params[] = {"iterations=12", "warmup=2", "threads=8", NULL};
	char *workload = bundled_workload("tlb_flush2", params);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct support_run run;
		char *text = traced_run(cases[i].topology, cases[i].policy, workload, &all_events,
					&run);
		expect_valid(text, run.result, cases[i].handler,
			     (unsigned)run.result->total.ipis_sent);
		g_free(text);
		support_run_free(&run);
	}
	g_free(workload);
}

Test(trace, same_run_same_bytes)
{
	const char *params[] = {"file_size=\"2M\"", "tail_ms=1", "threads=6", NULL};
	char *workload = bundled_workload("munmap", params);
	struct support_run a, b;
	char *first = traced_run("haswell-i7", "linux-4.5", workload, &all_events, &a);
	char *second = traced_run("haswell-i7", "linux-4.5", workload, &all_events, &b);
	cr_expect(strcmp(first, second) == 0, "two runs wrote different traces");
	cr_expect_eq(a.result->events, b.result->events);
	g_free(first);
	g_free(second);
	g_free(workload);
	support_run_free(&a);
	support_run_free(&b);
}

/* Tracing observes: the results are those of a run without it. */
Test(trace, tracing_changes_no_result)
{
	const char *params[] = {"iterations=40", "warmup=5", NULL};
	char *workload = bundled_workload("tlb_flush2", params);
	struct support_run plain = support_run("nehalem-ep-2s", "linux-6.8", NULL, workload), traced;
	char *text = traced_run("nehalem-ep-2s", "linux-6.8", workload, &all_events, &traced);
	cr_expect_eq(plain.result->events, traced.result->events);
	cr_expect_eq(plain.result->sim_cycles, traced.result->sim_cycles);
	cr_expect(memcmp(&plain.result->total, &traced.result->total, sizeof(struct counters)) == 0);
	g_free(text);
	g_free(workload);
	support_run_free(&plain);
	support_run_free(&traced);
}

/* ---- streaming ------------------------------------------------------------------------ */

/*
 * Idle CPUs that run nothing from the start to the end: their idle slices tie
 * in everything but recording order (the end closes them in CPU order), so
 * they begin in CPU order and end in the reverse.  The file is written while
 * the run goes on: at time 0 their order is not known yet (a slice that ends
 * earlier would sort after a longer one), and their begins are filled in at
 * the end.
 */
Test(trace, slices_tied_until_they_end_keep_recording_order)
{
	struct support_run run;
	char *text = traced_run("haswell-i7", "linux-4.5", tiny_workload, &all_events, &run);
	cJSON *json = parse_trace(text);
	struct slices s = expect_strict_nesting(json);
	GArray *begins = g_array_new(FALSE, FALSE, sizeof(int)),
	       *ends = g_array_new(FALSE, FALSE, sizeof(int));
	int64_t last = 0;
	for (unsigned i = 0; i < s.all->len; i++)
		last = MAX(last, g_array_index(s.all, struct slice, i).end);
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (!is(e, "B", "idle") && !is(e, "E", "idle"))
			continue;
		int tid = (int)num_of(e, "tid");
		if (is(e, "B", NULL) && ns_of(e, "ts") == 0 && slice_of(&s, e)->end == last)
			g_array_append_val(begins, tid);
		else if (is(e, "E", NULL) && ns_of(e, "ts") == last && tid > 2)
			g_array_append_val(ends, tid);
	}
	/* CPUs 2 to 7 (tids 3 to 8): the tasks run on CPUs 0 and 1. */
	cr_assert_eq(begins->len, 6);
	cr_assert_eq(ends->len, 6);
	for (unsigned i = 0; i < 6; i++) {
		cr_expect_eq(g_array_index(begins, int, i), 3 + (int)i);
		cr_expect_eq(g_array_index(ends, int, i), 8 - (int)i);
	}
	g_array_free(begins, TRUE);
	g_array_free(ends, TRUE);
	slices_free(&s);
	cJSON_Delete(json);
	g_free(text);
	support_run_free(&run);
}

static ssize_t append_text(void *cookie, const char *buf, size_t size)
{
	g_string_append_len(cookie, buf, (gssize)size);
	return (ssize_t)size;
}

/* A stream that cannot seek (a pipe) gets the same bytes: the trace goes
 * through a temporary file (begins filled in later need seeks). */
Test(trace, unseekable_stream_gets_the_same_bytes)
{
	struct support_run a, b;
	char *seekable = traced_run("haswell-i7", "linux-4.5", tiny_workload, &all_events, &a);
	GString *text = g_string_new(NULL);
	FILE *out = fopencookie(text, "w", (cookie_io_functions_t){.write = append_text});
	cr_assert_not_null(out);
	cr_assert_lt(ftello(out), 0, "the stream should not seek");
	struct support_outputs outputs = {.trace = &all_events, .trace_out = out};
	b = support_run_outputs("haswell-i7", "linux-4.5", NULL, tiny_workload, &outputs);
	cr_assert_eq(fclose(out), 0);
	cr_expect_str_eq(text->str, seekable);
	g_string_free(text, TRUE);
	g_free(seekable);
	support_run_free(&a);
	support_run_free(&b);
}

/* ---- window and budget --------------------------------------------------------------- */

Test(trace, window_keeps_only_its_events)
{
	const char *params[] = {"file_size=\"4M\"", "tail_ms=1", "threads=6", NULL};
	char *workload = bundled_workload("munmap", params);
	struct trace_options window = {.window_start_ns = 200000, .window_end_ns = 300000};
	struct support_run run;
	char *text = traced_run("haswell-i7", "linux-4.5", workload, &window, &run);
	cJSON *json = parse_trace(text);
	struct slices s = expect_strict_nesting(json);
	unsigned events = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json)) {
		if (is(e, "M", NULL))
			continue;
		events++;
		cr_assert_geq(ns_of(e, "ts"), 200000, "%s", str_of(e, "name"));
		cr_assert_leq(ns_of(e, "ts"), 300000, "%s", str_of(e, "name"));
	}
	cr_expect_gt(events, 100);
	cr_expect_gt(count(json, "B", "munmap"), 0);
	cr_expect_lt(count(json, "B", "munmap"), 128);
	cr_expect_eq(count(json, "M", "thread_name"), 8);
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(json, "otherData");
	cr_expect_eq(num_of(other, "window_start_ns"), 200000);
	cr_expect_eq(num_of(other, "window_end_ns"), 300000);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(other, "truncated")));
	slices_free(&s);
	cJSON_Delete(json);
	g_free(text);
	g_free(workload);
	support_run_free(&run);
}

Test(trace, max_events_cuts_and_says_so)
{
	const char *params[] = {"file_size=\"4M\"", "tail_ms=1", "threads=6", NULL};
	char *workload = bundled_workload("munmap", params);
	struct trace_options budget = {.window_end_ns = UINT64_MAX, .max_events = 300};
	struct support_run run;
	char *text = traced_run("haswell-i7", "linux-4.5", workload, &budget, &run);
	cJSON *json = parse_trace(text);
	struct slices s = expect_strict_nesting(json);
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(json, "otherData");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(other, "truncated")));
	cr_expect_eq(num_of(other, "max_events"), 300);
	const cJSON *cut = find(json, "i", "trace cut here", 0);
	cr_assert_not_null(cut);
	cr_expect_str_eq(str_of(cut, "s"), "g");
	/* Nothing after the cut: the budget (a slice counts once), and the cut
	 * marker. */
	const cJSON *e;
	cJSON_ArrayForEach(e, events_of(json))
		cr_assert_leq(ns_of(e, "ts"), ns_of(cut, "ts"), "%s", str_of(e, "name"));
	unsigned n = cJSON_GetArraySize(events_of(json)) - count(json, "M", NULL) -
		     count(json, "E", NULL);
	cr_expect_leq(n, 300 + 1, "%u events", n);
	cr_expect_gt(n, 250);
	cr_expect_eq(s.all->len, count(json, "E", NULL));
	slices_free(&s);
	cJSON_Delete(json);
	g_free(text);
	g_free(workload);
	support_run_free(&run);
}
