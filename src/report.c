/*
 * CSV and summary output.  One table lists the run columns; the counters'
 * X-macro lists the per-CPU ones.  Fractions print with three decimals from
 * integer arithmetic (no floating point), so output is byte-identical across
 * machines and compilers.
 */
#include <string.h>
#include "tlbsim/report.h"

__extension__ typedef unsigned __int128 u128;

/* Summary figures, all from integer arithmetic. */
struct figures {
	uint64_t mhz;         /* clock */
	uint64_t phase_ps;    /* duration of the measured phase */
	uint64_t sim_ps;
	uint64_t op_count;
	uint64_t op_mean_ps;
	uint64_t op_p50_ps;
	uint64_t op_p99_ps;
	uint64_t threads;
	uint64_t access_cost_mps; /* milli-ns per access per thread (harness "cost") */
	uint64_t acc_thread_ms_milli;
};

static uint64_t cycles_to_ps(uint64_t cycles, uint64_t mhz)
{
	return (uint64_t)((u128)cycles * 1000000 / mhz);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static uint64_t percentile(const uint64_t *sorted, uint64_t n, unsigned pct)
{
	if (n == 0)
		return 0;
	uint64_t rank = (n * pct + 99) / 100;
	return sorted[rank ? rank - 1 : 0];
}

static void compute_figures(const struct report_meta *meta, const struct sim_result *r,
			    struct figures *f)
{
	memset(f, 0, sizeof(*f));
	f->mhz = (uint64_t)(meta->topo->clock_ghz * 1000 + 0.5);
	f->phase_ps = cycles_to_ps(r->phase_cycles, f->mhz);
	f->sim_ps = cycles_to_ps(r->sim_cycles, f->mhz);
	f->op_count = r->op_cycles->len;
	f->threads = r->accessor_threads;
	if (f->op_count) {
		uint64_t *sorted = g_memdup2(r->op_cycles->data, f->op_count * sizeof(uint64_t));
		qsort(sorted, f->op_count, sizeof(uint64_t), compare_u64);
		u128 sum = 0;
		for (uint64_t i = 0; i < f->op_count; i++)
			sum += sorted[i];
		f->op_mean_ps = (uint64_t)(sum * 1000000 / f->mhz / f->op_count);
		f->op_p50_ps = cycles_to_ps(percentile(sorted, f->op_count, 50), f->mhz);
		f->op_p99_ps = cycles_to_ps(percentile(sorted, f->op_count, 99), f->mhz);
		g_free(sorted);
	}
	if (r->round_accesses && f->phase_ps) {
		/* Alex Shi's harness: cost = mptime * t / (actime * p) ns;
		 * times/thread/ms = actime * p * 1e6 / t / mptime. */
		f->access_cost_mps = (uint64_t)((u128)f->phase_ps * f->threads / r->round_accesses);
		if (f->threads)
			f->acc_thread_ms_milli = (uint64_t)((u128)r->round_accesses * 1000000000000 /
							    f->threads / f->phase_ps);
	}
}

static void put_milli(GString *out, uint64_t milli)
{
	g_string_append_printf(out, "%" G_GUINT64_FORMAT ".%03u", milli / 1000,
			       (unsigned)(milli % 1000));
}

static void put_u64(GString *out, uint64_t v)
{
	g_string_append_printf(out, "%" G_GUINT64_FORMAT, v);
}

/* A field is quoted only if it needs to be (RFC 4180). */
static void put_text(GString *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		g_string_append(out, s);
		return;
	}
	g_string_append_c(out, '"');
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			g_string_append_c(out, '"');
		g_string_append_c(out, *p);
	}
	g_string_append_c(out, '"');
}

struct column_ctx {
	const struct report_meta *meta;
	const struct sim_result *r;
	const struct figures *f;
};

typedef void (*column_fn)(GString *out, const struct column_ctx *c);

#define COUNTER_COLUMN(field)                                                                  \
	G_GNUC_UNUSED static void col_##field(GString *out, const struct column_ctx *c)        \
	{                                                                                      \
		put_u64(out, c->r->total.field);                                               \
	}
COUNTERS_FOREACH(COUNTER_COLUMN)
#undef COUNTER_COLUMN

