/*
 * Sampled mode's estimates (src/sim/sample.c, src/workload/access.c's
 * access_skip()), worked by hand on tiny-2cpu (1 GHz: 1 cycle = 1 ns).
 */
#include <math.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/sim/sample.h"

/*
 * A reader of one page, 10 cycles an access and nothing else once the page is
 * in its TLB, while the main thread sleeps 2 ms: a stationary loop at one
 * access per 10 ns.
 */
static const char *one_page_loop =
	"{\"name\": \"loop\", \"regions\": [{\"name\": \"r\", \"size\": 4096, \"populate\": \"all\"}],"
	" \"tasks\": ["
	"  {\"name\": \"main\", \"program\": ["
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"sleep\", \"ms\": 2},"
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	"  {\"name\": \"reader\", \"program\": ["
	"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"r\", \"pages\": 1, \"while_flag\": \"run\","
	"     \"cycles\": 10}]}]}";

static struct support_run run_sampled_on(const char *topology, const char *workload,
					 uint64_t period, uint64_t warm, uint64_t window)
{
	struct support_outputs outputs = {.sample_ns = {period, warm, window}};
	return support_run_outputs(topology, "linux-4.5", NULL, workload, &outputs);
}

static struct support_run run_sampled(const char *workload, uint64_t period, uint64_t warm,
				      uint64_t window)
{
	return run_sampled_on("tiny-2cpu.json", workload, period, warm, window);
}

/*
 * 2 ms in periods of 100 us with 10 us of warming and 10 us measured: every
 * window counts 1 000 accesses, every period is estimated at 10 000 (the last
 * one in proportion), so the estimate is the exact count to within one access
 * per period, and the windows never differ: an interval of 0.
 */
Test(sample, a_constant_loop_is_estimated_exactly)
{
	struct support_run exact = support_run("tiny-2cpu.json", "linux-4.5", NULL, one_page_loop);
	struct support_run sampled = run_sampled(one_page_loop, 100000, 10000, 10000);
	uint64_t e = exact.result->total.accesses, s = sampled.result->total.accesses;
	cr_assert(e > 190000 && e < 210000, "%lu accesses in 2 ms at 10 ns each", (unsigned long)e);
	cr_expect(s + 21 >= e && s <= e + 21, "exact %lu, sampled %lu", (unsigned long)e,
		  (unsigned long)s);
	cr_expect(sampled.result->sampled);
	cr_expect_geq(sampled.result->sample_windows, 19);
	cr_expect_leq(sampled.result->sample_windows, 21);
	cr_expect_eq(sampled.result->sample_error_ppm[0], 0, "accesses' interval");
	/* What is simulated in full is the exact run's. */
	cr_expect_eq(sampled.result->sim_cycles, exact.result->sim_cycles);
	cr_expect_eq(sampled.result->total.context_switches, exact.result->total.context_switches);
	support_run_free(&exact);
	support_run_free(&sampled);
}

/*
 * Two windows give one difference of rates: no interval, as with one,
 * rather than a spread of no substance (an interval of 0 here, where every
 * window counts the same).  Three give one.  Over the 2 ms loop, periods of
 * 1.5 ms hold two windows, periods of 1 ms three.
 */
Test(sample, two_windows_state_no_interval)
{
	struct support_run two = run_sampled(one_page_loop, 1500000, 10000, 10000);
	cr_assert_eq(two.result->sample_windows, 2, "%u windows", two.result->sample_windows);
	for (unsigned i = 0; i < SAMPLE_NR_SCALED; i++)
		cr_expect_eq(two.result->sample_error_ppm[i], SAMPLE_NO_ERROR, "field %u", i);
	struct support_run three = run_sampled(one_page_loop, 1000000, 10000, 10000);
	cr_assert_eq(three.result->sample_windows, 3, "%u windows", three.result->sample_windows);
	cr_expect_eq(three.result->sample_error_ppm[0], 0);
	support_run_free(&two);
	support_run_free(&three);
}

/*
 * The interval's factor: Student's t for 2 (n - 1)^2 / (3n - 4) degrees of
 * freedom, worked by hand: 3 windows give 8/5, so 1 (t = 12.706); 11 give
 * 200/29, so 6 (2.447); 263 give 137288/785, so 174 (1.974); never below
 * the normal 1.960.
 */
