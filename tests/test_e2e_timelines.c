/*
 * Timelines: --trace (Chrome trace JSON), --trace-window,
 * --trace-max-events and --timeseries, which leave the CSV unchanged, and
 * their option errors; the trace's memory, which does not grow with it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"
#include "support.h"

TestSuite(e2e_timelines, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* The trace file @name parses as a Chrome trace object; g_free/cJSON_Delete. */
static cJSON *read_trace(const char *name)
{
	char *text = read_tmp(name);
	cJSON *json = cJSON_Parse(text);
	cr_assert_not_null(json, "%s is not JSON near %.60s", name, cJSON_GetErrorPtr());
	cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(json, "traceEvents")));
	g_free(text);
	return json;
}

static const cJSON *other_data(const cJSON *json, const char *key)
{
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(json, "otherData");
	cr_assert(cJSON_IsObject(other));
	return cJSON_GetObjectItemCaseSensitive(other, key);
}

/* Events named @name, a slice's end ("ph": "E") not counted. */
static unsigned trace_count(const cJSON *json, const char *name)
{
	unsigned n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, "traceEvents")) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		n += cJSON_IsString(item) && strcmp(item->valuestring, name) == 0 &&
		     cJSON_IsString(ph) && strcmp(ph->valuestring, "E") != 0;
	}
	return n;
}

Test(e2e_timelines, trace_and_timeseries_written_and_csv_unchanged)
{
	struct table plain, traced;
	run_row(&plain, "haswell-i7", SMALL, "linux-4.5", "1", NULL);
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.5", "--trace",
		   "run.json", "--timeseries", "series.csv", "--interval", "100000", NULL);
	expect_status(&r, 0);
	table_parse(&traced, r.out);
	/* Every column but events: observing changes no figure.  A time series
	 * keeps interrupts tracked events (machine.h, per_destination), so the
	 * engine dispatches more. */
	for (unsigned i = 0; i < plain.nr_fields; i++)
		if (strcmp(plain.header[i], "events") != 0)
			cr_expect_str_eq(table_get(&traced, 0, plain.header[i]),
					 table_get(&plain, 0, plain.header[i]), "column %s",
					 plain.header[i]);
	expect_tmp_listing("run.json series.csv");
	cJSON *json = read_trace("run.json");
	cr_expect(cJSON_IsFalse(other_data(json, "truncated")));
	cr_expect_eq(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cr_expect_eq(trace_count(json, "thread_name"), 8);
	char *series = read_tmp("series.csv");
	cr_expect(g_str_has_prefix(
		      series, "topology,workload,policy,seed,clock_ghz,t_ns,cpu,metric,value\n"),
		  "%.80s", series);
	cr_expect(strstr(series, ",ipis_received,") != NULL);
	g_free(series);
	cJSON_Delete(json);
	table_clear(&plain);
	table_clear(&traced);
	run_clear(&r);
}

/*
 * The per-CPU CSV and the time series start with the run's key: its labels,
 * topology, workload, policy, seed (the run CSV's values) and clock_ghz, the
 * clock that turns their cycles into the row's ns; summed, the series gives
 * the row's totals.
 */
