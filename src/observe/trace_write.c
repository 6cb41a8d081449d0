/*
 * Writing the timeline (see trace.c's notes): events come from
 * trace_stream.c in nanoseconds, in nearly the file's order, and are written
 * as lines, a slice as a begin and an end, while the run goes on.
 *
 * Models: the file is sorted by line: time; at one time, every end of a
 * slice with a length first, the slice that sorts last first, then begins,
 * instants and counters in event order, a zero-length slice ending right
 * after it begins.  Event order: start, longer first, depth, then recording
 * order: a record's seq, a later piece of a record cut by handlers after
 * every first piece and then by (seq, piece).  (The same order as sorting
 * all events at the end, which is what the file was before it was streamed.)
 * Simplifies: nothing; the bytes are those of that sort.
 *
 * Notes:
 * - Lines wait in a heap and are written in order up to the frontier (no
 *   event still to come begins before it), one timestamp at a time, once
 *   its order is known.  It may not be yet: a base slice still running
 *   (open: at least @lo long) sorts before a shorter event at its start but
 *   not yet against a longer one (the timestamp waits until it is longer);
 *   a flow's fields need to know whether both of its ends will be in the
 *   file (the timestamp waits for its other ends, microseconds later); and
 *   two running base slices that begin at the same nanosecond, or two
 *   pieces of running base slices that tie, sort by lengths and seqs that
 *   come when the slices end (maybe at the end of the run).  Those lines are
 *   a bundle: their bytes are known, only their order is not, so the space
 *   is reserved and they are written into it when it is (bundle_resolve()).
 *   Hence @out must be seekable (else a temporary file is copied to it).
 * - The heap's order may change while a line waits in it: a base slice's seq
 *   is set when it closes.  That changes the order only among lines whose
 *   events tie in everything before the seq (struct item's coarse key), so
 *   the heap stays a heap for the coarse key and the lines of one timestamp
 *   are sorted again when they leave it (write_run()).
 * - The budget (--trace-max-events N): the file ends before the first
 *   timestamp at which more than N events would have begun (or where the
 *   recording stopped, if earlier); the slices still open end there, and an
 *   instant says so.  Only the number of events up to a timestamp matters,
 *   not their order, so the cut is found while writing.
 * - Memory: the events between the frontier and the engine's clock, 120
 *   bytes each (an 88-byte struct item and its two 16-byte lines); per CPU
 *   at most one open event and one running; per IPI in flight its flow (40
 *   bytes and a hash-table entry); and the bundles: one per group of base
 *   slices that begin in the same nanosecond and still run (at most one
 *   slice per CPU in each).  Items and cells are reused, not freed: their
 *   arrays keep the size of the most ever in flight.
 */
#define _POSIX_C_SOURCE 200809L /* fseeko(), ftello() */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tlbsim/machine/machine.h"
#include "tlbsim/util/error.h"
#include "trace_impl.h"

static const char *const category_names[] = {"sched", "irq", "syscall", "ipi", "tlb", "counter",
					     "trace"};

/* An event of the file (struct item_init). */
struct item {
	uint64_t ts, dur, lo;
	uint64_t flow;
	struct args args;
	uint32_t name, major, minor, cell;
	uint16_t cpu;
	char ph;
	uint8_t depth, later, flow_dir, category;
	uint16_t refs; /* lines waiting, bundles, the stream's hold on an open one */
	bool begun;    /* its begin is in the file (or in a bundle) */
};

/* A slice's seq, shared by its pieces until it closes. */
struct cell {
	uint32_t seq; /* NO_SEQ until the slice closes */
	uint32_t refs;
};

enum line_kind {
	LINE_BEGIN, /* a slice's begin, an instant, a counter */
	LINE_END,   /* the end of a slice with a length */
	LINE_ENDZ,  /* the end of a zero-length slice, right after its begin */
};

struct line {
	uint64_t ts;
	uint32_t item;
	uint8_t kind;
};

/* An IPI's flow: which of its three ends were seen, and when those kept in
 * the window begin. */
struct flow {
	uint64_t id;
	uint8_t seen, kept, written;
	uint64_t ts[3];
};

/* Lines written in an order found later: their space in the file. */
struct bundle {
	uint64_t offset;
	size_t length;
	GArray *lines; /* struct line */
};

struct writer {
	struct trace *t;
	FILE *out;       /* where the lines go */
	FILE *copy_to;   /* NULL, or the unseekable stream @out is copied to */
	uint64_t base;   /* @out's position when the trace began */
	uint64_t pos;    /* bytes written since */
	int seek_errno;  /* the first failed seek while writing a bundle */
	GArray *items;   /* struct item, by id */
	GArray *free_items;
	GArray *cells;   /* struct cell */
	GArray *free_cells;
	GArray *heap;    /* struct line: lines with a known place */
	GArray *open;    /* struct line: begins of open events (length unknown) */
	GArray *running; /* ids of open events already begun */
	GHashTable *flows; /* id -> struct flow */
	GPtrArray *bundles;
	uint64_t frontier;
	uint64_t written;    /* events begun in the file */
	uint64_t pending;    /* begins waiting (heap and open) */
	uint64_t max;        /* the budget, 0: none */
	uint64_t cut_at;     /* ns: where the recording stopped; UINT64_MAX: it did not */
	uint64_t budget_cut; /* ns: where the budget cuts, once known */
	uint64_t budget_none_below; /* the budget cuts nowhere before this frontier */
	bool budget_checked, budget_known, truncated, done, finishing;
	GString *text;
	GArray *batch, *begins; /* one timestamp's lines (scratch) */
};

