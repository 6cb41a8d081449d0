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
 * Output: a Markdown table, one row per queue and size: Mholds/s as the
 * median (min-max) of the repetitions, and the engine's ratio to the plain
 * heap, as the median (min-max) of the ratios of interleaved repetitions.
 *
 * Usage: bench_engine [--quick] [--reps N] [--size N] [--queue engine|lanes|plain]
 * (--size and --queue restrict the run to one size or one queue, for profiling).
 */
#include "bench.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "tlbsim/engine/engine.h"

#define MAX_REPETITIONS 64
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
	start = bench_cpu_seconds();
	if (engine_run(h.engine, ENGINE_NEVER, holds) != ENGINE_EVENT_LIMIT)
		abort();
	elapsed = bench_cpu_seconds() - start;
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
	start = bench_cpu_seconds();
	last = plain_holds(&h, &rng, holds);
	elapsed = bench_cpu_seconds() - start;
	/* Uses the result (so the loop stays) and checks the heap order. */
	if (h.len != n || last > h.a[0].time)
		abort();
	free(h.a);
	return (double)holds / elapsed;
}

/* ---- driver ----------------------------------------------------------------- */

enum queue { Q_ENGINE, Q_LANES, Q_PLAIN, NR_QUEUES };

static const char *const queue_options[NR_QUEUES] = {"engine", "lanes", "plain"};

static const char *const queue_names[NR_QUEUES] = {
    [Q_ENGINE] = "engine, no lanes (`engine_schedule`)",
    [Q_LANES] = "engine, 9 lanes",
    [Q_PLAIN] = "plain binary heap",
};

/* One timed run of @q; returns Mholds/s. */
static double run_queue(enum queue q, size_t n, uint64_t warmup, uint64_t holds)
{
	switch (q) {
	case Q_ENGINE:
		return run_engine(n, warmup, holds, 0) / 1e6;
	case Q_LANES:
		return run_engine(n, warmup, holds, 9) / 1e6;
	default:
		return run_plain(n, warmup, holds) / 1e6;
	}
}

int main(int argc, char **argv)
{
	uint64_t holds = HOLDS_FULL;
	int reps = 5;
	size_t only_size = 0;
	int only_queue = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			holds = HOLDS_QUICK;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
			only_size = (size_t)strtoull(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--queue") == 0 && i + 1 < argc) {
			i++;
			for (int q = 0; q < NR_QUEUES; q++)
				if (strcmp(argv[i], queue_options[q]) == 0)
					only_queue = q;
			if (only_queue < 0)
				goto usage;
		} else {
usage:
			fprintf(stderr,
				"usage: %s [--quick] [--reps N] [--size N] [--queue engine|lanes|plain]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPETITIONS) {
		fprintf(stderr, "%s: --reps must be 1..%d\n", argv[0], MAX_REPETITIONS);
		return 2;
	}

	printf("Hold benchmark: %llu timed holds per run (CPU time), increments uniform in "
	       "[0, %d) cycles; median (min–max) of %d runs\n\n",
	       (unsigned long long)holds, 2 * MEAN_INCREMENT, reps);
	printf("| queue | pending | Mholds/s | ratio to plain heap |\n");
	printf("|---|---:|---:|---:|\n");
	for (size_t s = 0; s < sizeof(queue_sizes) / sizeof(queue_sizes[0]); s++) {
		size_t n = queue_sizes[s];
		if (only_size && n != only_size)
			continue;
		uint64_t warmup = 2 * n + holds / 10;
		double rate[NR_QUEUES][MAX_REPETITIONS], ratio[NR_QUEUES][MAX_REPETITIONS];

		/* Interleaved so a noisy neighbour hits all alike. */
		for (int r = 0; r < reps; r++) {
			for (int q = 0; q < NR_QUEUES; q++)
				rate[q][r] = only_queue < 0 || q == only_queue || q == Q_PLAIN
						     ? run_queue((enum queue)q, n, warmup, holds)
						     : 0;
			for (int q = 0; q < NR_QUEUES; q++)
				ratio[q][r] = rate[q][r] / rate[Q_PLAIN][r];
		}
		for (int q = 0; q < NR_QUEUES; q++) {
			if (only_queue >= 0 && q != only_queue && q != Q_PLAIN)
				continue;
			struct bench_stats st = bench_stats_of(rate[q], (size_t)reps);
			struct bench_stats rt = bench_stats_of(ratio[q], (size_t)reps);

			printf("| %s | %zu | ", queue_names[q], n);
			bench_print_stats(&st, 2);
			printf(" | ");
			bench_print_stats(&rt, 2);
			printf(" |\n");
		}
	}
	return 0;
}
