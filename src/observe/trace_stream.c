/*
 * The trace's middle stage (see trace.c's notes): records in cycles, as the
 * probes make them, become the file's events: cut around the CPU's
 * interrupt handlers, clipped to the window, in nanoseconds.  It passes them
 * to trace_write.c as soon as they are final, and tells it how far the file
 * may be written: the frontier, before which nothing can still begin.
 *
 * Notes:
 * - Records arrive nearly in time order.  What is recorded later starts no
 *   earlier than the engine's clock, except, per CPU, the open switch (a
 *   switch is recorded when it ends), the running handler, a late local
 *   flush not yet drawn and a cross-call not yet acknowledged (their slices
 *   are recorded at their end): stream_frontier() takes the minimum.
 * - A record is final once every handler that may cut it is known: its end
 *   lies before the engine's clock (handlers start at the clock) and before
 *   the start of its CPU's running handler.  Until then it waits here; this
 *   holds the ahead-computed parts of a syscall, microseconds.
 * - Base slices other than switches (idle, a task's work, a syscall) may
 *   last the whole run; they are not held until they end but followed while
 *   they run (struct followed): each piece between two handlers goes on when
 *   its handler is known to be recorded (a handler the window leaves out
 *   cuts nothing), and the running piece is passed on as open (its length
 *   not yet known, but at least up to the clock) as soon as it surely shows
 *   in the file.  The slice's place in recording order comes when it closes.
 * - A context switch is recorded when the CPU's next hook settles it, which
 *   a CPU idle after it may not have for long.  Without a budget, a switch
 *   that has ended is passed on at once, its seq set when it is recorded,
 *   and the slice after it followed from its end (pass_switch()); with one,
 *   it holds the frontier back (see pass_switch() for why).
 * - Memory: the waiting records (72 bytes each: those whose end lies ahead
 *   of the clock or inside a running handler, plus at most POLL_RECORDS
 *   recorded since the last pass); per CPU its followed slices (one open,
 *   one or two closing) and the handlers that may still cut a waiting record
 *   (16 bytes each).  Nothing grows with the length of the run, except, with
 *   a budget, while a CPU idle after a switch holds the frontier back: then
 *   by at most the budget's records.
 */
#include "tlbsim/engine/engine.h"
#include "tlbsim/machine/machine.h"
#include "trace_impl.h"

/*
 * 1024: records piled up between two passes.  A pass costs a look at every
 * waiting record and at every CPU, so passing on less often makes the pass
 * cheap per record; the pile is 72 KiB.
 */
#define POLL_RECORDS 1024

struct span {
	uint64_t start, end;
};

/* A base slice followed while it runs, and after it closed inside a handler
 * not yet known to be recorded (its last piece ends at the handler or at
 * @at). */
struct followed {
	uint64_t cur;    /* cycles: where its current piece starts */
	uint64_t at;     /* closed: its end */
	uint32_t pieces; /* pieces before the current one */
	uint32_t cell;   /* writer cell: the slice's seq */
	uint32_t item;   /* the current piece once it surely shows, else NO_ITEM */
	bool final;      /* the current piece reaches the window's end: passed on */
	uint32_t name;
	struct args args;
	uint8_t category;
};

struct stream_cpu {
	bool open;
	struct followed slice; /* if @open */
	/* The switch, and its mm part, passed on before they are recorded:
	 * their seqs come when they are. */
	bool switch_passed;
	uint32_t switch_cells[2];
	bool preopened; /* @slice is the one that follows the passed switch */
	GArray *closing;       /* struct followed: closed in the running handler */
	GArray *spans;         /* struct span: recorded handlers, in time order */
	unsigned first_span;   /* spans before it can cut nothing that comes */
};

struct stream {
	unsigned nr_cpus;
	struct stream_cpu *cpus;
	GArray *waiting;    /* struct record: not final yet */
	uint64_t last_pass; /* nr_recorded at the last pass */
};

bool stream_follows(enum base_kind kind)
{
	return kind != BASE_SWITCH;
}

struct stream *stream_new(struct trace *t)
{
	struct stream *s = g_new0(struct stream, 1);
	s->nr_cpus = t->nr_cpus;
	s->cpus = g_new0(struct stream_cpu, t->nr_cpus);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		s->cpus[cpu].closing = g_array_new(FALSE, FALSE, sizeof(struct followed));
		s->cpus[cpu].spans = g_array_new(FALSE, FALSE, sizeof(struct span));
	}
	s->waiting = g_array_new(FALSE, FALSE, sizeof(struct record));
	return s;
}

