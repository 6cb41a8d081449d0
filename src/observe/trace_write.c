/*
 * Writing the timeline trace.c recorded: handlers cut the slices around them,
 * records are clipped to the window and the budget, converted to integer
 * nanoseconds, sorted and written as B/E pairs (see trace.c's notes).
 */
#include <errno.h>
#include <inttypes.h>
#include "tlbsim/machine/machine.h"
#include "tlbsim/util/error.h"
#include "trace_impl.h"

__extension__ typedef unsigned __int128 u128;

static const char *const category_names[] = {"sched", "irq", "syscall", "ipi", "tlb", "counter",
					     "trace"};

static uint64_t cycles_to_ns(const struct trace *t, uint64_t cycles)
{
	return (uint64_t)((u128)cycles * 1000 / t->mhz);
}

struct span {
	uint64_t start, end;
};

static int compare_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* Each CPU's handler intervals, sorted (they never overlap on one CPU). */
static GArray **handler_spans(const struct trace *t)
{
	GArray **spans = g_new(GArray *, t->nr_cpus);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++)
		spans[cpu] = g_array_new(FALSE, FALSE, sizeof(struct span));
	for (unsigned i = 0; i < t->records->len; i++) {
		const struct record *r = &g_array_index(t->records, struct record, i);
		if (r->irq == IRQ_HANDLER) {
			struct span s = {r->ts, r->ts + r->dur};
			g_array_append_val(spans[r->cpu], s);
		}
	}
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++)
		g_array_sort(spans[cpu], compare_span);
	return spans;
}

/*
 * Cut slice @i around the handlers of its CPU.  The first piece stays in
 * place, the others are appended; a flow stays on the last piece (an IPI
 * leaves at the end of its send).  A slice fully covered gets dur 0 and is
 * dropped later, unless it carries a flow (see below).
 */
static void cut_around(struct trace *t, unsigned i, const GArray *spans, GArray *pieces)
{
	struct record r = g_array_index(t->records, struct record, i);
	uint64_t cur = r.ts, end = r.ts + r.dur;
	g_array_set_size(pieces, 0);
	for (unsigned s = 0; s < spans->len && cur < end; s++) {
		const struct span *h = &g_array_index(spans, struct span, s);
		if (h->end <= cur)
			continue;
		if (h->start >= end)
			break;
		if (h->start > cur) {
			struct span p = {cur, h->start};
			g_array_append_val(pieces, p);
		}
		cur = h->end > cur ? h->end : cur;
	}
	if (cur < end) {
		struct span p = {cur, end};
		g_array_append_val(pieces, p);
	}
	struct record *first = &g_array_index(t->records, struct record, i);
	if (pieces->len == 1 && g_array_index(pieces, struct span, 0).start == r.ts &&
	    g_array_index(pieces, struct span, 0).end == end)
		return; /* untouched */
	if (pieces->len == 0) {
		/* Covered whole.  An IPI's send keeps its flow as a point at the
		 * handler's end; anything else goes. */
		first->ts = cur;
		first->dur = 0;
		first->shape = r.flow_dir != FLOW_NONE ? SHAPE_POINT : SHAPE_SPAN;
		return;
	}
	for (unsigned p = 0; p < pieces->len; p++) {
		const struct span *piece = &g_array_index(pieces, struct span, p);
		struct record copy = r;
		copy.ts = piece->start;
		copy.dur = piece->end - piece->start;
		if (p + 1 < pieces->len)
			copy.flow_dir = FLOW_NONE;
		if (p == 0) {
			*first = copy;
		} else {
			copy.seq = t->records->len;
			g_array_append_val(t->records, copy);
			first = &g_array_index(t->records, struct record, i);
		}
	}
}

static void cut_around_handlers(struct trace *t)
{
	GArray **spans = handler_spans(t);
	GArray *pieces = g_array_new(FALSE, FALSE, sizeof(struct span));
	unsigned n = t->records->len;
	for (unsigned i = 0; i < n; i++) {
		const struct record *r = &g_array_index(t->records, struct record, i);
		if (r->ph == 'X' && r->irq == IRQ_OUTSIDE && r->dur > 0 && r->cpu != GLOBAL_TRACK &&
		    spans[r->cpu]->len)
			cut_around(t, i, spans[r->cpu], pieces);
	}
	g_array_free(pieces, TRUE);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++)
		g_array_free(spans[cpu], TRUE);
	g_free(spans);
}