static void col_topology(GString *out, const struct column_ctx *c)
{
	put_text(out, c->meta->topology);
}
static void col_workload(GString *out, const struct column_ctx *c)
{
	put_text(out, c->meta->workload);
}
static void col_policy(GString *out, const struct column_ctx *c)
{
	put_text(out, c->meta->policy);
}
static void col_seed(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->meta->seed);
}
static void col_cpus(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->r->nr_cpus);
}
static void col_threads(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->f->threads);
}
static void col_sim_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->sim_ps);
}
static void col_phase_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->phase_ps);
}
static void col_op(GString *out, const struct column_ctx *c)
{
	put_text(out, c->meta->w->report_op < NR_OP_KINDS ? workload_op_name(c->meta->w->report_op)
							  : "");
}
static void col_op_count(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->f->op_count);
}
/* Calls per simulated second of the phase (will-it-scale's loops/s). */
static uint64_t op_per_sec(const struct figures *f)
{
	return f->phase_ps ? (uint64_t)((u128)f->op_count * 1000000000000u / f->phase_ps) : 0;
}
static void col_op_per_sec(GString *out, const struct column_ctx *c)
{
	put_u64(out, op_per_sec(c->f));
}
static void col_op_ns_mean(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->op_mean_ps);
}
static void col_op_ns_p50(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->op_p50_ps);
}
static void col_op_ns_p99(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->op_p99_ps);
}
static void col_access_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->access_cost_mps);
}
static void col_accesses_per_thread_ms(GString *out, const struct column_ctx *c)
{
	put_milli(out, c->f->acc_thread_ms_milli);
}
static void col_irq_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.irq_cycles, c->f->mhz));
}
static void col_local_flush_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.local_flush_cycles, c->f->mhz));
}
static void col_switch_mm_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.switch_mm_cycles, c->f->mhz));
}
static void col_events(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->r->events);
}
static void col_host_seconds(GString *out, const struct column_ctx *c)
{
	if (c->meta->host_time)
		g_string_append_printf(out, "%.6f", c->meta->host_seconds);
}

static const struct {
	const char *name;
	column_fn fn;
} columns[] = {
	{"topology", col_topology},
	{"workload", col_workload},
	{"policy", col_policy},
	{"seed", col_seed},
	{"cpus", col_cpus},
	{"threads", col_threads},
	{"sim_ns", col_sim_ns},
	{"phase_ns", col_phase_ns},
	{"op", col_op},
	{"op_count", col_op_count},
	{"op_per_sec", col_op_per_sec},
	{"op_ns_mean", col_op_ns_mean},
	{"op_ns_p50", col_op_ns_p50},
	{"op_ns_p99", col_op_ns_p99},
	{"accesses", col_accesses},
	{"access_ns", col_access_ns},
	{"accesses_per_thread_ms", col_accesses_per_thread_ms},
	{"tlb_lookups", col_tlb_lookups},
	{"tlb_hits", col_tlb_hits},
	{"tlb_misses", col_tlb_misses},
	{"stlb_hits", col_stlb_hits},
	{"page_walks", col_page_walks},
	{"page_faults", col_page_faults},
	{"stale_hits", col_stale_hits},
	{"stale_pwc", col_stale_pwc},
	{"stale_entries", col_stale_entries},
	{"nr_tlb_remote_flush", col_nr_tlb_remote_flush},
	{"nr_tlb_remote_flush_received", col_nr_tlb_remote_flush_received},
	{"nr_tlb_local_flush_all", col_nr_tlb_local_flush_all},
	{"nr_tlb_local_flush_one", col_nr_tlb_local_flush_one},
	{"local_flush_ns", col_local_flush_ns},
	{"invlpg", col_invlpg},
	{"tlb_flush_all", col_tlb_flush_all},
	{"tlb_entries_invalidated", col_tlb_entries_invalidated},
	{"tlb_flush_events", col_tlb_flush_events},
	{"ipis_sent", col_ipis_sent},
	{"ipis_received", col_ipis_received},
	{"irq_ns", col_irq_ns},
	{"context_switches", col_context_switches},
	{"switch_mm", col_switch_mm},
	{"cpumask_atomics", col_cpumask_atomics},
	{"switch_mm_ns", col_switch_mm_ns},
	{"tlbi_broadcasts", col_tlbi_broadcasts},
	{"sbi_rfences", col_sbi_rfences},
	{"pages_reclaimed", col_pages_reclaimed},
	{"syscalls", col_syscalls},
	{"events", col_events},
	{"host_seconds", col_host_seconds},
};

const char *const *report_columns(void)
{
	static const char *names[G_N_ELEMENTS(columns) + 1];
	for (size_t i = 0; i < G_N_ELEMENTS(columns); i++)
		names[i] = columns[i].name;
	return names;
}