static struct item *item_at(const struct writer *w, uint32_t id)
{
	return &g_array_index(w->items, struct item, id);
}

static uint32_t major_of(const struct writer *w, const struct item *it)
{
	return it->cell == NO_CELL ? it->major : g_array_index(w->cells, struct cell, it->cell).seq;
}

/* ---- order ---------------------------------------------------------------------- */

/* Everything of the event order but the seq and piece: what cannot change
 * while an event waits.  Both lengths known. */
static bool coarse_equal(const struct item *x, const struct item *y)
{
	return x->ts == y->ts && x->dur == y->dur && x->depth == y->depth && x->later == y->later;
}

/* Event order; a base slice not closed yet (NO_SEQ) sorts after every seq
 * given, two of them by id for now.  Both lengths known. */
static int event_cmp(const struct writer *w, uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	const struct item *x = item_at(w, a), *y = item_at(w, b);
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->later != y->later)
		return x->later < y->later ? -1 : 1;
	uint32_t mx = major_of(w, x), my = major_of(w, y);
	if (mx != my)
		return mx < my ? -1 : 1;
	if (x->minor != y->minor)
		return x->minor < y->minor ? -1 : 1;
	return a < b ? -1 : 1;
}

static unsigned phase_of(const struct line *l)
{
	return l->kind == LINE_END ? 0 : 1;
}

/* File order (see the models). */
static int line_cmp(const struct writer *w, const struct line *a, const struct line *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	unsigned pa = phase_of(a), pb = phase_of(b);
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (pa == 0)
		return event_cmp(w, b->item, a->item);
	int c = event_cmp(w, a->item, b->item);
	return c ? c : (a->kind > b->kind) - (a->kind < b->kind);
}

static int open_cmp(const struct writer *w, const struct line *a, const struct line *b)
{
	(void)w;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return (a->item > b->item) - (a->item < b->item);
}

typedef int (*line_order)(const struct writer *w, const struct line *a, const struct line *b);

static void heap_up(const struct writer *w, GArray *h, line_order cmp, unsigned i)
{
	struct line *a = &g_array_index(h, struct line, 0);
	struct line l = a[i];
	while (i > 0) {
		unsigned parent = (i - 1) / 2;
		if (cmp(w, &a[parent], &l) <= 0)
			break;
		a[i] = a[parent];
		i = parent;
	}
	a[i] = l;
}

static void heap_down(const struct writer *w, GArray *h, line_order cmp, unsigned i)
{
	struct line *a = &g_array_index(h, struct line, 0);
	unsigned n = h->len;
	struct line l = a[i];
	for (;;) {
		unsigned child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && cmp(w, &a[child + 1], &a[child]) < 0)
			child++;
		if (cmp(w, &l, &a[child]) <= 0)
			break;
		a[i] = a[child];
		i = child;
	}
	a[i] = l;
}

static void heap_push(const struct writer *w, GArray *h, line_order cmp, struct line l)
{
	g_array_append_val(h, l);
	heap_up(w, h, cmp, h->len - 1);
}

static void heap_remove(const struct writer *w, GArray *h, line_order cmp, unsigned i)
{
	unsigned last = h->len - 1;
	if (i != last) {
		g_array_index(h, struct line, i) = g_array_index(h, struct line, last);
		g_array_set_size(h, last);
		heap_down(w, h, cmp, i);
		heap_up(w, h, cmp, i);
	} else {
		g_array_set_size(h, last);
	}
}

static struct line heap_pop(const struct writer *w, GArray *h, line_order cmp)
{
	struct line top = g_array_index(h, struct line, 0);
	heap_remove(w, h, cmp, 0);
	return top;
}

/* ---- items and cells ---------------------------------------------------------------- */

void writer_cell_release(struct writer *w, uint32_t cell)
{
	struct cell *c = &g_array_index(w->cells, struct cell, cell);
	g_assert(c->refs > 0);
	if (--c->refs == 0)
		g_array_append_val(w->free_cells, cell);
}

/* A slot of @slots: the last one @free holds, else a new one at the end. */
static uint32_t slot_new(GArray *slots, GArray *free)
{
	if (free->len) {
		uint32_t slot = g_array_index(free, uint32_t, free->len - 1);
		g_array_set_size(free, free->len - 1);
		return slot;
	}
	g_array_set_size(slots, slots->len + 1);
	return slots->len - 1;
}

