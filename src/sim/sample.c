/*
 * Sampled mode's bookkeeping (sample.h).
 */
#include <limits.h>
#include <stddef.h>
#include <glib.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/kernel/kernel.h"
#include "tlbsim/kernel/sched.h"
#include "tlbsim/sim/sample.h"
#include "tlbsim/util/rng.h"
#include "tlbsim/util/stats.h"

__extension__ typedef unsigned __int128 u128;

#define SCALED_OFFSET(name, column) offsetof(struct counters, name),
static const size_t scaled[] = {SAMPLE_SCALED(SCALED_OFFSET)};
#undef SCALED_OFFSET
#define NR_SCALED SAMPLE_NR_SCALED
_Static_assert(G_N_ELEMENTS(scaled) == SAMPLE_NR_SCALED, "one offset per scaled counter");
#define SCALED_INDEX(name, column) SCALED_##name,
enum { SAMPLE_SCALED(SCALED_INDEX) };
#undef SCALED_INDEX
_Static_assert(SCALED_accesses == SAMPLE_ACCESSES, "SAMPLE_ACCESSES is accesses' index");

static inline uint64_t *field(struct counters *c, unsigned i)
{
	return (uint64_t *)(void *)((char *)c + scaled[i]);
}

static inline uint64_t field_of(const struct counters *c, unsigned i)
{
	return *(const uint64_t *)(const void *)((const char *)c + scaled[i]);
}

struct scaled_sum {
	uint64_t v[NR_SCALED];
};

/* Per CPU.  "Busy": cycles of simulated accesses (cpu->sample_access_cycles). */
struct cpu_sample {
	struct counters at_period_start, at_run_start;
	/* Its settled totals (machine_sample_settled_totals()) at the window's start. */
	struct counters settled_at_window_start;
	uint64_t settled_busy_at_window_start;
	/* What its loop counted while settled in the last window that had any
	 * settled accesses: what a skipped span counts, per cycle. */
	struct scaled_sum window;
	uint64_t window_busy;
	struct scaled_sum estimate; /* closed periods */
};

struct sampler {
	struct kernel *k;
	struct machine_sample_plan plan;
	struct rng rng; /* the spans' offsets */
	unsigned nr_cpus;
	uint64_t period_start;
	struct cpu_sample *cpus;
	struct counters *scratch;
	GArray *draws; /* struct sample_period */
};

/* @count scaled by @num / @den, rounded to the nearest. */
static uint64_t scale(uint64_t count, uint64_t num, uint64_t den)
{
	u128 v = ((u128)count * num + den / 2) / den;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static void sampler_window_start(struct sampler *s)
{
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct cpu_sample *cs = &s->cpus[c];
		machine_sample_settled_totals(&s->k->machine->cpus[c], &cs->settled_at_window_start,
					      &cs->settled_busy_at_window_start);
	}
}

static void sampler_window_end(struct sampler *s)
{
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct cpu_sample *cs = &s->cpus[c];
		struct counters now;
		uint64_t busy;
		machine_sample_settled_totals(&s->k->machine->cpus[c], &now, &busy);
		if (busy == cs->settled_busy_at_window_start)
			continue; /* no settled access: keep the last window's */
		const struct counters *then = &cs->settled_at_window_start;
		for (unsigned i = 0; i < NR_SCALED; i++)
			cs->window.v[i] = field_of(&now, i) - field_of(then, i);
		cs->window_busy = busy - cs->settled_busy_at_window_start;
	}
}

/*
 * Books the period [period_start, @end) of every CPU; @counters: the CPUs'
 * counters at @end, one per CPU.  A CPU that skipped cycles of accesses
 * counts what it simulated plus its last window's settled count per cycle
 * of settled accesses over them (before any, the rate of everything it
 * simulated so far).
 */
