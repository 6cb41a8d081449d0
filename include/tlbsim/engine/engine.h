#ifndef TLBSIM_ENGINE_H
#define TLBSIM_ENGINE_H
/*
 * Discrete-event engine.  Time is an integer number of cycles.  Events fire in
 * (time, seq) order, seq being the insertion order, so equal times fire FIFO and
 * runs are deterministic.  Each event belongs to a lane, an integer the model
 * assigns (tlbsim: one per CPU plus a global one), and the engine can tell the
 * earliest pending time of each lane: what a model needs to run ahead safely.  The engine knows nothing of what it schedules: an
 * event is a function, an opaque target and a 64-bit argument.  There is no
 * cancellation; a model that changes its mind bumps a generation and lets the
 * stale event return early.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*engine_fn)(void *target, uint64_t arg);

struct engine;

enum engine_stop_reason {
	ENGINE_EMPTY,       /* no event left */
	ENGINE_TIME_LIMIT,  /* next event lies beyond the time limit */
	ENGINE_EVENT_LIMIT, /* dispatched the allowed number of events */
	ENGINE_STOPPED,     /* engine_stop() was called from an event */
};

#define ENGINE_NEVER UINT64_MAX
/* An event in no lane: not counted by any lane query, tracked or not. */
#define ENGINE_LANE_NONE UINT32_MAX

/* Lanes 0 .. @nr_lanes - 1 (at least one). */
struct engine *engine_new(unsigned nr_lanes);
void engine_free(struct engine *engine);

uint64_t engine_now(const struct engine *engine);

/**
 * engine_schedule() - queue fn(target, arg) at @time in @lane.
 * @time must not lie in the past (asserted).
 */
void engine_schedule(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
		     void *target, uint64_t arg);
/*
 * Like engine_schedule(), but the event is local to @lane (not ENGINE_LANE_NONE):
 * engine_lane_next_time() counts it, engine_tracked_next_time() does not.
 * For events whose effects on other lanes the model bounds another way.
 */
void engine_schedule_local(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
			   void *target, uint64_t arg);
/*
 * Like engine_schedule(), but the event fires after every ordinary event of
 * the same time, whenever they were scheduled, and among such events in order
 * of @rank (then FIFO).  For events whose tie order must not depend on when
 * they were scheduled.  @rank < 2^23.
 */
void engine_schedule_last(struct engine *engine, uint64_t time, unsigned lane, unsigned rank,
			  engine_fn fn, void *target, uint64_t arg);

/*
 * An event that belongs to @group and may run on another host thread than
 * the events of other groups.  It sorts like an engine_schedule_last() event
 * of @rank in no lane.  Its fn promises that, until the next ordinary event,
 * it and the events it schedules
 * - write only state of @group, or shared state whose final value does not
 *   depend on the order of the writes, with atomic writes;
 * - read no state another group's events write;
 * - call of the engine only engine_now(), the next-time queries and
 *   engine_schedule_independent() for @group (anything else aborts).
 * With a pool (engine_set_pool()) the engine then runs the independent
 * events that come before the next ordinary one group by group, groups in
 * parallel, each group's in the order a single thread would; the result is
 * the same for any number of threads.
 */
void engine_schedule_independent(struct engine *engine, uint64_t time, unsigned group,
				 unsigned rank, engine_fn fn, void *target, uint64_t arg);

/* Run independent events on @pool's threads (NULL, or a pool of one
 * thread: on the caller's, as ordinary events).  The pool must outlive the
 * engine's runs; it may be shared by engines that do not run at once. */
struct pool;
void engine_set_pool(struct engine *engine, struct pool *pool);

/* Time of the earliest pending event, ENGINE_NEVER when none is pending. */
uint64_t engine_next_time(const struct engine *engine);
/* The same for the events of one lane (local ones included), and for the
 * events of every lane (the tracked ones: ENGINE_LANE_NONE and local events
 * excluded). */
uint64_t engine_lane_next_time(const struct engine *engine, unsigned lane);
uint64_t engine_tracked_next_time(const struct engine *engine);
size_t engine_pending(const struct engine *engine);

/**
 * engine_run() - dispatch events in order.
 * Stops before an event whose time exceeds @time_limit, after @event_limit
 * dispatches (counted from this call), when the queue is empty, or when an
 * event calls engine_stop().  ENGINE_NEVER / UINT64_MAX mean "no limit".
 * A phase of independent events (engine_set_pool()) is dispatched whole, so
 * the count may pass @event_limit by up to a phase.
 */
enum engine_stop_reason engine_run(struct engine *engine, uint64_t time_limit,
				   uint64_t event_limit);
void engine_stop(struct engine *engine);

/* Events dispatched since engine_new(). */
uint64_t engine_events_dispatched(const struct engine *engine);

#endif
