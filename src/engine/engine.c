/*
 * Discrete-event engine: a priority queue of pending events and the one loop
 * that dispatches them.
 *
 * Models: simulated time as an integer number of cycles that only engine_run()
 * advances, to the time of the event it dispatches.  An event is
 * fn(target, arg); the engine never looks behind target.
 *
 * Simplifies: no cancellation (a model that changes its mind bumps a
 * generation and lets the stale event return early), no optimistic
 * execution, one queue for the whole simulation.  Parallel execution is
 * conservative and limited to what the model declares independent
 * (engine_schedule_independent()).
 *
 * Notes:
 * - Key = (time, seq), seq a 64-bit counter bumped on every engine_schedule().
 *   seq is unique, so the order is total and a run is deterministic; equal
 *   times fire FIFO, as libuv's timer_less_than() does.  2^63 schedules do not
 *   happen, so seq never reaches its top bit, which engine_schedule_last()
 *   sets: such an event sorts after every ordinary event of the same time.
 * - The queue is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990), which
 *   exploits what a discrete-event queue guarantees: no event is scheduled
 *   before the one being dispatched.  With @last the time of the latest
 *   event taken out, an event of time t sits in bucket 0 if t == last, else in
 *   bucket 64 - clz(t ^ last), the position of the highest bit in which t
 *   differs from last.  Every time in bucket i is smaller than every time in
 *   bucket j > i.  Scheduling appends to a bucket: O(1).  When bucket 0 is
 *   empty, the first non-empty bucket is scanned for its smallest time, which
 *   becomes @last, and its events move to lower buckets; an event only ever
 *   moves down, so it moves at most 64 times and in practice about log2 of
 *   how far ahead it was scheduled.  The buckets are arrays read and written
 *   in order: unlike a heap's sifts, no access depends on a comparison.
 * - Bucket 0 (the events at time @last) is kept sorted by seq, so it is
 *   consumed in (time, seq) order: it is sorted when it is refilled, and an
 *   event scheduled at @last has a larger seq than any pending one, so it goes
 *   at the end, except before engine_schedule_last() events (insertion).
 * - Events are stored as (time, seq, payload slot); the payload (fn, target,
 *   arg, lane) stays put in payload[] while the key moves between buckets.
 *   Slots are recycled LIFO: the one a dispatched event frees is the one the
 *   event it schedules takes, so the payload touched per event stays cached.
 * - Invariant: every pending time >= last, and last <= now while events are
 *   dispatched (asserted on schedule), so now never moves backwards.  Only
 *   after engine_run() stopped at its time limit may last exceed now (it
 *   looked at the next event); an event then scheduled before last makes the
 *   queue re-bucket everything around the new time (rare, O(pending)).
 * - Lanes: every event may belong to a lane (an integer the model chooses),
 *   and each lane keeps its pending (time, seq) keys in a binary heap, so
 *   engine_lane_next_time() is one load, each event costs one heap push and
 *   one pop, and a lane with many pending events (thousands of sleepers on
 *   one CPU) stays logarithmic.  A tournament tree over the lanes' tracked
 *   minima answers engine_tracked_next_time() in one load.  A lane's local
 *   events (engine_schedule_local()) sit in a second heap of the lane, which
 *   engine_lane_next_time() reads and the tournament does not.
 * - Phases (engine_set_pool()): when the next event is independent, the
 *   engine takes every pending independent event that comes before the
 *   first other one (the phase's bound) and runs each group's in key order,
 *   groups on the pool's threads.  An event a group schedules before the
 *   bound runs in the phase too, in its group's order; one after it goes
 *   back to the queue when the phase is over.  That is the serial order
 *   restricted to each group, and groups share nothing (their promise), so
 *   the state after the phase is the serial one.  A new event sorts after
 *   every pending one of its time and rank, as its larger seq makes it do
 *   in serial: its key's low part starts past SEQ_LOW_MASK.  Leftovers get
 *   their seqs in group order after the phase; only events of one rank
 *   (one group) can tie on (time, rank), and their order is kept.
 * - Measured with bench/bench_engine.c (see README, "Performance"): the radix
 *   heap replaced a 4-ary heap of 40-byte events, which did 0.5-0.9x the holds
 *   per second of a plain binary heap; it does more at every size.
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <glib.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/engine/pool.h"

#define NR_BUCKETS 65 /* bucket 0, and one per bit position of a 64-bit time */

