/*
 * Tests of src/native/measure.c: the row has exactly report_columns()'s
 * fields after the labels, the measured ones filled by report.c's
 * definitions (worked out by hand below), the unmeasured ones empty; the
 * trace and /proc columns only when they were read.
 *
 *   phase 2 000 000 ns, 100 op calls taking 1 234 567 ns in all:
 *     op_per_sec 100 * 1e9 / 2e6 = 50000; op_ns_mean 12345.670
 *   round_accesses 3 000 000 by 3 threads:
 *     access_ns = 2e6 * 3 / 3e6 = 2.000
 *     accesses_per_thread_ms = 3e6 / 3 / 2 ms = 500000.000
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/cli/report.h"
#include "tlbsim/native/measure.h"

static const struct measure base = {.workload = "munmap",
				    .policy = "linux-6.1.0-27-amd64",
				    .seed = 7,
				    .nr_cpus = 2,
				    .op = "munmap",
				    .threads = 3,
				    .access_tasks = 4,
				    .window_ns = 2500000,
				    .phase_ns = 2000000,
				    .op_count = 100,
				    .op_ns_sum = 1234567,
				    .accesses = 3000123,
				    .round_accesses = 3000000,
				    .ghz_milli = 2000};

/* The row's value of @column (g_free), after @nr_labels label fields. */
static char *field(const char *row, const char *column, unsigned nr_labels)
{
	const char *const *columns = report_columns();
	char **fields = g_strsplit(row, ",", -1);
	unsigned n = g_strv_length(fields);
	unsigned nr_columns = g_strv_length((char **)columns);
	cr_assert_eq(n, nr_labels + nr_columns, "%u fields, %u columns", n, nr_columns);
	char *value = NULL;
	for (unsigned i = 0; columns[i]; i++)
		if (strcmp(columns[i], column) == 0)
			value = g_strdup(g_strchomp(fields[nr_labels + i]));
	g_strfreev(fields);
	cr_assert_not_null(value, "no column %s", column);
	return value;
}

static void expect(const char *row, const char *column, const char *want)
{
	char *v = field(row, column, 0);
	cr_assert_str_eq(v, want, "%s", column);
	g_free(v);
}

Test(native_measure, measured_columns)
{
	GString *out = g_string_new(NULL);
	measure_csv_row(out, &base);
	expect(out->str, "topology", "native");
	expect(out->str, "policy", "linux-6.1.0-27-amd64");
	expect(out->str, "seed", "7");
	expect(out->str, "threads", "3");
	expect(out->str, "sim_ns", "2500000.000");
	expect(out->str, "phase_ns", "2000000.000");
	expect(out->str, "op_count", "100");
	expect(out->str, "op_per_sec", "50000");
	expect(out->str, "op_ns_mean", "12345.670");
	expect(out->str, "accesses", "3000123");
	expect(out->str, "access_ns", "2.000");
	expect(out->str, "accesses_per_thread_ms", "500000.000");
	/* Not measured natively. */
	expect(out->str, "tlb_misses", "");
	expect(out->str, "op_ns_p99", "");
	expect(out->str, "ipis_sent", "");
	expect(out->str, "host_seconds", "");
	/* Not read: no /proc, no trace. */
	expect(out->str, "tlb_flush_events", "");
	expect(out->str, "ipis_received", "");
	expect(out->str, "nr_tlb_remote_flush", "");
	g_string_free(out, TRUE);
}

Test(native_measure, trace_and_proc_columns)
{
	struct measure m = base;
	struct tracefs_counts c;
	struct procstat p;
	tracefs_counts_init(&c, 2);
	procstat_init(&p, 2);
	c.total.events = 10;
	c.total.reason[1] = 6;
	c.total.full[1] = 2;
	c.total.reason[4] = 4;
	p.has_tlb_row = true;
	p.tlb[0] = 2;
	p.tlb[1] = 4;
	m.trace = &c;
	m.proc = &p;
	GString *out = g_string_new(NULL);
	measure_csv_row(out, &m);
	expect(out->str, "tlb_flush_events", "10");
	expect(out->str, "tlb_remote_shootdown", "6");
	expect(out->str, "tlb_remote_shootdown_full", "2");
	expect(out->str, "tlb_remote_send_ipi", "4");
	expect(out->str, "tlb_local_shootdown", "0");
	expect(out->str, "ipis_received", "6");
	expect(out->str, "nr_tlb_remote_flush", "");
	g_string_free(out, TRUE);
	tracefs_counts_clear(&c);
	procstat_clear(&p);
}

Test(native_measure, header_and_labels)
{
	const char *const names[] = {"run", NULL};
	const char *const values[] = {"a,b", NULL};
	struct measure m = base;
	m.label_values = values;
	GString *header = g_string_new(NULL), *row = g_string_new(NULL);
	report_csv_header(header, names, false);
	measure_csv_row(row, &m);
	cr_assert(g_str_has_prefix(row->str, "\"a,b\",native,munmap,"), "%s", row->str);
	cr_assert(g_str_has_prefix(header->str, "run,topology,"));
	g_string_free(header, TRUE);
	g_string_free(row, TRUE);
}

Test(native_measure, per_cpu)
{
	struct measure m = base;
	struct tracefs_counts c;
	tracefs_counts_init(&c, 2);
	c.cpu[1].reason[1] = 5;
	c.cpu[1].events = 5;
	m.trace = &c;
	GString *out = g_string_new(NULL);
	measure_per_cpu_csv(out, &m, NULL);
	char **lines = g_strsplit(out->str, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 4, "header, 2 CPUs, the final newline");
	cr_assert(g_str_has_prefix(lines[0], "topology,workload,policy,seed,clock_ghz,cpu,socket,"
					     "core,thread,tlb_entries_end,accesses,"));
	cr_assert(g_str_has_prefix(lines[2], "native,munmap,linux-6.1.0-27-amd64,7,2.000,1,"), "%s",
		  lines[2]);
	char **header = g_strsplit(lines[0], ",", -1), **cpu1 = g_strsplit(lines[2], ",", -1);
	cr_assert_eq(g_strv_length(cpu1), g_strv_length(header));
	g_strfreev(header);
	g_strfreev(cpu1);
	cr_assert(strstr(lines[2], ",5,"), "%s", lines[2]);
	g_strfreev(lines);
	g_string_free(out, TRUE);
	tracefs_counts_clear(&c);
}
