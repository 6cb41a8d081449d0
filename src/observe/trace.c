/*
 * Chrome Trace Event JSON from the kernel's tracepoints (see trace.h): the
 * recording stage; trace_stream.c and trace_write.c pass the records on to
 * the file while the run goes on.
 *
 * Models: per CPU one "base" activity at a time, closed and opened by the
 * hooks in time order: idle, a context switch, the current task's user work,
 * or a syscall or page fault.  Interrupt handlers are intervals of their own.
 * What the model computes ahead of the engine's clock (a syscall's local
 * flush, its cross-call with the IPIs sent and the acknowledgements seen, a
 * handler's requests) is recorded whole when it is computed.
 * Simplifies: a tracepoint fired inside a kernel step that has no time of its
 * own is stamped with the step's start (trace_cursor()); counters are sampled
 * at hooks, not at every change.
 *
 * Notes:
 * - The file's order: events in integer nanoseconds, sorted by time, then
 *   longer first, then outer first, then recording order (a record's seq,
 *   the order in which the probes recorded it; a later piece of a slice cut
 *   by a handler after every first piece): a parent precedes its children.
 *   Slices are written as B/E pairs (trace_write.c), so viewers that nest by
 *   file order or add in floating point (chrome://tracing, speedscope) and
 *   Perfetto, which sorts by time, build the same tree.  Nothing in the
 *   output depends on hash-table order.
 * - The trace is streamed: written while the run goes on, in bounded memory.
 *   A record is passed on once nothing recorded later can sort before it
 *   (trace_stream.c: the frontier), and written once nothing can come before
 *   its line (trace_write.c).  Memory holds what lies between the frontier
 *   and the engine's clock, a few microseconds of simulated time (a
 *   syscall's cross-call, a handler): ~120 bytes an event, plus per CPU its
 *   running base slice and per IPI in flight its flow (the stages' notes
 *   give the sizes; docs/timelines.md, "Memory", the whole bound).  The
 *   bytes are those of sorting everything at the end.
 * - Interrupts end and restart: every slice of a track that is not part of a
 *   handler is cut around that CPU's recorded handlers (the pieces keep name
 *   and arguments; a piece fully covered disappears).  All slices of a track
 *   are cut at the same points, so nesting survives.  User work needs no
 *   shifting (the model already pushed it back by the handler); kernel work
 *   the model computed ahead overlaps the handler in the model and loses that
 *   part here.
 * - Flows use the v2 binding (bind_id with flow_out/flow_in on the slices
 *   themselves), which Perfetto and the legacy viewer attach to that very
 *   slice, not to whatever encloses a timestamp: one id per IPI, out of its
 *   "send IPI" slice, through the handler's slice, into its "ack" slice.  An
 *   id left with one end after a window or a cut loses its flow fields.
 * - Invariant: the hooks of one CPU come with non-decreasing times (they run
 *   at engine events), so base slices of a CPU follow each other without
 *   overlap; children lie inside the syscall or handler that computed them,
 *   and nothing is recorded before the engine's clock but a CPU's open
 *   switch, handler, pending late flush or cross-call (stream_frontier()).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tlbsim/machine/machine.h"
#include "trace_impl.h"

/*
 * 10 µs: a CPU's TLB occupancy and page-walk count are sampled at most this
 * often while it runs user work (plus once after each flush it takes).  A
 * munmap16 access is ~20 ns, so a sample stands for ~500 walks at most, and
 * 51 ms × 8 CPUs make ~40 k samples instead of one per access.
 */
#define COUNTER_PERIOD_NS 10000

/* ---- names ------------------------------------------------------------------ */

/* Names come from a fixed set (tasks, syscalls, reasons, CPUs); each is kept
 * once, escaped for JSON.  Arguments are not interned (struct args). */
