/*
 * The workload interpreter (src/workload/interp.c): above all, that running memory
 * accesses ahead of the event queue (with SMT siblings merged inline) gives
 * exactly the result of stepping one access per event.
 */
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "tlbsim/sim/inputs.h"
#include "tlbsim/sim/sim.h"
#include "tlbsim/util/rng.h"
#include "tlbsim/workload/interp.h"
#include "support.h"

static struct sim_result *run(const struct inputs *in, bool run_ahead, uint64_t seed)
{
	GError *error = NULL;
	struct sim_input input = {
		.topology = in->topology,
		.workload = in->workload,
		.policy = in->policy,
		.workload_file = in->paths[INPUT_WORKLOAD],
		.seed = seed,
		.run_ahead = run_ahead,
	};
	struct sim_result *r = sim_run(&input, &error);
	cr_assert_not_null(r, "%s", error ? error->message : "");
	return r;
}

static void load(struct inputs *in, const char *topology, const char *workload,
		 const char *policy, const char *const *sets)
{
	GError *error = NULL;
	struct inputs_request req = {.names = {topology, workload, policy}, .sets = sets};
	cr_assert(inputs_load(&req, in, &error), "%s", error ? error->message : "");
}

static void assert_same(const struct sim_result *a, const struct sim_result *b)
{
	cr_assert_eq(a->nr_cpus, b->nr_cpus);
	for (unsigned c = 0; c < a->nr_cpus; c++)
		for (unsigned i = 0; i < counters_count(); i++)
			cr_assert_eq(counters_get(&a->per_cpu[c], i), counters_get(&b->per_cpu[c], i),
				     "cpu %u counter %s: %lu vs %lu", c, counters_names[i],
				     (unsigned long)counters_get(&a->per_cpu[c], i),
				     (unsigned long)counters_get(&b->per_cpu[c], i));
	cr_assert_eq(a->sim_cycles, b->sim_cycles);
	cr_assert_eq(a->phase_cycles, b->phase_cycles);
	cr_assert_eq(histogram_count(a->op_cycles), histogram_count(b->op_cycles));
	cr_assert_eq(histogram_fingerprint(a->op_cycles), histogram_fingerprint(b->op_cycles),
		     "the calls' latencies differ");
	cr_assert_eq(a->round_accesses, b->round_accesses);
}

static void check_identity(const char *topology, const char *workload, const char *policy,
			   const char *const *sets, uint64_t seed)
{
	struct inputs in;
	load(&in, topology, workload, policy, sets);
	struct sim_result *ahead = run(&in, true, seed);
	struct sim_result *step = run(&in, false, seed);
	assert_same(ahead, step);
	/* Run-ahead must actually save events, or the test proves nothing. */
	/* 2.5x: the fault-heavy tiny case saves least (2.6x since its faults
	 * wait for the munmaps' mmap_lock: fewer accesses between events). */
	cr_assert_lt(ahead->events * 5 / 2, step->events, "run-ahead %lu events, stepping %lu",
		     (unsigned long)ahead->events, (unsigned long)step->events);
	sim_result_free(ahead);
	sim_result_free(step);
	inputs_clear(&in);
}

/*
 * The munmap harness, scaled to 256 munmaps (64 in the sanitizer build):
 * SMT siblings both reading, time-sharing, IPIs, lazy CPUs.  Short CFS slices
 * keep the 16 readers on 8 CPUs switching often in a short run (and a 1 ms
 * tail), so that stepping, one access per event, stays affordable.
 */
static const char *const munmap_full[] = {
	"workload.file_size=64M", "workload.pages_per_munmap=64", "workload.threads=16",
	"workload.tail_ms=1", "policy.sched.latency_ns=200000",
	"policy.sched.min_granularity_ns=50000", NULL};
static const char *const munmap_shrunk[] = {
	"workload.file_size=16M", "workload.pages_per_munmap=64", "workload.threads=16",
	"workload.tail_ms=1", "policy.sched.latency_ns=200000",
	"policy.sched.min_granularity_ns=50000", NULL};
#define munmap_small (support_small() ? munmap_shrunk : munmap_full)

Test(interp, run_ahead_identity_munmap_harness)
{
	check_identity("haswell-i7", "munmap", "linux-4.5", munmap_small, 1);
	check_identity("haswell-i7", "munmap", "linux-4.5", munmap_small, 7);
}