uint32_t writer_cell_new(struct writer *w)
{
	uint32_t cell = slot_new(w->cells, w->free_cells);
	g_array_index(w->cells, struct cell, cell) = (struct cell){.seq = NO_SEQ, .refs = 1};
	return cell;
}

void writer_cell_set(struct writer *w, uint32_t cell, uint32_t seq)
{
	g_array_index(w->cells, struct cell, cell).seq = seq;
}

static void item_release(struct writer *w, uint32_t id)
{
	struct item *it = item_at(w, id);
	g_assert(it->refs > 0);
	if (--it->refs)
		return;
	if (it->cell != NO_CELL)
		writer_cell_release(w, it->cell);
	g_array_append_val(w->free_items, id);
}

/* Queue a known event's lines. */
static void queue_lines(struct writer *w, uint32_t id)
{
	struct item *it = item_at(w, id);
	heap_push(w, w->heap, line_cmp,
		  (struct line){.ts = it->ts, .item = id, .kind = LINE_BEGIN});
	it->refs++;
	w->pending++;
	if (it->ph != 'X')
		return;
	heap_push(w, w->heap, line_cmp,
		  (struct line){.ts = it->ts + it->dur, .item = id,
				.kind = it->dur ? LINE_END : LINE_ENDZ});
	it->refs++;
}

uint32_t writer_item_new(struct writer *w, const struct item_init *init)
{
	if (w->done)
		return NO_ITEM;
	/* The frontier promised that nothing begins before it any more. */
	g_assert(init->ts >= w->frontier);
	uint32_t id = slot_new(w->items, w->free_items);
	*item_at(w, id) = (struct item){
		.ts = init->ts, .dur = init->dur, .lo = init->lo, .flow = init->flow,
		.args = init->args, .name = init->name, .major = init->major,
		.minor = init->minor, .cell = init->cell, .cpu = init->cpu, .ph = init->ph,
		.depth = init->depth, .later = init->later, .flow_dir = init->flow_dir,
		.category = init->category,
	};
	if (init->cell != NO_CELL)
		g_array_index(w->cells, struct cell, init->cell).refs++;
	if (init->dur != DUR_OPEN) {
		queue_lines(w, id);
		return id;
	}
	item_at(w, id)->refs = 2; /* the stream's, and its begin's */
	heap_push(w, w->open, open_cmp,
		  (struct line){.ts = init->ts, .item = id, .kind = LINE_BEGIN});
	w->pending++;
	return id;
}

void writer_item_lo(struct writer *w, uint32_t id, uint64_t lo)
{
	if (id != NO_ITEM)
		item_at(w, id)->lo = lo;
}

static void remove_id(GArray *ids, uint32_t id)
{
	for (unsigned i = 0; i < ids->len; i++)
		if (g_array_index(ids, uint32_t, i) == id) {
			g_array_remove_index_fast(ids, i);
			return;
		}
	g_assert_not_reached();
}

void writer_item_end(struct writer *w, uint32_t id, uint64_t dur)
{
	if (id == NO_ITEM)
		return;
	struct item *it = item_at(w, id);
	g_assert(it->dur == DUR_OPEN && dur >= it->lo);
	it->dur = dur;
	if (!w->done && it->begun) {
		/* It began at least a nanosecond before the frontier, and lasts
		 * until the clock. */
		g_assert(dur > 0);
		remove_id(w->running, id);
		heap_push(w, w->heap, line_cmp,
			  (struct line){.ts = it->ts + dur, .item = id, .kind = LINE_END});
		it->refs++;
	} else if (!w->done) {
		unsigned i = 0;
		while (i < w->open->len && g_array_index(w->open, struct line, i).item != id)
			i++;
		g_assert(i < w->open->len);
		heap_remove(w, w->open, open_cmp, i);
		w->pending--;
		it->refs--; /* its begin's, now queued again */
		queue_lines(w, id);
	}
	item_release(w, id); /* the stream's */
}

/* ---- writing lines ---------------------------------------------------------------- */

