/* Tests of the discrete-event engine (src/engine/engine.c). */
#include <signal.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/engine/engine.h"

/* Every test event appends (now, arg) to a log. */
#define LOG_MAX 20000

struct log {
	struct engine *engine;
	size_t n;
	uint64_t time[LOG_MAX];
	uint64_t arg[LOG_MAX];
};

static struct log *log_new(void)
{
	struct log *log = g_new0(struct log, 1);

	log->engine = engine_new(1);
	return log;
}

static void log_free(struct log *log)
{
	engine_free(log->engine);
	g_free(log);
}

static void record(void *target, uint64_t arg)
{
	struct log *log = target;

	cr_assert_lt(log->n, LOG_MAX);
	log->time[log->n] = engine_now(log->engine);
	log->arg[log->n] = arg;
	log->n++;
}

static void stop_after_record(void *target, uint64_t arg)
{
	struct log *log = target;

	record(log, arg);
	engine_stop(log->engine);
}

Test(engine, empty)
{
	struct engine *engine = engine_new(1);

	cr_assert_eq(engine_now(engine), 0);
	cr_assert_eq(engine_next_time(engine), ENGINE_NEVER);
	cr_assert_eq(engine_pending(engine), 0);
	cr_assert_eq(engine_run(engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(engine_events_dispatched(engine), 0);
	engine_free(engine);
	engine_free(NULL);
}

Test(engine, next_time_and_pending)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 50, 0, record, log, 0);
	cr_assert_eq(engine_next_time(log->engine), 50);
	cr_assert_eq(engine_pending(log->engine), 1);
	engine_schedule(log->engine, 20, 0, record, log, 1);
	cr_assert_eq(engine_next_time(log->engine), 20);
	engine_schedule(log->engine, 80, 0, record, log, 2);
	cr_assert_eq(engine_next_time(log->engine), 20);
	cr_assert_eq(engine_pending(log->engine), 3);

	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 1), ENGINE_EVENT_LIMIT);
	cr_assert_eq(engine_next_time(log->engine), 50);
	cr_assert_eq(engine_pending(log->engine), 2);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(engine_next_time(log->engine), ENGINE_NEVER);
	cr_assert_eq(engine_pending(log->engine), 0);
	cr_assert_eq(engine_now(log->engine), 80);
	log_free(log);
}

Test(engine, fifo_for_equal_times)
{
	struct log *log = log_new();

	for (uint64_t i = 0; i < 100; i++)
		engine_schedule(log->engine, 7, 0, record, log, i);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, 100);
	for (uint64_t i = 0; i < 100; i++) {
		cr_assert_eq(log->arg[i], i, "position %llu fired event %llu",
			     (unsigned long long)i, (unsigned long long)log->arg[i]);
		cr_assert_eq(log->time[i], 7);
	}
	log_free(log);
}

Test(engine, order_by_time)
{
	static const uint64_t times[] = {40, 10, 30, 0, 20, 50, 5};
	static const uint64_t expected[] = {0, 5, 10, 20, 30, 40, 50};
	struct log *log = log_new();

	for (size_t i = 0; i < G_N_ELEMENTS(times); i++)
		engine_schedule(log->engine, times[i], 0, record, log, times[i]);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, G_N_ELEMENTS(expected));
	for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
		cr_assert_eq(log->time[i], expected[i]);
		cr_assert_eq(log->arg[i], expected[i]);
	}
	log_free(log);
}

/*
 * arg 1 at t=10 schedules arg 11 at t=10 (now) and arg 12 at t=15.  Already
 * queued: arg 2 at t=10, arg 3 at t=12, arg 4 at t=15.  Equal times fire in
 * scheduling order, so 11 follows 2 and 12 follows 4.
 */
static void spawn(void *target, uint64_t arg)
{
	struct log *log = target;
	uint64_t now = engine_now(log->engine);

	record(log, arg);
	/* Inside the event: it is no longer pending, the others still are. */
	cr_assert_eq(engine_pending(log->engine), 3);
	cr_assert_eq(engine_next_time(log->engine), 10);
	engine_schedule(log->engine, now, 0, record, log, 11);
	cr_assert_eq(engine_pending(log->engine), 4);
	cr_assert_eq(engine_next_time(log->engine), 10);
	engine_schedule(log->engine, now + 5, 0, record, log, 12);
	cr_assert_eq(engine_pending(log->engine), 5);
}

