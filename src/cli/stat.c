/*
 * --stat's block (stat.h), laid out as perf stat's: an 18-column count with
 * thousands separators, a unit column ("ns" for times, as the CSV's X_ns
 * columns, three decimals), the name, and "# comment".
 *
 * The time base is the whole simulated run (the CSV's sim_ns), as perf's is
 * the whole command; "CPU time" is that times the logical CPUs.  Totals are
 * the CSV's own values: counts as they are, times through
 * report_cycles_to_ps(), so a line can be checked against its column.
 */
#include "tlbsim/cli/stat.h"
#include "tlbsim/kernel/tracepoint.h"

/* Everything a comment is relative to. */
struct stat_base {
	const struct report_meta *meta;
	double seconds;     /* simulated */
	double cpu_time_ps; /* seconds x CPUs, in ps */
};

/* @v with a ',' every three digits, as perf's "%'" prints in an English locale. */
static void put_grouped(GString *out, uint64_t v)
{
	char digits[24];
	int n = g_snprintf(digits, sizeof(digits), "%" G_GUINT64_FORMAT, v);
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			g_string_append_c(out, ',');
		g_string_append_c(out, digits[i]);
	}
}

static void put_line(GString *out, const GString *value, const char *unit, const char *name,
		     const char *comment)
{
	g_string_append_printf(out, "%18s %-5s%-30s", value->str, unit, name);
	if (comment && *comment)
		g_string_append_printf(out, " # %s", comment);
	/* No trailing blanks: the name is padded only before a comment. */
	while (out->len && out->str[out->len - 1] == ' ')
		g_string_truncate(out, out->len - 1);
	g_string_append_c(out, '\n');
}

/* perf's "%8.3f %c/sec": events per simulated second, scaled to K, M, G. */
static char *per_second(const struct stat_base *b, uint64_t count)
{
	if (b->seconds <= 0)
		return NULL;
	double rate = (double)count / b->seconds;
	const char *scale = "";
	if (rate >= 1e9) {
		rate /= 1e9;
		scale = "G";
	} else if (rate >= 1e6) {
		rate /= 1e6;
		scale = "M";
	} else if (rate >= 1e3) {
		rate /= 1e3;
		scale = "K";
	}
	return g_strdup_printf("%8.3f %s/sec", rate, scale);
}

/* "12.34% of WHAT"; nothing when @whole is 0. */
static char *share(double part, double whole, const char *what)
{
	return whole > 0 ? g_strdup_printf("%8.2f%% of %s", 100 * part / whole, what) : NULL;
}

static void count_line(GString *out, const char *name, uint64_t count, char *comment)
{
	GString *value = g_string_new(NULL);
	put_grouped(value, count);
	put_line(out, value, "", name, comment);
	g_string_free(value, TRUE);
	g_free(comment);
}

/* A cycles counter as the CSV's X_ns column: ns with three decimals. */
static void ns_line(GString *out, const struct stat_base *b, const char *name, uint64_t cycles,
		    char *comment)
{
	uint64_t ps = report_cycles_to_ps(b->meta, cycles);
	GString *value = g_string_new(NULL);
	put_grouped(value, ps / 1000);
	g_string_append_printf(value, ".%03u", (unsigned)(ps % 1000));
	put_line(out, value, "ns", name, comment);
	g_string_free(value, TRUE);
	g_free(comment);
}

static void time_share_line(GString *out, const struct stat_base *b, const char *name,
			    uint64_t cycles)
{
	double ps = (double)report_cycles_to_ps(b->meta, cycles);
	ns_line(out, b, name, cycles, share(ps, b->cpu_time_ps, "CPU time"));
}