static uint32_t intern(struct trace *t, const char *s)
{
	gpointer found = g_hash_table_lookup(t->interned, s);
	if (found)
		return (uint32_t)(GPOINTER_TO_UINT(found) - 1);
	uint32_t index = t->names->len;
	g_ptr_array_add(t->names, trace_json_escape(s));
	g_hash_table_insert(t->interned, g_strdup(s), GUINT_TO_POINTER(index + 1));
	return index;
}

static uint32_t intern_printf(struct trace *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static uint32_t intern_printf(struct trace *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	uint32_t index = intern(t, s);
	g_free(s);
	return index;
}

/* ---- recording ------------------------------------------------------------ */

static void close_all(struct trace *t, uint64_t at);

struct slice {
	char ph;
	unsigned cpu;
	uint64_t ts, dur;
	uint32_t name;
	struct args args;
	enum depth depth;
	enum category category;
	uint64_t flow;
	enum flow_dir flow_dir;
	enum irq_part irq;
	enum shape shape;
	enum switch_part part;
};

static const struct args no_args = {.kind = ARGS_NONE};

static struct args args1(enum args_kind kind, uint64_t a)
{
	return (struct args){.kind = (uint8_t)kind, .a = a};
}

/* Whether a record is kept (ADMIT), or left out: by the window, because
 * the recording stopped before, or because it stops now (the budget). */
enum admit { ADMIT, DROP_WINDOW, DROP_CUT, CUT_NOW };

/* Append without the window and budget checks (closing, cutting). */
static void append(struct trace *t, const struct slice *s)
{
	struct record r = {
		.ts = s->ts,
		.dur = s->dur,
		.flow = s->flow,
		.args = s->args,
		.name = s->name,
		.seq = (uint32_t)t->nr_recorded++,
		.cpu = s->cpu == GLOBAL_TRACK ? GLOBAL_TRACK : (uint16_t)s->cpu,
		.ph = s->ph,
		.depth = (uint8_t)s->depth,
		.flow_dir = (uint8_t)s->flow_dir,
		.category = (uint8_t)s->category,
		.irq = (uint8_t)s->irq,
		.shape = (uint8_t)(s->shape != SHAPE_SPAN     ? s->shape
				   : s->ph == 'X' && s->dur == 0 ? SHAPE_POINT
								 : SHAPE_SPAN),
		.part = (uint8_t)s->part,
	};
	g_assert(r.seq < UINT32_MAX);
	stream_record(t, &r);
}

static enum admit admit(struct trace *t, const struct slice *s)
{
	if (t->cut)
		return DROP_CUT;
	if (s->ts > t->window_end || s->ts + s->dur < t->window_start) {
		if (s->flow_dir != FLOW_NONE)
			stream_flow_dropped(t, s->flow);
		return DROP_WINDOW;
	}
	/* Records are numbered with 32 bits: that many is the limit even with
	 * no budget. */
	uint64_t budget = t->options.max_events && t->options.max_events < UINT32_MAX - 1
				  ? t->options.max_events
				  : UINT32_MAX - 1;
	if (t->nr_recorded >= budget) {
		/* Stop recording at the engine's clock: everything before it is
		 * complete.  trace_write.c trims to the budget exactly. */
		uint64_t now = engine_now(t->m->engine);
		t->cut = true;
		t->cut_at = now;
		close_all(t, now);
		return CUT_NOW;
	}
	return ADMIT;
}

static enum admit record(struct trace *t, const struct slice *s)
{
	enum admit a = admit(t, s);
	if (a == ADMIT)
		append(t, s);
	return a;
}

static void slice_on(struct trace *t, unsigned cpu, uint64_t start, uint64_t end, uint32_t name,
		     struct args args, enum depth depth, enum category category)
{
	record(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = start, .dur = end - start,
				  .name = name, .args = args, .depth = depth,
				  .category = category});
}

static void seen(struct trace *t, uint64_t now)
{
	if (now > t->latest)
		t->latest = now;
}

/* ---- per-CPU state -------------------------------------------------------- */

