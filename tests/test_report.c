/*
 * Tests of src/cli/report.c on a hand-built struct sim_result: the CSV header is
 * the column table, each row value is worked out by hand below (integer
 * arithmetic, three decimals), text fields are quoted per RFC 4180, the
 * per-CPU CSV lists the counters, the summary template fills every
 * placeholder, and label columns (--label, a sweep's grid point) lead the
 * header and the row.
 *
 * The machine is tests/data/tiny-2cpu.json at clock_ghz 2.0, so one cycle is
 * exactly 500 ps.  The hand-built run:
 *   sim_cycles    3          -> sim_ns   1.500
 *   phase_cycles  2000001    -> phase_ps 1000000500 -> phase_ns 1000000.500
 *   op_cycles     10 latencies, sorted 100 200 300 400 500 601 700 800 900 1000
 *                 mean 5501 / 10 cycles = 275050 ps      -> 275.050
 *                 p50: nearest rank ceil(10 * 0.50) = 5th = 500 cycles  -> 250.000
 *                 p99: nearest rank ceil(10 * 0.99) = 10th = 1000 cycles -> 500.000
 *   threads 3, round_accesses 700000 (Alex Shi's harness, source comments):
 *     cost            = mptime * t / (actime * p)
 *                     = 1000000.500 ns * 3 / 700000      = 4.285716 -> 4.285
 *     times/thread/ms = actime * p * 1e6 / t / mptime
 *                     = 700000 / 3 / 1.0000005 ms        = 233333.2166 -> 233333.216
 *   irq_cycles 123457 -> 61728500 ps -> irq_ns 61728.500
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/cli/report.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif


static const char WORKLOAD[] =
    "{\"name\": \"report-test\","
    " \"regions\": [{\"name\": \"r\", \"chunks\": 10, \"chunk_size\": 4096}],"
    " \"tasks\": [{\"name\": \"main\", \"program\": ["
    "   {\"op\": \"phase\", \"name\": \"m\", \"action\": \"begin\"},"
    "   {\"op\": \"loop\", \"count\": 10, \"var\": \"i\", \"body\": ["
    "     {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": \"$i\"}]},"
    "   {\"op\": \"phase\", \"name\": \"m\", \"action\": \"end\"}]}],"
    " \"report\": {\"op\": \"munmap\", \"phase\": \"m\"}}";

static const char WORKLOAD_NO_OP[] =
    "{\"name\": \"report-test-no-op\","
    " \"tasks\": [{\"name\": \"main\", \"program\": [{\"op\": \"compute\", \"cycles\": 5}]}]}";

/* Every placeholder check_summary() accepts, each between markers. */
static const char FULL_TEMPLATE[] =
    "ms={phase_ms} ns={phase_ns} op={op} n={op_count} per_call={op_ns_per_call} "
    "mean={op_ns_mean} tpms={accesses_per_thread_ms} cost={access_cost_ns} "
    "threads={threads} acc={accesses}.";

struct rig {
	struct topology *topo;
	struct workload *w;
	struct sim_result *r;
	struct report_meta meta;
};

static struct topology *load_topology(void)
{
	struct topology *topo = support_topology_at("tiny-2cpu.json", "2.0");
	cr_assert_eq(topo->clock_ghz, 2.0);
	return topo;
}

/* @summary: a template to add under "report", or NULL for the default line. */
static struct workload *load_workload(const char *text, const char *summary, unsigned nr_cpus)
{
	GError *err = NULL;
	cJSON *json = config_parse_string(text, "test_report.c", &err);

	cr_assert_not_null(json, "%s", err ? err->message : "?");
	if (summary) {
		cJSON *report = cJSON_GetObjectItemCaseSensitive(json, "report");
		cr_assert_not_null(report);
		cJSON_AddStringToObject(report, "summary", summary);
	}
	struct workload *w = workload_from_json(json, "test_report.c", nr_cpus, NULL, &err);
	cJSON_Delete(json);
	cr_assert_not_null(w, "%s", err ? err->message : "?");
	return w;
}

