/*
 * Discrete-event engine: a priority queue of pending events and the one loop
 * that dispatches them.
 *
 * Models: simulated time as an integer number of cycles that only engine_run()
 * advances, to the time of the event it dispatches.  An event is
 * fn(target, arg); the engine never looks behind target.
 *
 * Simplifies: no cancellation (a model that changes its mind bumps a
 * generation and lets the stale event return early), no parallel or
 * optimistic execution, one queue for the whole simulation.
 *
 * Notes:
 * - Events are stored by value in an implicit ENGINE_HEAP_ARITY-ary min-heap in
 *   one growable array; scheduling never mallocs except to double the array.
 * - Key = (time, seq), seq a 64-bit counter bumped on every engine_schedule().
 *   seq is unique, so the order is total and a run is deterministic; equal
 *   times fire FIFO, as libuv's timer_less_than() does.  2^63 schedules do not
 *   happen, so seq never reaches its top bit, which engine_schedule_last()
 *   sets: such an event sorts after every ordinary event of the same time.
 * - Lanes: every event may belong to a lane (an integer the model chooses),
 *   and each lane keeps its pending (time, seq) keys in two binary heaps, all
 *   and tracked, so engine_lane_next_time() is one load and a lane with many
 *   pending events (thousands of sleepers on one CPU) stays logarithmic.  A
 *   tournament tree over the lanes' tracked minima answers
 *   engine_tracked_next_time() in one load.
 * - Invariant: for every i > 0, heap[(i - 1) / ARITY] is not after heap[i], and
 *   every event in the heap has time >= now (asserted on schedule), so now
 *   never moves backwards.
 * - The event being dispatched stays in heap[0] while its fn runs
 *   (root_taken): it is no longer pending, but the slot is only refilled after
 *   fn returns, or by the first event fn schedules.  Most events schedule a
 *   successor (a CPU's next step, an IPI's arrival), so pop + push becomes one
 *   sift-down from the root instead of a sift-down and a sift-up: 7% fewer
 *   instructions and 5-10% more holds/s in bench/bench_engine.c.
 * - next_time caches the earliest pending time (ENGINE_NEVER when none), so
 *   engine_next_time(), called before every simulated memory access, is one
 *   load even while the root is taken.
 */
#include <glib.h>
#include "tlbsim/engine.h"

/*
 * 4: a node's children are 4 consecutive events (160 bytes, 2.5 cache lines)
 * and the tree is half as deep as a binary one, so a pop touches fewer lines.
 * Measured with bench/bench_engine.c on a 2-core Sapphire Rapids VM: 4-ary
 * does 1.1-1.4x the holds/s of 2-ary at 4096-65536 pending events, and
 * 1.1x those of 8-ary (run-to-run noise there is about 15%).  Overridable
 * with -D only to repeat that measurement.
 */
#ifndef ENGINE_HEAP_ARITY
#define ENGINE_HEAP_ARITY 4
#endif

/* 64 events = 2.5 KiB: a small model never grows the array. */
#define ENGINE_INITIAL_CAPACITY 64

#define SEQ_LAST (UINT64_C(1) << 63)
/* With SEQ_LAST: rank in bits 40..62, insertion order in bits 0..39. */
#define SEQ_RANK_SHIFT 40
#define SEQ_LOW_MASK ((UINT64_C(1) << SEQ_RANK_SHIFT) - 1)

struct event {
	uint64_t time;
	uint64_t seq; /* SEQ_LAST set: after ordinary events of the same time */
	engine_fn fn;
	void *target;
	uint64_t arg;
	unsigned lane;
};

struct lane_key {
	uint64_t time;
	uint64_t seq;
};

/* A binary min-heap of (time, seq) keys. */
struct key_heap {
	struct lane_key *keys;
	unsigned len;
	unsigned cap;
};

/*
 * A lane's pending keys: all of them, and the tracked ones.  The event being
 * dispatched is the global minimum, so it is also the minimum of its lane's
 * heaps: removal is always a pop.
 */