/*
 * End the open base slice at @at; @raw: past the window and budget checks.
 * A switch is recorded like any other slice; the other base slices are
 * followed by the stream while they are open (stream_base_open()), which
 * here learns their end and place in recording order.
 */
static void base_end(struct trace *t, unsigned cpu, uint64_t at, bool raw)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (at <= c->since)
		return;
	struct slice s = {.ph = 'X', .cpu = cpu, .ts = c->since, .dur = at - c->since,
			  .name = c->name, .args = c->args, .depth = DEPTH_BASE,
			  .category = c->category};
	if (stream_follows(c->kind)) {
		enum admit a = raw ? ADMIT : admit(t, &s);
		if (a == DROP_CUT || a == CUT_NOW)
			return; /* close_all() ended it */
		uint32_t seq = a == ADMIT ? (uint32_t)t->nr_recorded++ : NO_SEQ;
		g_assert(a != ADMIT || seq < UINT32_MAX);
		stream_base_close(t, cpu, at, seq);
		return;
	}
	/* A switch cut short (a wakeup on a CPU going idle) cuts its mm part. */
	uint64_t mm_end = c->since + c->switch_mm < at ? c->since + c->switch_mm : at;
	struct slice mm = {.ph = 'X', .cpu = cpu, .ts = c->since, .dur = mm_end - c->since,
			   .name = t->switch_mm, .args = no_args, .depth = DEPTH_CHILD,
			   .category = CAT_SCHED, .part = PART_SWITCH_MM};
	s.part = PART_SWITCH;
	bool with_mm = c->kind == BASE_SWITCH && c->switch_mm;
	if (raw) {
		append(t, &s);
		if (with_mm)
			append(t, &mm);
	} else {
		record(t, &s);
		if (with_mm)
			record(t, &mm);
	}
}

static void base_close(struct trace *t, unsigned cpu, uint64_t at)
{
	base_end(t, cpu, at, false);
}

static void base_open(struct trace *t, unsigned cpu, enum base_kind kind, uint32_t name,
		      struct args args, enum category category, uint64_t at)
{
	struct trace_cpu *c = &t->cpus[cpu];
	c->kind = kind;
	c->since = at;
	c->name = name;
	c->args = args;
	c->category = category;
	stream_base_open(t, cpu);
}

static void open_task(struct trace *t, unsigned cpu, uint64_t at)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (c->task < 0)
		base_open(t, cpu, BASE_IDLE, t->idle, no_args, CAT_SCHED, at);
	else
		base_open(t, cpu, BASE_TASK, t->task_names[c->task], no_args, CAT_SCHED, at);
}

/* A switch that has ended by @now hands over to the next task (or idle). */
static void settle_raw(struct trace *t, unsigned cpu, uint64_t now, bool raw)
{
	struct trace_cpu *c = &t->cpus[cpu];
	seen(t, now);
	if (c->kind != BASE_SWITCH || c->in_irq || now < c->switch_end)
		return;
	base_end(t, cpu, c->switch_end, raw);
	open_task(t, cpu, c->switch_end);
}

static void settle(struct trace *t, unsigned cpu, uint64_t now)
{
	settle_raw(t, cpu, now, false);
}

static void sample(struct trace *t, unsigned cpu, uint64_t now, bool force)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut || (!force && now < c->next_sample))
		return;
	c->next_sample = now + t->counter_period;
	const struct cpu *mc = &t->m->cpus[cpu];
	unsigned occupancy = machine_tlb_occupancy(t->m, mc);
	uint64_t walks = mc->counters.page_walks;
	if (c->sampled && occupancy == c->occupancy && walks == c->walks)
		return;
	c->sampled = true;
	c->occupancy = occupancy;
	c->walks = walks;
	record(t, &(struct slice){
		      .ph = 'C',
		      .cpu = cpu,
		      .ts = now,
		      .name = c->counter_name,
		      .depth = DEPTH_COUNTER,
		      .category = CAT_COUNTER,
		      .args = {.kind = ARGS_COUNTER, .a = occupancy, .b = walks}});
}