/* The run described at the top of this file. */
static struct sim_result *hand_result(void)
{
	static const uint64_t latencies[] = {700, 100, 1000, 300, 601, 200, 900, 400, 800, 500};
	struct sim_result *r = g_new0(struct sim_result, 1);

	r->nr_cpus = 2;
	r->per_cpu = g_new0(struct counters, 2);
	r->tlb_occupancy = g_new0(unsigned, 2);
	r->tlb_occupancy[0] = 11;
	r->tlb_occupancy[1] = 22;
	unsigned k = 0;
#define SET_COUNTER(name)                                                                          \
	r->per_cpu[0].name = 1000 + 7 * k;                                                         \
	r->per_cpu[1].name = 2000 + 11 * k;                                                        \
	k++;
	COUNTERS_FOREACH(SET_COUNTER)
#undef SET_COUNTER
	r->per_cpu[0].irq_cycles = 123000;
	r->per_cpu[1].irq_cycles = 457;
	counters_add(&r->total, &r->per_cpu[0]);
	counters_add(&r->total, &r->per_cpu[1]);
	r->sim_cycles = 3;
	r->events = 4242;
	r->nr_phases = 1;
	r->phase_cycles = 2000001;
	r->op_cycles = histogram_new();
	for (size_t i = 0; i < G_N_ELEMENTS(latencies); i++)
		histogram_add(r->op_cycles, latencies[i]);
	r->accessor_threads = 3;
	r->accesses = r->total.accesses;
	r->round_accesses = 700000;
	return r;
}

static struct rig *rig_new(const char *workload, const char *summary)
{
	struct rig *rig = g_new0(struct rig, 1);

	rig->topo = load_topology();
	rig->w = load_workload(workload, summary, topology_nr_cpus(rig->topo));
	rig->r = hand_result();
	rig->meta = (struct report_meta){
	    .topology = "tiny-2cpu",
	    .workload = "report-test",
	    .policy = "linux-4.5",
	    .seed = 77,
	    .topo = rig->topo,
	    .w = rig->w,
	};
	return rig;
}

static void rig_free(struct rig *rig)
{
	sim_result_free(rig->r);
	workload_free(rig->w);
	topology_free(rig->topo);
	g_free(rig);
}

/*
 * One CSV line (without its newline) into fields, undoing RFC 4180 quoting.
 * Returns a NULL-terminated vector (g_strfreev).
 */
static char **csv_split(const char *line)
{
	GPtrArray *fields = g_ptr_array_new();
	GString *cur = g_string_new(NULL);
	bool quoted = false;

	for (const char *p = line;; p++) {
		if (quoted) {
			cr_assert(*p, "unterminated quoted field in %s", line);
			if (*p == '"' && p[1] == '"') {
				g_string_append_c(cur, '"');
				p++;
			} else if (*p == '"') {
				quoted = false;
			} else {
				g_string_append_c(cur, *p);
			}
			continue;
		}
		if (*p == '"' && cur->len == 0) {
			quoted = true;
		} else if (*p == ',' || *p == '\0') {
			g_ptr_array_add(fields, g_string_free(cur, FALSE));
			if (*p == '\0')
				break;
			cur = g_string_new(NULL);
		} else {
			g_string_append_c(cur, *p);
		}
	}
	g_ptr_array_add(fields, NULL);
	return (char **)g_ptr_array_free(fields, FALSE);
}

static unsigned nr_columns(void)
{
	return g_strv_length((char **)report_columns());
}

/* The CSV row of @rig, checked for shape, as fields. */
static char **row_fields(struct rig *rig)
{
	GString *out = g_string_new(NULL);

	report_csv_row(out, &rig->meta, rig->r);
	cr_assert_gt(out->len, 0);
	cr_assert_eq(out->str[out->len - 1], '\n', "row must end with a newline");
	g_string_truncate(out, out->len - 1);
	char **fields = csv_split(out->str);
	cr_assert_eq(g_strv_length(fields), nr_columns(), "%u fields for %u columns in %s",
		     g_strv_length(fields), nr_columns(), out->str);
	g_string_free(out, TRUE);
	return fields;
}