/* Microseconds with three decimals: ns / 1000, in integers. */
static void put_us(GString *s, uint64_t ns)
{
	g_string_append_printf(s, ",\"ts\":%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_head(const struct writer *w, GString *s, const struct item *it, char ph,
		     uint64_t ts)
{
	g_string_append_printf(
	    s, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%c\",\"pid\":1,\"tid\":%u",
	    (const char *)g_ptr_array_index(w->t->names, it->name), category_names[it->category],
	    ph, it->cpu == GLOBAL_TRACK ? 0u : it->cpu + 1u);
	put_us(s, ts);
}

static void put_args(const struct writer *w, GString *s, const struct args *a)
{
	switch ((enum args_kind)a->kind) {
	case ARGS_NONE:
		return;
	case ARGS_TO:
		g_string_append_printf(s, ",\"args\":{\"to\":%" PRIu64 "}", a->a);
		return;
	case ARGS_FROM:
		g_string_append_printf(s, ",\"args\":{\"from\":%" PRIu64 "}", a->a);
		return;
	case ARGS_TARGETS:
		g_string_append_printf(s, ",\"args\":{\"targets\":%" PRIu64 "}", a->a);
		return;
	case ARGS_PAGES:
		g_string_append_printf(s, ",\"args\":{\"pages\":%" PRId64 "}", (int64_t)a->a);
		return;
	case ARGS_COUNTER:
		g_string_append_printf(
		    s, ",\"args\":{\"entries\":%" PRIu64 ",\"page_walks\":%" PRIu64 "}", a->a,
		    a->b);
		return;
	case ARGS_SWITCH:
		g_string_append_printf(s, ",\"args\":{\"prev\":\"%s\",\"next\":\"%s\"}",
				       w->t->task_json[a->a], w->t->task_json[a->b]);
		return;
	case ARGS_RANGE:
		g_string_append_printf(s,
				       ",\"args\":{\"range\":\"0x%" PRIx64 "-0x%" PRIx64
				       "\",\"pages\":%" PRIu64 ",\"page_size\":\"%s\"}",
				       a->a, a->b, (a->b - a->a) >> page_size_shift(a->page_size),
				       page_size_name(a->page_size));
		return;
	case ARGS_ADDRESS:
		g_string_append_printf(s, ",\"args\":{\"address\":\"0x%" PRIx64 "\"}", a->a);
		return;
	case ARGS_MAX_EVENTS:
		g_string_append_printf(s, ",\"args\":{\"max_events\":%" PRIu64 "}", a->a);
		return;
	}
}

static unsigned flow_count(const struct writer *w, const struct flow *f);
static uint64_t budget_cut(struct writer *w);

/* One line's text. */
static void put_line(const struct writer *w, GString *s, const struct line *l)
{
	const struct item *it = item_at(w, l->item);
	if (l->kind != LINE_BEGIN) {
		put_head(w, s, it, 'E', l->ts);
		g_string_append_c(s, '}');
		return;
	}
	put_head(w, s, it, it->ph == 'X' ? 'B' : it->ph, l->ts);
	if (it->ph == 'i')
		g_string_append(s, it->cpu == GLOBAL_TRACK ? ",\"s\":\"g\"" : ",\"s\":\"t\"");
	if (it->flow_dir != FLOW_NONE) {
		const struct flow *f = g_hash_table_lookup(w->flows, &it->flow);
		if (flow_count(w, f) >= 2) {
			g_string_append_printf(s, ",\"bind_id\":%" PRIu64, it->flow);
			if (it->flow_dir & FLOW_IN)
				g_string_append(s, ",\"flow_in\":true");
			if (it->flow_dir & FLOW_OUT)
				g_string_append(s, ",\"flow_out\":true");
		}
	}
	put_args(w, s, &it->args);
	g_string_append_c(s, '}');
}

static void emit(struct writer *w, const char *text, size_t len)
{
	fwrite(text, 1, len, w->out);
	w->pos += len;
}

static void flow_line_written(struct writer *w, struct item *it);

/* Write a line; its event has begun, or ended, in the file. */
static void write_line(struct writer *w, const struct line *l)
{
	struct item *it = item_at(w, l->item);
	g_string_truncate(w->text, 0);
	put_line(w, w->text, l);
	emit(w, w->text->str, w->text->len);
	if (l->kind == LINE_BEGIN) {
		it->begun = true;
		w->written++;
		w->pending--;
		if (it->flow_dir != FLOW_NONE)
			flow_line_written(w, it);
	}
	item_release(w, l->item);
}

/* Reserve the space of lines whose order is not known yet. */
static void write_bundle(struct writer *w, const struct line *lines, unsigned n)
{
	struct bundle *b = g_new0(struct bundle, 1);
	b->lines = g_array_sized_new(FALSE, FALSE, sizeof(struct line), n);
	g_string_truncate(w->text, 0);
	for (unsigned i = 0; i < n; i++) {
		struct item *it = item_at(w, lines[i].item);
		put_line(w, w->text, &lines[i]);
		g_array_append_val(b->lines, lines[i]);
		if (lines[i].kind == LINE_BEGIN) {
			/* Base slices only: no flow. */
			it->begun = true;
			w->written++;
			w->pending--;
		}
	}
	b->offset = w->base + w->pos;
	b->length = w->text->len;
	memset(w->text->str, ' ', w->text->len);
	emit(w, w->text->str, w->text->len);
	g_ptr_array_add(w->bundles, b);
}

/* ---- bundles --------------------------------------------------------------------- */

static int bundle_cmp(gconstpointer a, gconstpointer b, gpointer w)
{
	return line_cmp(w, a, b);
}

/* Whether two events of a sorted run tie but for seqs not known yet. */
static bool undecided(const struct writer *w, uint32_t a, uint32_t b)
{
	const struct item *x = item_at(w, a), *y = item_at(w, b);
	return a != b && coarse_equal(x, y) && major_of(w, x) == NO_SEQ &&
	       major_of(w, y) == NO_SEQ;
}

static bool bundle_resolve(struct writer *w, struct bundle *b)
{
	for (unsigned i = 0; i < b->lines->len; i++)
		if (item_at(w, g_array_index(b->lines, struct line, i).item)->dur == DUR_OPEN)
			return false;
	g_array_sort_with_data(b->lines, bundle_cmp, w);
	const struct line *l = &g_array_index(b->lines, struct line, 0);
	for (unsigned i = 1; i < b->lines->len; i++)
		if (undecided(w, l[i - 1].item, l[i].item))
			return false;
	g_string_truncate(w->text, 0);
	for (unsigned i = 0; i < b->lines->len; i++)
		put_line(w, w->text, &l[i]);
	g_assert(w->text->len == b->length);
	fflush(w->out);
	if (fseeko(w->out, (off_t)b->offset, SEEK_SET) != 0 ||
	    fwrite(w->text->str, 1, b->length, w->out) != b->length ||
	    fseeko(w->out, (off_t)(w->base + w->pos), SEEK_SET) != 0) {
		if (!w->seek_errno)
			w->seek_errno = errno ? errno : EIO;
	}
	for (unsigned i = 0; i < b->lines->len; i++)
		item_release(w, l[i].item);
	return true;
}

static void bundle_free(struct bundle *b)
{
	g_array_free(b->lines, TRUE);
	g_free(b);
}

static void resolve_bundles(struct writer *w)
{
	for (unsigned i = 0; i < w->bundles->len;) {
		struct bundle *b = g_ptr_array_index(w->bundles, i);
		if (bundle_resolve(w, b)) {
			bundle_free(b);
			g_ptr_array_remove_index(w->bundles, i);
		} else {
			i++;
		}
	}
}

/* ---- flows and the budget ----------------------------------------------------------- */

void writer_flow_end(struct writer *w, uint64_t id, bool kept, uint64_t ts)
{
	if (w->done)
		return;
	struct flow *f = g_hash_table_lookup(w->flows, &id);
	if (!f) {
		f = g_new0(struct flow, 1);
		f->id = id;
		g_hash_table_insert(w->flows, &f->id, f);
	}
	g_assert(f->seen < 3);
	f->seen++;
	if (kept)
		f->ts[f->kept++] = ts;
	if (f->seen == 3 && f->written == f->kept)
		g_hash_table_remove(w->flows, &id);
}

static void flow_line_written(struct writer *w, struct item *it)
{
	struct flow *f = g_hash_table_lookup(w->flows, &it->flow);
	f->written++;
	if (f->seen == 3 && f->written == f->kept)
		g_hash_table_remove(w->flows, &it->flow);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Where the budget cuts, if that is known: before the frontier, and the
 * events that begin before it are more than it allows.  UINT64_MAX: not
 * before the frontier (or no budget).
 */
static uint64_t budget_cut(struct writer *w)
{
	if (!w->max)
		return UINT64_MAX;
	if (w->budget_known)
		return w->budget_cut;
	if (w->written + w->pending <= w->max ||
	    (w->budget_checked && w->budget_none_below == w->frontier))
		return UINT64_MAX;
	GArray *starts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	/* While a timestamp is written, its lines are out of the heap. */
	GArray *lists[] = {w->heap, w->open, w->batch, w->begins};
	for (unsigned k = 0; k < G_N_ELEMENTS(lists); k++)
		for (unsigned i = 0; i < lists[k]->len; i++) {
			const struct line *l = &g_array_index(lists[k], struct line, i);
			if (l->kind == LINE_BEGIN && l->ts < w->frontier)
				g_array_append_val(starts, l->ts);
		}
	if (w->written + starts->len > w->max) {
		g_array_sort(starts, compare_u64);
		w->budget_cut = g_array_index(starts, uint64_t, w->max - w->written);
		w->budget_known = true;
	} else {
		w->budget_checked = true;
		w->budget_none_below = w->frontier;
	}
	g_array_free(starts, TRUE);
	return w->budget_known ? w->budget_cut : UINT64_MAX;
}

/* Whether an event that begins at @ts is in the file: 1 yes, 0 no, -1 not
 * known yet. */
static int begins_in_file(struct writer *w, uint64_t ts)
{
	if (ts >= w->cut_at || ts >= budget_cut(w))
		return 0;
	return ts < w->frontier || w->finishing ? 1 : -1;
}

static bool flow_known(struct writer *w, const struct item *it)
{
	const struct flow *f = g_hash_table_lookup(w->flows, &it->flow);
	if (f->seen < 3 && !w->finishing)
		return false;
	for (unsigned i = 0; i < f->kept; i++)
		if (begins_in_file(w, f->ts[i]) < 0)
			return false;
	return true;
}

/* Its ends in the file: with fewer than two, a flow loses its fields. */
static unsigned flow_count(const struct writer *w, const struct flow *f)
{
	unsigned n = 0;
	for (unsigned i = 0; i < f->kept; i++)
		n += begins_in_file((struct writer *)w, f->ts[i]) == 1;
	return n;
}

/* ---- one timestamp ---------------------------------------------------------------- */

/* Whether open event @o sorts before known event @a (both begin together). */
static bool open_first(const struct writer *w, uint32_t o, uint32_t a)
{
	const struct item *x = item_at(w, o), *y = item_at(w, a);
	return x->lo > y->dur || (x->lo == y->dur && x->depth < y->depth);
}

/* Sort a run of lines whose events tie coarsely (write_step()), write it,
 * and bundle what cannot be ordered yet: the base slices not closed, which
 * sort after the others (before them, for ends). */
static void write_run(struct writer *w, struct line *l, unsigned n)
{
	if (n > 1)
		g_qsort_with_data(l, (gint)n, sizeof(*l), bundle_cmp, w);
	unsigned first = 0, end = n, unknown = 0;
	for (unsigned i = 0; i < n; i++)
		unknown += major_of(w, item_at(w, l[i].item)) == NO_SEQ &&
			   (i == 0 || l[i].item != l[i - 1].item);
	if (unknown < 2) {
		for (unsigned i = 0; i < n; i++)
			write_line(w, &l[i]);
		return;
	}
	bool ends = phase_of(&l[0]) == 0;
	if (ends) {
		while (end > 0 && major_of(w, item_at(w, l[end - 1].item)) != NO_SEQ)
			end--;
		write_bundle(w, l, end);
		for (unsigned i = end; i < n; i++)
			write_line(w, &l[i]);
	} else {
		while (first < n && major_of(w, item_at(w, l[first].item)) != NO_SEQ)
			write_line(w, &l[first++]);
		write_bundle(w, l + first, n - first);
	}
}

static bool same_run(const struct writer *w, const struct line *a, const struct line *b)
{
	return phase_of(a) == phase_of(b) &&
	       coarse_equal(item_at(w, a->item), item_at(w, b->item));
}

static void write_runs(struct writer *w, struct line *l, unsigned n)
{
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		while (j < n && same_run(w, &l[i], &l[j]))
			j++;
		write_run(w, l + i, j - i);
		i = j;
	}
}

static void cut(struct writer *w, uint64_t at);

static void put_back(struct writer *w)
{
	for (unsigned i = 0; i < w->batch->len; i++)
		heap_push(w, w->heap, line_cmp, g_array_index(w->batch, struct line, i));
	for (unsigned i = 0; i < w->begins->len; i++)
		heap_push(w, w->open, open_cmp, g_array_index(w->begins, struct line, i));
}

/* Whether the lines of timestamp @ts can be written now.  Where the budget
 * cuts is looked for here, before a line of them is written (budget_cut()
 * counts them as waiting). */
static bool timestamp_ready(struct writer *w)
{
	const struct line *l = &g_array_index(w->batch, struct line, 0);
	budget_cut(w);
	for (unsigned i = 0; i < w->batch->len; i++) {
		if (l[i].kind != LINE_BEGIN)
			continue;
		for (unsigned k = 0; k < w->begins->len; k++)
			if (!open_first(w, g_array_index(w->begins, struct line, k).item,
					l[i].item))
				return false;
		const struct item *it = item_at(w, l[i].item);
		if (it->flow_dir != FLOW_NONE && !flow_known(w, it))
			return false;
	}
	return true;
}

/* Write the lines of the next timestamp; false if there is none yet. */
static bool write_step(struct writer *w)
{
	uint64_t ts = UINT64_MAX;
	if (w->heap->len)
		ts = g_array_index(w->heap, struct line, 0).ts;
	if (w->open->len && g_array_index(w->open, struct line, 0).ts < ts)
		ts = g_array_index(w->open, struct line, 0).ts;
	if (ts == UINT64_MAX)
		return false;
	if (ts >= w->cut_at) {
		cut(w, w->cut_at);
		return false;
	}
	if (ts >= w->frontier)
		return false;
	g_array_set_size(w->batch, 0);
	g_array_set_size(w->begins, 0);
	while (w->heap->len && g_array_index(w->heap, struct line, 0).ts == ts) {
		struct line l = heap_pop(w, w->heap, line_cmp);
		g_array_append_val(w->batch, l);
	}
	while (w->open->len && g_array_index(w->open, struct line, 0).ts == ts) {
		struct line l = heap_pop(w, w->open, open_cmp);
		g_array_append_val(w->begins, l);
	}
	if (!timestamp_ready(w)) {
		put_back(w);
		return false;
	}
	uint64_t begins = w->begins->len;
	for (unsigned i = 0; i < w->batch->len; i++)
		begins += g_array_index(w->batch, struct line, i).kind == LINE_BEGIN;
	if (w->max && w->written + begins > w->max) {
		put_back(w);
		cut(w, ts);
		return false;
	}
	struct line *l = &g_array_index(w->batch, struct line, 0);
	unsigned ends = 0;
	while (ends < w->batch->len && l[ends].kind == LINE_END)
		ends++;
	write_runs(w, l, ends);
	/* Open events sort before the rest (timestamp_ready()); among
	 * themselves by lengths not known yet. */
	struct line *o = &g_array_index(w->begins, struct line, 0);
	if (w->begins->len == 1)
		write_line(w, o);
	else if (w->begins->len > 1)
		write_bundle(w, o, w->begins->len);
	for (unsigned i = 0; i < w->begins->len; i++)
		g_array_append_val(w->running, o[i].item);
	write_runs(w, l + ends, w->batch->len - ends);
	return true;
}

/* ---- the budget's cut -------------------------------------------------------------- */

static int end_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
	const struct writer *w = data;
	const struct item *x = item_at(w, *(const uint32_t *)a),
			  *y = item_at(w, *(const uint32_t *)b);
	if (x->ts != y->ts)
		return x->ts > y->ts ? -1 : 1;
	return 0;
}

