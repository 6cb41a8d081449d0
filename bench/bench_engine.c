/*
 * The classic "hold" benchmark of event queues (Jones, CACM 1986): prefill N
 * pending events, then repeat M times: pop the earliest, push a new one at
 * now + a random increment.  N stays constant, so the figure is the cost of
 * one pop + one push at queue size N.
 *
 * Two queues run the same hold sequence:
 * - engine: tlbsim's engine through its public API; each event's fn schedules
 *   the next hold, and engine_run(event_limit = M) drives it.  This includes an
 *   indirect call and two calls into engine.c per hold that the plain heap
 *   does not pay.
 * - plain:  a textbook binary min-heap of the same 40-byte events and the same
 *   (time, seq) key, with pop and push inlined into the loop.
 *
 * Increments are uniform in [0, 2 * MEAN_INCREMENT) cycles, so pending events
 * span about 2 * MEAN_INCREMENT cycles and at large N many share a time: the
 * seq tie-break is exercised, as in a real simulation.  (Exponential
 * increments would need libm's log() and cost more than the hold itself at
 * small N; uniform ones are the other classic choice.)
 *
 * Usage: bench_engine [--quick]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime() under -std=c11 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tlbsim/engine.h"

#define REPETITIONS 5
/* Power of two so a uniform draw is a mask, not a division. */
#define MEAN_INCREMENT 1024
#define HOLDS_FULL 1000000
#define HOLDS_QUICK 100000
#define RNG_SEED UINT64_C(0x9e3779b97f4a7c15)

static const size_t queue_sizes[] = {16, 256, 4096, 65536};

/* xorshift64*: cheap enough not to dominate a ~50 ns hold. */
static inline uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}

static inline uint64_t increment(uint64_t *rng)
{
	return rng_next(rng) & (2 * MEAN_INCREMENT - 1);
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- (a) tlbsim's engine -------------------------------------------------- */

/*
 * @lanes 0: events in no lane (the bare queue); otherwise event i lives in
 * lane i % lanes, as a simulation spreads its events over CPU lanes.
 */
struct hold {
	struct engine *engine;
	uint64_t rng;
	unsigned lanes;
};

static unsigned hold_lane(const struct hold *h, uint64_t i)
{
	return h->lanes ? (unsigned)(i % h->lanes) : ENGINE_LANE_NONE;
}

static void hold_fn(void *target, uint64_t arg)
{
	struct hold *h = target;
	uint64_t now = engine_now(h->engine);

	engine_schedule(h->engine, now + increment(&h->rng), hold_lane(h, arg), hold_fn, h, arg);
}

/* Returns holds per second over @holds timed holds. */
static double run_engine(size_t n, uint64_t warmup, uint64_t holds, unsigned lanes)
{
	struct hold h = {.engine = engine_new(lanes ? lanes : 1), .rng = RNG_SEED, .lanes = lanes};
	double start, elapsed;

	for (size_t i = 0; i < n; i++)
		engine_schedule(h.engine, increment(&h.rng), hold_lane(&h, i), hold_fn, &h, i);
	if (engine_run(h.engine, ENGINE_NEVER, warmup) != ENGINE_EVENT_LIMIT)
		abort();
	start = seconds_now();
	if (engine_run(h.engine, ENGINE_NEVER, holds) != ENGINE_EVENT_LIMIT)
		abort();
	elapsed = seconds_now() - start;
	if (engine_pending(h.engine) != n || engine_events_dispatched(h.engine) != warmup + holds)
		abort();
	engine_free(h.engine);
	return (double)holds / elapsed;
}

/* ---- (b) a plain binary heap ------------------------------------------------ */

struct plain_event {
	uint64_t time;
	uint64_t seq;
	engine_fn fn;
	void *target;
	uint64_t arg;
};

struct plain_heap {
	struct plain_event *a;
	size_t len;
	uint64_t next_seq;
};

static inline bool plain_before(const struct plain_event *x, const struct plain_event *y)
{
	return x->time != y->time ? x->time < y->time : x->seq < y->seq;
}

static inline void plain_push(struct plain_heap *h, uint64_t time, uint64_t arg)
{
	struct plain_event ev = {time, h->next_seq++, hold_fn, NULL, arg};
	size_t i = h->len++;

	while (i > 0 && plain_before(&ev, &h->a[(i - 1) / 2])) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = ev;
}

static inline struct plain_event plain_pop(struct plain_heap *h)
{
	struct plain_event min = h->a[0];
	struct plain_event last = h->a[--h->len];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->len)
			break;
		if (c + 1 < h->len && plain_before(&h->a[c + 1], &h->a[c]))
			c++;
		if (!plain_before(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	h->a[i] = last;
	return min;
}

/* Returns the time of the last hold. */
static uint64_t plain_holds(struct plain_heap *h, uint64_t *rng, uint64_t holds)
{
	uint64_t now = 0;

	for (uint64_t k = 0; k < holds; k++) {
		struct plain_event ev = plain_pop(h);

		now = ev.time;
		plain_push(h, now + increment(rng), ev.arg);
	}
	return now;
}

static double run_plain(size_t n, uint64_t warmup, uint64_t holds)
{
	struct plain_heap h = {.a = malloc(n * sizeof(*h.a))};
	uint64_t rng = RNG_SEED;
	double start, elapsed;
	uint64_t last;

	if (!h.a)
		abort();
	for (size_t i = 0; i < n; i++)
		plain_push(&h, increment(&rng), i);
	plain_holds(&h, &rng, warmup);
	start = seconds_now();
	last = plain_holds(&h, &rng, holds);
	elapsed = seconds_now() - start;
	/* Uses the result (so the loop stays) and checks the heap order. */
	if (h.len != n || last > h.a[0].time)
		abort();
	free(h.a);
	return (double)holds / elapsed;
}

/* ---- driver ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts @v in place. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	uint64_t holds = HOLDS_FULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			holds = HOLDS_QUICK;
		} else {
			fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
			return 2;
		}
	}

	printf("hold benchmark: %llu timed holds per run, increments uniform in [0, %d) cycles\n",
	       (unsigned long long)holds, 2 * MEAN_INCREMENT);
	printf("Mholds/s = median of %d runs [min, max]\n\n", REPETITIONS);
	printf("%8s  %-24s  %-24s  %-24s  %s\n", "N", "engine Mholds/s", "engine, 9 lanes",
	       "plain heap Mholds/s", "engine/plain");
	for (size_t s = 0; s < sizeof(queue_sizes) / sizeof(queue_sizes[0]); s++) {
		size_t n = queue_sizes[s];
		uint64_t warmup = 2 * n + holds / 10;
		double eng[REPETITIONS], laned[REPETITIONS], plain[REPETITIONS], me, ml, mp;

		/* Interleaved so a noisy neighbour hits all alike. */
		for (int r = 0; r < REPETITIONS; r++) {
			eng[r] = run_engine(n, warmup, holds, 0) / 1e6;
			laned[r] = run_engine(n, warmup, holds, 9) / 1e6;
			plain[r] = run_plain(n, warmup, holds) / 1e6;
		}
		me = median(eng, REPETITIONS);
		ml = median(laned, REPETITIONS);
		mp = median(plain, REPETITIONS);
		printf("%8zu  %6.2f [%6.2f, %6.2f]    %6.2f [%6.2f, %6.2f]    %6.2f [%6.2f, %6.2f]    %5.2f\n",
		       n, me, eng[0], eng[REPETITIONS - 1], ml, laned[0], laned[REPETITIONS - 1], mp,
		       plain[0], plain[REPETITIONS - 1], me / mp);
	}
	return 0;
}