/* 64 events: a small model never grows the payload arrays. */
#define ENGINE_INITIAL_CAPACITY 64
/* Bucket 0 refills of up to this many events are insertion-sorted. */
#define SMALL_SORT 16

#define SEQ_LAST (UINT64_C(1) << 63)
/* With SEQ_LAST: rank in bits 40..62, insertion order in bits 0..39. */
#define SEQ_RANK_SHIFT 40
#define SEQ_LOW_MASK ((UINT64_C(1) << SEQ_RANK_SHIFT) - 1)

struct event_key {
	uint64_t time;
	uint64_t seq; /* SEQ_LAST set: after ordinary events of the same time */
};

/* A pending event in a bucket: its key and where its payload is. */
struct item {
	uint64_t time;
	uint64_t seq;
	uint32_t slot;
};

/* What an event does; stays in its slot of payload[] while it is pending. */
struct payload {
	engine_fn fn;
	void *target;
	uint64_t arg;
	unsigned lane; /* an independent event's: its group */
	bool local;    /* in its lane's local heap */
	bool independent;
};

/* An array of items; bucket 0 is consumed from @head. */
struct bucket {
	struct item *items;
	uint32_t head;
	uint32_t len;
	uint32_t cap;
};

/* A binary min-heap of (time, seq) keys. */
struct key_heap {
	struct event_key *keys;
	unsigned len;
	unsigned cap;
};

/* A phase's order: (time, seq) with seq split at SEQ_RANK_SHIFT, so that an
 * event scheduled in the phase can sort after every pending one (@lo past
 * SEQ_LOW_MASK). */
struct phase_key {
	uint64_t time;
	uint64_t hi; /* seq >> SEQ_RANK_SHIFT: SEQ_LAST and the rank */
	uint64_t lo;
};

#define PHASE_NEW_LO (SEQ_LOW_MASK + 1)

struct phase_event {
	struct phase_key key;
	struct payload p;
};

/* One group's share of a phase, run by one thread: on a line of its own. */
struct phase_group {
	_Alignas(POOL_LINE) struct engine *engine;
	unsigned group;
	struct phase_event *queue; /* to run, sorted from @head */
	unsigned head, len, cap;
	struct phase_event *left; /* scheduled past the bound, in order */
	unsigned nr_left, cap_left;
	uint64_t now;
	uint64_t dispatched;
	uint64_t created;
	_Atomic bool claimed;
	unsigned ran_on; /* pool_thread_index() */
	uint64_t cost;   /* host ns it took */
};

struct phase_rank {
	uint64_t cost;
	unsigned index;
};

struct phase {
	struct phase_group *groups; /* in order of first appearance */
	unsigned nr_groups, cap_groups;
	unsigned *index_of; /* group -> 1 + its index in @groups, 0: none */
	unsigned *ran_on;   /* group -> the thread that ran it last */
	uint64_t *cost;     /* group -> the host ns it took last time */
	unsigned nr_index;
	struct phase_rank *order; /* @groups' indexes, costliest last time first */
	unsigned cap_order;
	struct phase_key bound;
	uint64_t time_limit;
};

/*
 * A lane's pending keys.  The event being dispatched is the global minimum,
 * so it is also the minimum of its lane's heap: removal is always a pop.
 */
struct lane {
	struct key_heap tracked;
	struct key_heap local; /* engine_schedule_local(): not in the tournament */
};

struct engine {
	struct bucket buckets[NR_BUCKETS];
	uint64_t nonempty; /* bit i - 1 set: bucket i (1..64) holds items */
	uint64_t last;     /* see the invariant above */
	size_t len;        /* pending events */
	struct payload *payload;
	uint32_t *free_slots; /* unused payload indexes, a stack */
	size_t nr_free;
	size_t cap; /* of payload[] and free_slots[] */
	bool stop;    /* set by engine_stop(), cleared by engine_run() */
	bool running; /* engine_run() is on the stack: it must not recurse */
	uint64_t now;
	uint64_t next_seq;
	uint64_t dispatched;
	unsigned nr_lanes;
	struct lane *lanes;
	/* Tournament tree over the lanes' minima: tree[1] is the earliest
	 * tracked time; leaves start at tree[leaves]. */
	unsigned leaves;
	uint64_t *tree;
	struct pool *pool; /* engine_set_pool(); NULL: no phases */
	struct phase phase;
};