Test(engine, schedule_from_inside_events)
{
	static const uint64_t want_arg[] = {1, 2, 11, 3, 4, 12};
	static const uint64_t want_time[] = {10, 10, 10, 12, 15, 15};
	struct log *log = log_new();

	engine_schedule(log->engine, 10, 0, spawn, log, 1);
	engine_schedule(log->engine, 10, 0, record, log, 2);
	engine_schedule(log->engine, 12, 0, record, log, 3);
	engine_schedule(log->engine, 15, 0, record, log, 4);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, G_N_ELEMENTS(want_arg));
	for (size_t i = 0; i < G_N_ELEMENTS(want_arg); i++) {
		cr_assert_eq(log->arg[i], want_arg[i], "position %zu: arg %llu", i,
			     (unsigned long long)log->arg[i]);
		cr_assert_eq(log->time[i], want_time[i]);
	}
	log_free(log);
}

/* The only pending event is being dispatched: nothing is left behind it. */
static void check_alone(void *target, uint64_t arg)
{
	struct log *log = target;

	record(log, arg);
	cr_assert_eq(engine_pending(log->engine), 0);
	cr_assert_eq(engine_next_time(log->engine), ENGINE_NEVER);
	if (arg == 0) {
		engine_schedule(log->engine, engine_now(log->engine) + 3, 0, check_alone, log, 1);
		cr_assert_eq(engine_pending(log->engine), 1);
		cr_assert_eq(engine_next_time(log->engine), engine_now(log->engine) + 3);
	}
}

Test(engine, next_time_inside_last_event)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 4, 0, check_alone, log, 0);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, 2);
	cr_assert_eq(log->time[1], 7);
	log_free(log);
}

static void check_next_is_6(void *target, uint64_t arg)
{
	struct log *log = target;

	record(log, arg);
	cr_assert_eq(engine_next_time(log->engine), 6);
	cr_assert_eq(engine_pending(log->engine), 5);
}

/*
 * Later events in decreasing time order: in the heap the earliest of them
 * sits behind the others, so next_time inside the first event must look past
 * the first children of the root.
 */
Test(engine, next_time_inside_event_with_many_pending)
{
	static const uint64_t times[] = {9, 8, 7, 6, 20};
	struct log *log = log_new();

	engine_schedule(log->engine, 1, 0, check_next_is_6, log, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(times); i++)
		engine_schedule(log->engine, times[i], 0, record, log, times[i]);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 1), ENGINE_EVENT_LIMIT);
	cr_assert_eq(log->n, 1);
	cr_assert_eq(engine_next_time(log->engine), 6);
	log_free(log);
}

Test(engine, time_limit_leaves_later_events)
{
	struct log *log = log_new();

	for (uint64_t t = 10; t <= 50; t += 10)
		engine_schedule(log->engine, t, 0, record, log, t);
	/* An event exactly at the limit is dispatched. */
	cr_assert_eq(engine_run(log->engine, 30, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(log->n, 3);
	cr_assert_eq(log->time[2], 30);
	cr_assert_eq(engine_now(log->engine), 30);
	cr_assert_eq(engine_pending(log->engine), 2);
	cr_assert_eq(engine_next_time(log->engine), 40);

	/* A limit before the next event dispatches nothing and keeps now. */
	cr_assert_eq(engine_run(log->engine, 35, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(log->n, 3);
	cr_assert_eq(engine_now(log->engine), 30);

	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, 5);
	cr_assert_eq(log->time[3], 40);
	cr_assert_eq(log->time[4], 50);
	cr_assert_eq(engine_events_dispatched(log->engine), 5);
	log_free(log);
}

Test(engine, event_limit_counts_per_call)
{
	struct log *log = log_new();

	for (uint64_t i = 0; i < 10; i++)
		engine_schedule(log->engine, i, 0, record, log, i);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 0), ENGINE_EVENT_LIMIT);
	cr_assert_eq(log->n, 0);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 3), ENGINE_EVENT_LIMIT);
	cr_assert_eq(log->n, 3);
	cr_assert_eq(engine_pending(log->engine), 7);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 3), ENGINE_EVENT_LIMIT);
	cr_assert_eq(log->n, 6);
	cr_assert_eq(log->arg[5], 5);
	/* 4 left: the queue empties before a limit of 10 is reached. */
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 10), ENGINE_EMPTY);
	cr_assert_eq(log->n, 10);
	log_free(log);
}