static const char *field(char **fields, const char *column)
{
	const char *const *names = report_columns();

	for (unsigned i = 0; names[i]; i++)
		if (strcmp(names[i], column) == 0)
			return fields[i];
	cr_assert_fail("no column %s", column);
	return NULL;
}

/* ---- header ------------------------------------------------------------------ */

Test(report_csv, header_is_the_column_table)
{
	GString *out = g_string_new(NULL);
	char *joined = g_strjoinv(",", (char **)report_columns());

	report_csv_header(out, NULL, false);
	char *want = g_strconcat(joined, "\n", NULL);
	cr_expect_str_eq(out->str, want);
	g_free(want);
	g_free(joined);
	g_string_free(out, TRUE);
}

Test(report_csv, columns_are_unique_and_cover_the_counters)
{
	const char *const *names = report_columns();
	unsigned n = nr_columns();

	cr_assert_gt(n, 0);
	cr_expect_str_eq(names[0], "topology");
	cr_expect_str_eq(names[n - 2], "host_seconds");
	cr_expect_str_eq(names[n - 1], "tlbsim_version");
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < i; j++)
			cr_expect_str_neq(names[i], names[j]);
	/* Every counter has a column, under its name, except cycle counts (in ns). */
	for (unsigned c = 0; counters_names[c]; c++) {
		/* x_cycles is reported as x_ns. */
		char *want = g_strdup(counters_names[c]);
		if (g_str_has_suffix(want, "_cycles"))
			strcpy(want + strlen(want) - strlen("cycles"), "ns");
		bool found = false;
		for (unsigned i = 0; i < n; i++)
			found |= strcmp(names[i], want) == 0;
		cr_expect(found, "no column for counter %s (%s)", counters_names[c], want);
		g_free(want);
	}
}

/* ---- row values ---------------------------------------------------------------- */

Test(report_csv, row_values_by_hand)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	char **f = row_fields(rig);

	cr_expect_str_eq(field(f, "topology"), "tiny-2cpu");
	cr_expect_str_eq(field(f, "workload"), "report-test");
	cr_expect_str_eq(field(f, "policy"), "linux-4.5");
	cr_expect_str_eq(field(f, "seed"), "77");
	cr_expect_str_eq(field(f, "cpus"), "2");
	cr_expect_str_eq(field(f, "threads"), "3");
	cr_expect_str_eq(field(f, "sim_ns"), "1.500");
	cr_expect_str_eq(field(f, "phase_ns"), "1000000.500");
	cr_expect_str_eq(field(f, "op"), "munmap");
	cr_expect_str_eq(field(f, "op_count"), "10");
	cr_expect_str_eq(field(f, "op_ns_mean"), "275.050");
	cr_expect_str_eq(field(f, "op_ns_p50"), "250.000");
	cr_expect_str_eq(field(f, "op_ns_p99"), "500.000");
	cr_expect_str_eq(field(f, "access_ns"), "4.285");
	cr_expect_str_eq(field(f, "accesses_per_thread_ms"), "233333.216");
	cr_expect_str_eq(field(f, "irq_ns"), "61728.500");
	cr_expect_str_eq(field(f, "events"), "4242");
	cr_expect_str_eq(field(f, "host_seconds"), "", "host-dependent: empty unless asked");
	g_strfreev(f);
	rig_free(rig);
}