Test(interp, run_ahead_identity_with_thread_scoped_smt_and_dedup)
{
	check_identity("haswell-i7-smt-thread", "munmap", "linux-4.5-smt-dedup", munmap_small, 3);
}

Test(interp, run_ahead_identity_writes_with_page_faults)
{
	/* Writes to a region nobody populated: every first touch faults. */
	check_identity(TLBSIM_TEST_DATA "/tiny-smt.json", TLBSIM_TEST_DATA "/interp-faults.json",
		       "linux-4.5", NULL, 5);
}

/*
 * munmap/mmap cycles of one chunk (the first round unmaps the layout's
 * mapping), each followed by write faults and its SMT sibling's read faults,
 * next to a spinner and a writer of the neighbouring chunk.  Seed 1 places the
 * chunks so that every munmap frees a page-table page (a full flush each: the
 * pages touched span fewer than linux-4.5's 33), seed 2 so that none does.
 */
static const char *const remap_topology = TLBSIM_TEST_DATA "/tiny-smt.json";
static const char *const remap_workload = TLBSIM_TEST_DATA "/interp-remap.json";

static uint64_t remap_full_flushes(uint64_t seed)
{
	struct inputs in;
	load(&in, remap_topology, remap_workload, "linux-4.5", NULL);
	struct sim_result *r = run(&in, true, seed);
	cr_assert_eq(r->total.syscalls, 6);
	cr_assert_eq(r->total.stale_hits + r->total.stale_pwc, 0);
	uint64_t whole = r->per_cpu[0].nr_tlb_local_flush_all;
	sim_result_free(r);
	inputs_clear(&in);
	return whole;
}

Test(interp, run_ahead_identity_munmap_mmap_cycles)
{
	cr_expect_eq(remap_full_flushes(1), 3);
	cr_expect_eq(remap_full_flushes(2), 0);
	check_identity(remap_topology, remap_workload, "linux-4.5", NULL, 1);
	check_identity(remap_topology, remap_workload, "linux-4.5", NULL, 2);
}

Test(interp, seeds_pick_different_pages)
{
	struct inputs in;
	load(&in, "haswell-i7", "munmap", "linux-4.5", munmap_small);
	struct sim_result *a = run(&in, true, 1);
	struct sim_result *b = run(&in, true, 2);
	cr_assert_neq(a->total.tlb_misses, b->total.tlb_misses);
	cr_assert_eq(a->total.nr_tlb_remote_flush, b->total.nr_tlb_remote_flush,
		     "the munmap sequence itself does not depend on the seed");
	sim_result_free(a);
	sim_result_free(b);
	inputs_clear(&in);
}

/*
 * Placement "aslr": 8 chunks of 64 pages (one 2 MiB span in all), unmapped
 * from the top down under linux-4.5 (ceiling 33).  Aligned, each munmap
 * flushes its one present page.  At an offset of o pages into a span, the
 * chunk across the span boundary frees the upper page-table page, and
 * pte_free_tlb() widens its range to the boundary (65 - o % 64 pages); the
 * lowest chunk frees the lower one, widened down to that span's start
 * (o + 1 pages); when the lowest chunk is the one across, it frees both (513
 * pages).  Ranges over 33 pages are flushed whole.
 */
static const char aslr_chunks[] =
	"{\"name\": \"aslr\", \"regions\": [{\"name\": \"small\", \"chunks\": 8, "
	"\"chunk_size\": \"256K\", \"populate\": \"first\", \"placement\": \"%s\"}], "
	"\"tasks\": [{\"name\": \"main\", \"program\": [{\"op\": \"loop\", \"count\": 8, "
	"\"var\": \"i\", \"body\": [{\"op\": \"munmap\", \"region\": \"small\", "
	"\"chunk\": \"$i\"}]}]}]}";