Test(engine, stop_from_event)
{
	struct log *log = log_new();

	/* Ignored: the flag is cleared when engine_run() starts. */
	engine_stop(log->engine);
	engine_schedule(log->engine, 1, 0, record, log, 1);
	engine_schedule(log->engine, 2, 0, stop_after_record, log, 2);
	engine_schedule(log->engine, 3, 0, record, log, 3);
	engine_schedule(log->engine, 4, 0, record, log, 4);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_STOPPED);
	cr_assert_eq(log->n, 2);
	cr_assert_eq(engine_now(log->engine), 2);
	cr_assert_eq(engine_pending(log->engine), 2);
	cr_assert_eq(engine_next_time(log->engine), 3);

	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, 4);
	cr_assert_eq(log->arg[3], 4);
	log_free(log);
}

Test(engine, stop_wins_over_empty_queue)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 1, 0, stop_after_record, log, 0);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 1), ENGINE_STOPPED);
	cr_assert_eq(log->n, 1);
	log_free(log);
}

static void count_inside(void *target, uint64_t arg)
{
	struct log *log = target;

	record(log, arg);
	/* The event being dispatched is counted. */
	cr_assert_eq(engine_events_dispatched(log->engine), arg);
}

Test(engine, events_dispatched_counter)
{
	struct log *log = log_new();

	for (uint64_t i = 1; i <= 6; i++)
		engine_schedule(log->engine, 10 * i, 0, count_inside, log, i);
	cr_assert_eq(engine_run(log->engine, 20, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(engine_events_dispatched(log->engine), 2);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, 3), ENGINE_EVENT_LIMIT);
	cr_assert_eq(engine_events_dispatched(log->engine), 5);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(engine_events_dispatched(log->engine), 6);
	cr_assert_eq(log->n, 6);
	log_free(log);
}

Test(engine, grows_past_initial_capacity)
{
	enum { N = 10000 };
	struct log *log = log_new();

	/* Reverse order: every schedule sifts to the root. */
	for (uint64_t i = 0; i < N; i++)
		engine_schedule(log->engine, N - i, 0, record, log, i);
	cr_assert_eq(engine_pending(log->engine), N);
	cr_assert_eq(engine_next_time(log->engine), 1);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, N);
	for (uint64_t k = 0; k < N; k++) {
		cr_assert_eq(log->time[k], k + 1);
		cr_assert_eq(log->arg[k], N - 1 - k);
	}
	log_free(log);
}

struct keyed {
	uint64_t time;
	uint64_t seq;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

Test(engine, random_order_matches_reference_sort)
{
	enum { N = 5000 };
	struct log *log = log_new();
	struct keyed *ref = g_new(struct keyed, N);
	GRand *rand = g_rand_new_with_seed(20240601);

	/* Times in [0, 500): ten events per time on average. */
	for (uint64_t seq = 0; seq < N; seq++) {
		ref[seq].time = (uint64_t)g_rand_int_range(rand, 0, 500);
		ref[seq].seq = seq;
		engine_schedule(log->engine, ref[seq].time, 0, record, log, seq);
	}
	qsort(ref, N, sizeof(*ref), keyed_cmp);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, N);
	for (size_t k = 0; k < N; k++) {
		cr_assert_eq(log->arg[k], ref[k].seq, "position %zu: seq %llu, want %llu", k,
			     (unsigned long long)log->arg[k], (unsigned long long)ref[k].seq);
		cr_assert_eq(log->time[k], ref[k].time);
	}
	g_rand_free(rand);
	g_free(ref);
	log_free(log);
}