/* The group the calling thread is running in a phase, if any. */
static _Thread_local struct phase_group *phase_current;

static inline bool key_before(const struct event_key *a, const struct event_key *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

/* ---- the radix heap -------------------------------------------------------- */

static inline unsigned bucket_index(uint64_t last, uint64_t time)
{
	return time == last ? 0 : 64 - (unsigned)__builtin_clzll(time ^ last);
}

static inline void bucket_append(struct bucket *b, struct item it)
{
	if (b->len == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->items = g_renew(struct item, b->items, b->cap);
	}
	b->items[b->len++] = it;
}

/* Append to bucket @i > 0 of @engine. */
static inline void queue_append(struct engine *engine, unsigned i, struct item it)
{
	bucket_append(&engine->buckets[i], it);
	engine->nonempty |= UINT64_C(1) << (i - 1);
}

/*
 * Insert into bucket 0, keeping it sorted by seq.  An ordinary event has the
 * largest seq so far and goes at the end unless engine_schedule_last() events
 * are waiting there.
 */
static void bucket0_insert(struct bucket *b, struct item it)
{
	uint32_t i;

	bucket_append(b, it);
	for (i = b->len - 1; i > b->head && b->items[i - 1].seq > it.seq; i--)
		b->items[i] = b->items[i - 1];
	b->items[i] = it;
}

static int item_cmp_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct item *)a)->seq, y = ((const struct item *)b)->seq;

	return (x > y) - (x < y);
}

static void bucket0_sort(struct bucket *b)
{
	if (b->len > SMALL_SORT) {
		qsort(b->items, b->len, sizeof(*b->items), item_cmp_seq);
		return;
	}
	for (uint32_t i = 1; i < b->len; i++) {
		struct item it = b->items[i];
		uint32_t j;

		for (j = i; j > 0 && b->items[j - 1].seq > it.seq; j--)
			b->items[j] = b->items[j - 1];
		b->items[j] = it;
	}
}

/* Smallest time in bucket @b (not empty). */
static uint64_t bucket_min_time(const struct bucket *b)
{
	uint64_t t = b->items[b->head].time;

	for (uint32_t i = b->head + 1; i < b->len; i++)
		t = b->items[i].time < t ? b->items[i].time : t;
	return t;
}

/*
 * Bucket 0 is empty and events are pending: make the first non-empty bucket's
 * smallest time the new @last and move its events down.
 */
static void queue_refill(struct engine *engine)
{
	unsigned i = 1 + (unsigned)__builtin_ctzll(engine->nonempty);
	struct bucket *from = &engine->buckets[i];
	struct bucket *b0 = &engine->buckets[0];
	b0->head = b0->len = 0;
	if (from->len == 1) {
		/* Common with few pending events: it is the next one. */
		engine->last = from->items[0].time;
		bucket_append(b0, from->items[0]);
		from->len = 0;
		engine->nonempty &= ~(UINT64_C(1) << (i - 1));
		return;
	}

	uint64_t last = bucket_min_time(from);

	engine->last = last;
	for (uint32_t k = 0; k < from->len; k++) {
		struct item it = from->items[k];
		unsigned to = bucket_index(last, it.time);

		if (to == 0)
			bucket_append(b0, it);
		else
			queue_append(engine, to, it);
	}
	from->len = 0;
	engine->nonempty &= ~(UINT64_C(1) << (i - 1));
	bucket0_sort(b0);
}

/* An event is scheduled before @last (only after a time-limit stop): make
 * @time the new last and put every pending event in its bucket again. */
static void queue_rebase(struct engine *engine, uint64_t time)
{
	GArray *all = g_array_sized_new(FALSE, FALSE, sizeof(struct item), (guint)engine->len);

	for (unsigned i = 0; i < NR_BUCKETS; i++) {
		struct bucket *b = &engine->buckets[i];

		g_array_append_vals(all, b->items + b->head, b->len - b->head);
		b->head = b->len = 0;
	}
	engine->nonempty = 0;
	engine->last = time;
	for (guint k = 0; k < all->len; k++) {
		struct item it = g_array_index(all, struct item, k);

		/* Every pending time is > time: none goes to bucket 0. */
		queue_append(engine, bucket_index(time, it.time), it);
	}
	g_array_free(all, TRUE);
}

