/*
 * CSV and summary output.  One table lists the run columns; the counters'
 * X-macro lists the per-CPU ones.  Fractions print with three decimals from
 * integer arithmetic (no floating point), so output is byte-identical across
 * machines and compilers.
 */
#include <string.h>
#include "tlbsim/cli/report.h"
#include "tlbsim/sim/sample.h"
#include "tlbsim_commit.h"
#include "tlbsim/util/error.h"

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

/* The clock in whole MHz: every figure's time base. */
static uint64_t clock_mhz(const struct report_meta *meta)
{
	return (uint64_t)(meta->topo->clock_ghz * 1000 + 0.5);
}

uint64_t report_cycles_to_ps(const struct report_meta *meta, uint64_t cycles)
{
	return cycles_to_ps(cycles, clock_mhz(meta));
}

static void compute_figures(const struct report_meta *meta, const struct sim_result *r,
			    struct figures *f)
{
	memset(f, 0, sizeof(*f));
	f->mhz = clock_mhz(meta);
	f->phase_ps = cycles_to_ps(r->phase_cycles, f->mhz);
	f->sim_ps = cycles_to_ps(r->sim_cycles, f->mhz);
	f->op_count = histogram_count(r->op_cycles);
	f->threads = r->accessor_threads;
	if (f->op_count) {
		uint64_t hi, lo;
		histogram_sum(r->op_cycles, &hi, &lo);
		u128 sum = (u128)hi << 64 | lo;
		f->op_mean_ps = (uint64_t)(sum * 1000000 / f->mhz / f->op_count);
		/* Nearest rank, exact for up to 65536 distinct latencies
		 * (histogram.h), within 0.1% below beyond. */
		f->op_p50_ps = cycles_to_ps(histogram_percentile(r->op_cycles, 50), f->mhz);
		f->op_p99_ps = cycles_to_ps(histogram_percentile(r->op_cycles, 99), f->mhz);
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

void report_csv_field(GString *out, const char *s)
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
	report_csv_field(out, c->meta->topology);
}
static void col_workload(GString *out, const struct column_ctx *c)
{
	report_csv_field(out, c->meta->workload);
}
static void col_policy(GString *out, const struct column_ctx *c)
{
	report_csv_field(out, c->meta->policy);
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

static void col_access_tasks(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->r->access_tasks);
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
	report_csv_field(out, c->meta->w->report_op < NR_OP_KINDS ? workload_op_name(c->meta->w->report_op)
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
static void col_walk_load_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.walk_load_cycles, c->f->mhz));
}
static void col_walk_wait_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.walk_wait_cycles, c->f->mhz));
}
static void col_local_flush_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.local_flush_cycles, c->f->mhz));
}
static void col_lru_lock_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.lru_lock_cycles, c->f->mhz));
}
static void col_mmap_lock_wait_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.mmap_lock_wait_cycles, c->f->mhz));
}
static void col_vma_lock_wait_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.vma_lock_wait_cycles, c->f->mhz));
}
static void col_switch_mm_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.switch_mm_cycles, c->f->mhz));
}
static void col_latr_sweep_ns(GString *out, const struct column_ctx *c)
{
	put_milli(out, cycles_to_ps(c->r->total.latr_sweep_cycles, c->f->mhz));
}
static void col_events(GString *out, const struct column_ctx *c)
{
	put_u64(out, c->r->events);
}
/* "0.2.0 (abc1234)": what made the row. */
static void col_tlbsim_version(GString *out, const struct column_ctx *c)
{
	(void)c;
	g_string_append(out, TLBSIM_VERSION " (" TLBSIM_COMMIT ")");
}

static void col_host_seconds(GString *out, const struct column_ctx *c)
{
	if (c->meta->host_time)
		g_string_append_printf(out, "%.6f", c->meta->host_seconds);
}

/*
 * The run columns, in CSV order: the one place a column is added.  Each NAME
 * has a col_NAME() above; the names and the writers are both expanded from
 * this list at compile time, so nothing is filled in at run time (several
 * sweep runs may write rows at once).
 */