/*
 * Events scheduled while running: each dispatched event schedules 0, 1 or 2
 * more at now + [0, 8).  seq mirrors the engine's insertion counter, so the
 * dispatch order is right iff the (time, seq) keys come out strictly
 * increasing and every scheduled event fires.
 */
struct churn {
	struct log log;
	GRand *rand;
	uint64_t next_seq;
	uint64_t budget;
};

static void churn_fn(void *target, uint64_t arg);

static void churn_schedule(struct churn *c, uint64_t time)
{
	engine_schedule(c->log.engine, time, 0, churn_fn, c, c->next_seq++);
}

static void churn_fn(void *target, uint64_t arg)
{
	struct churn *c = target;
	uint64_t now = engine_now(c->log.engine);
	int children = g_rand_int_range(c->rand, 0, 3);

	record(&c->log, arg);
	for (int i = 0; i < children && c->budget > 0; i++, c->budget--)
		churn_schedule(c, now + (uint64_t)g_rand_int_range(c->rand, 0, 8));
}

Test(engine, random_order_with_scheduling_inside_events)
{
	struct churn *c = g_new0(struct churn, 1);

	c->log.engine = engine_new(1);
	c->rand = g_rand_new_with_seed(7);
	c->budget = 15000;
	for (int i = 0; i < 300; i++)
		churn_schedule(c, (uint64_t)g_rand_int_range(c->rand, 0, 50));
	cr_assert_eq(engine_run(c->log.engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(c->log.n, c->next_seq);
	cr_assert_gt(c->log.n, 5000);
	for (size_t k = 1; k < c->log.n; k++) {
		struct keyed prev = {c->log.time[k - 1], c->log.arg[k - 1]};
		struct keyed cur = {c->log.time[k], c->log.arg[k]};

		cr_assert_lt(keyed_cmp(&prev, &cur), 0, "position %zu out of order", k);
	}
	g_rand_free(c->rand);
	engine_free(c->log.engine);
	g_free(c);
}

Test(engine, schedule_in_the_past_aborts, .signal = SIGABRT)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 100, 0, record, log, 0);
	engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER);
	engine_schedule(log->engine, 99, 0, record, log, 1);
}

static void schedule_before_now(void *target, uint64_t arg)
{
	struct log *log = target;

	engine_schedule(log->engine, engine_now(log->engine) - 1, 0, record, log, arg);
}

Test(engine, schedule_in_the_past_from_event_aborts, .signal = SIGABRT)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 10, 0, schedule_before_now, log, 0);
	engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER);
}

static void run_nested(void *target, uint64_t arg)
{
	struct log *log = target;

	(void)arg;
	engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER);
}

Test(engine, nested_run_aborts, .signal = SIGABRT)
{
	struct log *log = log_new();

	engine_schedule(log->engine, 1, 0, run_nested, log, 0);
	engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER);
}

/* ---- lanes and engine_schedule_last() ---- */

struct lane_probe {
	struct engine *engine;
	uint64_t seen[4];
};

static void probe_lanes(void *target, uint64_t arg)
{
	struct lane_probe *p = target;
	(void)arg;
	for (unsigned l = 0; l < 3; l++)
		p->seen[l] = engine_lane_next_time(p->engine, l);
}