/* A late local flush no cross-call claimed is drawn where the model has it. */
static void late_flush_settle(struct trace *t, unsigned cpu)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (c->late_flush && !c->late_flush_in_call)
		slice_on(t, cpu, c->late_flush_at, c->late_flush_at + c->late_flush,
			 t->local_flush_name, no_args, DEPTH_CHILD, CAT_TLB);
	c->late_flush = 0;
}

/* Everything still open ends at @at: the end of the run, or a cut. */
static void close_all(struct trace *t, uint64_t at)
{
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct trace_cpu *c = &t->cpus[cpu];
		settle_raw(t, cpu, at, true);
		if (c->in_irq) {
			bool kept = at > c->irq_start;
			if (kept)
				append(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = c->irq_start,
							  .dur = at - c->irq_start,
							  .name = t->irq_name, .args = no_args,
							  .depth = DEPTH_BASE, .category = CAT_IRQ,
							  .irq = IRQ_HANDLER});
			stream_handler(t, cpu, c->irq_start, at, kept);
		}
		c->in_irq = false;
		base_end(t, cpu, at, true);
		c->since = at;
		c->late_flush = 0;
	}
}

/* ---- construction --------------------------------------------------------- */

static const char *task_label(const char *const *tasks, int task)
{
	return task < 0 ? "idle" : tasks[task];
}

static void name_tasks(struct trace *t, const char *const *tasks)
{
	t->nr_tasks = g_strv_length((char **)tasks);
	t->task_names = g_new(uint32_t, t->nr_tasks);
	t->task_syscall = g_new0(uint32_t, t->nr_tasks);
	t->task_syscall_args = g_new0(struct args, t->nr_tasks);
	/* With "idle" first: a switch's args name task id + 1. */
	t->task_json = g_new0(char *, t->nr_tasks + 2);
	for (int id = -1; id < (int)t->nr_tasks; id++)
		t->task_json[id + 1] = trace_json_escape(task_label(tasks, id));
	for (unsigned id = 0; id < t->nr_tasks; id++)
		t->task_names[id] = intern(t, tasks[id]);
}

static char *metadata_text(const struct trace *t, const struct trace_labels *labels,
			   char **process)
{
	char *topo = trace_json_escape(t->m->topology->name),
	     *wl = trace_json_escape(labels->workload), *pol = trace_json_escape(labels->policy);
	uint64_t seed = labels->seed;
	*process = g_strdup_printf("tlbsim: %s / %s / %s (seed %" PRIu64 ")", topo, wl, pol,
				   seed);
	char *other = g_strdup_printf("\"generator\":\"tlbsim %s\",\"topology\":\"%s\","
				      "\"workload\":\"%s\",\"policy\":\"%s\",\"seed\":%" PRIu64
				      ",\"clock_mhz\":%" PRIu64 ",\"cpus\":%u",
				      TLBSIM_VERSION, topo, wl, pol, seed, t->mhz, t->nr_cpus);
	g_free(topo);
	g_free(wl);
	g_free(pol);
	return other;
}

