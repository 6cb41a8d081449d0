/* Tests of the discrete-event engine (src/engine/engine.c). */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/engine/pool.h"

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


/* ---- independent events and phases ------------------------------------------ */

/*
 * A model of NR_GROUPS groups of NR_RANKS ranks.  Each rank's independent
 * event logs (time, rank, step) in its group's log and schedules its next
 * step a pseudo-random delay later (from its own state only, 0 included);
 * some of a rank's steps also move the other rank of the group, as a CPU
 * moves its SMT sibling's resume.  Ordinary events at fixed times snapshot
 * every group's progress and schedule independent events themselves.  The
 * logs, the snapshots, the dispatch count and now must be the same with any
 * pool.
 */
#define NR_GROUPS 6
#define NR_RANKS 2
#define STEPS 300
#define GROUP_LOG (NR_RANKS * STEPS + 64)

struct pmodel;

struct prank {
	struct pmodel *m;
	unsigned group, rank;
	uint64_t step, gen, state;
};

struct pgroup {
	unsigned n;
	uint64_t log[GROUP_LOG][3];
};

struct pmodel {
	struct engine *engine;
	struct prank ranks[NR_GROUPS][NR_RANKS];
	struct pgroup groups[NR_GROUPS];
	unsigned nr_snapshots;
	uint64_t snapshot[64][NR_GROUPS + 1];
};

static void prank_event(void *target, uint64_t gen);

static void prank_schedule(struct prank *r, uint64_t time)
{
	r->gen++;
	engine_schedule_independent(r->m->engine, time, r->group, r->group * NR_RANKS + r->rank,
				    prank_event, r, r->gen);
}

static void prank_event(void *target, uint64_t gen)
{
	struct prank *r = target;
	struct pgroup *g = &r->m->groups[r->group];
	uint64_t now = engine_now(r->m->engine);
	if (gen != r->gen)
		return; /* moved: a stale event still counts as a dispatch */
	cr_assert_lt(g->n, GROUP_LOG);
	g->log[g->n][0] = now;
	g->log[g->n][1] = r->rank;
	g->log[g->n][2] = r->step;
	g->n++;
	if (++r->step == STEPS)
		return;
	r->state = r->state * 6364136223846793005u + 1442695040888963407u;
	uint64_t delay = (r->state >> 33) % 40;
	prank_schedule(r, now + delay);
	if ((r->state >> 20) % 5 == 0) {
		struct prank *sibling = &r->m->ranks[r->group][(r->rank + 1) % NR_RANKS];
		if (sibling->step < STEPS)
			prank_schedule(sibling, now + delay / 2);
	}
}

static void psnapshot(void *target, uint64_t arg)
{
	struct pmodel *m = target;
	cr_assert_lt(m->nr_snapshots, 64);
	uint64_t *s = m->snapshot[m->nr_snapshots++];
	s[0] = engine_now(m->engine);
	for (unsigned g = 0; g < NR_GROUPS; g++)
		s[g + 1] = m->groups[g].n;
	/* An ordinary event may wake a rank too. */
	struct prank *r = &m->ranks[arg % NR_GROUPS][0];
	if (r->step < STEPS)
		prank_schedule(r, s[0]);
}