void stream_free(struct stream *s)
{
	if (!s)
		return;
	g_array_free(s->waiting, TRUE);
	for (unsigned cpu = 0; cpu < s->nr_cpus; cpu++) {
		g_array_free(s->cpus[cpu].closing, TRUE);
		g_array_free(s->cpus[cpu].spans, TRUE);
	}
	g_free(s->cpus);
	g_free(s);
}

/* ---- passing a piece on --------------------------------------------------------- */

/* Where the file ends in cycles: the window's end, or the cut. */
static uint64_t clip_end(const struct trace *t)
{
	return t->cut && t->cut_at < t->window_end ? t->cut_at : t->window_end;
}

/*
 * A piece [start, start + dur) of record @r, the @piece-th (0: the record
 * itself or its first piece), with @flow_dir (only the last piece keeps the
 * flow): clipped to the window, in nanoseconds, to the writer.
 */
static void pass_piece(struct trace *t, const struct record *r, uint32_t cell, uint64_t start,
		       uint64_t dur, enum shape shape, uint32_t piece, enum flow_dir flow_dir)
{
	uint64_t from = t->window_start, to = clip_end(t), end = start + dur;
	bool kept;
	if (r->ph != 'X' || shape != SHAPE_SPAN) {
		kept = start >= from && start <= to;
	} else {
		/* A slice of no length is one a handler covered whole. */
		start = start > from ? start : from;
		end = end < to ? end : to;
		kept = dur > 0 && start < end;
	}
	if (!kept) {
		if (flow_dir != FLOW_NONE)
			writer_flow_end(t->writer, r->flow, false, 0);
		return;
	}
	uint64_t ts = trace_cycles_to_ns(t, start), end_ns = trace_cycles_to_ns(t, end);
	if (shape == SHAPE_TAIL) {
		end_ns = ts;
		ts = ts ? ts - 1 : 0;
	}
	struct item_init init = {
		.ts = ts, .dur = end_ns - ts, .flow = flow_dir != FLOW_NONE ? r->flow : 0,
		.args = r->args, .name = r->name, .major = r->seq, .minor = piece,
		.cell = cell, .cpu = r->cpu, .ph = r->ph, .depth = r->depth,
		.later = piece > 0, .flow_dir = (uint8_t)flow_dir, .category = r->category,
	};
	writer_item_new(t->writer, &init);
	if (flow_dir != FLOW_NONE)
		writer_flow_end(t->writer, r->flow, true, ts);
}

/* Whether a record is cut around its CPU's handlers. */
static bool cuttable(const struct record *r)
{
	return r->ph == 'X' && r->irq == IRQ_OUTSIDE && r->dur > 0 && r->cpu != GLOBAL_TRACK;
}

/*
 * Cut @r around the recorded handlers of its CPU and pass the pieces on.  A
 * flow stays on the last piece (an IPI leaves at the end of its send); a
 * record covered whole keeps its flow as a point at the handler's end and
 * is otherwise left out.
 */