struct trace *trace_new(const struct trace_options *options, const struct machine *m,
			const struct trace_labels *labels, FILE *out)
{
	struct trace *t = g_new0(struct trace, 1);
	const struct topology *topo = m->topology;
	t->m = m;
	t->options = *options;
	t->mhz = (uint64_t)(topo->clock_ghz * 1000 + 0.5);
	t->window_start = topology_ns_to_cycles(topo, options->window_start_ns);
	t->window_end = options->window_end_ns == UINT64_MAX
				? UINT64_MAX
				: topology_ns_to_cycles(topo, options->window_end_ns);
	t->counter_period = topology_ns_to_cycles(topo, COUNTER_PERIOD_NS);
	t->nr_cpus = m->nr_cpus;
	t->names = g_ptr_array_new_with_free_func(g_free);
	t->interned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	t->next_flow = 1;
	t->idle = intern(t, "idle");
	t->context_switch = intern(t, "context_switch");
	t->switch_mm = intern(t, "switch_mm");
	t->send_name = intern(t, "send IPI");
	t->ack_name = intern(t, "ack");
	t->call_name = intern(t, "smp_call_function_many");
	t->cut_name = intern(t, "trace cut here");
	for (unsigned r = 0; r < NR_TLB_FLUSH_REASONS; r++)
		t->reasons[r] = intern(t, tlb_flush_reason_name(r));
	t->irq_name = intern(t, labels->flush_names.irq);
	t->handler_name = intern(t, labels->flush_names.handler);
	t->local_flush_name = intern(t, labels->flush_names.local);
	name_tasks(t, labels->tasks);
	t->cpus = g_new0(struct trace_cpu, t->nr_cpus);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++)
		t->cpus[cpu].counter_name = intern_printf(t, "cpu %u TLB", cpu);
	t->other_data = metadata_text(t, labels, &t->meta);
	t->writer = writer_new(t, out);
	t->stream = stream_new(t);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		t->cpus[cpu].task = -1;
		base_open(t, cpu, BASE_IDLE, t->idle, no_args, CAT_SCHED, 0);
	}
	return t;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	stream_free(t->stream);
	writer_free(t->writer);
	g_hash_table_destroy(t->interned);
	g_ptr_array_free(t->names, TRUE);
	g_free(t->task_names);
	g_free(t->task_syscall);
	g_free(t->task_syscall_args);
	g_strfreev(t->task_json);
	g_free(t->cpus);
	g_free(t->meta);
	g_free(t->other_data);
	g_free(t);
}

bool trace_finish(struct trace *t, uint64_t end, GError **error)
{
	g_assert(!t->written);
	t->written = true;
	if (!t->cut)
		close_all(t, end > t->latest ? end : t->latest);
	return stream_finish(t, error);
}

uint64_t trace_nr_events(const struct trace *t)
{
	return t->written ? writer_nr_events(t->writer) : t->nr_recorded;
}

bool trace_truncated(const struct trace *t)
{
	return t->cut || (t->written && writer_truncated(t->writer));
}

/* ---- probes: scheduler ------------------------------------------------------ */

static void probe_switch(void *data, unsigned cpu, int next, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	stream_poll(t);
	settle(t, cpu, now);
	base_close(t, cpu, now);
	int prev = c->task;
	g_assert(next >= -1 && next < (int)t->nr_tasks);
	c->task = next;
	struct args args = {.kind = ARGS_SWITCH, .a = (uint64_t)(prev + 1),
			    .b = (uint64_t)(c->task + 1)};
	base_open(t, cpu, BASE_SWITCH, t->context_switch, args, CAT_SCHED, now);
	c->switch_end = UINT64_MAX;
	c->switch_mm = 0;
	c->cursor = now;
}

static void probe_switch_done(void *data, unsigned cpu, uint64_t end)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	g_assert(c->kind == BASE_SWITCH && end >= c->since);
	c->switch_end = end;
	/* context_switch cycles, and what switch_mm/enter_lazy_tlb added. */
	uint64_t fixed = t->m->topology->costs.context_switch;
	c->switch_mm = end - c->since > fixed ? end - c->since - fixed : 0;
	sample(t, cpu, c->since, true);
}

static void probe_run(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	stream_poll(t);
	settle(t, cpu, now);
	if (c->kind != BASE_TASK) {
		base_close(t, cpu, now);
		open_task(t, cpu, now);
	}
	sample(t, cpu, now, false);
}

/* ---- probes: interrupts and cross-calls ------------------------------------- */

static void probe_irq_enter(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	stream_poll(t);
	settle(t, cpu, now);
	c->in_irq = true;
	c->irq_start = now;
	c->cursor = now;
}