static struct pmodel *pmodel_run(unsigned threads, uint64_t time_limit, uint64_t *dispatched)
{
	struct pmodel *m = g_new0(struct pmodel, 1);
	char *why = NULL;
	struct pool *pool = threads ? pool_new(threads, &why) : NULL;
	cr_assert(!threads || pool, "%s", why);
	m->engine = engine_new(1);
	engine_set_pool(m->engine, pool);
	for (unsigned g = 0; g < NR_GROUPS; g++)
		for (unsigned k = 0; k < NR_RANKS; k++) {
			struct prank *r = &m->ranks[g][k];
			*r = (struct prank){.m = m, .group = g, .rank = k, .state = g * 7 + k + 1};
			prank_schedule(r, g % 3);
		}
	for (unsigned i = 0; i < 40; i++)
		engine_schedule(m->engine, 150 * i + (i % 3), 0, psnapshot, m, i);
	if (time_limit != ENGINE_NEVER) {
		/* In slices, as sim.c runs it: a limit cuts no phase. */
		for (uint64_t t = time_limit; engine_run(m->engine, t, ENGINE_NEVER) ==
					      ENGINE_TIME_LIMIT;
		     t += time_limit)
			;
	} else {
		cr_assert_eq(engine_run(m->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	}
	*dispatched = engine_events_dispatched(m->engine);
	cr_assert_eq(engine_pending(m->engine), 0);
	engine_free(m->engine);
	pool_free(pool);
	return m;
}

static void pmodel_expect_same(const struct pmodel *a, const struct pmodel *b, const char *what)
{
	cr_assert_eq(a->nr_snapshots, b->nr_snapshots, "%s", what);
	cr_assert_arr_eq(a->snapshot, b->snapshot, sizeof(a->snapshot), "%s: snapshots", what);
	for (unsigned g = 0; g < NR_GROUPS; g++) {
		cr_assert_eq(a->groups[g].n, b->groups[g].n, "%s: group %u", what, g);
		cr_assert_arr_eq(a->groups[g].log, b->groups[g].log,
				 a->groups[g].n * sizeof(a->groups[g].log[0]), "%s: group %u's log",
				 what, g);
	}
}

Test(engine_phase, any_pool_gives_the_serial_order)
{
	uint64_t serial_events, events;
	struct pmodel *serial = pmodel_run(0, ENGINE_NEVER, &serial_events);
	/* The model did what it should: every rank ran all its steps, and the
	 * snapshots saw progress between ordinary events. */
	for (unsigned g = 0; g < NR_GROUPS; g++)
		cr_assert_eq(serial->groups[g].n, NR_RANKS * STEPS);
	cr_assert_eq(serial->nr_snapshots, 40);
	cr_assert_gt(serial->snapshot[20][1], serial->snapshot[10][1]);
	for (unsigned threads = 1; threads <= 4; threads++) {
		struct pmodel *m = pmodel_run(threads, ENGINE_NEVER, &events);
		char what[32];
		g_snprintf(what, sizeof(what), "%u threads", threads);
		pmodel_expect_same(serial, m, what);
		cr_assert_eq(events, serial_events, "%s", what);
		g_free(m);
	}
	/* A time limit stops every phase at it, and the run resumes as if
	 * nothing happened. */
	struct pmodel *m = pmodel_run(3, 97, &events);
	pmodel_expect_same(serial, m, "3 threads, in slices of 97");
	cr_assert_eq(events, serial_events);
	g_free(m);
	g_free(serial);
}

static void schedule_ordinary(void *target, uint64_t arg)
{
	(void)arg;
	struct engine *engine = target;
	engine_schedule(engine, engine_now(engine) + 1, 0, schedule_ordinary, engine, 0);
}

/* An engine with a pool of two threads, the pool in *@pool. */
static struct engine *engine_on_two_threads(struct pool **pool)
{
	char *why = NULL;
	*pool = pool_new(2, &why);
	cr_assert_not_null(*pool, "%s", why);
	struct engine *engine = engine_new(1);
	engine_set_pool(engine, *pool);
	return engine;
}

/* An independent event that breaks its promise stops the run at once. */
Test(engine_phase, an_ordinary_schedule_from_a_phase_aborts, .signal = SIGTRAP)
{
	struct pool *pool;
	struct engine *engine = engine_on_two_threads(&pool);
	engine_schedule_independent(engine, 5, 0, 0, schedule_ordinary, engine, 0);
	engine_schedule_independent(engine, 5, 1, 1, schedule_ordinary, engine, 0);
	engine_run(engine, ENGINE_NEVER, ENGINE_NEVER);
}

static void schedule_other_group(void *target, uint64_t arg)
{
	struct engine *engine = target;
	engine_schedule_independent(engine, engine_now(engine), (unsigned)arg + 1, 0,
				    schedule_other_group, engine, arg + 1);
}

Test(engine_phase, another_groups_schedule_from_a_phase_aborts, .signal = SIGTRAP)
{
	struct pool *pool;
	struct engine *engine = engine_on_two_threads(&pool);
	engine_schedule_independent(engine, 5, 0, 0, schedule_other_group, engine, 0);
	engine_run(engine, ENGINE_NEVER, ENGINE_NEVER);
}

/* Without a pool, independent events are ordinary "last" events. */
Test(engine_phase, without_a_pool_independent_events_sort_as_last_ones)
{
	struct log *log = log_new();
	engine_schedule_independent(log->engine, 10, 3, 2, record, log, 1);
	engine_schedule_last(log->engine, 10, 0, 1, record, log, 2);
	engine_schedule(log->engine, 10, 0, record, log, 3);
	cr_assert_eq(engine_run(log->engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert_eq(log->n, 3);
	cr_assert_eq(log->arg[0], 3);
	cr_assert_eq(log->arg[1], 2);
	cr_assert_eq(log->arg[2], 1);
	/* Nor do they count as tracked: no lane. */
	engine_schedule_independent(log->engine, 20, 0, 0, record, log, 4);
	cr_assert_eq(engine_tracked_next_time(log->engine), ENGINE_NEVER);
	cr_assert_eq(engine_lane_next_time(log->engine, 0), ENGINE_NEVER);
	cr_assert_eq(engine_next_time(log->engine), 20);
	log_free(log);
}

/*
 * An event a phase schedules sorts after every pending one of its time and
 * rank, as its later seq makes it do in a serial run: B, scheduled at 10 by
 * A, runs after X, an ordinary "last" event of the same rank already pending
 * at 10, so it is not part of A's phase.
 */
struct tie {
	struct engine *engine;
	bool x_ran, b_ran, b_saw_x;
};

static void tie_b(void *target, uint64_t arg)
{
	(void)arg;
	struct tie *t = target;
	t->b_ran = true;
	t->b_saw_x = t->x_ran;
}

static void tie_a(void *target, uint64_t arg)
{
	struct tie *t = target;
	if (arg == 0)
		engine_schedule_independent(t->engine, 10, 0, 0, tie_b, t, 0);
}

static void tie_x(void *target, uint64_t arg)
{
	(void)arg;
	struct tie *t = target;
	t->x_ran = true;
}

Test(engine_phase, a_new_event_sorts_after_pending_ones_of_its_time_and_rank)
{
	char *why = NULL;
	struct pool *pool = pool_new(2, &why);
	struct tie t = {.engine = engine_new(1)};
	engine_set_pool(t.engine, pool);
	engine_schedule_independent(t.engine, 5, 0, 0, tie_a, &t, 0);
	engine_schedule_independent(t.engine, 5, 1, 1, tie_a, &t, 1);
	engine_schedule_last(t.engine, 10, 0, 0, tie_x, &t, 0);
	cr_assert_eq(engine_run(t.engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_assert(t.b_ran);
	cr_assert(t.b_saw_x);
	cr_assert_eq(engine_events_dispatched(t.engine), 4);
	engine_free(t.engine);
	pool_free(pool);
}

/*
 * Groups of one phase really run at the same time on a pool of two: each of
 * two events waits for the other to have started.  One thread running them
 * one after the other would make the first wait out its 10 s and fail.
 */
struct meeting {
	atomic_int arrived;
	atomic_bool met[2];
};

static void meet(void *target, uint64_t group)
{
	struct meeting *m = target;
	atomic_fetch_add(&m->arrived, 1);
	for (unsigned polls = 0; polls < 100000 && atomic_load(&m->arrived) < 2; polls++)
		g_usleep(100);
	atomic_store(&m->met[group], atomic_load(&m->arrived) == 2);
}

Test(engine_phase, groups_of_a_phase_run_at_the_same_time)
{
	struct meeting m = {0};
	struct pool *pool;
	struct engine *engine = engine_on_two_threads(&pool);
	engine_schedule_independent(engine, 5, 0, 0, meet, &m, 0);
	engine_schedule_independent(engine, 5, 1, 1, meet, &m, 1);
	cr_assert_eq(engine_run(engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);
	cr_expect(atomic_load(&m.met[0]) && atomic_load(&m.met[1]));
	cr_expect_eq(engine_events_dispatched(engine), 2);
	engine_free(engine);
	pool_free(pool);
}