/*
 * The file ends at @at: every slice begun ends there, in the order of ends
 * (the one that sorts last first; slices still running whose order is not
 * known yet in a bundle), then an instant says that the trace was cut.
 */
static void cut(struct writer *w, uint64_t at)
{
	GArray *ending = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	while (w->heap->len) {
		struct line l = heap_pop(w, w->heap, line_cmp);
		if (l.kind != LINE_BEGIN && item_at(w, l.item)->begun)
			g_array_append_val(ending, l.item); /* keeps the line's reference */
		else
			item_release(w, l.item);
	}
	while (w->open->len)
		item_release(w, heap_pop(w, w->open, open_cmp).item);
	for (unsigned i = 0; i < w->running->len; i++) {
		uint32_t id = g_array_index(w->running, uint32_t, i);
		item_at(w, id)->refs++;
		g_array_append_val(ending, id);
	}
	g_array_set_size(w->running, 0);
	g_array_sort_with_data(ending, end_cmp, w);
	GArray *group = g_array_new(FALSE, FALSE, sizeof(struct line));
	for (unsigned i = 0; i < ending->len;) {
		/* Events that begin together: sorted if their order is known. */
		unsigned j = i;
		bool known = true;
		g_array_set_size(group, 0);
		for (; j < ending->len && item_at(w, g_array_index(ending, uint32_t, j))->ts ==
					      item_at(w, g_array_index(ending, uint32_t, i))->ts;
		     j++) {
			struct line l = {.ts = at, .item = g_array_index(ending, uint32_t, j),
					 .kind = LINE_END};
			known &= item_at(w, l.item)->dur != DUR_OPEN;
			g_array_append_val(group, l);
		}
		struct line *l = &g_array_index(group, struct line, 0);
		if (known && group->len > 1) {
			g_qsort_with_data(l, (gint)group->len, sizeof(*l), bundle_cmp, w);
			for (unsigned k = 1; k < group->len; k++)
				known &= !undecided(w, l[k - 1].item, l[k].item);
		}
		if (known || group->len == 1)
			for (unsigned k = 0; k < group->len; k++)
				write_line(w, &l[k]);
		else
			write_bundle(w, l, group->len);
		i = j;
	}
	g_array_free(group, TRUE);
	g_array_free(ending, TRUE);
	const struct item marker = {
		.ts = at, .name = w->t->cut_name, .cpu = GLOBAL_TRACK, .ph = 'i',
		.depth = DEPTH_POINT, .category = CAT_TRACE,
		.args = {.kind = ARGS_MAX_EVENTS, .a = w->max},
	};
	g_string_truncate(w->text, 0);
	put_head(w, w->text, &marker, 'i', at);
	g_string_append(w->text, ",\"s\":\"g\"");
	put_args(w, w->text, &marker.args);
	g_string_append_c(w->text, '}');
	emit(w, w->text->str, w->text->len);
	w->written++;
	w->truncated = true;
	w->done = true;
	w->pending = 0;
	g_hash_table_remove_all(w->flows);
}