Test(sample, the_interval_factor_is_students_t)
{
	cr_expect_eq(sample_t975_ppm(3), 12706205);
	cr_expect_eq(sample_t975_ppm(11), 2446912);
	cr_expect_eq(sample_t975_ppm(263), 1973691);
	for (unsigned n = 3; n < 1000; n++) {
		cr_expect_geq(sample_t975_ppm(n), sample_t975_ppm(n + 1), "n %u", n);
		cr_expect_gt(sample_t975_ppm(n), 1959964, "n %u", n);
	}
}

/*
 * The interval from four periods worked by hand: rates 1/2, 5/8, 9/16, 3/8
 * (exact in 32 fractional bits) give successive differences 1/8, 1/16, 3/16,
 * s^2 = (1/64 + 1/256 + 9/256) / 6; the periods estimated 1, 2, 1.5 and
 * 0.5 x 10^8 cycles; with 2 (4 - 1)^2 / 8 -> 2 degrees of freedom t is
 * 4.303, not 1.96.  A field whose rate never moves has no spread.
 */
Test(sample, the_interval_is_t_times_the_spread_of_the_rates)
{
	static const double rates[] = {0.5, 0.625, 0.5625, 0.375};
	static const uint64_t estimated[] = {100000000, 200000000, 150000000, 50000000};
	struct sample_period periods[4] = {{0}};
	for (unsigned k = 0; k < 4; k++) {
		periods[k].estimated = estimated[k];
		periods[k].rate[SAMPLE_ACCESSES] = (uint64_t)(rates[k] * 4294967296.0);
		periods[k].rate[1] = UINT64_C(3) << 31;
	}
	cr_assert_eq(sample_t975_ppm(4), 4302653);
	double u = sqrt(1e16 + 4e16 + 2.25e16 + 0.25e16);
	double s = sqrt((1.0 / 64 + 1.0 / 256 + 9.0 / 256) / 6);
	uint64_t total = 5000000000;
	double want = 4.302653 * u * s / (double)total * 1e6; /* about 22 500 */
	uint64_t got = sample_interval_ppm(periods, 4, SAMPLE_ACCESSES, total);
	cr_expect(fabs((double)got - want) <= 1, "%lu ppm, want %.1f", (unsigned long)got, want);
	double normal = 1.96 * u * s / (double)total * 1e6;
	cr_expect_gt(got, 2 * normal, "%lu ppm, 1.96 would state %.1f", (unsigned long)got, normal);
	cr_expect_eq(sample_interval_ppm(periods, 4, 1, total), 0);
}

/*
 * A flush that takes the reader's entries (mprotect of its 16 pages, 1 ms in)
 * disturbs it: the refill is simulated, never skipped, so the misses are
 * the exact run's (16 at the start, more after the flush), and so are the
 * entries the flush took, which were the settled loop's.
 */
Test(sample, the_refill_after_a_flush_is_simulated)
{
	static const char *flushed =
		"{\"name\": \"flushed\", \"regions\": [{\"name\": \"r\", \"size\": 65536,"
		"  \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"main\", \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"sleep\", \"ms\": 1},"
		"    {\"op\": \"mprotect\", \"region\": \"r\", \"chunk\": 0, \"prot\": \"read\"},"
		"    {\"op\": \"sleep\", \"ms\": 1},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"r\", \"pages\": 16, \"while_flag\": \"run\","
		"     \"cycles\": 10}]}]}";
	struct support_run exact = support_run("tiny-2cpu.json", "linux-4.5", NULL, flushed);
	struct support_run sampled = run_sampled(flushed, 100000, 10000, 10000);
	const struct counters *e = &exact.result->total, *s = &sampled.result->total;
	cr_expect_gt(e->tlb_misses, 16, "%lu: 16 cold, more after the flush",
		     (unsigned long)e->tlb_misses);
	cr_expect_gt(e->tlb_entries_invalidated, 0);
	cr_expect_eq(s->tlb_misses, e->tlb_misses);
	cr_expect_eq(s->tlb_entries_invalidated, e->tlb_entries_invalidated);
	cr_expect(s->accesses + e->accesses / 1000 >= e->accesses &&
		  s->accesses <= e->accesses + e->accesses / 1000,
		  "exact %lu, sampled %lu", (unsigned long)e->accesses, (unsigned long)s->accesses);
	cr_expect_gt(sampled.result->sample_windows, 10);
	support_run_free(&exact);
	support_run_free(&sampled);
}