static void cut_and_pass(struct trace *t, const struct record *r, uint32_t cell)
{
	const struct stream_cpu *sc = &t->stream->cpus[r->cpu];
	const struct span *spans = &g_array_index(sc->spans, struct span, 0);
	unsigned lo = sc->first_span, hi = sc->spans->len;
	uint64_t cur = r->ts, end = r->ts + r->dur;
	while (lo < hi) { /* the first handler that ends after @cur */
		unsigned mid = lo + (hi - lo) / 2;
		if (spans[mid].end <= cur)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t piece = 0;
	uint64_t from = 0, to = 0; /* the piece held back until the next shows */
	bool held = false;
	for (unsigned i = lo; i < sc->spans->len && cur < end; i++) {
		const struct span *h = &spans[i];
		if (h->start >= end)
			break;
		if (h->start > cur) {
			if (held)
				pass_piece(t, r, cell, from, to - from, SHAPE_SPAN, piece++,
					   FLOW_NONE);
			from = cur;
			to = h->start;
			held = true;
		}
		cur = h->end > cur ? h->end : cur;
	}
	if (cur < end) {
		if (held)
			pass_piece(t, r, cell, from, to - from, SHAPE_SPAN, piece++, FLOW_NONE);
		from = cur;
		to = end;
		held = true;
	}
	if (held)
		pass_piece(t, r, cell, from, to - from, SHAPE_SPAN, piece, r->flow_dir);
	else
		pass_piece(t, r, cell, cur, 0, r->flow_dir != FLOW_NONE ? SHAPE_POINT : SHAPE_SPAN,
			   0, r->flow_dir);
}

static void pass_record(struct trace *t, const struct record *r)
{
	if (cuttable(r))
		cut_and_pass(t, r, NO_CELL);
	else
		pass_piece(t, r, NO_CELL, r->ts, r->dur, r->shape, 0, r->flow_dir);
}

void stream_record(struct trace *t, const struct record *r)
{
	struct stream_cpu *sc = r->cpu == GLOBAL_TRACK ? NULL : &t->stream->cpus[r->cpu];
	if (sc && sc->switch_passed && r->part != PART_NONE) {
		writer_cell_set(t->writer, sc->switch_cells[r->part - 1], r->seq);
		return;
	}
	g_array_append_val(t->stream->waiting, *r);
}

void stream_flow_dropped(struct trace *t, uint64_t flow)
{
	writer_flow_end(t->writer, flow, false, 0);
}

/* ---- followed base slices --------------------------------------------------------- */

/* The current piece of @f ends at @end (cycles): passed on, or dropped. */
static void piece_end(struct trace *t, unsigned cpu, struct followed *f, uint64_t end)
{
	if (end <= f->cur)
		return;
	uint32_t piece = f->pieces++;
	if (f->final) {
		f->final = false;
		return;
	}
	uint64_t start = f->cur > t->window_start ? f->cur : t->window_start, to = clip_end(t);
	end = end < to ? end : to;
	if (start >= end) {
		g_assert(f->item == NO_ITEM);
		return;
	}
	uint64_t ts = trace_cycles_to_ns(t, start), dur = trace_cycles_to_ns(t, end) - ts;
	if (f->item != NO_ITEM) {
		writer_item_end(t->writer, f->item, dur);
		f->item = NO_ITEM;
		return;
	}
	struct item_init init = {
		.ts = ts, .dur = dur, .args = f->args, .name = f->name, .major = NO_SEQ,
		.minor = piece, .cell = f->cell, .cpu = (uint16_t)cpu, .ph = 'X',
		.depth = DEPTH_BASE, .later = piece > 0, .category = f->category,
	};
	writer_item_new(t->writer, &init);
}

/*
 * The current piece of @f lasts at least until @until (cycles): once it
 * surely shows in the file (it starts before that and before the window's
 * end), the writer gets it, open; at the window's end it is final.
 */
static void piece_show(struct trace *t, unsigned cpu, struct followed *f, uint64_t until)
{
	if (f->final)
		return;
	uint64_t start = f->cur > t->window_start ? f->cur : t->window_start;
	uint64_t limit = until < t->window_end ? until : t->window_end;
	if (start >= limit)
		return;
	uint64_t ts = trace_cycles_to_ns(t, start), lo = trace_cycles_to_ns(t, limit) - ts;
	bool exact = until >= t->window_end;
	if (f->item != NO_ITEM) {
		if (exact)
			writer_item_end(t->writer, f->item, lo);
		else
			writer_item_lo(t->writer, f->item, lo);
	} else {
		struct item_init init = {
			.ts = ts, .dur = exact ? lo : DUR_OPEN, .lo = lo, .args = f->args,
			.name = f->name, .major = NO_SEQ, .minor = f->pieces, .cell = f->cell,
			.cpu = (uint16_t)cpu, .ph = 'X', .depth = DEPTH_BASE,
			.later = f->pieces > 0, .category = f->category,
		};
		uint32_t item = writer_item_new(t->writer, &init);
		if (!exact)
			f->item = item;
	}
	if (exact) {
		f->item = NO_ITEM;
		f->final = true;
	}
}

static void followed_release(struct trace *t, struct followed *f)
{
	g_assert(f->item == NO_ITEM);
	writer_cell_release(t->writer, f->cell);
}

void stream_base_open(struct trace *t, unsigned cpu)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	const struct trace_cpu *c = &t->cpus[cpu];
	if (sc->switch_passed) {
		writer_cell_release(t->writer, sc->switch_cells[0]);
		writer_cell_release(t->writer, sc->switch_cells[1]);
		sc->switch_passed = false;
	}
	if (sc->preopened) {
		/* The switch's successor, followed since the switch ended. */
		g_assert(sc->open && c->since == sc->slice.cur && c->name == sc->slice.name);
		sc->preopened = false;
		return;
	}
	if (sc->open) /* it ended where it began: no slice */
		followed_release(t, &sc->slice);
	sc->open = stream_follows(c->kind);
	if (!sc->open)
		return;
	sc->slice = (struct followed){
		.cur = c->since, .cell = writer_cell_new(t->writer), .item = NO_ITEM,
		.name = c->name, .args = c->args, .category = (uint8_t)c->category,
	};
}