static struct sim_result *run_chunks(const char *placement, uint64_t seed)
{
	char *path = NULL;
	int fd = g_file_open_tmp("tlbsim-aslr-XXXXXX.json", &path, NULL);
	cr_assert_geq(fd, 0);
	char *json = g_strdup_printf(aslr_chunks, placement);
	cr_assert(g_file_set_contents(path, json, -1, NULL));
	close(fd);
	struct inputs in;
	load(&in, TLBSIM_TEST_DATA "/tiny-2cpu.json", path, "linux-4.5", NULL);
	struct sim_result *r = run(&in, true, seed);
	inputs_clear(&in);
	g_unlink(path);
	g_free(path);
	g_free(json);
	return r;
}

static void add_range(uint64_t pages, uint64_t *whole, uint64_t *one)
{
	if (pages > 33)
		(*whole)++;
	else
		*one += pages;
}

Test(interp, aslr_placement_decides_which_munmaps_flush_whole)
{
	unsigned offsets_seen = 0, whole_seen[3] = {0};
	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct rng rng;
		rng_seed_stream(&rng, seed, INTERP_LAYOUT_STREAM + 0);
		uint64_t o = rng_below(&rng, 512);
		uint64_t whole = 0, one = 0;
		if (o == 0) {
			one = 8; /* one span: only the lowest chunk frees a table, at itself */
		} else if (o > 448) {
			add_range(513, &whole, &one); /* the lowest chunk is across: both tables */
			one += 7;
		} else {
			add_range(o % 64 ? 65 - o % 64 : 1, &whole, &one);
			add_range(o + 1, &whole, &one);
			one += 6;
		}
		struct sim_result *r = run_chunks("aslr", seed);
		cr_expect_eq(r->total.nr_tlb_local_flush_all, whole, "seed %lu, offset %lu pages",
			     (unsigned long)seed, (unsigned long)o);
		cr_expect_eq(r->total.nr_tlb_local_flush_one, one, "seed %lu, offset %lu pages",
			     (unsigned long)seed, (unsigned long)o);
		struct sim_result *again = run_chunks("aslr", seed);
		assert_same(r, again);
		offsets_seen += o != 0;
		whole_seen[whole]++;
		sim_result_free(again);
		sim_result_free(r);

		struct sim_result *aligned = run_chunks("aligned", seed);
		cr_expect_eq(aligned->total.nr_tlb_local_flush_all, 0);
		cr_expect_eq(aligned->total.nr_tlb_local_flush_one, 8);
		sim_result_free(aligned);
	}
	/* The seeds must exercise both outcomes, or the test proves little. */
	cr_assert_gt(offsets_seen, 20);
	cr_assert_gt(whole_seen[1], 0);
	cr_assert_gt(whole_seen[2], 0);
}

/*
 * A task reads its own flag store at once (store forwarding), not a line
 * transfer later as the other cores do: it loops on a flag it just set, and
 * a wait for the value it just overwrote never ends.
 */