/*
 * A loop with a round count ends after a number of accesses, not at a time:
 * it is never skipped, and a run of it is the exact run, counter for
 * counter, with no window.
 */
Test(sample, a_counted_loop_is_never_skipped)
{
	static const char *counted =
		"{\"name\": \"counted\", \"regions\": [{\"name\": \"r\", \"size\": 65536,"
		"  \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"reader\", \"program\": ["
		"   {\"op\": \"access\", \"region\": \"r\", \"pages\": 16, \"rounds\": 20000,"
		"    \"cycles\": 10}]}]}";
	struct support_run exact = support_run("tiny-2cpu.json", "linux-4.5", NULL, counted);
	struct support_run sampled = run_sampled(counted, 100000, 10000, 10000);
	cr_expect_eq(sampled.result->total.accesses, 320000);
	for (unsigned i = 0; i < counters_count(); i++)
		cr_expect_eq(counters_get(&sampled.result->total, i),
			     counters_get(&exact.result->total, i), "%s", counters_names[i]);
	cr_expect_eq(sampled.result->sample_windows, 0);
	cr_expect_eq(sampled.result->sim_cycles, exact.result->sim_cycles);
	support_run_free(&exact);
	support_run_free(&sampled);
}

/* Until a loop has run its table SAMPLE_WARM_ROUNDS (4) times it is not
 * skipped: a run shorter than that is exact. */
Test(sample, a_cold_loop_is_not_skipped)
{
	static const char *short_run =
		"{\"name\": \"short\", \"regions\": [{\"name\": \"r\", \"size\": \"4M\","
		"  \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"main\", \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"sleep\", \"ms\": 1},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"r\", \"pages\": 1024, \"while_flag\": \"run\","
		"     \"cycles\": 2000}]}]}";
	/* 1 ms at >= 2 000 ns per access: the flag clears within the first
	 * round, which the loop finishes (1 024 accesses), one round of 4. */
	struct support_run exact = support_run("tiny-2cpu.json", "linux-4.5", NULL, short_run);
	struct support_run sampled = run_sampled(short_run, 100000, 10000, 10000);
	cr_assert_eq(exact.result->total.accesses, 1024);
	cr_expect_eq(sampled.result->total.accesses, exact.result->total.accesses);
	cr_expect_eq(sampled.result->sample_windows, 0);
	support_run_free(&exact);
	support_run_free(&sampled);
}

/*
 * A core skips as a whole.  On tiny-smt (CPUs 0 and 2, 1 and 3 are SMT
 * siblings) a settled reader on CPU 1 runs beside a counted loop, which is
 * never settled: beside it on CPU 3, the reader never skips (no window
 * estimates anything); on CPU 2, another core, it does.
 */
static char *reader_beside(unsigned counted_cpu)
{
	return g_strdup_printf(
	    "{\"name\": \"pair\", \"regions\": [{\"name\": \"r\", \"size\": 4096,"
	    "  \"populate\": \"all\"}, {\"name\": \"q\", \"size\": 65536, \"populate\": \"all\"}],"
	    " \"tasks\": ["
	    "  {\"name\": \"main\", \"cpu\": 0, \"program\": ["
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"sleep\", \"ms\": 1},"
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	    "  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
	    "    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"access\", \"region\": \"r\", \"pages\": 1, \"while_flag\": \"run\","
	    "     \"cycles\": 10}]},"
	    "  {\"name\": \"counted\", \"cpu\": %u, \"program\": ["
	    "    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"access\", \"region\": \"q\", \"pages\": 16, \"rounds\": 10000,"
	    "     \"cycles\": 10}]}]}",
	    counted_cpu);
}

Test(sample, a_core_skips_only_when_all_its_loops_are_settled)
{
	char *siblings = reader_beside(3), *apart = reader_beside(2);
	struct support_run beside = run_sampled_on("tiny-smt.json", siblings, 100000, 10000, 10000);
	struct support_run other = run_sampled_on("tiny-smt.json", apart, 100000, 10000, 10000);
	cr_expect_eq(beside.result->sample_windows, 0);
	cr_expect_gt(other.result->sample_windows, 5);
	support_run_free(&beside);
	support_run_free(&other);
	g_free(siblings);
	g_free(apart);
}