/* Page walks and what waiting for a walker and loading the tables added. */
static void walk_lines(GString *out, const struct stat_base *b, const struct counters *c)
{
	count_line(out, "accesses", c->accesses, per_second(b, c->accesses));
	count_line(out, "page_walks", c->page_walks,
		   share((double)c->page_walks, (double)c->accesses, "accesses"));
	const struct {
		const char *name;
		uint64_t cycles;
	} costs[] = {{"walk_wait_ns", c->walk_wait_cycles}, {"walk_load_ns", c->walk_load_cycles}};
	for (size_t i = 0; i < G_N_ELEMENTS(costs); i++) {
		double ps = (double)report_cycles_to_ps(b->meta, costs[i].cycles);
		ns_line(out, b, costs[i].name, costs[i].cycles,
			c->page_walks ? g_strdup_printf("%8.3f ns per walk",
							ps / 1000 / (double)c->page_walks)
				      : NULL);
	}
}

/* tlb:tlb_flush and its reasons, as ftrace spells them, each with its full flushes. */
static void tracepoint_lines(GString *out, const struct stat_base *b, const struct counters *c)
{
	count_line(out, "tlb:tlb_flush", c->tlb_flush_events, per_second(b, c->tlb_flush_events));
	struct counters copy = *c;
	for (unsigned reason = 0; reason < NR_TLB_FLUSH_REASONS; reason++) {
		uint64_t n = *tlb_flush_reason_counter(&copy, reason, false);
		uint64_t full = *tlb_flush_reason_counter(&copy, reason, true);
		char *name = g_strconcat("  ", tlb_flush_reason_ftrace(reason), NULL);
		GString *comment = g_string_new(NULL);
		if (c->tlb_flush_events)
			g_string_printf(comment, "%8.2f%% of tlb:tlb_flush, ",
					100 * (double)n / (double)c->tlb_flush_events);
		put_grouped(comment, full);
		g_string_append(comment, " full");
		count_line(out, name, n, g_string_free(comment, FALSE));
		g_free(name);
	}
}

static void counter_lines(GString *out, const struct stat_base *b, const struct counters *c)
{
	walk_lines(out, b, c);
	count_line(out, "page-faults", c->page_faults, per_second(b, c->page_faults));
	count_line(out, "context-switches", c->context_switches,
		   per_second(b, c->context_switches));
	time_share_line(out, b, "switch_mm_ns", c->switch_mm_cycles);
	count_line(out, "ipis_sent", c->ipis_sent, per_second(b, c->ipis_sent));
	count_line(out, "ipis_received", c->ipis_received, per_second(b, c->ipis_received));
	time_share_line(out, b, "irq_ns", c->irq_cycles);
	const struct {
		const char *name;
		uint64_t count;
	} vmstat[] = {
	    {"nr_tlb_remote_flush", c->nr_tlb_remote_flush},
	    {"nr_tlb_remote_flush_received", c->nr_tlb_remote_flush_received},
	    {"nr_tlb_local_flush_all", c->nr_tlb_local_flush_all},
	    {"nr_tlb_local_flush_one", c->nr_tlb_local_flush_one},
	};
	for (size_t i = 0; i < G_N_ELEMENTS(vmstat); i++)
		count_line(out, vmstat[i].name, vmstat[i].count, per_second(b, vmstat[i].count));
	tracepoint_lines(out, b, c);
}

void stat_block(GString *out, const struct report_meta *meta, const struct sim_result *r)
{
	uint64_t sim_ps = report_cycles_to_ps(meta, r->sim_cycles);
	struct stat_base b = {
	    .meta = meta,
	    .seconds = (double)sim_ps / 1e12,
	    .cpu_time_ps = (double)sim_ps * r->nr_cpus,
	};
	g_string_append_printf(out,
			       "\n Performance counter stats for 'tlbsim -T %s -w %s -p %s' "
			       "(simulated):\n\n",
			       meta->topology, meta->workload, meta->policy);
	counter_lines(out, &b, &r->total);
	/* perf's " %17.9f seconds time elapsed", from integer ps. */
	char *seconds = g_strdup_printf("%" G_GUINT64_FORMAT ".%09" G_GUINT64_FORMAT,
					sim_ps / 1000000000000u, sim_ps % 1000000000000u / 1000);
	g_string_append_printf(out, "\n%18s seconds time elapsed (simulated)\n\n", seconds);
	g_free(seconds);
}