static void sampler_close(struct sampler *s, uint64_t end, const struct counters *counters)
{
	struct sample_period draw = {0};
	u128 measured[NR_SCALED] = {0}, busy[NR_SCALED] = {0};
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct cpu *cpu = &s->k->machine->cpus[c];
		struct cpu_sample *cs = &s->cpus[c];
		const struct counters *now = &counters[c];
		uint64_t skipped = cpu->sample_skipped_cycles;
		/* Before any window with settled accesses: all it simulated so far. */
		uint64_t per = cs->window_busy ? cs->window_busy : cpu->sample_access_cycles;
		if (!per)
			skipped = 0;
		for (unsigned i = 0; i < NR_SCALED; i++) {
			uint64_t own = field_of(now, i) - field_of(&cs->at_period_start, i);
			uint64_t count = cs->window_busy
					     ? cs->window.v[i]
					     : field_of(now, i) - field_of(&cs->at_run_start, i);
			cs->estimate.v[i] += own + (skipped ? scale(count, skipped, per) : 0);
			measured[i] += skipped ? count : 0;
			busy[i] += skipped ? per : 0;
		}
		draw.estimated += skipped;
		cpu->sample_skipped_cycles = 0;
		cs->at_period_start = *now;
	}
	for (unsigned i = 0; i < NR_SCALED; i++) {
		u128 rate = busy[i] ? (measured[i] << 32) / busy[i] : 0;
		draw.rate[i] = rate > UINT64_MAX ? UINT64_MAX : (uint64_t)rate;
	}
	if (draw.estimated)
		g_array_append_val(s->draws, draw);
	s->period_start = end;
}

enum boundary { PERIOD_START, WINDOW_START, WINDOW_END };

static void sampler_boundary(void *target, uint64_t arg);

/* A period begins at @now: draw where its warming and window lie. */
static void sampler_period_start(struct sampler *s, uint64_t now)
{
	const struct machine_sample_plan *p = &s->plan;
	struct machine_sample *span = &s->k->machine->sample;
	uint64_t offset = rng_below(&s->rng, p->period - p->warm - p->window + 1);
	span->on = true;
	span->exact_from = now + offset;
	span->exact_to = span->exact_from + p->warm + p->window;
	span->period_end = now + p->period;
	engine_schedule(s->k->engine, span->exact_from + p->warm, LANE_GLOBAL, sampler_boundary, s,
			WINDOW_START);
}

/* The boundary events, on the global lane: every CPU has counted what it did
 * before now, and nothing after (machine_horizon()). */
static void sampler_boundary(void *target, uint64_t arg)
{
	struct sampler *s = target;
	struct kernel *k = s->k;
	if (sched_nr_alive(k) == 0)
		return; /* the run is over: sampler_finish() closes it */
	uint64_t now = engine_now(k->engine);
	const struct machine_sample *span = &k->machine->sample;
	switch ((enum boundary)arg) {
	case WINDOW_START:
		sampler_window_start(s);
		engine_schedule(k->engine, span->exact_to, LANE_GLOBAL, sampler_boundary, s,
				WINDOW_END);
		break;
	case WINDOW_END:
		sampler_window_end(s);
		engine_schedule(k->engine, span->period_end, LANE_GLOBAL, sampler_boundary, s,
				PERIOD_START);
		break;
	case PERIOD_START:
		for (unsigned c = 0; c < s->nr_cpus; c++)
			s->scratch[c] = k->machine->cpus[c].counters;
		sampler_close(s, now, s->scratch);
		sampler_period_start(s, now);
		break;
	}
}

struct sampler *sampler_new(struct kernel *k, const struct machine_sample_plan *plan,
			    uint64_t seed)
{
	g_assert(plan->period && plan->window && plan->warm + plan->window < plan->period);
	struct sampler *s = g_new0(struct sampler, 1);
	s->k = k;
	s->plan = *plan;
	s->nr_cpus = k->machine->nr_cpus;
	s->cpus = g_new0(struct cpu_sample, s->nr_cpus);
	s->scratch = g_new0(struct counters, s->nr_cpus);
	s->draws = g_array_new(FALSE, TRUE, sizeof(struct sample_period));
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		s->cpus[c].at_period_start = k->machine->cpus[c].counters;
		s->cpus[c].at_run_start = k->machine->cpus[c].counters;
	}
	machine_sample_begin(k->machine);
	/* A stream of its own: the workload's draws stay those of an exact run. */
	rng_seed_stream(&s->rng, seed, UINT64_C(0x73616d706c65));
	sampler_period_start(s, 0);
	return s;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	g_free(s->cpus);
	g_free(s->scratch);
	g_array_free(s->draws, TRUE);
	g_free(s);
}