static void probe_irq_exit(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	seen(t, now);
	enum admit a = record(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = c->irq_start,
						 .dur = now - c->irq_start, .name = t->irq_name,
						 .args = no_args, .depth = DEPTH_BASE,
						 .category = CAT_IRQ, .irq = IRQ_HANDLER});
	if (a == CUT_NOW)
		return; /* close_all() ended the handler */
	stream_handler(t, cpu, c->irq_start, now, a == ADMIT);
	c->in_irq = false;
	/* The model pushes the rest of a switch back by the handler's time. */
	if (c->kind == BASE_SWITCH && c->switch_end != UINT64_MAX && c->switch_end > c->irq_start)
		c->switch_end += now - c->irq_start;
	sample(t, cpu, now, true);
}

static void probe_call_begin(void *data, unsigned caller, unsigned nr_targets, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[caller];
	c->call_start = now;
	c->call_seen = now;
	c->call_targets = nr_targets;
	c->call_pending = nr_targets;
	c->flow_base = t->next_flow;
	t->next_flow += nr_targets;
	c->late_flush_in_call = c->late_flush != 0;
}

static void probe_ipi_send(void *data, unsigned caller, unsigned target, unsigned slot,
			   uint64_t sent)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[caller];
	uint64_t cost = t->m->topology->costs.ipi_send;
	g_assert(slot < c->call_targets);
	record(t, &(struct slice){.ph = 'X', .cpu = caller, .ts = sent - cost, .dur = cost,
				  .name = t->send_name, .args = args1(ARGS_TO, target),
				  .depth = DEPTH_LEAF, .category = CAT_IPI,
				  .flow = c->flow_base + slot, .flow_dir = FLOW_OUT});
	/* The wait ends after the last send even if a handler that was already
	 * running took the request before its IPI landed. */
	c->call_seen = sent > c->call_seen ? sent : c->call_seen;
	if (slot + 1 == c->call_targets && c->late_flush_in_call) {
		uint64_t end = c->late_flush_at + c->late_flush;
		if (end > sent)
			slice_on(t, caller, sent, end, t->local_flush_name, no_args, DEPTH_LEAF,
				 CAT_TLB);
		c->call_seen = end > c->call_seen ? end : c->call_seen;
		c->late_flush = 0;
		c->late_flush_in_call = false;
	}
}

static void probe_csd_begin(void *data, unsigned cpu, unsigned caller, unsigned slot, uint64_t now)
{
	struct trace *t = data;
	(void)caller;
	(void)slot;
	t->cpus[cpu].csd_start = now;
	t->cpus[cpu].cursor = now;
}

static void probe_csd_ack(void *data, unsigned cpu, unsigned caller, unsigned slot, uint64_t done,
			  uint64_t seen_at)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[caller];
	uint64_t flow = c->flow_base + slot;
	g_assert(c->call_pending > 0 && slot < c->call_targets);
	record(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = t->cpus[cpu].csd_start,
				  .dur = done - t->cpus[cpu].csd_start, .name = t->handler_name,
				  .args = args1(ARGS_FROM, caller), .depth = DEPTH_CHILD,
				  .category = CAT_IRQ, .irq = IRQ_INSIDE, .flow = flow,
				  .flow_dir = FLOW_STEP});
	record(t, &(struct slice){.ph = 'X', .cpu = caller, .ts = seen_at, .name = t->ack_name,
				  .args = args1(ARGS_FROM, cpu), .depth = DEPTH_LEAF,
				  .category = CAT_IPI, .flow = flow, .flow_dir = FLOW_IN,
				  .shape = SHAPE_TAIL});
	if (seen_at > c->call_seen)
		c->call_seen = seen_at;
	if (--c->call_pending == 0)
		slice_on(t, caller, c->call_start, c->call_seen, t->call_name,
			 args1(ARGS_TARGETS, c->call_targets), DEPTH_CHILD, CAT_IPI);
}