static void queue_push(struct engine *engine, struct item it)
{
	if (it.time < engine->last)
		queue_rebase(engine, it.time);

	unsigned i = bucket_index(engine->last, it.time);

	if (i == 0)
		bucket0_insert(&engine->buckets[0], it);
	else
		queue_append(engine, i, it);
	engine->len++;
}

/* The earliest pending event, left in place; the queue must not be empty. */
static const struct item *queue_peek(struct engine *engine)
{
	struct bucket *b0 = &engine->buckets[0];

	if (b0->head == b0->len)
		queue_refill(engine);
	return &b0->items[b0->head];
}

/* Remove the item queue_peek() returned. */
static void queue_take(struct engine *engine)
{
	struct bucket *b0 = &engine->buckets[0];

	if (++b0->head == b0->len)
		b0->head = b0->len = 0;
	engine->len--;
}

/* Double the payload capacity; the new slots go on the free stack. */
static void engine_grow(struct engine *engine)
{
	size_t old = engine->cap, cap = old ? 2 * old : ENGINE_INITIAL_CAPACITY;

	g_assert(cap <= UINT32_MAX);
	engine->payload = g_renew(struct payload, engine->payload, cap);
	engine->free_slots = g_renew(uint32_t, engine->free_slots, cap);
	/* Pushed in reverse so that slot @old is taken first. */
	for (size_t i = cap; i-- > old;)
		engine->free_slots[engine->nr_free++] = (uint32_t)i;
	engine->cap = cap;
}

struct engine *engine_new(unsigned nr_lanes)
{
	struct engine *engine = g_new0(struct engine, 1);

	g_assert(nr_lanes > 0);
	engine_grow(engine);
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
		g_free(engine->lanes[i].tracked.keys);
		g_free(engine->lanes[i].local.keys);
	}
	g_free(engine->lanes);
	g_free(engine->tree);
	for (unsigned i = 0; i < NR_BUCKETS; i++)
		g_free(engine->buckets[i].items);
	g_free(engine->payload);
	g_free(engine->free_slots);
	for (unsigned i = 0; i < engine->phase.cap_groups; i++) {
		g_free(engine->phase.groups[i].queue);
		g_free(engine->phase.groups[i].left);
	}
	g_aligned_free(engine->phase.groups);
	g_free(engine->phase.index_of);
	g_free(engine->phase.ran_on);
	g_free(engine->phase.cost);
	g_free(engine->phase.order);
	g_free(engine);
}

void engine_set_pool(struct engine *engine, struct pool *pool)
{
	g_assert(!engine->running);
	engine->pool = pool && pool_threads(pool) > 1 ? pool : NULL;
}

/* ---- lanes ----------------------------------------------------------------- */

static uint64_t key_heap_min(const struct key_heap *h)
{
	return h->len ? h->keys[0].time : ENGINE_NEVER;
}

