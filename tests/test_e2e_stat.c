/*
 * --stat: the perf-stat-like block on stderr holds the same totals as the
 * run's CSV row (counts, ns, the tlb:tlb_flush reasons and their full
 * flushes, the simulated seconds), -q leaves it, stdout stays exactly the
 * CSV, and a sweep refuses it.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"

TestSuite(e2e_stat, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* The block's lines: 18 columns of value, a blank, 5 of unit, the name, "# ...". */
#define NAME_AT 24

/* The stat line naming @name, or NULL. */
static char *stat_line(const char *err, const char *name)
{
	char **lines = g_strsplit(err, "\n", -1);
	char *found = NULL;
	size_t n = strlen(name);
	for (char **l = lines; *l && !found; l++)
		if (strlen(*l) > NAME_AT && strncmp(*l + NAME_AT, name, n) == 0 &&
		    (*l)[NAME_AT + n] == ' ')
			found = g_strdup(*l);
	g_strfreev(lines);
	return found;
}

/* The value of @name's line without its thousands separators. */
static char *stat_value(const char *err, const char *name)
{
	char *line = stat_line(err, name);
	cr_assert_not_null(line, "no --stat line \"%s\" in:\n%s", name, err);
	GString *value = g_string_new(NULL);
	for (int i = 0; i < 18; i++)
		if (line[i] != ' ' && line[i] != ',')
			g_string_append_c(value, line[i]);
	g_free(line);
	return g_string_free(value, FALSE);
}

/* Each reason's line against its two columns ("N full" in the comment). */
static void expect_reasons(const struct table *t, const char *err)
{
	static const char *const reasons[][2] = {
	    {"  flush on task switch", "tlb_flush_task_switch"},
	    {"  remote shootdown", "tlb_remote_shootdown"},
	    {"  local shootdown", "tlb_local_shootdown"},
	    {"  local mm shootdown", "tlb_local_mm_shootdown"},
	    {"  remote ipi send", "tlb_remote_send_ipi"},
	    {"  remote wrong CPU", "tlb_remote_wrong_cpu"},
	    {"  broadcast", "tlb_broadcast"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(reasons); i++) {
		char *value = stat_value(err, reasons[i][0]);
		cr_expect_str_eq(value, table_get(t, 0, reasons[i][1]), "%s", reasons[i][0]);
		char *full_column = g_strconcat(reasons[i][1], "_full", NULL);
		char *line = stat_line(err, reasons[i][0]);
		char *full = g_strdup_printf(" %s full", table_get(t, 0, full_column));
		cr_expect(g_str_has_suffix(line, full), "%s: expected \"%s\"", line, full);
		g_free(full);
		g_free(line);
		g_free(full_column);
		g_free(value);
	}
}

/* Every line of the block against the CSV column of the same run. */
static void expect_block_matches_row(const struct table *t, const char *err)
{
	static const char *const same[][2] = {
	    {"accesses", "accesses"},
	    {"page_walks", "page_walks"},
	    {"walk_wait_ns", "walk_wait_ns"},
	    {"walk_load_ns", "walk_load_ns"},
	    {"page-faults", "page_faults"},
	    {"context-switches", "context_switches"},
	    {"switch_mm_ns", "switch_mm_ns"},
	    {"ipis_sent", "ipis_sent"},
	    {"ipis_received", "ipis_received"},
	    {"irq_ns", "irq_ns"},
	    {"nr_tlb_remote_flush", "nr_tlb_remote_flush"},
	    {"nr_tlb_remote_flush_received", "nr_tlb_remote_flush_received"},
	    {"nr_tlb_local_flush_all", "nr_tlb_local_flush_all"},
	    {"nr_tlb_local_flush_one", "nr_tlb_local_flush_one"},
	    {"tlb:tlb_flush", "tlb_flush_events"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
		char *value = stat_value(err, same[i][0]);
		cr_expect_str_eq(value, table_get(t, 0, same[i][1]), "--stat %s vs column %s",
				 same[i][0], same[i][1]);
		g_free(value);
	}
	expect_reasons(t, err);
	char *title = g_strdup_printf(" Performance counter stats for 'tlbsim -T %s -w %s -p %s' "
				      "(simulated):\n",
				      table_get(t, 0, "topology"), table_get(t, 0, "workload"),
				      table_get(t, 0, "policy"));
	cr_expect(strstr(err, title), "no \"%s\" in:\n%s", title, err);
	/* sim_ns "1244520.xxx" is 0.001244520 s. */
	guint64 ns = g_ascii_strtoull(table_get(t, 0, "sim_ns"), NULL, 10);
	char *elapsed = g_strdup_printf("%" G_GUINT64_FORMAT ".%09" G_GUINT64_FORMAT
					" seconds time elapsed (simulated)\n",
					ns / 1000000000u, ns % 1000000000u);
	cr_expect(strstr(err, elapsed), "no \"%s\" in:\n%s", elapsed, err);
	g_free(elapsed);
	g_free(title);
}

Test(e2e_stat, block_holds_the_csv_values_and_stdout_is_the_csv)
{
	static const char *const runs[][3] = {
	    {"haswell-i7", SMALL, "linux-4.5"},
	    {"arm64-n1", SMALL, "arm64-6.5"},
	    {"qemu-riscv-virt", SMALL, "riscv-6.8"},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
		struct run plain, stat;
		run_tlbsim(&plain, "-q", "-T", runs[i][0], "-w", runs[i][1], "-p", runs[i][2],
			   NULL);
		run_tlbsim(&stat, "-q", "--stat", "-T", runs[i][0], "-w", runs[i][1], "-p",
			   runs[i][2], NULL);
		expect_status(&plain, 0);
		expect_status(&stat, 0);
		cr_expect_str_eq(stat.out, plain.out, "stdout is the CSV alone");
		struct table t;
		table_parse(&t, stat.out);
		expect_block_matches_row(&t, stat.err);
		table_clear(&t);
		run_clear(&plain);
		run_clear(&stat);
	}
}

/* Without -q the summary line comes first, then the block. */
Test(e2e_stat, after_the_summary_line)
{
	struct run r;
	run_tlbsim(&r, "--stat", "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&r, 0);
	cr_expect(matches("^munmap use .*\n\n Performance counter stats for ", r.err), "%s", r.err);
	run_clear(&r);
}

Test(e2e_stat, sweep_refuses_it)
{
	struct run r;
	run_tlbsim(&r, "sweep", "-T", "haswell-i7", "-w", SMALL, "--vary", "workload.threads=1,2",
		   "--stat", NULL);
	expect_status(&r, 2);
	cr_expect_str_eq(r.out, "");
	cr_expect(strstr(r.err, "--stat is for single runs"), "%s", r.err);
	run_clear(&r);
}
