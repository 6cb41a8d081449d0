/*
 * Tests of the per-interval counters (src/observe/timeseries.c): the rows of every
 * interval and CPU add up to the run's totals, come in (t, cpu, counter)
 * order, spread what a CPU ran ahead evenly over its intervals, skip
 * intervals in which nothing happened, and change nothing in the run, not
 * even its event count.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream() */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/machine/counters.h"
#include "tlbsim/observe/timeseries.h"

/* One munmap every 20 µs on CPU 0 while a reader runs on CPU 1, a 1 ms sleep
 * of CPU 0 (the reader goes on alone, running ahead), four more munmaps. */
static const char *const workload =
	"{\"name\": \"series\", \"regions\": ["
	"  {\"name\": \"big\", \"size\": \"64K\", \"populate\": \"all\"},"
	"  {\"name\": \"small\", \"chunks\": 8, \"chunk_size\": \"16K\", \"populate\": \"all\"}],"
	" \"tasks\": ["
	"  {\"name\": \"main\", \"count\": 1, \"cpu\": 0, \"program\": ["
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"loop\", \"count\": 4, \"var\": \"i\", \"body\": ["
	"      {\"op\": \"compute\", \"cycles\": 20000},"
	"      {\"op\": \"munmap\", \"region\": \"small\", \"chunk\": \"$i\"}]},"
	"    {\"op\": \"sleep\", \"ms\": 1},"
	"    {\"op\": \"loop\", \"count\": 4, \"var\": \"i\", \"body\": ["
	"      {\"op\": \"munmap\", \"region\": \"small\", \"chunk\": \"$i + 4\"}]},"
	"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	"  {\"name\": \"reader\", \"count\": 1, \"cpu\": 1, \"program\": ["
	"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	"    {\"op\": \"access\", \"region\": \"big\", \"pattern\": \"random\", \"pages\": 16,"
	"     \"while_flag\": \"run\", \"cycles\": 10}]}]}";

/* Nothing at all happens between the two computes. */
static const char *const sleeper =
	"{\"name\": \"sleeper\", \"tasks\": [{\"name\": \"main\", \"count\": 1, \"program\": ["
	"  {\"op\": \"compute\", \"cycles\": 5000}, {\"op\": \"sleep\", \"ms\": 1},"
	"  {\"op\": \"compute\", \"cycles\": 5000}]}]}";

static char *series_of(const char *topology, const char *workload_json, uint64_t interval_ns,
		       struct support_run *run)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct support_outputs outputs = {.interval_ns = interval_ns, .series_out = out};
	*run = support_run_outputs(topology, "linux-4.5", NULL, workload_json, &outputs);
	cr_assert_eq(fclose(out), 0);
	char *copy = g_strndup(text, len);
	free(text);
	return copy;
}

static char *series_run(const char *topology, uint64_t interval_ns, struct support_run *run)
{
	return series_of(topology, workload, interval_ns, run);
}

static int counter_index(const char *name)
{
	for (unsigned i = 0; counters_names[i]; i++)
		if (strcmp(counters_names[i], name) == 0)
			return (int)i;
	return -1;
}

/*
 * Parse @text, check the header and the row order (t, then cpu, then counter
 * declaration order, each triple once), that t is a multiple of the interval
 * and values are positive; add every row to @sums (per CPU).
 */
static unsigned parse_rows(const char *text, uint64_t interval_ns, unsigned nr_cpus,
			   struct counters *sums, uint64_t *last_t)
{
	/* Line by line with strchr: g_strsplit() on the whole text searches with
	 * strstr(), whose ASan interceptor measures the rest of the text each
	 * time, which takes minutes on a million rows. */
	const char *header = "t_ns,cpu,metric,value\n";
	cr_assert(g_str_has_prefix(text, header), "%.40s", text);
	unsigned rows = 0;
	uint64_t prev_t = 0, prev_cpu = 0;
	int prev_metric = -1;
	const char *next;
	for (const char *line = text + strlen(header); *line; line = next, rows++) {
		const char *nl = strchr(line, '\n');
		cr_assert_not_null(nl, "the last line has no newline");
		next = nl + 1;
		char *copy = g_strndup(line, (gsize)(nl - line));
		char **f = g_strsplit(copy, ",", -1);
		unsigned i = rows + 1;
		cr_assert_eq(g_strv_length(f), 4, "line %u: %s", i + 1, copy);
		uint64_t t = g_ascii_strtoull(f[0], NULL, 10), cpu = g_ascii_strtoull(f[1], NULL, 10);
		uint64_t value = g_ascii_strtoull(f[3], NULL, 10);
		int metric = counter_index(f[2]);
		cr_assert_geq(metric, 0, "unknown metric %s", f[2]);
		cr_assert_lt(cpu, nr_cpus);
		cr_assert_eq(t % interval_ns, 0, "t %s", f[0]);
		cr_assert_gt(value, 0, "line %u: zero rows are left out", i + 1);
		bool after = rows == 0 || t > prev_t || (t == prev_t && cpu > prev_cpu) ||
			     (t == prev_t && cpu == prev_cpu && metric > prev_metric);
		cr_assert(after, "line %u out of order: %s", i + 1, copy);
		uint64_t *field = (uint64_t *)&sums[cpu] + metric;
		*field += value;
		prev_t = t;
		prev_cpu = cpu;
		prev_metric = metric;
		g_strfreev(f);
		g_free(copy);
	}
	*last_t = prev_t;
	return rows;
}

static void expect_sums_are_totals(const char *topology, uint64_t interval_ns)
{
	struct support_run run;
	char *text = series_run(topology, interval_ns, &run);
	unsigned nr_cpus = run.result->nr_cpus;
	struct counters *sums = g_new0(struct counters, nr_cpus);
	uint64_t last_t = 0;
	unsigned rows = parse_rows(text, interval_ns, nr_cpus, sums, &last_t);
	cr_expect_gt(rows, 0);
	for (unsigned cpu = 0; cpu < nr_cpus; cpu++)
		for (unsigned i = 0; i < counters_count(); i++)
			cr_expect_eq(counters_get(&sums[cpu], i),
				     counters_get(&run.result->per_cpu[cpu], i),
				     "cpu %u %s: intervals sum to %" G_GUINT64_FORMAT ", run %"
				     G_GUINT64_FORMAT, cpu, counters_names[i],
				     counters_get(&sums[cpu], i),
				     counters_get(&run.result->per_cpu[cpu], i));
	g_free(sums);
	g_free(text);
	support_run_free(&run);
}

Test(timeseries, sums_are_the_run_totals)
{
	expect_sums_are_totals("tiny-2cpu.json", 10000);
	expect_sums_are_totals("haswell-i7", 100000);
}

/* 1 ns intervals: a boundary on every cycle at 1 GHz; at 250 MHz four
 * intervals per cycle, three of them empty. */
Test(timeseries, one_nanosecond_intervals)
{
	expect_sums_are_totals("tiny-2cpu.json", 1);
	expect_sums_are_totals("tiny-2cpu-250mhz.json", 1);
}

/* Intervals with no event get no rows; the next rows carry their own t. */
Test(timeseries, idle_intervals_are_skipped)
{
	struct support_run run;
	char *text = series_of("tiny-2cpu.json", sleeper, 10000, &run);
	struct counters sums[2] = {0};
	uint64_t last_t = 0;
	unsigned rows = parse_rows(text, 10000, 2, sums, &last_t);
	/* The second compute ends just after the 1 ms sleep. */
	cr_expect_geq(last_t, 1000000);
	cr_expect_lt(rows, 20, "rows in the middle of the sleep:\n%s", text);
	cr_expect(strstr(text, "\n500000,") == NULL, "a row in the middle of the sleep:\n%s", text);
	g_free(text);
	support_run_free(&run);
}

/*
 * While CPU 0 sleeps, the reader on CPU 1 runs ahead alone, counting up to a
 * millisecond of accesses at one event: they are spread over the intervals
 * they cover, at the reader's steady rate, not lumped into one.
 */
Test(timeseries, run_ahead_is_spread_over_its_intervals)
{
	struct support_run run;
	char *text = series_run("tiny-2cpu.json", 100000, &run);
	unsigned seen = 0;
	uint64_t low = UINT64_MAX, high = 0;
	for (uint64_t t = 200000; t <= 900000; t += 100000) {
		char *row = g_strdup_printf("\n%" G_GUINT64_FORMAT ",1,accesses,", t);
		const char *at = strstr(text, row);
		cr_assert_not_null(at, "no accesses on cpu 1 in [%" G_GUINT64_FORMAT " ns, +100 us):\n%s",
				   t, text);
		uint64_t v = g_ascii_strtoull(at + strlen(row), NULL, 10);
		low = MIN(low, v);
		high = MAX(high, v);
		seen++;
		g_free(row);
	}
	cr_expect_eq(seen, 8);
	/* One access is ~18 cycles at 1 GHz: ~5500 per 100 µs; the shares of a
	 * span differ by rounding only. */
	cr_expect_leq(high - low, 2, "accesses per interval from %" G_GUINT64_FORMAT " to %"
		      G_GUINT64_FORMAT, low, high);
	g_free(text);
	support_run_free(&run);
}

Test(timeseries, sampling_changes_nothing)
{
	struct support_run plain = support_run("tiny-2cpu.json", "linux-4.5", NULL, workload);
	struct support_run sampled;
	char *text = series_run("tiny-2cpu.json", 1, &sampled);
	cr_expect_eq(plain.result->events, sampled.result->events);
	cr_expect_eq(plain.result->sim_cycles, sampled.result->sim_cycles);
	cr_expect(memcmp(plain.result->per_cpu, sampled.result->per_cpu,
			 2 * sizeof(struct counters)) == 0);
	cr_expect_eq(histogram_count(plain.result->op_cycles),
		     histogram_count(sampled.result->op_cycles));
	g_free(text);
	support_run_free(&plain);
	support_run_free(&sampled);
}

/* The run's key leads the header and every row, the rest unchanged. */
Test(timeseries, key_columns_lead_every_row)
{
	char *text = NULL, *plain_text;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct support_outputs outputs = {.interval_ns = 10000, .series_out = out,
					  .series_key_header = "run,clock_ghz,",
					  .series_key = "3,1.000,"};
	struct support_run keyed =
	    support_run_outputs("tiny-2cpu.json", "linux-4.5", NULL, workload, &outputs);
	cr_assert_eq(fclose(out), 0);
	struct support_run plain;
	plain_text = series_run("tiny-2cpu.json", 10000, &plain);
	char **keyed_lines = g_strsplit(text, "\n", -1),
	     **plain_lines = g_strsplit(plain_text, "\n", -1);
	cr_assert_eq(g_strv_length(keyed_lines), g_strv_length(plain_lines));
	cr_assert_gt(g_strv_length(plain_lines), 2);
	cr_expect_str_eq(keyed_lines[0], "run,clock_ghz,t_ns,cpu,metric,value");
	for (unsigned i = 1; plain_lines[i] && *plain_lines[i]; i++) {
		char *expected = g_strconcat("3,1.000,", plain_lines[i], NULL);
		cr_expect_str_eq(keyed_lines[i], expected);
		g_free(expected);
	}
	g_strfreev(keyed_lines);
	g_strfreev(plain_lines);
	free(text);
	g_free(plain_text);
	support_run_free(&keyed);
	support_run_free(&plain);
}