Test(report_csv, counter_columns_are_run_totals)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	char **f = row_fields(rig);

	for (unsigned c = 0; counters_names[c]; c++) {
		if (g_str_has_suffix(counters_names[c], "_cycles"))
			continue;
		char *want = g_strdup_printf("%" G_GUINT64_FORMAT, counters_get(&rig->r->total, c));
		cr_expect_str_eq(field(f, counters_names[c]), want, "%s", counters_names[c]);
		g_free(want);
	}
	/* Spot check of the sum: tlb_lookups is counter 1 (1007 + 2011). */
	cr_expect_str_eq(field(f, "tlb_lookups"), "3018");
	g_strfreev(f);
	rig_free(rig);
}

Test(report_csv, host_seconds_only_when_asked)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);

	rig->meta.host_time = true;
	rig->meta.host_seconds = 1.25;
	char **f = row_fields(rig);
	cr_expect_str_eq(field(f, "host_seconds"), "1.250000");
	g_strfreev(f);

	/* A value without host_time is ignored. */
	rig->meta.host_time = false;
	f = row_fields(rig);
	cr_expect_str_eq(field(f, "host_seconds"), "");
	g_strfreev(f);
	rig_free(rig);
}

/* Percentiles by nearest rank on other sizes (ceil(n * p / 100)-th smallest). */
Test(report_csv, nearest_rank_percentiles)
{
	static const struct {
		uint64_t values[8];
		unsigned n;
		const char *p50, *p99, *mean;
	} cases[] = {
	    /* n = 1: every percentile is the value; 7 cycles = 3500 ps. */
	    {{7}, 1, "3.500", "3.500", "3.500"},
	    /* n = 2: p50 rank 1, p99 rank 2. */
	    {{4, 2}, 2, "1.000", "2.000", "1.500"},
	    /* n = 3: p50 rank 2, p99 rank 3; mean 6 cycles. */
	    {{9, 1, 8}, 3, "4.000", "4.500", "3.000"},
	    /* n = 4 with duplicates: p50 rank 2; mean 13/4 cycles = 1625 ps. */
	    {{5, 1, 5, 2}, 4, "1.000", "2.500", "1.625"},
	    /* mean truncates: 1 + 2 + 2 = 5 cycles / 3 = 833.33 ps. */
	    {{1, 2, 2}, 3, "1.000", "1.000", "0.833"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct rig *rig = rig_new(WORKLOAD, NULL);
		histogram_free(rig->r->op_cycles);
		rig->r->op_cycles = histogram_new();
		for (unsigned j = 0; j < cases[i].n; j++)
			histogram_add(rig->r->op_cycles, cases[i].values[j]);
		char **f = row_fields(rig);
		cr_expect_str_eq(field(f, "op_ns_p50"), cases[i].p50, "case %zu", i);
		cr_expect_str_eq(field(f, "op_ns_p99"), cases[i].p99, "case %zu", i);
		cr_expect_str_eq(field(f, "op_ns_mean"), cases[i].mean, "case %zu", i);
		g_strfreev(f);
		rig_free(rig);
	}
}

/*
 * Ranks that are not a multiple of 100 / n: latencies 1..n cycles in reverse
 * order, so the k-th smallest is k cycles (k * 500 ps).
 *   n = 60:  p50 rank 30, p99 rank ceil(59.4) = 60, mean 30.5 cycles
 *   n = 200: p50 rank 100, p99 rank 198, mean 100.5 cycles
 */
Test(report_csv, nearest_rank_rounds_up)
{
	static const struct {
		unsigned n;
		const char *p50, *p99, *mean;
	} cases[] = {
	    {60, "15.000", "30.000", "15.250"},
	    {200, "50.000", "99.000", "50.250"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct rig *rig = rig_new(WORKLOAD, NULL);
		histogram_free(rig->r->op_cycles);
		rig->r->op_cycles = histogram_new();
		for (uint64_t v = cases[i].n; v >= 1; v--)
			histogram_add(rig->r->op_cycles, v);
		char **f = row_fields(rig);
		cr_expect_str_eq(field(f, "op_count"), cases[i].n == 60 ? "60" : "200");
		cr_expect_str_eq(field(f, "op_ns_p50"), cases[i].p50, "n %u", cases[i].n);
		cr_expect_str_eq(field(f, "op_ns_p99"), cases[i].p99, "n %u", cases[i].n);
		cr_expect_str_eq(field(f, "op_ns_mean"), cases[i].mean, "n %u", cases[i].n);
		g_strfreev(f);
		rig_free(rig);
	}
}

/* Computing the percentiles leaves the caller's latencies as they were. */
Test(report_csv, op_cycles_left_as_they_were)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	uint64_t fingerprint = histogram_fingerprint(rig->r->op_cycles);
	char **f = row_fields(rig);

	cr_expect_eq(histogram_fingerprint(rig->r->op_cycles), fingerprint);
	cr_expect_eq(histogram_count(rig->r->op_cycles), 10);
	g_strfreev(f);
	rig_free(rig);
}

Test(report_csv, empty_run_prints_zeroes)
{
	struct rig *rig = rig_new(WORKLOAD_NO_OP, NULL);
	struct sim_result *r = rig->r;

	histogram_free(r->op_cycles);
	r->op_cycles = histogram_new();
	r->round_accesses = 0;
	r->accessor_threads = 0;
	char **f = row_fields(rig);
	cr_expect_str_eq(field(f, "op"), "", "no syscall in the workload");
	cr_expect_str_eq(field(f, "op_count"), "0");
	cr_expect_str_eq(field(f, "op_ns_mean"), "0.000");
	cr_expect_str_eq(field(f, "op_ns_p50"), "0.000");
	cr_expect_str_eq(field(f, "op_ns_p99"), "0.000");
	cr_expect_str_eq(field(f, "access_ns"), "0.000");
	cr_expect_str_eq(field(f, "accesses_per_thread_ms"), "0.000");
	cr_expect_str_eq(field(f, "threads"), "0");
	g_strfreev(f);

	/* A zero-length phase divides by nothing. */
	r->round_accesses = 10;
	r->accessor_threads = 1;
	r->phase_cycles = 0;
	f = row_fields(rig);
	cr_expect_str_eq(field(f, "phase_ns"), "0.000");
	cr_expect_str_eq(field(f, "access_ns"), "0.000");
	cr_expect_str_eq(field(f, "accesses_per_thread_ms"), "0.000");
	g_strfreev(f);
	rig_free(rig);
}

/* Large cycle counts do not overflow: 10^12 cycles at 2 GHz = 5 * 10^11 ns. */
Test(report_csv, large_values_do_not_overflow)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);

	rig->r->sim_cycles = UINT64_C(1000000000000);
	rig->r->phase_cycles = UINT64_C(1000000000001);
	char **f = row_fields(rig);
	cr_expect_str_eq(field(f, "sim_ns"), "500000000000.000");
	cr_expect_str_eq(field(f, "phase_ns"), "500000000000.500");
	g_strfreev(f);
	rig_free(rig);
}

