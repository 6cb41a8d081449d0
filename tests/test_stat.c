/*
 * Tests of src/cli/stat.c (--stat) on a hand-built struct sim_result: the
 * title names the inputs, counts have thousands separators, cycles become
 * the CSV's ns (three decimals), rates are per simulated second and scaled
 * like perf's (K, M, G), shares are of accesses, CPU time and tlb:tlb_flush,
 * the reasons are spelled as ftrace prints them, and the block ends with the
 * simulated seconds.
 *
 * The machine is tests/data/tiny-2cpu.json at clock_ghz 2.0 (one cycle is
 * 500 ps), 2 CPUs, and the run lasts 2 000 000 cycles: 1 ms, so a count N is
 * N * 1000 per second, and CPU time is 2 ms.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/cli/stat.h"

static struct topology *load_topology(void)
{
	struct topology *topo = support_topology_at("tiny-2cpu.json", "2.0");
	cr_assert_eq(topo->clock_ghz, 2.0);
	return topo;
}

/* The block of a 1 ms run of 2 CPUs with @total's counters. */
static char *block_of(const struct counters *total)
{
	struct topology *topo = load_topology();
	struct sim_result r = {.nr_cpus = 2, .total = *total, .sim_cycles = 2000000};
	struct report_meta meta = {
	    .topology = "tiny-2cpu", .workload = "w", .policy = "linux-4.5", .topo = topo};
	GString *out = g_string_new(NULL);
	stat_block(out, &meta, &r);
	topology_free(topo);
	return g_string_free(out, FALSE);
}

/* The line of @block naming @name (whole word after the unit column). */
static char *line_of(const char *block, const char *name)
{
	char **lines = g_strsplit(block, "\n", -1);
	char *found = NULL;
	for (char **l = lines; *l && !found; l++) {
		if (strlen(*l) < 24)
			continue;
		const char *rest = *l + 24; /* 18 columns, a blank, the unit's 5 */
		size_t n = strlen(name);
		if (strncmp(rest, name, n) == 0 && (rest[n] == ' ' || rest[n] == '\0'))
			found = g_strdup(*l);
	}
	g_strfreev(lines);
	cr_assert_not_null(found, "no line \"%s\" in:\n%s", name, block);
	return found;
}

static void expect_line(const char *block, const char *name, const char *expected)
{
	char *line = line_of(block, name);
	cr_expect_str_eq(line, expected);
	g_free(line);
}

Test(stat, title_counts_rates_and_elapsed_time)
{
	struct counters c = {.accesses = 1234567,
			     .page_walks = 12345,
			     .context_switches = 7,
			     .ipis_sent = 2500,
			     .nr_tlb_remote_flush = 0};
	char *block = block_of(&c);
	cr_expect(g_str_has_prefix(block, "\n Performance counter stats for 'tlbsim -T tiny-2cpu "
					  "-w w -p linux-4.5' (simulated):\n\n"),
		  "%s", block);
	/* 1,234,567 per ms: 1.234567 G/sec. */
	expect_line(block, "accesses",
		    "         1,234,567      accesses                       #    1.235 G/sec");
	expect_line(
	    block, "page_walks",
	    "            12,345      page_walks                     #     1.00% of accesses");
	expect_line(block, "context-switches",
		    "                 7      context-switches               #    7.000 K/sec");
	expect_line(block, "ipis_sent",
		    "             2,500      ipis_sent                      #    2.500 M/sec");
	expect_line(block, "nr_tlb_remote_flush",
		    "                 0      nr_tlb_remote_flush            #    0.000 /sec");
	cr_expect(g_str_has_suffix(block, "\n       0.001000000 seconds time elapsed "
					  "(simulated)\n\n"),
		  "%s", block);
	cr_expect_null(strstr(block, " \n"), "no trailing blanks");
	g_free(block);
}

/* Cycles as the CSV's X_ns: 123457 cycles at 2 GHz are 61728.500 ns, of 2 ms
 * of CPU time 3.09%; walk costs per walk. */
Test(stat, times_in_ns_as_the_csv)
{
	struct counters c = {.irq_cycles = 123457, .page_walks = 4, .walk_load_cycles = 1000};
	char *block = block_of(&c);
	expect_line(
	    block, "irq_ns",
	    "        61,728.500 ns   irq_ns                         #     3.09% of CPU time");
	expect_line(
	    block, "walk_load_ns",
	    "           500.000 ns   walk_load_ns                   #  125.000 ns per walk");
	g_free(block);
}

/* The tracepoint, then each reason in ftrace's spelling with its share and full flushes. */
Test(stat, tlb_flush_reasons_as_ftrace_spells_them)
{
	struct counters c = {.tlb_flush_events = 4000,
			     .tlb_remote_shootdown = 3000,
			     .tlb_remote_shootdown_full = 1500,
			     .tlb_remote_send_ipi = 1000};
	char *block = block_of(&c);
	expect_line(block, "tlb:tlb_flush",
		    "             4,000      tlb:tlb_flush                  #    4.000 M/sec");
	expect_line(block, "  remote shootdown",
		    "             3,000        remote shootdown             #    75.00% of "
		    "tlb:tlb_flush, 1,500 full");
	expect_line(block, "  remote ipi send",
		    "             1,000        remote ipi send              #    25.00% of "
		    "tlb:tlb_flush, 0 full");
	static const char *const others[] = {"  flush on task switch", "  local shootdown",
					     "  local mm shootdown", "  remote wrong CPU",
					     "  broadcast"};
	for (size_t i = 0; i < G_N_ELEMENTS(others); i++) {
		char *line = line_of(block, others[i]);
		cr_expect(strstr(line, "0.00% of tlb:tlb_flush, 0 full"), "%s", line);
		g_free(line);
	}
	g_free(block);
}

/* Nothing to divide by: no shares and no per-walk cost, not a NaN. */
Test(stat, empty_run_has_no_nan)
{
	struct counters c = {0};
	char *block = block_of(&c);
	cr_expect_null(strstr(block, "nan"), "%s", block);
	expect_line(block, "page_walks", "                 0      page_walks");
	expect_line(block, "  remote shootdown",
		    "                 0        remote shootdown             # 0 full");
	g_free(block);
}