#define REPORT_COLUMNS(X) \
	X(topology) \
	X(workload) \
	X(policy) \
	X(seed) \
	X(cpus) \
	X(threads) \
	X(access_tasks) \
	X(sim_ns) \
	X(phase_ns) \
	X(op) \
	X(op_count) \
	X(op_per_sec) \
	X(op_ns_mean) \
	X(op_ns_p50) \
	X(op_ns_p99) \
	X(accesses) \
	X(access_ns) \
	X(accesses_per_thread_ms) \
	X(tlb_lookups) \
	X(tlb_hits) \
	X(tlb_misses) \
	X(stlb_hits) \
	X(page_walks) \
	X(walk_wait_ns) \
	X(walk_loads) \
	X(walk_load_ns) \
	X(page_faults) \
	X(stale_hits) \
	X(stale_reuse) \
	X(stale_pwc) \
	X(stale_entries) \
	X(nr_tlb_remote_flush) \
	X(nr_tlb_remote_flush_received) \
	X(nr_tlb_local_flush_all) \
	X(nr_tlb_local_flush_one) \
	X(local_flush_ns) \
	X(invlpg) \
	X(tlb_flush_all) \
	X(tlb_entries_invalidated) \
	X(tlb_flush_events) \
	COUNTERS_FLUSH_REASONS(X) \
	X(ipis_sent) \
	X(ipis_received) \
	X(irq_ns) \
	X(context_switches) \
	X(switch_mm) \
	X(nr_migrations) \
	X(cpumask_atomics) \
	X(switch_mm_ns) \
	X(tlbi_broadcasts) \
	X(sbi_rfences) \
	X(pages_reclaimed) \
	X(lru_lock_acquisitions) \
	X(lru_lock_ns) \
	X(mmap_lock_acquisitions) \
	X(mmap_lock_wait_ns) \
	X(vma_lock_acquisitions) \
	X(vma_lock_wait_ns) \
	X(vma_lock_abort) \
	X(syscalls) \
	X(latr_states_saved) \
	X(latr_states_flushed) \
	X(latr_fallback_ipis) \
	X(latr_sweep_ns) \
	X(rar_requests) \
	X(rar_actions) \
	X(didi_lookups) \
	X(didi_invalidations) \
	X(abis_flush_skipped) \
	X(abis_local_only) \
	X(multicast_messages) \
	X(multicast_requests) \
	X(multicast_aggregations) \
	X(pti_user_flushes_deferred) \
	X(pti_user_flush_all) \
	X(events) \
	X(host_seconds) \
	X(tlbsim_version)

#define COLUMN_FN(name) col_##name,
static const column_fn column_fns[] = {REPORT_COLUMNS(COLUMN_FN)};
#undef COLUMN_FN
#define COLUMN_NAME(name) #name,
static const char *const column_names[] = {REPORT_COLUMNS(COLUMN_NAME) NULL};
#undef COLUMN_NAME

bool report_stale_violation(const struct policy *policy, const struct sim_result *r)
{
	bool promises_none = policy->completion != FLUSH_COMPLETION_NONE;
	return r->total.stale_reuse || r->total.stale_pwc || (promises_none && r->total.stale_hits);
}

const char *const *report_columns(void)
{
	return column_names;
}

bool report_check_label(const char *name, GError **error)
{
	const char *why = NULL;
	if (!*name)
		why = "is empty";
	for (const char *p = name; *p && !why; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			why = "holds a control character";
	if (!why && g_strv_contains(column_names, name))
		why = "is already a column of the run";
	if (why)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "column name \"%s\" %s", name,
			    why);
	return !why;
}

/* Leading columns, each followed by its comma. */
static void put_labels(GString *out, const char *const *labels)
{
	for (const char *const *l = labels; l && *l; l++) {
		report_csv_field(out, *l);
		g_string_append_c(out, ',');
	}
}