Test(report_csv, text_fields_are_quoted_when_needed)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);

	rig->meta.topology = "tiny,2cpu";
	rig->meta.workload = "say \"hi\"";
	rig->meta.policy = "two\nlines";
	GString *out = g_string_new(NULL);
	report_csv_row(out, &rig->meta, rig->r);
	cr_expect(g_str_has_prefix(out->str, "\"tiny,2cpu\",\"say \"\"hi\"\"\",\"two\nlines\",77,"),
		  "%s", out->str);
	g_string_free(out, TRUE);

	/* Plain names are not quoted. */
	rig->meta.topology = "plain-name_1.0";
	out = g_string_new(NULL);
	report_csv_row(out, &rig->meta, rig->r);
	cr_expect(g_str_has_prefix(out->str, "plain-name_1.0,"), "%s", out->str);
	g_string_free(out, TRUE);

	/* And the quoted row still splits into one field per column. */
	rig->meta.topology = "a,b,c";
	rig->meta.policy = "p";
	char **f = row_fields(rig);
	cr_expect_str_eq(field(f, "topology"), "a,b,c");
	cr_expect_str_eq(field(f, "workload"), "say \"hi\"");
	cr_expect_str_eq(field(f, "seed"), "77");
	g_strfreev(f);
	rig_free(rig);
}