/* ---- the file ------------------------------------------------------------------------ */

static void write_metadata(struct writer *w)
{
	const struct trace *t = w->t;
	GString *s = w->text;
	char *process = trace_json_escape(t->meta);
	g_string_printf(s, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
			   "\"tid\":0,\"args\":{\"name\":\"%s\"}}", process);
	g_free(process);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		const struct cpu *mc = &t->m->cpus[cpu];
		g_string_append_printf(s, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
					  "\"tid\":%u,\"args\":{\"name\":\"cpu %u (socket %u core "
					  "%u thread %u)\"}}",
				       cpu + 1, cpu, mc->socket, mc->core, mc->thread);
		g_string_append_printf(s,
				       ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,"
				       "\"tid\":%u,\"args\":{\"sort_index\":%u}}",
				       cpu + 1, cpu);
	}
	emit(w, s->str, s->len);
}

struct writer *writer_new(struct trace *t, FILE *out)
{
	struct writer *w = g_new0(struct writer, 1);
	w->t = t;
	w->out = out;
	off_t at = ftello(out);
	if (at < 0 || fseeko(out, at, SEEK_SET) != 0) {
		/* Bundles are written into their space later: that needs seeks. */
		w->copy_to = out;
		w->out = tmpfile();
		at = 0;
	}
	w->base = w->out ? (uint64_t)at : 0;
	w->items = g_array_new(FALSE, FALSE, sizeof(struct item));
	w->free_items = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	w->cells = g_array_new(FALSE, FALSE, sizeof(struct cell));
	w->free_cells = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	w->heap = g_array_new(FALSE, FALSE, sizeof(struct line));
	w->open = g_array_new(FALSE, FALSE, sizeof(struct line));
	w->running = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	w->flows = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
	w->bundles = g_ptr_array_new();
	w->batch = g_array_new(FALSE, FALSE, sizeof(struct line));
	w->begins = g_array_new(FALSE, FALSE, sizeof(struct line));
	w->text = g_string_sized_new(256);
	w->max = t->options.max_events;
	w->cut_at = UINT64_MAX;
	if (w->out)
		write_metadata(w);
	return w;
}