Test(e2e_timelines, per_cpu_and_timeseries_join_the_run)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--label", "n=5", "--per-cpu",
		   "cpus.csv", "--timeseries", "series.csv", "--interval", "100000", NULL);
	expect_status(&r, 0);
	struct table run, cpus, series;
	table_parse(&run, r.out);
	char *cpus_text = read_tmp("cpus.csv"), *series_text = read_tmp("series.csv");
	table_parse(&cpus, cpus_text);
	table_parse(&series, series_text);
	static const char *const key[] = {"n", "topology", "workload", "policy", "seed"};
	for (size_t k = 0; k < G_N_ELEMENTS(key); k++) {
		const char *want = table_get(&run, 0, key[k]);
		for (unsigned i = 0; i < cpus.rows->len; i++)
			cr_expect_str_eq(table_get(&cpus, i, key[k]), want, "per-CPU %s", key[k]);
		for (unsigned i = 0; i < series.rows->len; i++)
			cr_expect_str_eq(table_get(&series, i, key[k]), want, "series %s", key[k]);
	}
	cr_expect_str_eq(table_get(&cpus, 0, "clock_ghz"), "3.400");
	cr_expect_str_eq(table_get(&series, 0, "clock_ghz"), "3.400");
	cr_expect_eq(table_column(&series, "t_ns"), 6, "the key, then t_ns,cpu,metric,value");
	uint64_t received = 0, irq_cycles = 0;
	for (unsigned i = 0; i < series.rows->len; i++) {
		const char *metric = table_get(&series, i, "metric");
		if (strcmp(metric, "ipis_received") == 0)
			received += table_u64(&series, i, "value");
		if (strcmp(metric, "irq_cycles") == 0)
			irq_cycles += table_u64(&series, i, "value");
	}
	cr_expect_eq(received, table_u64(&run, 0, "ipis_received"));
	/* irq_ns = cycles / 3.4 GHz, three decimals, truncated (report.c). */
	char *irq_ns = g_strdup_printf("%" G_GUINT64_FORMAT ".%03" G_GUINT64_FORMAT,
				       irq_cycles * 1000 / 3400,
				       irq_cycles * 1000000 / 3400 % 1000);
	cr_expect_str_eq(irq_ns, table_get(&run, 0, "irq_ns"));
	g_free(irq_ns);
	table_clear(&run);
	table_clear(&cpus);
	table_clear(&series);
	g_free(cpus_text);
	g_free(series_text);
	run_clear(&r);
}

Test(e2e_timelines, trace_window_keeps_its_interval)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--trace", "w.json",
		   "--trace-window", "100000:150000", NULL);
	expect_status(&r, 0);
	cJSON *json = read_trace("w.json");
	cr_expect_eq(other_data(json, "window_start_ns")->valuedouble, 100000);
	cr_expect_eq(other_data(json, "window_end_ns")->valuedouble, 150000);
	unsigned inside = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, "traceEvents")) {
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
		if (!ts)
			continue; /* metadata */
		cr_assert(ts->valuedouble >= 100.0 && ts->valuedouble <= 150.0, "%.3f",
			  ts->valuedouble);
		inside++;
	}
	cr_expect_gt(inside, 0);
	cr_expect_gt(trace_count(json, "munmap"), 0);
	cr_expect_lt(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cJSON_Delete(json);
	run_clear(&r);
}

Test(e2e_timelines, trace_max_events_says_it_was_cut)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "--trace", "cut.json",
		   "--trace-max-events", "200", NULL);
	expect_status(&r, 0);
	cJSON *json = read_trace("cut.json");
	cr_expect(cJSON_IsTrue(other_data(json, "truncated")));
	cr_expect_eq(trace_count(json, "trace cut here"), 1);
	cr_expect_lt(trace_count(json, "munmap"), SMALL_MUNMAPS);
	cJSON_Delete(json);
	run_clear(&r);
}

/* A bad timeline option: exit 2 before anything runs, a message naming the
 * option, no file. */
static void expect_bad_timeline(const char *needle, const char *a1, const char *a2,
				const char *a3, const char *a4)
{
	struct run r;
	run_tlbsim(&r, "-q", "-T", "haswell-i7", "-w", SMALL, "-o", "run.csv", a1, a2, a3, a4,
		   NULL);
	expect_status(&r, 2);
	cr_expect_str_empty(r.out);
	cr_expect(strstr(r.err, needle) != NULL, "stderr lacks \"%s\": %s", needle, r.err);
	expect_tmp_listing("");
	run_clear(&r);
}