/* ---- per-CPU CSV ------------------------------------------------------------------ */

Test(report_per_cpu, header_and_one_row_per_cpu)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	GString *out = g_string_new(NULL);

	report_per_cpu_csv(out, &rig->meta, NULL, rig->r);
	char **lines = g_strsplit(out->str, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 4, "header, 2 CPUs, empty tail");
	cr_expect_str_eq(lines[3], "");

	char **header = csv_split(lines[0]);
	static const char *const fixed[] = {"topology", "workload", "policy", "seed",
					    "clock_ghz", "cpu",     "socket", "core",
					    "thread",   "tlb_entries_end"};
	unsigned nf = G_N_ELEMENTS(fixed);
	cr_assert_eq(g_strv_length(header), nf + counters_count());
	for (unsigned i = 0; i < nf; i++)
		cr_expect_str_eq(header[i], fixed[i]);
	for (unsigned c = 0; c < counters_count(); c++)
		cr_expect_str_eq(header[nf + c], counters_names[c]);

	for (unsigned cpu = 0; cpu < 2; cpu++) {
		char **row = csv_split(lines[1 + cpu]);
		cr_assert_eq(g_strv_length(row), nf + counters_count(), "cpu %u", cpu);
		cr_expect_str_eq(row[0], "tiny-2cpu");
		cr_expect_str_eq(row[3], "77");
		cr_expect_str_eq(row[4], "2.000"); /* clock_ghz */
		char *s = g_strdup_printf("%u", cpu);
		cr_expect_str_eq(row[5], s);   /* cpu */
		cr_expect_str_eq(row[6], "0"); /* socket */
		cr_expect_str_eq(row[7], s);   /* core: tiny-2cpu has 2 cores x 1 thread */
		cr_expect_str_eq(row[8], "0"); /* thread */
		g_free(s);
		cr_expect_str_eq(row[9], cpu == 0 ? "11" : "22");
		for (unsigned c = 0; c < counters_count(); c++) {
			char *want = g_strdup_printf("%" G_GUINT64_FORMAT,
						     counters_get(&rig->r->per_cpu[cpu], c));
			cr_expect_str_eq(row[nf + c], want, "cpu %u %s", cpu, counters_names[c]);
			g_free(want);
		}
		g_strfreev(row);
	}
	g_strfreev(header);
	g_strfreev(lines);
	g_string_free(out, TRUE);
	rig_free(rig);
}

/* The labels lead the per-CPU rows as they lead the run's row, quoted alike. */
Test(report_per_cpu, labels_lead)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	static const char *const names[] = {"run", "n", NULL};
	static const char *const values[] = {"3", "a,b", NULL};
	rig->meta.label_values = values;
	GString *out = g_string_new(NULL);
	report_per_cpu_csv(out, &rig->meta, names, rig->r);
	cr_expect(g_str_has_prefix(out->str, "run,n,topology,workload,policy,seed,clock_ghz,cpu,"),
		  "%s", out->str);
	cr_expect(strstr(out->str, "\n3,\"a,b\",tiny-2cpu,report-test,linux-4.5,77,2.000,0,"),
		  "%s", out->str);
	cr_expect(strstr(out->str, "\n3,\"a,b\",tiny-2cpu,report-test,linux-4.5,77,2.000,1,"),
		  "%s", out->str);
	GString *key = g_string_new(NULL);
	report_run_key(key, &rig->meta);
	cr_expect_str_eq(key->str, "3,\"a,b\",tiny-2cpu,report-test,linux-4.5,77,2.000,");
	g_string_free(key, TRUE);
	g_string_free(out, TRUE);
	rig_free(rig);
}

/* ---- summary ---------------------------------------------------------------------- */