Test(interp, a_task_sees_its_own_flag_store_at_once)
{
	struct support_run r = support_run(
	    "tiny-2cpu.json", "linux-4.5", NULL,
	    "{\"name\": \"own\", \"regions\": [{\"name\": \"r\", \"size\": \"16K\", "
	    "\"populate\": \"all\"}], \"tasks\": [{\"name\": \"t\", \"program\": ["
	    "  {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	    "  {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", \"pages\": 4,"
	    "   \"rounds\": 3, \"while_flag\": \"run\", \"cycles\": 10},"
	    "  {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]}]}");
	cr_expect_eq(r.result->total.accesses, 12);
	support_run_free(&r);

	int code = 0;
	char *msg = support_run_error(
	    "tiny-2cpu.json", "linux-4.5", NULL,
	    "{\"name\": \"own\", \"tasks\": [{\"name\": \"t\", \"program\": ["
	    "  {\"op\": \"set_flag\", \"flag\": \"f\", \"value\": 1},"
	    "  {\"op\": \"wait_flag\", \"flag\": \"f\", \"value\": 0}]}]}",
	    &code);
	cr_expect(strstr(msg, "still blocked") != NULL, "%s", msg);
	g_free(msg);
}

/* Two tasks loop over one page, pinned to @cpu_a and @cpu_b, @rounds times. */
static uint64_t two_loops_cycles(unsigned cpu_a, unsigned cpu_b, const char *loads,
				 unsigned rounds)
{
	GString *json = g_string_new("{\"name\": \"pair\", \"regions\": [{\"name\": \"r\", "
				     "\"size\": \"4K\", \"populate\": \"all\"}], \"tasks\": [");
	unsigned cpus[2] = {cpu_a, cpu_b};
	for (unsigned i = 0; i < 2; i++)
		g_string_append_printf(json,
				       "%s{\"name\": \"t%u\", \"cpu\": %u, \"program\": [{\"op\": "
				       "\"access\", \"region\": \"r\", \"pattern\": \"sequential\", "
				       "\"pages\": 1, \"rounds\": %u, \"cycles\": 10, \"loads\": \"%s\"}]}",
				       i ? ", " : "", i, cpus[i], rounds, loads);
	g_string_append(json, "]}");
	struct support_run r = support_run("tiny-smt.json", "linux-4.5", NULL, json->str);
	cr_assert_eq(r.result->total.accesses, 2 * rounds);
	uint64_t cycles = r.result->sim_cycles;
	support_run_free(&r);
	g_string_free(json, TRUE);
	return cycles;
}

/* What 1000 more rounds of both loops cost: start-up and the first walk cancel. */
static uint64_t thousand_rounds_cycles(unsigned cpu_a, unsigned cpu_b, const char *loads)
{
	return two_loops_cycles(cpu_a, cpu_b, loads, 2000) -
	       two_loops_cycles(cpu_a, cpu_b, loads, 1000);
}

/*
 * SMT siblings share the core's issue slots: an independent loop's issue
 * cost doubles while the sibling executes, a latency-bound loop's does not.
 * tiny-smt's siblings are cpus 0 and 2; cpu 1 is on the other core.
 */
Test(interp, smt_siblings_share_the_issue_slots)
{
	cr_expect_eq(thousand_rounds_cycles(0, 1, "independent"), 1000 * 10);
	cr_expect_eq(thousand_rounds_cycles(0, 2, "independent"), 1000 * 20);
	cr_expect_eq(thousand_rounds_cycles(0, 2, "dependent"), 1000 * 10);
	cr_expect_eq(thousand_rounds_cycles(0, 1, "dependent"), 1000 * 10);
}

/*
 * Every access puts its data line through the core's caches, so a loop's
 * data can push the page tables out.  tiny-2cpu-cache has one 16-line, fully
 * associative level, no PDE cache and one-set TLBs of 2 and 4 entries: a
 * loop over 8 or more pages walks on every access, two loads a walk.
 * Returns the walks' load cycles over 20 rounds.
 */
static uint64_t loop_walk_load_cycles(unsigned pages)
{
	char *json = g_strdup_printf(
	    "{\"name\": \"loop\", \"regions\": [{\"name\": \"r\", \"size\": \"%uK\", "
	    "\"populate\": \"all\"}], \"tasks\": [{\"name\": \"t\", \"cpu\": 0, \"program\": "
	    "[{\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", "
	    "\"pages\": %u, \"rounds\": 20, \"cycles\": 10}]}]}",
	    4 * pages, pages);
	struct support_run r = support_run("tiny-2cpu-cache.json", "linux-4.5", NULL, json);
	const struct counters *c = &r.result->total;
	cr_assert_eq(c->page_walks, 20 * pages, "every access walks");
	cr_assert_eq(c->walk_loads, 2 * c->page_walks, "no PDE cache: two loads a walk");
	uint64_t cycles = c->walk_load_cycles;
	support_run_free(&r);
	g_free(json);
	return cycles;
}

Test(interp, data_lines_push_the_page_tables_out_of_the_caches)
{
	/* 8 pages: their 8 data lines, one PTE line and one PDE line fit in
	 * 16; only the first walk's two loads miss (100 cycles each). */
	cr_expect_eq(loop_walk_load_cycles(8), 2 * 100 + (2 * 160 - 2) * 4);
	/* 64 pages: 64 data lines and 8 PTE lines cycle through 16 in LRU
	 * order.  The PDE line, read by every walk, stays; each PTE line is
	 * read for 8 pages in a row and gone 56 data lines later: 8 of the 64
	 * PTE loads of a round miss.  (Without the data lines all 9 page-table
	 * lines would stay after the first round.) */
	uint64_t round = 64 * 4 + 8 * 100 + 56 * 4;
	cr_expect_eq(loop_walk_load_cycles(64), 20 * round + (100 - 4));
}