void report_csv_header(GString *out, const char *const *label_names, bool sampled)
{
	put_labels(out, label_names);
	for (size_t i = 0; i < G_N_ELEMENTS(column_fns); i++) {
		if (i)
			g_string_append_c(out, ',');
		g_string_append(out, column_names[i]);
	}
	if (sampled) {
		g_string_append(out, ",sample_windows");
#define SAMPLE_COLUMN_NAME(field, column) g_string_append(out, "," #column "_rel_ci95");
		SAMPLE_SCALED(SAMPLE_COLUMN_NAME)
#undef SAMPLE_COLUMN_NAME
	}
	g_string_append_c(out, '\n');
}

/* Sampled mode's columns: the windows the estimates used, and each estimated
 * counter's relative 95% half-width (0.012345 is +-1.2345%; empty: under 2
 * windows, no interval). */
static void put_sample_columns(GString *out, const struct sim_result *r)
{
	g_string_append_printf(out, ",%u", r->sample_windows);
	for (unsigned i = 0; i < SAMPLE_NR_SCALED; i++) {
		uint64_t ppm = r->sample_error_ppm[i];
		g_string_append_c(out, ',');
		if (ppm != SAMPLE_NO_ERROR)
			g_string_append_printf(out, "%" G_GUINT64_FORMAT ".%06u", ppm / 1000000,
					       (unsigned)(ppm % 1000000));
	}
}

void report_csv_row(GString *out, const struct report_meta *meta, const struct sim_result *r)
{
	struct figures f;
	compute_figures(meta, r, &f);
	struct column_ctx c = {.meta = meta, .r = r, .f = &f};
	put_labels(out, meta->label_values);
	for (size_t i = 0; i < G_N_ELEMENTS(column_fns); i++) {
		if (i)
			g_string_append_c(out, ',');
		column_fns[i](out, &c);
	}
	if (meta->sampled)
		put_sample_columns(out, r);
	g_string_append_c(out, '\n');
}

void report_run_key_header(GString *out, const char *const *label_names)
{
	put_labels(out, label_names);
	g_string_append(out, "topology,workload,policy,seed,clock_ghz,");
}

void report_run_key(GString *out, const struct report_meta *meta)
{
	put_labels(out, meta->label_values);
	report_csv_field(out, meta->topology);
	g_string_append_c(out, ',');
	report_csv_field(out, meta->workload);
	g_string_append_c(out, ',');
	report_csv_field(out, meta->policy);
	g_string_append_printf(out, ",%" G_GUINT64_FORMAT ",", meta->seed);
	/* The clock the X_ns columns were computed at: MHz as GHz. */
	put_milli(out, clock_mhz(meta));
	g_string_append_c(out, ',');
}

void report_per_cpu_csv(GString *out, const struct report_meta *meta,
			const char *const *label_names, const struct sim_result *r)
{
	report_run_key_header(out, label_names);
	g_string_append(out, "cpu,socket,core,thread,tlb_entries_end");
	for (unsigned i = 0; counters_names[i]; i++)
		g_string_append_printf(out, ",%s", counters_names[i]);
	g_string_append_c(out, '\n');
	for (unsigned cpu = 0; cpu < r->nr_cpus; cpu++) {
		report_run_key(out, meta);
		g_string_append_printf(out, "%u,%u,%u,%u,%u", cpu,
				       topology_cpu_socket(meta->topo, cpu),
				       topology_cpu_core(meta->topo, cpu),
				       topology_cpu_thread(meta->topo, cpu), r->tlb_occupancy[cpu]);
		for (unsigned i = 0; i < counters_count(); i++)
			g_string_append_printf(out, ",%" G_GUINT64_FORMAT,
					       counters_get(&r->per_cpu[cpu], i));
		g_string_append_c(out, '\n');
	}
}

static const char *const default_summary =
	"{op} x{op_count}: {op_ns_mean} ns mean; {accesses} accesses by {threads} threads, "
	"{access_cost_ns} ns/access";
/* A workload without syscalls has no op to report: no " x0: 0 ns mean" part. */
static const char *const default_summary_no_op =
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