Test(e2e_timelines, bad_options_exit_2_and_write_nothing)
{
	expect_bad_timeline("--interval", "--timeseries", "s.csv", "--interval", "0");
	expect_bad_timeline("--interval", "--timeseries", "s.csv", "--interval", "-5");
	expect_bad_timeline("--interval", "--timeseries", "s.csv", NULL, NULL);
	expect_bad_timeline("--timeseries", "--interval", "1000", NULL, NULL);
	expect_bad_timeline("END must be after START", "--trace", "t.json", "--trace-window",
			    "5:3");
	expect_bad_timeline("START:END", "--trace", "t.json", "--trace-window", "soon");
	expect_bad_timeline("START:END", "--trace", "t.json", "--trace-window", "1:2:3");
	expect_bad_timeline("need --trace", "--trace-window", "1:2", NULL, NULL);
	expect_bad_timeline("need --trace", "--trace-max-events", "10", NULL, NULL);
	expect_bad_timeline("--trace-max-events", "--trace", "t.json", "--trace-max-events",
			    "-1");
	expect_bad_timeline("no-such-dir/t.json", "--trace", "no-such-dir/t.json", NULL, NULL);
	expect_bad_timeline("no-such-dir/s.csv", "--timeseries", "no-such-dir/s.csv", "--interval",
			    "10");
}

/* A run that fails leaves neither file, nor a temporary one. */
Test(e2e_timelines, failed_run_leaves_no_trace)
{
	struct run r;
	run_tlbsim(&r, "-T", "haswell-i7", "-w", SMALL, "--max-events", "1000", "--trace",
		   "t.json", "--timeseries", "s.csv", "--interval", "1000", NULL);
	expect_status(&r, 4);
	expect_tmp_listing("");
	run_clear(&r);
}

/*
 * The trace is written while the run goes on (docs/timelines.md, "Memory"):
 * a long munmap loop without a budget writes a trace many times the size the
 * process ever gets.  The bound: TRACE_RSS_MIB of peak RSS, which is the run
 * itself (about 6 MiB without a trace) and what the trace holds in flight; a
 * trace kept whole until the end, as it was before it was streamed, needed
 * about 1.1 times its file (62.5 MiB for this one's 54.6 MB).  The data
 * limit makes an unbounded trace fail rather than swap.
 */
#define TRACE_RSS_MIB 24
#define TRACE_MIN_MB 50

Test(e2e_timelines, trace_memory_stays_bounded, .timeout = 600)
{
	/* ASan maps terabytes of shadow memory, which a data limit forbids, and
	 * its RSS says nothing about the program's: the normal build checks. */
	if (support_small())
		cr_skip_test("memory bounds are checked in the normal build");
	struct child_limits limits = {.data_size = (rlim_t)(2 * TRACE_RSS_MIB) << 20};
	struct run r;
	run_tlbsim_limited(&r, &limits,
			   (const char *const[]){"-q", "-T", "haswell-i7", "-w", "munmap",
						 "--set", "workload.file_size=\"24M\"",
						 "--set", "workload.pages_per_munmap=1",
						 "--set", "workload.threads=7",
						 "--set", "workload.tail_ms=0",
						 "--trace", "big.json", "--trace-max-events", "0",
						 "-o", "run.csv", NULL});
	expect_status(&r, 0);
	/* Criterion runs each test in a process of its own: its only child. */
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	char *path = tmp_path("big.json");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_log_info("trace %.1f MB, peak RSS %.1f MiB", st.st_size / 1e6, ru.ru_maxrss / 1024.0);
	cr_expect_gt(st.st_size, (off_t)TRACE_MIN_MB * 1000000, "%lld bytes",
		     (long long)st.st_size);
	cr_expect_lt(ru.ru_maxrss, TRACE_RSS_MIB * 1024, "peak RSS %ld KiB", ru.ru_maxrss);
	/* Complete: the file ends with its otherData, uncut. */
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	char tail[4096];
	cr_assert_eq(fseeko(f, st.st_size - (off_t)sizeof(tail) + 1, SEEK_SET), 0);
	size_t n = fread(tail, 1, sizeof(tail) - 1, f);
	tail[n] = '\0';
	fclose(f);
	cr_expect(strstr(tail, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{") != NULL, "%s",
		  tail);
	cr_expect(strstr(tail, "\"truncated\":false,\"max_events\":0,") != NULL, "%s", tail);
	cr_expect(g_str_has_suffix(tail, "}}\n"));
	unlink(path);
	g_free(path);
	run_clear(&r);
}