void report_csv_header(GString *out)
{
	for (size_t i = 0; i < G_N_ELEMENTS(columns); i++) {
		if (i)
			g_string_append_c(out, ',');
		g_string_append(out, columns[i].name);
	}
	g_string_append_c(out, '\n');
}

void report_csv_row(GString *out, const struct report_meta *meta, const struct sim_result *r)
{
	struct figures f;
	compute_figures(meta, r, &f);
	struct column_ctx c = {.meta = meta, .r = r, .f = &f};
	for (size_t i = 0; i < G_N_ELEMENTS(columns); i++) {
		if (i)
			g_string_append_c(out, ',');
		columns[i].fn(out, &c);
	}
	g_string_append_c(out, '\n');
}

void report_per_cpu_csv(GString *out, const struct report_meta *meta,
			const struct sim_result *r)
{
	g_string_append(out, "topology,workload,policy,seed,cpu,socket,core,thread,tlb_entries_end");
	for (unsigned i = 0; counters_names[i]; i++)
		g_string_append_printf(out, ",%s", counters_names[i]);
	g_string_append_c(out, '\n');
	for (unsigned cpu = 0; cpu < r->nr_cpus; cpu++) {
		put_text(out, meta->topology);
		g_string_append_c(out, ',');
		put_text(out, meta->workload);
		g_string_append_c(out, ',');
		put_text(out, meta->policy);
		g_string_append_printf(out, ",%" G_GUINT64_FORMAT ",%u,%u,%u,%u,%u", meta->seed, cpu,
				       topology_cpu_socket(meta->topo, cpu),
				       topology_cpu_core(meta->topo, cpu),
				       topology_cpu_thread(meta->topo, cpu), r->tlb_occupancy[cpu]);
		for (unsigned i = 0; i < counters_count(); i++)
			g_string_append_printf(out, ",%" G_GUINT64_FORMAT,
					       counters_get(&r->per_cpu[cpu], i));
		g_string_append_c(out, '\n');
	}
}

static const char *default_summary =
	"{op} x{op_count}: {op_ns_mean} ns mean; {accesses} accesses by {threads} threads, "
	"{access_cost_ns} ns/access";
/* A workload without syscalls has no op to report: no " x0: 0 ns mean" part. */
static const char *default_summary_no_op =
	"{accesses} accesses by {threads} threads, {access_cost_ns} ns/access";

char *report_summary(const struct report_meta *meta, const struct sim_result *r)
{
	struct figures f;
	compute_figures(meta, r, &f);
	const char *tmpl = meta->w->summary;
	if (!tmpl)
		tmpl = meta->w->report_op < NR_OP_KINDS ? default_summary : default_summary_no_op;
	GString *out = g_string_new(NULL);
	/* The harness's own integer formulas (truncating), for side-by-side diffs. */
	uint64_t phase_ns = f.phase_ps / 1000;
	for (const char *p = tmpl; *p;) {
		const char *open = strchr(p, '{');
		if (!open) {
			g_string_append(out, p);
			break;
		}
		g_string_append_len(out, p, open - p);
		const char *close = strchr(open, '}');
		g_assert(close); /* validated on load */
		char *field = g_strndup(open + 1, (gsize)(close - open - 1));
		if (strcmp(field, "phase_ms") == 0)
			put_u64(out, phase_ns / 1000000);
		else if (strcmp(field, "phase_ns") == 0)
			put_u64(out, phase_ns);
		else if (strcmp(field, "op") == 0)
			col_op(out, &(struct column_ctx){.meta = meta, .r = r, .f = &f});
		else if (strcmp(field, "op_count") == 0)
			put_u64(out, f.op_count);
		else if (strcmp(field, "op_ns_per_call") == 0)
			put_u64(out, f.op_count ? phase_ns / f.op_count : 0);
		else if (strcmp(field, "op_ns_mean") == 0)
			put_u64(out, f.op_mean_ps / 1000);
		else if (strcmp(field, "op_per_sec") == 0)
			put_u64(out, op_per_sec(&f));
		else if (strcmp(field, "accesses_per_thread_ms") == 0)
			put_u64(out, f.acc_thread_ms_milli / 1000);
		else if (strcmp(field, "access_cost_ns") == 0)
			put_u64(out, f.access_cost_mps / 1000);
		else if (strcmp(field, "threads") == 0)
			put_u64(out, f.threads);
		else if (strcmp(field, "accesses") == 0)
			put_u64(out, r->accesses);
		else
			g_assert_not_reached();
		g_free(field);
		p = close + 1;
	}
	return g_string_free(out, FALSE);
}