Test(engine, lane_next_time_tracks_each_lane)
{
	struct engine *engine = engine_new(3);
	struct lane_probe probe = {.engine = engine};

	cr_assert_eq(engine_lane_next_time(engine, 0), ENGINE_NEVER);
	engine_schedule(engine, 30, 1, probe_lanes, &probe, 0);
	engine_schedule(engine, 10, 2, probe_lanes, &probe, 0);
	engine_schedule(engine, 50, 1, probe_lanes, &probe, 0);
	engine_schedule(engine, 20, 2, probe_lanes, &probe, 0);
	cr_assert_eq(engine_lane_next_time(engine, 0), ENGINE_NEVER);
	cr_assert_eq(engine_lane_next_time(engine, 1), 30);
	cr_assert_eq(engine_lane_next_time(engine, 2), 10);

	/* While the event at 10 runs it is no longer pending in lane 2. */
	cr_assert_eq(engine_run(engine, 10, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(probe.seen[2], 20);
	cr_assert_eq(probe.seen[1], 30);
	cr_assert_eq(engine_run(engine, 30, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(probe.seen[1], 50, "lane 1 still holds the event at 50");
	cr_assert_eq(probe.seen[2], ENGINE_NEVER, "lane 2 drained");
	cr_assert_eq(engine_run(engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(engine_lane_next_time(engine, 1), ENGINE_NEVER);
	engine_free(engine);
}

Test(engine, local_events_count_in_their_lane_not_in_tracked_time)
{
	struct engine *engine = engine_new(3);
	struct lane_probe probe = {.engine = engine};

	engine_schedule_local(engine, 10, 1, probe_lanes, &probe, 0);
	engine_schedule(engine, 40, 2, probe_lanes, &probe, 0);
	engine_schedule_local(engine, 20, 2, probe_lanes, &probe, 0);
	cr_assert_eq(engine_lane_next_time(engine, 1), 10);
	cr_assert_eq(engine_lane_next_time(engine, 2), 20);
	cr_assert_eq(engine_tracked_next_time(engine), 40, "local events are not tracked");
	cr_assert_eq(engine_next_time(engine), 10);

	cr_assert_eq(engine_run(engine, 10, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(probe.seen[1], ENGINE_NEVER, "the local event left lane 1 when it ran");
	cr_assert_eq(probe.seen[2], 20);
	cr_assert_eq(engine_run(engine, 20, ENGINE_NEVER), ENGINE_TIME_LIMIT);
	cr_assert_eq(probe.seen[2], 40, "the tracked event remains");
	cr_assert_eq(engine_run(engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(engine_events_dispatched(engine), 3);
	engine_free(engine);
}

Test(engine, schedule_last_fires_after_ordinary_ties_in_rank_order)
{
	struct log *log = log_new();

	engine_schedule_last(log->engine, 5, 0, 7, record, log, 1);
	engine_schedule(log->engine, 5, 0, record, log, 2);
	engine_schedule_last(log->engine, 5, 0, 3, record, log, 3);
	engine_schedule(log->engine, 4, 0, record, log, 4);
	engine_schedule(log->engine, 5, 0, record, log, 5);
	engine_schedule_last(log->engine, 5, 0, 3, record, log, 6);
	engine_schedule_last(log->engine, 6, 0, 0, record, log, 7);
	engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER);
	uint64_t expect[] = {4, 2, 5, 3, 6, 1, 7};
	cr_assert_eq(log->n, 7);
	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(log->arg[i], expect[i], "position %u: %lu", i, (unsigned long)log->arg[i]);
	log_free(log);
}

static void nothing(void *target, uint64_t arg)
{
	(void)target;
	(void)arg;
}

Test(engine, tracked_next_time_ignores_untracked_events)
{
	struct engine *engine = engine_new(5);

	cr_assert_eq(engine_tracked_next_time(engine), ENGINE_NEVER);
	engine_schedule(engine, 3, ENGINE_LANE_NONE, nothing, NULL, 0);
	cr_assert_eq(engine_tracked_next_time(engine), ENGINE_NEVER);
	cr_assert_eq(engine_next_time(engine), 3);
	engine_schedule(engine, 40, 4, nothing, NULL, 0);
	engine_schedule(engine, 20, 2, nothing, NULL, 0);
	engine_schedule(engine, 30, 4, nothing, NULL, 0);
	cr_assert_eq(engine_tracked_next_time(engine), 20);
	/* Run to 20: the tracked minimum moves to 30 (lane 4). */
	engine_run(engine, 20, ENGINE_NEVER);
	cr_assert_eq(engine_tracked_next_time(engine), 30);
	cr_assert_eq(engine_lane_next_time(engine, 4), 30);
	cr_assert_eq(engine_lane_next_time(engine, 2), ENGINE_NEVER);
	engine_run(engine, ENGINE_NEVER, ENGINE_NEVER);
	cr_assert_eq(engine_tracked_next_time(engine), ENGINE_NEVER);
	engine_free(engine);
}

Test(engine, lanes_out_of_range_abort, .signal = SIGABRT)
{
	struct engine *engine = engine_new(2);
	engine_schedule(engine, 1, 2, record, NULL, 0);
}