static u128 sat_mul(u128 a, u128 b)
{
	u128 r;
	return __builtin_mul_overflow(a, b, &r) ? ~(u128)0 : r;
}

static u128 sat_add(u128 a, u128 b)
{
	return a + b < a ? ~(u128)0 : a + b;
}

/* floor(sqrt(@v)), bit by bit. */
static uint64_t isqrt128(u128 v)
{
	u128 root = 0, bit = (u128)1 << 126;
	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= root + bit) {
			v -= root + bit;
			root = (root >> 1) + bit;
		} else {
			root >>= 1;
		}
		bit >>= 2;
	}
	return (uint64_t)root;
}

/*
 * Degrees of freedom of the successive-difference variance below, from @n
 * rates: it has 2/3 of the efficiency of the usual sample variance, whose
 * variance is 2 s^4 / (n - 1); its own is (3n - 4) s^4 / (n - 1)^2 (von
 * Neumann), which gives 2 (n - 1)^2 / (3n - 4).
 */
static unsigned successive_difference_df(uint64_t n)
{
	u128 df = 2 * (u128)(n - 1) * (n - 1) / (3 * (u128)n - 4);
	return df == 0 ? 1 : df > UINT_MAX ? UINT_MAX : (unsigned)df;
}

uint64_t sample_t975_ppm(unsigned windows)
{
	g_assert(windows >= SAMPLE_MIN_WINDOWS);
	/* t's bits are the same everywhere (stats.h); so is their rounding. */
	return (uint64_t)(stats_t975(successive_difference_df(windows)) * 1e6 + 0.5);
}

/*
 * t * sqrt(sum u_k^2) * s / total (sample.h).  Integer arithmetic (rates
 * with 32 fractional bits, roots with 20 more), as every printed fraction
 * is (docs/decisions.md).
 */
uint64_t sample_interval_ppm(const struct sample_period *periods, unsigned n, unsigned field,
			     uint64_t total)
{
	g_assert(n >= SAMPLE_MIN_WINDOWS && field < NR_SCALED && total > 0);
	u128 estimated2 = 0, diffs = 0;
	for (unsigned k = 0; k < n; k++) {
		estimated2 = sat_add(estimated2, sat_mul(periods[k].estimated, periods[k].estimated));
		if (k > 0) {
			u128 a = periods[k].rate[field], b = periods[k - 1].rate[field];
			u128 diff = a > b ? a - b : b - a;
			diffs = sat_add(diffs, sat_mul(diff, diff));
		}
	}
	uint64_t root_u = isqrt128(sat_mul(estimated2, (u128)1 << 40)); /* 2^-20 units */
	uint64_t root_s = isqrt128(sat_mul(diffs, (u128)1 << 40) / (2 * (u128)(n - 1))); /* 2^-52 */
	u128 half = sat_mul(root_u, root_s) >> 72; /* counts */
	u128 ppm = sat_mul(half, sample_t975_ppm(n)) / total;
	return ppm > UINT64_MAX ? UINT64_MAX : (uint64_t)ppm;
}

void sampler_finish(struct sampler *s, uint64_t end, struct counters *per_cpu,
		    struct sample_estimate *out)
{
	if (end > s->period_start)
		sampler_close(s, end, per_cpu);
	uint64_t totals[NR_SCALED] = {0};
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct cpu_sample *cs = &s->cpus[c];
		/* Counts after the end (a timer's flush) are the CPU's own. */
		for (unsigned i = 0; i < NR_SCALED; i++) {
			uint64_t after = field_of(&per_cpu[c], i) - field_of(&cs->at_period_start, i);
			*field(&per_cpu[c], i) = cs->estimate.v[i] + after;
			totals[i] += *field(&per_cpu[c], i);
		}
	}
	out->windows = s->draws->len;
	for (unsigned i = 0; i < NR_SCALED; i++)
		out->error_ppm[i] = out->windows > 0 && out->windows < SAMPLE_MIN_WINDOWS
					? SAMPLE_NO_ERROR
					: 0;
	for (unsigned i = 0; out->windows >= SAMPLE_MIN_WINDOWS && i < NR_SCALED; i++)
		out->error_ppm[i] =
		    totals[i] ? sample_interval_ppm((const struct sample_period *)(const void *)
							s->draws->data,
						    s->draws->len, i, totals[i])
			      : 0;
}