void writer_free(struct writer *w)
{
	if (!w)
		return;
	if (w->copy_to && w->out)
		fclose(w->out);
	g_array_free(w->items, TRUE);
	g_array_free(w->free_items, TRUE);
	g_array_free(w->cells, TRUE);
	g_array_free(w->free_cells, TRUE);
	g_array_free(w->heap, TRUE);
	g_array_free(w->open, TRUE);
	g_array_free(w->running, TRUE);
	g_hash_table_destroy(w->flows);
	g_ptr_array_set_free_func(w->bundles, (GDestroyNotify)bundle_free);
	g_ptr_array_free(w->bundles, TRUE);
	g_array_free(w->batch, TRUE);
	g_array_free(w->begins, TRUE);
	g_string_free(w->text, TRUE);
	g_free(w);
}

void writer_advance(struct writer *w, uint64_t frontier)
{
	if (!w->out)
		return;
	if (frontier > w->frontier)
		w->frontier = frontier;
	while (!w->done && write_step(w))
		;
	if (w->bundles->len)
		resolve_bundles(w);
}

void writer_set_cut(struct writer *w, uint64_t at)
{
	w->cut_at = at;
}

uint64_t writer_nr_events(const struct writer *w)
{
	return w->written;
}

bool writer_truncated(const struct writer *w)
{
	return w->truncated;
}