Test(report_summary, fills_every_placeholder)
{
	struct rig *rig = rig_new(WORKLOAD, FULL_TEMPLATE);
	char *s = report_summary(&rig->meta, rig->r);
	/*
	 * Truncating harness formulas: phase_ns = 1000000500 ps / 1000 = 1000000,
	 * phase_ms = 1, per call = 1000000 / 10, mean = 275050 ps -> 275,
	 * times/thread/ms 233333.216 -> 233333, cost 4.285 -> 4.
	 */
	char *want = g_strdup_printf("ms=1 ns=1000000 op=munmap n=10 per_call=100000 mean=275 "
				     "tpms=233333 cost=4 threads=3 acc=%" G_GUINT64_FORMAT ".",
				     rig->r->accesses);

	cr_expect_str_eq(s, want);
	cr_expect_null(strchr(s, '{'), "placeholder left in %s", s);
	cr_expect_null(strchr(s, '\n'));
	g_free(want);
	g_free(s);
	rig_free(rig);
}

Test(report_summary, literal_text_and_repeats)
{
	struct rig *rig = rig_new(WORKLOAD, "{op}{op} no placeholders after: done");
	char *s = report_summary(&rig->meta, rig->r);

	cr_expect_str_eq(s, "munmapmunmap no placeholders after: done");
	g_free(s);
	rig_free(rig);

	rig = rig_new(WORKLOAD, "");
	s = report_summary(&rig->meta, rig->r);
	cr_expect_str_eq(s, "");
	g_free(s);
	rig_free(rig);
}

Test(report_summary, default_line_names_the_op)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	char *s = report_summary(&rig->meta, rig->r);

	cr_expect(g_str_has_prefix(s, "munmap x10: 275 ns mean"), "%s", s);
	cr_expect_null(strchr(s, '{'), "%s", s);
	g_free(s);
	rig_free(rig);
}

/* ---- leading label columns (--label, a sweep's grid point) -------------------- */

Test(report_csv, labels_lead_the_header_and_the_row)
{
	struct rig *rig = rig_new(WORKLOAD, NULL);
	const char *const names[] = {"run", "workload.threads", "odd,name", NULL};
	const char *const values[] = {"3", "[1,2]", "x", NULL};
	GString *out = g_string_new(NULL);

	report_csv_header(out, names, false);
	char *joined = g_strjoinv(",", (char **)report_columns());
	char *want = g_strconcat("run,workload.threads,\"odd,name\",", joined, "\n", NULL);
	cr_expect_str_eq(out->str, want);

	/* The row is the unlabelled row with the values (quoted as needed) in front. */
	GString *plain = g_string_new(NULL);
	report_csv_row(plain, &rig->meta, rig->r);
	g_string_truncate(out, 0);
	rig->meta.label_values = values;
	report_csv_row(out, &rig->meta, rig->r);
	char *labelled = g_strconcat("3,\"[1,2]\",x,", plain->str, NULL);
	cr_expect_str_eq(out->str, labelled);
	g_free(labelled);
	g_string_free(plain, TRUE);
	g_free(want);
	g_free(joined);
	g_string_free(out, TRUE);
	rig_free(rig);
}

static void expect_label_refused(const char *name, const char *why)
{
	GError *error = NULL;
	cr_assert_not(report_check_label(name, &error), "\"%s\" accepted", name);
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
	cr_expect(strstr(error->message, why) != NULL, "\"%s\" lacks \"%s\"", error->message, why);
	g_error_free(error);
}

Test(report_csv, label_names_checked)
{
	GError *error = NULL;
	cr_expect(report_check_label("run", &error));
	cr_expect(report_check_label("workload.threads", &error));
	cr_expect(report_check_label("policy_file", &error));
	cr_expect_null(error);
	expect_label_refused("", "is empty");
	expect_label_refused("a\nb", "control character");
	expect_label_refused("policy", "is already a column of the run");
	expect_label_refused("host_seconds", "is already a column of the run");
}
