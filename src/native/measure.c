/*
 * The native row.  Values are gathered by column name into a table, then
 * written in report_columns() order, so the header stays tlbsim's own and a
 * column tlbsim adds later is simply empty here.
 */
#include <string.h>
#include "tlbsim/cli/report.h"
#include "tlbsim/machine/counters.h"
#include "tlbsim/native/measure.h"
#include "tlbsim_commit.h"

__extension__ typedef unsigned __int128 u128;

static void set_u64(GHashTable *t, const char *column, uint64_t v)
{
	g_hash_table_insert(t, (gpointer)column, g_strdup_printf("%" G_GUINT64_FORMAT, v));
}

/* Thousandths as "N.NNN", as report.c's X_ns columns print. */
static void set_milli(GHashTable *t, const char *column, uint64_t milli)
{
	g_hash_table_insert(
	    t, (gpointer)column,
	    g_strdup_printf("%" G_GUINT64_FORMAT ".%03u", milli / 1000, (unsigned)(milli % 1000)));
}

static void set_str(GHashTable *t, const char *column, const char *s)
{
	g_hash_table_insert(t, (gpointer)column, g_strdup(s));
}

static void put_trace(GHashTable *t, const struct tracefs_cpu *c)
{
	set_u64(t, "tlb_flush_events", c->events);
	for (unsigned r = 0; r < TRACEFS_NR_REASONS; r++) {
		const char *name = tracefs_reason_columns[r];
		set_u64(t, name, c->reason[r]);
		set_u64(t, tracefs_reason_full_columns[r], c->full[r]);
	}
	/* tlbsim's own reason: no x86 kernel traces it. */
	set_u64(t, "tlb_broadcast", 0);
	set_u64(t, "tlb_broadcast_full", 0);
}

static void put_times(GHashTable *t, const struct measure *m)
{
	set_milli(t, "sim_ns", m->window_ns * 1000);
	set_milli(t, "phase_ns", m->phase_ns * 1000);
	if (m->op) {
		set_str(t, "op", m->op);
		set_u64(t, "op_count", m->op_count);
		if (m->phase_ns)
			set_u64(t, "op_per_sec",
				(uint64_t)((u128)m->op_count * 1000000000 / m->phase_ns));
		if (m->op_count)
			set_milli(t, "op_ns_mean", m->op_ns_sum * 1000 / m->op_count);
	}
	set_u64(t, "accesses", m->accesses);
	if (m->round_accesses && m->phase_ns) {
		set_milli(t, "access_ns",
			  (uint64_t)((u128)m->phase_ns * 1000 * m->threads / m->round_accesses));
		if (m->threads)
			set_milli(t, "accesses_per_thread_ms",
				  (uint64_t)((u128)m->round_accesses * 1000000000 / m->threads /
					     m->phase_ns));
	}
}

static GHashTable *row_values(const struct measure *m)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
	set_str(t, "topology", "native");
	set_str(t, "workload", m->workload);
	set_str(t, "policy", m->policy);
	set_u64(t, "seed", m->seed);
	set_u64(t, "cpus", m->nr_cpus);
	set_u64(t, "threads", m->threads);
	set_u64(t, "access_tasks", m->access_tasks);
	put_times(t, m);
	for (unsigned i = 0; m->proc && m->proc->has_vmstat && i < PROCSTAT_NR_VMSTAT; i++)
		set_u64(t, procstat_vmstat_names[i], m->proc->vmstat[i]);
	if (m->proc && m->proc->has_tlb_row) {
		uint64_t sum = 0;
		for (unsigned c = 0; c < m->proc->nr_cpus; c++)
			sum += m->proc->tlb[c];
		set_u64(t, "ipis_received", sum);
	}
	if (m->trace)
		put_trace(t, &m->trace->total);
	set_str(t, "tlbsim_version", TLBSIM_VERSION " (" TLBSIM_COMMIT ")");
	return t;
}

static void put_labels(GString *out, const char *const *values)
{
	for (const char *const *v = values; v && *v; v++) {
		report_csv_field(out, *v);
		g_string_append_c(out, ',');
	}
}

void measure_csv_row(GString *out, const struct measure *m)
{
	GHashTable *t = row_values(m);
	const char *const *columns = report_columns();
	put_labels(out, m->label_values);
	for (unsigned i = 0; columns[i]; i++) {
		const char *v = g_hash_table_lookup(t, columns[i]);
		if (i)
			g_string_append_c(out, ',');
		if (v)
			report_csv_field(out, v);
	}
	g_string_append_c(out, '\n');
	g_hash_table_destroy(t);
}

/* Sysfs topology number @file of @cpu ("core_id"), or "" if unreadable. */
static char *cpu_topology(unsigned cpu, const char *file)
{
	char *path = g_strdup_printf("/sys/devices/system/cpu/cpu%u/topology/%s", cpu, file);
	char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		text = g_strdup("");
	g_free(path);
	return g_strstrip(text);
}

static void per_cpu_row(GString *out, const struct measure *m, unsigned cpu)
{
	put_labels(out, m->label_values);
	report_csv_field(out, "native");
	g_string_append_c(out, ',');
	report_csv_field(out, m->workload);
	g_string_append_c(out, ',');
	report_csv_field(out, m->policy);
	char *socket = cpu_topology(cpu, "physical_package_id"),
	     *core = cpu_topology(cpu, "core_id");
	g_string_append_printf(out, ",%" G_GUINT64_FORMAT ",%u.%03u,%u,%s,%s,,", m->seed,
			       m->ghz_milli / 1000, m->ghz_milli % 1000, cpu, socket, core);
	g_free(socket);
	g_free(core);
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
	if (m->trace)
		put_trace(t, &m->trace->cpu[cpu]);
	if (m->proc && m->proc->has_tlb_row)
		set_u64(t, "ipis_received", m->proc->tlb[cpu]);
	for (unsigned i = 0; counters_names[i]; i++) {
		const char *v = g_hash_table_lookup(t, counters_names[i]);
		g_string_append_printf(out, ",%s", v ? v : "");
	}
	g_string_append_c(out, '\n');
	g_hash_table_destroy(t);
}

void measure_per_cpu_csv(GString *out, const struct measure *m, const char *const *label_names)
{
	report_run_key_header(out, label_names);
	g_string_append(out, "cpu,socket,core,thread,tlb_entries_end");
	for (unsigned i = 0; counters_names[i]; i++)
		g_string_append_printf(out, ",%s", counters_names[i]);
	g_string_append_c(out, '\n');
	for (unsigned cpu = 0; cpu < m->nr_cpus; cpu++)
		per_cpu_row(out, m, cpu);
}