/* The temporary file's bytes to the stream it stands for. */
static bool copy_out(struct writer *w)
{
	char buf[65536];
	if (fflush(w->out) != 0 || fseeko(w->out, 0, SEEK_SET) != 0)
		return false;
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), w->out)) > 0)
		if (fwrite(buf, 1, n, w->copy_to) != n)
			return false;
	return !ferror(w->out);
}

bool writer_finish(struct writer *w, GError **error)
{
	const struct trace *t = w->t;
	if (!w->out) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "cannot write the trace: no temporary file: %s", g_strerror(errno));
		return false;
	}
	w->finishing = true;
	writer_advance(w, UINT64_MAX);
	if (!w->done && w->cut_at != UINT64_MAX)
		cut(w, w->cut_at);
	g_assert(w->done || (w->heap->len == 0 && w->open->len == 0 && w->running->len == 0));
	g_assert(w->bundles->len == 0);
	g_string_printf(w->text,
			"\n],\n\"displayTimeUnit\":\"ns\",\n"
			"\"otherData\":{%s,\"events\":%" PRIu64 ",\"truncated\":%s,"
			"\"max_events\":%" PRIu64 ",\"window_start_ns\":%" PRIu64,
			t->other_data, w->written, w->truncated ? "true" : "false",
			t->options.max_events, t->options.window_start_ns);
	if (t->options.window_end_ns != UINT64_MAX)
		g_string_append_printf(w->text, ",\"window_end_ns\":%" PRIu64,
				       t->options.window_end_ns);
	g_string_append(w->text, "}}\n");
	emit(w, w->text->str, w->text->len);
	bool ok = !w->seek_errno && fflush(w->out) == 0 && !ferror(w->out);
	int err = w->seek_errno ? w->seek_errno : errno;
	if (ok && w->copy_to) {
		ok = copy_out(w) && fflush(w->copy_to) == 0 && !ferror(w->copy_to);
		err = errno;
	}
	if (!ok) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write the trace: %s",
			    g_strerror(err));
		return false;
	}
	return true;
}

/*
 * A JSON string body: quotes and backslashes escaped, control characters
 * replaced by '?' (Perfetto's JSON reader rejects \u escapes).
 */
char *trace_json_escape(const char *s)
{
	GString *out = g_string_new(NULL);
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\')
			g_string_append_c(out, '\\');
		g_string_append_c(out, ch < 0x20 ? '?' : (char)ch);
	}
	return g_string_free(out, FALSE);
}