/* ---- probes: syscalls ------------------------------------------------------- */

static void probe_syscall_enter(void *data, unsigned cpu, const char *name, const struct vma *vma,
				uint64_t start, uint64_t end, uint64_t now)
{
	struct trace *t = data;
	if (t->cut)
		return;
	stream_poll(t);
	settle(t, cpu, now);
	base_close(t, cpu, now);
	struct args args = vma ? (struct args){.kind = ARGS_RANGE, .a = start, .b = end,
					       .page_size = (uint8_t)vma->page_size}
			       : args1(ARGS_ADDRESS, start);
	base_open(t, cpu, BASE_KERNEL, intern(t, name), args, CAT_SYSCALL, now);
	t->cpus[cpu].cursor = now;
	int task = t->cpus[cpu].task;
	if (task >= 0) {
		t->task_syscall[task] = t->cpus[cpu].name;
		t->task_syscall_args[task] = args;
	}
}

static void probe_syscall_resume(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	stream_poll(t);
	settle(t, cpu, now);
	g_assert(c->task >= 0);
	base_close(t, cpu, now);
	base_open(t, cpu, BASE_KERNEL, t->task_syscall[c->task], t->task_syscall_args[c->task],
		  CAT_SYSCALL, now);
	c->cursor = now;
}

static void probe_syscall_exit(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	if (t->cut)
		return;
	stream_poll(t);
	seen(t, now);
	g_assert(t->cpus[cpu].kind == BASE_KERNEL);
	late_flush_settle(t, cpu);
	base_close(t, cpu, now);
	open_task(t, cpu, now);
	sample(t, cpu, now, true);
}

/* ---- probes: flushes -------------------------------------------------------- */

static void probe_kernel_step(void *data, unsigned cpu, uint64_t now)
{
	struct trace *t = data;
	t->cpus[cpu].cursor = now;
}

static void probe_local_flush(void *data, unsigned cpu, uint64_t start, uint64_t cycles)
{
	struct trace *t = data;
	late_flush_settle(t, cpu);
	if (cycles)
		slice_on(t, cpu, start, start + cycles, t->local_flush_name, no_args, DEPTH_CHILD,
			 CAT_TLB);
}

static void probe_local_flush_late(void *data, unsigned cpu, uint64_t start, uint64_t cycles)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	late_flush_settle(t, cpu);
	c->late_flush_at = start;
	c->late_flush = cycles;
	c->late_flush_in_call = false;
}

static void probe_tlb_flush(void *data, unsigned cpu, enum tlb_flush_reason reason,
			    int64_t pages, uint64_t at)
{
	struct trace *t = data;
	struct trace_cpu *c = &t->cpus[cpu];
	g_assert(reason < NR_TLB_FLUSH_REASONS);
	if (at == TRACE_CURSOR)
		at = c->cursor;
	c->cursor = at;
	record(t, &(struct slice){.ph = 'i', .cpu = cpu, .ts = at, .name = t->reasons[reason],
				  .args = args1(ARGS_PAGES, (uint64_t)pages),
				  .depth = DEPTH_POINT, .category = CAT_TLB});
}

const struct tracepoint_ops trace_probes = {
	.sched_switch = probe_switch,
	.sched_switch_done = probe_switch_done,
	.sched_run = probe_run,
	.irq_enter = probe_irq_enter,
	.irq_exit = probe_irq_exit,
	.call_begin = probe_call_begin,
	.ipi_send = probe_ipi_send,
	.csd_begin = probe_csd_begin,
	.csd_ack = probe_csd_ack,
	.syscall_enter = probe_syscall_enter,
	.syscall_resume = probe_syscall_resume,
	.syscall_exit = probe_syscall_exit,
	.kernel_step = probe_kernel_step,
	.local_flush = probe_local_flush,
	.local_flush_late = probe_local_flush_late,
	.tlb_flush = probe_tlb_flush,
};