struct lane {
	struct key_heap all;
	struct key_heap tracked;
};

struct engine {
	struct event *heap; /* implicit min-heap, see the invariant above */
	size_t len;         /* events in heap[], a taken root included */
	size_t cap;
	bool root_taken;    /* heap[0] is being dispatched, not pending */
	bool stop;          /* set by engine_stop(), cleared by engine_run() */
	bool running;       /* engine_run() is on the stack: it must not recurse */
	uint64_t next_time; /* earliest pending time, ENGINE_NEVER if none */
	uint64_t now;
	uint64_t next_seq;
	uint64_t dispatched;
	unsigned nr_lanes;
	struct lane *lanes;
	/* Tournament tree over the lanes' minima: tree[1] is the earliest
	 * tracked time; leaves start at tree[leaves]. */
	unsigned leaves;
	uint64_t *tree;
};

static inline bool event_before(const struct event *a, const struct event *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

/**
 * heap_sift_up() - place @ev in the hole at @i, moving it towards the root.
 * Parents that come after @ev move down into the hole until one does not.
 */
static void heap_sift_up(struct event *heap, size_t i, struct event ev)
{
	while (i > 0) {
		size_t parent = (i - 1) / ENGINE_HEAP_ARITY;

		if (!event_before(&ev, &heap[parent]))
			break;
		heap[i] = heap[parent];
		i = parent;
	}
	heap[i] = ev;
}

/**
 * heap_sift_down() - place @ev in the hole at @i of a heap of @len events.
 * The earliest child moves up into the hole while it comes before @ev.
 *
 * A plain loop over the children: on the benchmark it beat an unrolled
 * 4-way tournament and a branch-free (cmov) selection, which both lengthen
 * the chain of dependent loads from one level to the next.
 */
static void heap_sift_down(struct event *heap, size_t len, size_t i, struct event ev)
{
	for (;;) {
		size_t first = ENGINE_HEAP_ARITY * i + 1;
		size_t end = first + ENGINE_HEAP_ARITY;
		size_t min = first;

		if (first >= len)
			break;
		if (end > len)
			end = len;
		for (size_t c = first + 1; c < end; c++)
			if (event_before(&heap[c], &heap[min]))
				min = c;
		if (!event_before(&heap[min], &ev))
			break;
		heap[i] = heap[min];
		i = min;
	}
	heap[i] = ev;
}

static uint64_t heap_min_time(const struct engine *engine)
{
	return engine->len ? engine->heap[0].time : ENGINE_NEVER;
}

/*
 * With the root taken, the next event is the earliest of its children.  The
 * fixed-count loop is unrolled into branch-free minimums: this runs on every
 * dispatch.
 */
static uint64_t heap_children_min_time(const struct engine *engine)
{
	const struct event *heap = engine->heap;
	uint64_t t = ENGINE_NEVER;

	if (engine->len > ENGINE_HEAP_ARITY) {
		for (size_t c = 1; c <= ENGINE_HEAP_ARITY; c++)
			t = heap[c].time < t ? heap[c].time : t;
	} else {
		for (size_t c = 1; c < engine->len; c++)
			t = heap[c].time < t ? heap[c].time : t;
	}
	return t;
}

/* Remove the taken root: the last event fills its slot. */
static void heap_drop_root(struct engine *engine)
{
	engine->root_taken = false;
	engine->len--;
	heap_sift_down(engine->heap, engine->len, 0, engine->heap[engine->len]);
	engine->next_time = heap_min_time(engine);
}

struct engine *engine_new(unsigned nr_lanes)
{
	struct engine *engine = g_new0(struct engine, 1);

	g_assert(nr_lanes > 0);
	engine->cap = ENGINE_INITIAL_CAPACITY;
	engine->heap = g_new(struct event, engine->cap);
	engine->next_time = ENGINE_NEVER;
	engine->nr_lanes = nr_lanes;
	engine->lanes = g_new0(struct lane, nr_lanes);
	engine->leaves = 1;
	while (engine->leaves < nr_lanes)
		engine->leaves *= 2;
	engine->tree = g_new(uint64_t, 2 * engine->leaves);
	for (unsigned i = 0; i < 2 * engine->leaves; i++)
		engine->tree[i] = ENGINE_NEVER;
	return engine;
}

void engine_free(struct engine *engine)
{
	if (!engine)
		return;
	for (unsigned i = 0; i < engine->nr_lanes; i++) {
		g_free(engine->lanes[i].all.keys);
		g_free(engine->lanes[i].tracked.keys);
	}
	g_free(engine->lanes);
	g_free(engine->tree);
	g_free(engine->heap);
	g_free(engine);
}

static inline bool key_before(const struct lane_key *a, const struct lane_key *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

static uint64_t key_heap_min(const struct key_heap *h)
{
	return h->len ? h->keys[0].time : ENGINE_NEVER;
}

static void key_heap_push(struct key_heap *h, struct lane_key key)
{
	if (h->len == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 4;
		h->keys = g_renew(struct lane_key, h->keys, h->cap);
	}
	unsigned i = h->len++;
	while (i > 0 && key_before(&key, &h->keys[(i - 1) / 2])) {
		h->keys[i] = h->keys[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->keys[i] = key;
}

/* Pop the minimum, which must be @seq (asserted: see struct lane). */
static void key_heap_pop(struct key_heap *h, uint64_t seq)
{
	g_assert(h->len > 0 && h->keys[0].seq == seq);
	struct lane_key last = h->keys[--h->len];
	unsigned i = 0;
	for (;;) {
		unsigned child = 2 * i + 1;
		if (child >= h->len)
			break;
		if (child + 1 < h->len && key_before(&h->keys[child + 1], &h->keys[child]))
			child++;
		if (!key_before(&h->keys[child], &last))
			break;
		h->keys[i] = h->keys[child];
		i = child;
	}
	if (h->len)
		h->keys[i] = last;
}

/* Propagate lane @index's new tracked minimum up the tournament tree. */
static void tree_update(struct engine *engine, unsigned index)
{
	unsigned node = engine->leaves + index;
	engine->tree[node] = key_heap_min(&engine->lanes[index].tracked);
	for (node /= 2; node >= 1; node /= 2) {
		uint64_t a = engine->tree[2 * node], b = engine->tree[2 * node + 1];
		uint64_t m = a < b ? a : b;
		if (engine->tree[node] == m)
			break;
		engine->tree[node] = m;
	}
}

static void lane_add(struct engine *engine, unsigned index, struct lane_key key, bool tracked)
{
	struct lane *lane = &engine->lanes[index];
	key_heap_push(&lane->all, key);
	if (!tracked)
		return;
	uint64_t before = key_heap_min(&lane->tracked);
	key_heap_push(&lane->tracked, key);
	if (key_heap_min(&lane->tracked) != before)
		tree_update(engine, index);
}

/* The dispatched event leaves its lane before its fn runs. */
static void lane_remove(struct engine *engine, unsigned index, uint64_t seq)
{
	struct lane *lane = &engine->lanes[index];
	key_heap_pop(&lane->all, seq);
	if (lane->tracked.len && lane->tracked.keys[0].seq == seq) {
		key_heap_pop(&lane->tracked, seq);
		tree_update(engine, index);
	}
}

uint64_t engine_tracked_next_time(const struct engine *engine)
{
	return engine->tree[1];
}

uint64_t engine_lane_next_time(const struct engine *engine, unsigned lane)
{
	g_assert(lane < engine->nr_lanes);
	return key_heap_min(&engine->lanes[lane].all);
}

uint64_t engine_now(const struct engine *engine)
{
	return engine->now;
}

/**
 * engine_schedule() - queue fn(target, arg) at @time.
 *
 * The first event scheduled by a dispatched event takes the dispatched
 * event's slot at the root and sinks from there; later ones are pushed at
 * the end and rise.  Either way the heap invariant holds on return.
 */
static void engine_insert(struct engine *engine, uint64_t time, uint64_t seq_flags,
			  unsigned lane, bool tracked, engine_fn fn, void *target, uint64_t arg)
{
	uint64_t seq = engine->next_seq++;
	struct event ev = {
	    .time = time,
	    .seq = seq_flags ? seq_flags | (seq & SEQ_LOW_MASK) : seq,
	    .fn = fn,
	    .target = target,
	    .arg = arg,
	    .lane = lane,
	};

	g_assert(time >= engine->now);
	g_assert(fn != NULL);
	if (lane != ENGINE_LANE_NONE) {
		g_assert(lane < engine->nr_lanes);
		lane_add(engine, lane, (struct lane_key){time, ev.seq}, tracked);
	}
	if (engine->root_taken) {
		engine->root_taken = false;
		heap_sift_down(engine->heap, engine->len, 0, ev);
	} else {
		if (engine->len == engine->cap) {
			engine->cap *= 2;
			engine->heap = g_renew(struct event, engine->heap, engine->cap);
		}
		heap_sift_up(engine->heap, engine->len++, ev);
	}
	engine->next_time = engine->heap[0].time;
}

void engine_schedule(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
		     void *target, uint64_t arg)
{
	engine_insert(engine, time, 0, lane, true, fn, target, arg);
}

void engine_schedule_local(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
			   void *target, uint64_t arg)
{
	g_assert(lane != ENGINE_LANE_NONE);
	engine_insert(engine, time, 0, lane, false, fn, target, arg);
}

void engine_schedule_last(struct engine *engine, uint64_t time, unsigned lane, unsigned rank,
			  engine_fn fn, void *target, uint64_t arg)
{
	g_assert(rank < (1u << (63 - SEQ_RANK_SHIFT)));
	g_assert(engine->next_seq <= SEQ_LOW_MASK);
	engine_insert(engine, time, SEQ_LAST | ((uint64_t)rank << SEQ_RANK_SHIFT), lane, true, fn,
		      target, arg);
}

uint64_t engine_next_time(const struct engine *engine)
{
	return engine->next_time;
}

size_t engine_pending(const struct engine *engine)
{
	return engine->len - engine->root_taken;
}

/**
 * engine_run() - dispatch events in (time, seq) order; see engine.h.
 *
 * When several stop conditions hold at once, the first in this order wins:
 * engine_stop() from the event just dispatched, empty queue, time limit,
 * event limit.  engine_stop() called outside engine_run() has no effect.
 * now is left at the time of the last dispatched event, not at @time_limit:
 * only dispatching advances time.  Not reentrant: an event must not call
 * engine_run() (asserted).
 */
enum engine_stop_reason engine_run(struct engine *engine, uint64_t time_limit, uint64_t event_limit)
{
	enum engine_stop_reason reason;
	uint64_t count = 0;

	g_assert(!engine->running);
	engine->running = true;
	engine->stop = false;
	for (;;) {
		struct event ev;

		if (engine->len == 0) {
			reason = ENGINE_EMPTY;
			break;
		}
		if (engine->heap[0].time > time_limit) {
			reason = ENGINE_TIME_LIMIT;
			break;
		}
		if (count == event_limit) {
			reason = ENGINE_EVENT_LIMIT;
			break;
		}
		/* A copy: fn may overwrite heap[0] by scheduling. */
		ev = engine->heap[0];
		engine->root_taken = true;
		engine->next_time = heap_children_min_time(engine);
		if (ev.lane != ENGINE_LANE_NONE)
			lane_remove(engine, ev.lane, ev.seq);
		engine->now = ev.time;
		count++;
		engine->dispatched++;
		ev.fn(ev.target, ev.arg);
		if (engine->root_taken)
			heap_drop_root(engine);
		if (engine->stop) {
			reason = ENGINE_STOPPED;
			break;
		}
	}
	engine->running = false;
	return reason;
}

void engine_stop(struct engine *engine)
{
	engine->stop = true;
}

uint64_t engine_events_dispatched(const struct engine *engine)
{
	return engine->dispatched;
}