/* Clip to [from, to]; false if nothing of the record is left. */
static bool clip(struct record *r, uint64_t from, uint64_t to)
{
	uint64_t start = r->ts, end = r->ts + r->dur;
	if (r->ph != 'X' || r->shape != SHAPE_SPAN)
		return start >= from && start <= to;
	if (r->dur == 0)
		return false; /* covered by a handler */
	start = start > from ? start : from;
	end = end < to ? end : to;
	if (start >= end)
		return false;
	r->ts = start;
	r->dur = end - start;
	return true;
}

/* From cycles to the file's nanoseconds: sorting and nesting happen there. */
static void to_ns(const struct trace *t, struct record *r)
{
	uint64_t start = cycles_to_ns(t, r->ts), end = cycles_to_ns(t, r->ts + r->dur);
	if (r->shape == SHAPE_TAIL) {
		end = start;
		start = start ? start - 1 : 0;
	}
	r->ts = start;
	r->dur = end - start;
}

static int compare_record(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Events are written one per line, separated by commas. */
struct writer {
	FILE *out;
	bool first;
};

static void begin_event(struct writer *w)
{
	fputs(w->first ? "\n" : ",\n", w->out);
	w->first = false;
}

/*
 * At most max_events events: cut at the first one past the budget (slices
 * around the cut end there; records were split around handlers since the
 * recording stopped), and mark the cut with a global instant.
 */
static void trim_to_budget(struct trace *t, GArray *kept)
{
	uint64_t cut = t->cut ? cycles_to_ns(t, t->cut_at) : UINT64_MAX;
	uint64_t max = t->options.max_events;
	if (max && kept->len > max) {
		uint64_t at = g_array_index(kept, struct record, max).ts;
		cut = at < cut ? at : cut;
	}
	if (cut == UINT64_MAX)
		return;
	t->cut = true;
	unsigned n = 0;
	for (unsigned i = 0; i < kept->len; i++) {
		struct record r = g_array_index(kept, struct record, i);
		if (r.ts >= cut)
			continue;
		if (r.ts + r.dur > cut)
			r.dur = cut - r.ts;
		g_array_index(kept, struct record, n++) = r;
	}
	g_array_set_size(kept, n);
	struct record marker = {
		.ts = cut, .name = t->cut_name, .seq = UINT32_MAX, .cpu = GLOBAL_TRACK, .ph = 'i',
		.depth = DEPTH_POINT, .category = CAT_TRACE,
		.args = trace_intern_printf(t, "{\"max_events\":%" PRIu64 "}", max),
	};
	g_array_append_val(kept, marker);
}

/* Microseconds with three decimals: ns / 1000, in integers. */
static void put_us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

/* The fields every event has; @ph 'B' or 'E' for a slice. */
static void write_head(const struct trace *t, const struct record *r, char ph, uint64_t ts,
		       struct writer *w)
{
	char *name = trace_json_escape(g_ptr_array_index(t->strings, r->name));
	begin_event(w);
	fprintf(w->out, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%c\",\"pid\":1,\"tid\":%u",
		name, category_names[r->category], ph, r->cpu == GLOBAL_TRACK ? 0u : r->cpu + 1u);
	g_free(name);
	put_us(w->out, "ts", ts);
}

static void write_end(const struct trace *t, const struct record *r, struct writer *w)
{
	write_head(t, r, 'E', r->ts + r->dur, w);
	fputc('}', w->out);
}

/* A slice's begin (its end comes separately), an instant or a counter. */
static void write_record(const struct trace *t, const struct record *r, GHashTable *flows,
			 struct writer *w)
{
	FILE *out = w->out;
	write_head(t, r, r->ph == 'X' ? 'B' : r->ph, r->ts, w);
	if (r->ph == 'i')
		fputs(r->cpu == GLOBAL_TRACK ? ",\"s\":\"g\"" : ",\"s\":\"t\"", out);
	if (r->flow_dir != FLOW_NONE &&
	    GPOINTER_TO_UINT(g_hash_table_lookup(flows, &r->flow)) >= 2) {
		fprintf(out, ",\"bind_id\":%" PRIu64, r->flow);
		if (r->flow_dir & FLOW_IN)
			fputs(",\"flow_in\":true", out);
		if (r->flow_dir & FLOW_OUT)
			fputs(",\"flow_out\":true", out);
	}
	if (r->args != NO_ARGS)
		fprintf(out, ",\"args\":%s", (const char *)g_ptr_array_index(t->strings, r->args));
	fputc('}', out);
}

/*
 * One event of the file: a slice's begin or end, an instant, a counter.
 * Slices are written as B/E pairs rather than X events: a viewer that adds
 * ts + dur in floating point (chrome://tracing, speedscope) would see a
 * child end a hair after its parent; a B/E pair repeats the same decimal.
 * Order: time; at one time, every end first, the latest opened first, then
 * begins, instants and counters in record order (outer slices first); a
 * zero-length slice ends right after it begins.
 */
struct line {
	uint64_t ts;
	unsigned phase;  /* 0: the end of a slice that has a length; 1: the rest */
	uint32_t order;  /* record rank, reversed for ends */
	unsigned sub;    /* 1: the end of a zero-length slice */
	uint32_t record;
};

static int compare_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->phase != y->phase)
		return x->phase < y->phase ? -1 : 1;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return (x->sub > y->sub) - (x->sub < y->sub);
}