/* Until when (cycles) the CPU's handlers are known: a running handler may
 * still cut what lies after its start, and one to come what lies after the
 * clock. */
static uint64_t known_until(const struct trace *t, unsigned cpu, uint64_t now)
{
	const struct trace_cpu *c = &t->cpus[cpu];
	return c->in_irq && c->irq_start < now ? c->irq_start : now;
}

/* Closed slices whose last piece no handler can cut any more end. */
static void end_closed(struct trace *t, unsigned cpu, uint64_t until)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	unsigned n = 0;
	for (unsigned i = 0; i < sc->closing->len; i++) {
		struct followed *f = &g_array_index(sc->closing, struct followed, i);
		if (f->at <= until) {
			piece_end(t, cpu, f, f->at);
			followed_release(t, f);
		} else {
			g_array_index(sc->closing, struct followed, n++) = *f;
		}
	}
	g_array_set_size(sc->closing, n);
}

void stream_base_close(struct trace *t, unsigned cpu, uint64_t at, uint32_t seq)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	g_assert(sc->open);
	sc->open = false;
	if (seq != NO_SEQ)
		writer_cell_set(t->writer, sc->slice.cell, seq);
	/* A syscall may return ahead of the clock (its work was computed
	 * ahead), or inside a handler: a handler may still cut its end. */
	sc->slice.at = at;
	g_array_append_val(sc->closing, sc->slice);
	end_closed(t, cpu, known_until(t, cpu, engine_now(t->m->engine)));
}

void stream_handler(struct trace *t, unsigned cpu, uint64_t start, uint64_t end, bool kept)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	if (kept) {
		struct span h = {start, end};
		g_array_append_val(sc->spans, h);
		for (unsigned i = 0; i < sc->closing->len; i++) {
			struct followed *f = &g_array_index(sc->closing, struct followed, i);
			if (start >= f->at)
				continue;
			piece_end(t, cpu, f, start);
			f->cur = end > f->cur ? end : f->cur;
		}
		if (sc->open) {
			piece_end(t, cpu, &sc->slice, start);
			sc->slice.cur = end > sc->slice.cur ? end : sc->slice.cur;
		}
	}
	/* The handler is over: the next one starts at the clock or later. */
	end_closed(t, cpu, engine_now(t->m->engine));
}

/* ---- the frontier ------------------------------------------------------------------ */

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The earliest time (cycles) at which anything still to be recorded may
 * start, other than a followed slice's pieces (see the notes). */
static uint64_t stream_frontier(const struct trace *t, uint64_t now)
{
	uint64_t h = now;
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		const struct trace_cpu *c = &t->cpus[cpu];
		if (c->kind == BASE_SWITCH && !t->stream->cpus[cpu].switch_passed)
			h = min64(h, c->since);
		if (c->in_irq)
			h = min64(h, c->irq_start);
		if (c->late_flush)
			h = min64(h, c->late_flush_at);
		if (c->call_pending)
			h = min64(h, c->call_start);
	}
	return h;
}


/* After a passed switch the next task's work (or idle) starts at its end:
 * followed from there, as trace.c's open_task() will open it. */
static void preopen(struct trace *t, unsigned cpu)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	const struct trace_cpu *c = &t->cpus[cpu];
	g_assert(!sc->open);
	sc->open = true;
	sc->preopened = true;
	sc->slice = (struct followed){
		.cur = c->switch_end, .cell = writer_cell_new(t->writer), .item = NO_ITEM,
		.name = c->task < 0 ? t->idle : t->task_names[c->task],
		.args = {.kind = ARGS_NONE}, .category = CAT_SCHED,
	};
}

/*
 * A switch that has ended (now past its end, no handler running) ends
 * there, whenever the CPU's next hook records it: a CPU idle after it may
 * have none for long, and would hold the frontier back.  Without a budget
 * it is passed on now, its seq (and its mm part's) set when it is recorded.
 * With one it waits: when the budget runs out on its mm part, trace.c's
 * close_all() records the switch a second time, and that copy needs the
 * file not yet written past it (memory is bounded by the budget then).
 */