static void key_heap_push(struct key_heap *h, struct event_key key)
{
	if (h->len == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 4;
		h->keys = g_renew(struct event_key, h->keys, h->cap);
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
	struct event_key last = h->keys[--h->len];
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

static void lane_add(struct engine *engine, unsigned index, struct event_key key)
{
	struct lane *lane = &engine->lanes[index];
	uint64_t before = key_heap_min(&lane->tracked);
	key_heap_push(&lane->tracked, key);
	if (key_heap_min(&lane->tracked) != before)
		tree_update(engine, index);
}

/* The dispatched event leaves its lane before its fn runs. */
static void lane_remove(struct engine *engine, unsigned index, uint64_t seq, bool local)
{
	if (local) {
		key_heap_pop(&engine->lanes[index].local, seq);
		return;
	}
	key_heap_pop(&engine->lanes[index].tracked, seq);
	tree_update(engine, index);
}

uint64_t engine_tracked_next_time(const struct engine *engine)
{
	return engine->tree[1];
}

uint64_t engine_lane_next_time(const struct engine *engine, unsigned lane)
{
	g_assert(lane < engine->nr_lanes);
	uint64_t tracked = key_heap_min(&engine->lanes[lane].tracked);
	uint64_t local = key_heap_min(&engine->lanes[lane].local);
	return tracked < local ? tracked : local;
}

uint64_t engine_now(const struct engine *engine)
{
	const struct phase_group *pg = phase_current;
	return pg && pg->engine == engine ? pg->now : engine->now;
}

/* engine_schedule() and its variants: queue @p at @time. */
static void engine_insert(struct engine *engine, uint64_t time, uint64_t seq_flags,
			  struct payload p)
{
	if (G_UNLIKELY(phase_current != NULL))
		g_error("engine: an independent event scheduled an ordinary one: its group's "
			"promise (engine_schedule_independent()) does not hold");
	uint64_t seq = engine->next_seq++;
	struct item it = {
	    .time = time,
	    .seq = seq_flags ? seq_flags | (seq & SEQ_LOW_MASK) : seq,
	};

	g_assert(time >= engine->now);
	g_assert(p.fn != NULL);
	if (!p.independent && p.lane != ENGINE_LANE_NONE) {
		g_assert(p.lane < engine->nr_lanes);
		struct event_key key = {it.time, it.seq};
		if (p.local)
			key_heap_push(&engine->lanes[p.lane].local, key);
		else
			lane_add(engine, p.lane, key);
	}
	if (engine->nr_free == 0)
		engine_grow(engine);
	it.slot = engine->free_slots[--engine->nr_free];
	engine->payload[it.slot] = p;
	queue_push(engine, it);
}

void engine_schedule(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
		     void *target, uint64_t arg)
{
	engine_insert(engine, time, 0,
		      (struct payload){.fn = fn, .target = target, .arg = arg, .lane = lane});
}

void engine_schedule_local(struct engine *engine, uint64_t time, unsigned lane, engine_fn fn,
			   void *target, uint64_t arg)
{
	g_assert(lane != ENGINE_LANE_NONE);
	engine_insert(engine, time, 0,
		      (struct payload){.fn = fn, .target = target, .arg = arg, .lane = lane,
				       .local = true});
}

void engine_schedule_last(struct engine *engine, uint64_t time, unsigned lane, unsigned rank,
			  engine_fn fn, void *target, uint64_t arg)
{
	g_assert(rank < (1u << (63 - SEQ_RANK_SHIFT)));
	g_assert(engine->next_seq <= SEQ_LOW_MASK);
	engine_insert(engine, time, SEQ_LAST | ((uint64_t)rank << SEQ_RANK_SHIFT),
		      (struct payload){.fn = fn, .target = target, .arg = arg, .lane = lane});
}

/* ---- phases ---------------------------------------------------------------- */

static inline bool phase_key_before(const struct phase_key *a, const struct phase_key *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	return a->hi != b->hi ? a->hi < b->hi : a->lo < b->lo;
}

static void phase_append(struct phase_event **array, unsigned *len, unsigned *cap,
			 struct phase_event ev)
{
	if (*len == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		*array = g_renew(struct phase_event, *array, *cap);
	}
	(*array)[(*len)++] = ev;
}

/* An independent event scheduled by an event of @pg's phase. */
static void phase_schedule(struct phase_group *pg, uint64_t time, unsigned group, unsigned rank,
			   engine_fn fn, void *target, uint64_t arg)
{
	const struct phase *ph = &pg->engine->phase;
	if (G_UNLIKELY(group != pg->group))
		g_error("engine: an independent event of group %u scheduled one of group %u",
			pg->group, group);
	g_assert(time >= pg->now && fn != NULL);
	struct phase_event ev = {
	    .key = {.time = time,
		    .hi = (SEQ_LAST | (uint64_t)rank << SEQ_RANK_SHIFT) >> SEQ_RANK_SHIFT,
		    .lo = PHASE_NEW_LO + pg->created++},
	    .p = {.fn = fn, .target = target, .arg = arg, .lane = group, .independent = true},
	};
	if (time > ph->time_limit || !phase_key_before(&ev.key, &ph->bound)) {
		phase_append(&pg->left, &pg->nr_left, &pg->cap_left, ev);
		return;
	}
	phase_append(&pg->queue, &pg->len, &pg->cap, ev);
	unsigned i = pg->len - 1;
	for (; i > pg->head && phase_key_before(&ev.key, &pg->queue[i - 1].key); i--)
		pg->queue[i] = pg->queue[i - 1];
	pg->queue[i] = ev;
}

void engine_schedule_independent(struct engine *engine, uint64_t time, unsigned group,
				 unsigned rank, engine_fn fn, void *target, uint64_t arg)
{
	g_assert(rank < (1u << (63 - SEQ_RANK_SHIFT)));
	struct phase_group *pg = phase_current;
	if (pg && pg->engine == engine) {
		phase_schedule(pg, time, group, rank, fn, target, arg);
		return;
	}
	g_assert(engine->next_seq <= SEQ_LOW_MASK);
	engine_insert(engine, time, SEQ_LAST | ((uint64_t)rank << SEQ_RANK_SHIFT),
		      (struct payload){.fn = fn, .target = target, .arg = arg, .lane = group,
				       .independent = true});
}

static struct phase_group *phase_group_of(struct engine *engine, unsigned group)
{
	struct phase *ph = &engine->phase;
	if (group >= ph->nr_index) {
		unsigned n = MAX(group + 1, 2 * ph->nr_index);
		ph->index_of = g_renew(unsigned, ph->index_of, n);
		memset(ph->index_of + ph->nr_index, 0, (n - ph->nr_index) * sizeof(unsigned));
		ph->ran_on = g_renew(unsigned, ph->ran_on, n);
		memset(ph->ran_on + ph->nr_index, 0, (n - ph->nr_index) * sizeof(unsigned));
		ph->cost = g_renew(uint64_t, ph->cost, n);
		memset(ph->cost + ph->nr_index, 0, (n - ph->nr_index) * sizeof(uint64_t));
		ph->nr_index = n;
	}
	if (ph->index_of[group])
		return &ph->groups[ph->index_of[group] - 1];
	if (ph->nr_groups == ph->cap_groups) {
		unsigned cap = ph->cap_groups ? 2 * ph->cap_groups : 8;
		struct phase_group *groups = g_aligned_alloc0(cap, sizeof(*groups), POOL_LINE);
		if (ph->cap_groups)
			memcpy(groups, ph->groups, ph->cap_groups * sizeof(*groups));
		g_aligned_free(ph->groups);
		ph->groups = groups;
		ph->cap_groups = cap;
	}
	struct phase_group *pg = &ph->groups[ph->nr_groups++];
	ph->index_of[group] = ph->nr_groups;
	pg->engine = engine;
	pg->group = group;
	return pg;
}

/* Host time for the phases' schedule only (C11: no monotonic clock; a
 * step of the wall clock costs one misjudged phase). */
static uint64_t host_ns(void)
{
	struct timespec ts;
	timespec_get(&ts, TIME_UTC);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run @pg's events in order, on the calling thread. */
static void phase_run_group(struct phase_group *pg)
{
	uint64_t start = host_ns();
	phase_current = pg;
	while (pg->head < pg->len) {
		struct phase_event ev = pg->queue[pg->head++];
		pg->now = ev.key.time;
		pg->dispatched++;
		ev.p.fn(ev.p.target, ev.p.arg);
	}
	phase_current = NULL;
	pg->cost = host_ns() - start;
}

static bool phase_claim(struct phase_group *pg)
{
	bool expected = false;
	return !atomic_load_explicit(&pg->claimed, memory_order_relaxed) &&
	       atomic_compare_exchange_strong_explicit(&pg->claimed, &expected, true,
						       memory_order_relaxed, memory_order_relaxed);
}

/*
 * One thread's part of a phase: the groups in order of what they cost last
 * time, costliest first (longest processing time first keeps the threads'
 * loads even), first those it ran last time, whose TLBs and caches are
 * likely still in its host core's caches, then any left.  (Who runs what
 * changes nothing but the time it takes.)
 */
static void phase_run_share(void *ctx, unsigned i)
{
	(void)i;
	struct phase *ph = &((struct engine *)ctx)->phase;
	unsigned me = pool_thread_index();
	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned k = 0; k < ph->nr_groups; k++) {
			struct phase_group *pg = &ph->groups[ph->order[k].index];
			if ((pass || ph->ran_on[pg->group] == me) && phase_claim(pg)) {
				pg->ran_on = me;
				phase_run_group(pg);
			}
		}
}

static int phase_cmp_cost(const void *a, const void *b)
{
	const struct phase_rank *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Many more groups than threads even out without it. */
#define PHASE_SORT_PER_THREAD 4

static void phase_order_by_cost(struct phase *ph, unsigned threads)
{
	if (ph->nr_groups > ph->cap_order) {
		ph->cap_order = ph->cap_groups;
		ph->order = g_renew(struct phase_rank, ph->order, ph->cap_order);
	}
	for (unsigned k = 0; k < ph->nr_groups; k++)
		ph->order[k] = (struct phase_rank){.cost = ph->cost[ph->groups[k].group], .index = k};
	if (ph->nr_groups <= PHASE_SORT_PER_THREAD * threads)
		qsort(ph->order, ph->nr_groups, sizeof(*ph->order), phase_cmp_cost);
}

/*
 * The next event is independent: run the phase it opens (see the notes at
 * the top), none of whose events lies past @time_limit.  Returns the events
 * dispatched.
 */
static uint64_t engine_phase(struct engine *engine, uint64_t time_limit)
{
	struct phase *ph = &engine->phase;
	ph->time_limit = time_limit;
	ph->bound = (struct phase_key){ENGINE_NEVER, UINT64_MAX, UINT64_MAX};
	while (engine->len) {
		const struct item *it = queue_peek(engine);
		const struct payload *p = &engine->payload[it->slot];
		struct phase_key key = {it->time, it->seq >> SEQ_RANK_SHIFT, it->seq & SEQ_LOW_MASK};
		if (!p->independent) {
			ph->bound = key;
			break;
		}
		if (it->time > time_limit)
			break;
		struct phase_group *pg = phase_group_of(engine, p->lane);
		phase_append(&pg->queue, &pg->len, &pg->cap,
			     (struct phase_event){.key = key, .p = *p});
		engine->free_slots[engine->nr_free++] = it->slot;
		queue_take(engine);
	}
	if (ph->nr_groups == 1) {
		ph->groups[0].ran_on = ph->ran_on[ph->groups[0].group];
		phase_run_group(&ph->groups[0]);
	} else {
		phase_order_by_cost(ph, pool_threads(engine->pool));
		pool_run(engine->pool, MIN(ph->nr_groups, pool_threads(engine->pool)),
			 phase_run_share, engine);
	}

	uint64_t dispatched = 0;
	for (unsigned g = 0; g < ph->nr_groups; g++) {
		struct phase_group *pg = &ph->groups[g];
		dispatched += pg->dispatched;
		engine->now = MAX(engine->now, pg->now);
	}
	for (unsigned g = 0; g < ph->nr_groups; g++) {
		struct phase_group *pg = &ph->groups[g];
		for (unsigned i = 0; i < pg->nr_left; i++)
			engine_insert(engine, pg->left[i].key.time,
				      pg->left[i].key.hi << SEQ_RANK_SHIFT, pg->left[i].p);
		ph->index_of[pg->group] = 0;
		ph->ran_on[pg->group] = pg->ran_on;
		ph->cost[pg->group] = pg->cost;
		atomic_store_explicit(&pg->claimed, false, memory_order_relaxed);
		pg->head = pg->len = pg->nr_left = 0;
		pg->dispatched = pg->created = 0;
	}
	ph->nr_groups = 0;
	engine->dispatched += dispatched;
	return dispatched;
}

/* Bucket 0 holds the events at @last; else the earliest is the smallest time
 * of the first non-empty bucket, found without moving anything. */
uint64_t engine_next_time(const struct engine *engine)
{
	const struct bucket *b0 = &engine->buckets[0];

	if (engine->len == 0)
		return ENGINE_NEVER;
	if (b0->head < b0->len)
		return engine->last;
	return bucket_min_time(&engine->buckets[1 + __builtin_ctzll(engine->nonempty)]);
}

size_t engine_pending(const struct engine *engine)
{
	return engine->len;
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
		if (engine->len == 0) {
			reason = ENGINE_EMPTY;
			break;
		}
		const struct item *it = queue_peek(engine);
		if (it->time > time_limit) {
			reason = ENGINE_TIME_LIMIT;
			break;
		}
		if (count >= event_limit) {
			reason = ENGINE_EVENT_LIMIT;
			break;
		}
		if (engine->pool && engine->payload[it->slot].independent) {
			count += engine_phase(engine, time_limit);
			continue;
		}
		/* A copy: fn may reuse the slot by scheduling. */
		struct payload ev = engine->payload[it->slot];
		uint64_t time = it->time, seq = it->seq;

		engine->free_slots[engine->nr_free++] = it->slot;
		queue_take(engine);
		if (!ev.independent && ev.lane != ENGINE_LANE_NONE)
			lane_remove(engine, ev.lane, seq, ev.local);
		engine->now = time;
		count++;
		engine->dispatched++;
		ev.fn(ev.target, ev.arg);
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
	if (G_UNLIKELY(phase_current != NULL))
		g_error("engine: an independent event called engine_stop()");
	engine->stop = true;
}

uint64_t engine_events_dispatched(const struct engine *engine)
{
	return engine->dispatched;
}