static GArray *lines_of(const GArray *kept)
{
	GArray *lines = g_array_sized_new(FALSE, FALSE, sizeof(struct line), 2 * kept->len);
	for (uint32_t i = 0; i < kept->len; i++) {
		const struct record *r = &g_array_index(kept, struct record, i);
		struct line begin = {.ts = r->ts, .phase = 1, .order = i, .record = i};
		g_array_append_val(lines, begin);
		if (r->ph != 'X')
			continue;
		struct line end = {.ts = r->ts + r->dur, .phase = r->dur ? 0 : 1,
				   .order = r->dur ? UINT32_MAX - i : i, .sub = 1, .record = i};
		g_array_append_val(lines, end);
	}
	g_array_sort(lines, compare_line);
	return lines;
}

static void write_metadata(const struct trace *t, struct writer *w)
{
	char *process = trace_json_escape(t->meta);
	begin_event(w);
	fprintf(w->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
			"\"args\":{\"name\":\"%s\"}}", process);
	g_free(process);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		const struct cpu *mc = &t->m->cpus[cpu];
		begin_event(w);
		fprintf(w->out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
				"\"args\":{\"name\":\"cpu %u (socket %u core %u thread %u)\"}}",
			cpu + 1, cpu, mc->socket, mc->core, mc->thread);
		begin_event(w);
		fprintf(w->out, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,"
				"\"tid\":%u,\"args\":{\"sort_index\":%u}}", cpu + 1, cpu);
	}
}

bool trace_write(struct trace *t, uint64_t end, FILE *out, GError **error)
{
	g_assert(!t->written);
	t->written = true;
	if (!t->cut)
		trace_close_all(t, end > t->latest ? end : t->latest);
	cut_around_handlers(t);
	uint64_t to = t->cut && t->cut_at < t->window_end ? t->cut_at : t->window_end;
	GArray *kept = g_array_new(FALSE, FALSE, sizeof(struct record));
	GHashTable *flows = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (unsigned i = 0; i < t->records->len; i++) {
		struct record r = g_array_index(t->records, struct record, i);
		if (!clip(&r, t->window_start, to))
			continue;
		to_ns(t, &r);
		g_array_append_val(kept, r);
	}
	g_array_sort(kept, compare_record);
	trim_to_budget(t, kept);
	for (unsigned i = 0; i < kept->len; i++) {
		struct record *r = &g_array_index(kept, struct record, i);
		if (r->flow_dir == FLOW_NONE)
			continue;
		unsigned count = GPOINTER_TO_UINT(g_hash_table_lookup(flows, &r->flow));
		g_hash_table_insert(flows, &r->flow, GUINT_TO_POINTER(count + 1));
	}
	struct writer w = {.out = out, .first = true};
	fputs("{\"traceEvents\":[", out);
	write_metadata(t, &w);
	GArray *lines = lines_of(kept);
	for (unsigned i = 0; i < lines->len; i++) {
		const struct line *l = &g_array_index(lines, struct line, i);
		const struct record *r = &g_array_index(kept, struct record, l->record);
		if (l->sub)
			write_end(t, r, &w);
		else
			write_record(t, r, flows, &w);
	}
	g_array_free(lines, TRUE);
	/* After the events: Perfetto reads displayTimeUnit only as a display
	 * hint now, but older versions took "ns" as the unit of ts when it came
	 * first. */
	fprintf(out, "\n],\n\"displayTimeUnit\":\"ns\",\n"
		     "\"otherData\":{%s,\"events\":%u,\"truncated\":%s,\"max_events\":%" PRIu64
		     ",\"window_start_ns\":%" PRIu64,
		t->other_data, kept->len, t->cut ? "true" : "false", t->options.max_events,
		t->options.window_start_ns);
	if (t->options.window_end_ns != UINT64_MAX)
		fprintf(out, ",\"window_end_ns\":%" PRIu64, t->options.window_end_ns);
	fputs("}}\n", out);
	g_hash_table_destroy(flows);
	g_array_free(kept, TRUE);
	if (fflush(out) != 0 || ferror(out)) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write the trace: %s",
			    g_strerror(errno));
		return false;
	}
	return true;
}