static void pass_switch(struct trace *t, unsigned cpu, uint64_t now)
{
	struct stream_cpu *sc = &t->stream->cpus[cpu];
	const struct trace_cpu *c = &t->cpus[cpu];
	if (t->options.max_events || c->kind != BASE_SWITCH || sc->switch_passed ||
	    c->switch_end == UINT64_MAX || c->in_irq || now < c->switch_end ||
	    c->switch_end <= c->since)
		return;
	sc->switch_passed = true;
	for (unsigned i = 0; i < 2; i++)
		sc->switch_cells[i] = writer_cell_new(t->writer);
	preopen(t, cpu);
	/* As trace.c's base_end() will record them. */
	struct record r = {
		.ts = c->since, .dur = c->switch_end - c->since, .args = c->args, .name = c->name,
		.seq = NO_SEQ, .cpu = (uint16_t)cpu, .ph = 'X', .depth = DEPTH_BASE,
		.category = (uint8_t)c->category, .part = PART_SWITCH,
	};
	cut_and_pass(t, &r, sc->switch_cells[0]);
	if (!c->switch_mm)
		return;
	uint64_t mm_end = c->since + c->switch_mm < c->switch_end ? c->since + c->switch_mm
								    : c->switch_end;
	r.dur = mm_end - c->since;
	r.name = t->switch_mm;
	r.args = (struct args){.kind = ARGS_NONE};
	r.depth = DEPTH_CHILD;
	r.category = CAT_SCHED;
	r.part = PART_SWITCH_MM;
	cut_and_pass(t, &r, sc->switch_cells[1]); /* not empty: the switch is not */
}


/* Pass on what is final at @now (UINT64_MAX: everything), and let the
 * writer write up to the frontier. */
static void stream_pass(struct trace *t, uint64_t now)
{
	struct stream *s = t->stream;
	bool all = now == UINT64_MAX;
	for (unsigned cpu = 0; cpu < t->nr_cpus && !all; cpu++)
		pass_switch(t, cpu, now);
	uint64_t frontier = all ? UINT64_MAX : stream_frontier(t, now);
	uint64_t waiting_from = UINT64_MAX;
	unsigned n = 0;
	for (unsigned i = 0; i < s->waiting->len; i++) {
		const struct record *r = &g_array_index(s->waiting, struct record, i);
		uint64_t until = cuttable(r) ? known_until(t, r->cpu, now) : now;
		if (all || r->ts + r->dur <= until) {
			pass_record(t, r);
			continue;
		}
		waiting_from = min64(waiting_from, r->ts);
		if (n != i)
			g_array_index(s->waiting, struct record, n) = *r;
		n++;
	}
	g_array_set_size(s->waiting, n);
	frontier = min64(frontier, waiting_from);
	for (unsigned cpu = 0; cpu < t->nr_cpus && !all; cpu++) {
		struct stream_cpu *sc = &s->cpus[cpu];
		uint64_t until = known_until(t, cpu, now);
		if (sc->open)
			piece_show(t, cpu, &sc->slice, until);
		end_closed(t, cpu, until);
		for (unsigned i = 0; i < sc->closing->len; i++) {
			struct followed *f = &g_array_index(sc->closing, struct followed, i);
			piece_show(t, cpu, f, min64(until, f->at));
		}
		/* Handlers that end by the frontier cut nothing still to come. */
		const struct span *spans = &g_array_index(sc->spans, struct span, 0);
		while (sc->first_span < sc->spans->len && spans[sc->first_span].end <= frontier)
			sc->first_span++;
		if (sc->first_span > 64 && sc->first_span * 2 > sc->spans->len) {
			g_array_remove_range(sc->spans, 0, sc->first_span);
			sc->first_span = 0;
		}
	}
	s->last_pass = t->nr_recorded;
	/* An acknowledgement begins a nanosecond before its time. */
	uint64_t ns = all ? UINT64_MAX : trace_cycles_to_ns(t, frontier);
	writer_advance(t->writer, all ? UINT64_MAX : ns ? ns - 1 : 0);
}

void stream_poll(struct trace *t)
{
	if (t->nr_recorded - t->stream->last_pass >= POLL_RECORDS)
		stream_pass(t, engine_now(t->m->engine));
}

bool stream_finish(struct trace *t, GError **error)
{
	struct stream *s = t->stream;
	if (t->cut)
		writer_set_cut(t->writer, trace_cycles_to_ns(t, t->cut_at));
	/* Every base slice ended (trace.c's close_all()); one that ended where
	 * it began is still followed, with no piece. */
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct stream_cpu *sc = &s->cpus[cpu];
		end_closed(t, cpu, UINT64_MAX);
		if (sc->open)
			followed_release(t, &sc->slice);
		sc->open = false;
	}
	stream_pass(t, UINT64_MAX);
	return writer_finish(t->writer, error);
}
