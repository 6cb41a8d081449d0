/*
 * Chrome Trace Event JSON from the kernel's hooks (see trace.h).
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
 * - Events are kept in memory (in cycles) and written at the end, in integer
 *   nanoseconds, sorted by time, then longer first, then outer first, then
 *   recording order: a parent precedes its children.  Slices are written as
 *   B/E pairs (see struct line), so viewers that nest by file order or add in
 *   floating point (chrome://tracing, speedscope) and Perfetto, which sorts
 *   by time, build the same tree.  Nothing in the output depends on
 *   hash-table order.
 * - Interrupts end and restart: at write time every slice of a track that is
 *   not part of a handler is cut around that CPU's handlers (the pieces keep
 *   name and arguments; a piece fully covered disappears).  All slices of a
 *   track are cut at the same points, so nesting survives.  User work needs
 *   no shifting (the model already pushed it back by the handler); kernel
 *   work the model computed ahead overlaps the handler in the model and loses
 *   that part here.
 * - Flows use the v2 binding (bind_id with flow_out/flow_in on the slices
 *   themselves), which Perfetto and the legacy viewer attach to that very
 *   slice, not to whatever encloses a timestamp: one id per IPI, out of its
 *   "send IPI" slice, through the handler's slice, into its "ack" slice.  An
 *   id left with one end after a window or a cut loses its flow fields.
 * - Invariant: the hooks of one CPU come with non-decreasing times (they run
 *   at engine events), so base slices of a CPU follow each other without
 *   overlap; children lie inside the syscall or handler that computed them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tlbsim/error.h"
#include "tlbsim/machine.h"
#include "tlbsim/policy.h"
#include "tlbsim/trace.h"

__extension__ typedef unsigned __int128 u128;

/*
 * 10 µs: a CPU's TLB occupancy and page-walk count are sampled at most this
 * often while it runs user work (plus once after each flush it takes).  A
 * munmap16 access is ~20 ns, so a sample stands for ~500 walks at most, and
 * 51 ms × 8 CPUs make ~40 k samples instead of one per access.
 */
#define COUNTER_PERIOD_NS 10000

#define NO_ARGS UINT32_MAX
#define GLOBAL_TRACK UINT16_MAX

enum flow_dir { FLOW_NONE = 0, FLOW_OUT = 1, FLOW_IN = 2, FLOW_STEP = 3 };

/* Ties at one timestamp: outer slices first, then inner, then points. */
enum depth { DEPTH_BASE, DEPTH_CHILD, DEPTH_LEAF, DEPTH_POINT, DEPTH_COUNTER };

enum category { CAT_SCHED, CAT_IRQ, CAT_SYSCALL, CAT_IPI, CAT_TLB, CAT_COUNTER, CAT_TRACE };

static const char *const category_names[] = {"sched", "irq", "syscall", "ipi", "tlb", "counter",
					     "trace"};

/* Where a record sits relative to interrupt handlers, for the cut. */
enum irq_part { IRQ_OUTSIDE, IRQ_HANDLER, IRQ_INSIDE };

/*
 * A slice's extent.  SHAPE_TAIL: the last nanosecond before @ts, for an
 * acknowledgement seen at @ts.  The wait it ends stops at the last one, and a
 * zero-length slice at a slice's end lies outside it for Perfetto (slices are
 * [start, end)); a whole nanosecond on the integer-ns grid of the file never
 * straddles another slice's edge.
 */
enum shape { SHAPE_SPAN, SHAPE_POINT, SHAPE_TAIL };

struct record {
	uint64_t ts;   /* cycles; ns once trace_write() converted it */
	uint64_t dur;  /* the same; slices only */
	uint64_t flow; /* bind id, 0: none */
	uint32_t name; /* interned */
	uint32_t args; /* interned JSON object, or NO_ARGS */
	uint32_t seq;  /* recording order, the last tie-break */
	uint16_t cpu;  /* GLOBAL_TRACK: a global instant */
	char ph;       /* 'X', 'i' or 'C' */
	uint8_t depth;
	uint8_t flow_dir;
	uint8_t category;
	uint8_t irq;
	uint8_t shape;
};

enum base_kind { BASE_IDLE, BASE_SWITCH, BASE_TASK, BASE_KERNEL };

struct trace_cpu {
	enum base_kind kind;
	uint64_t since;       /* start of the open base slice */
	uint32_t name, args;  /* of the open base slice */
	enum category category;
	int task;             /* current task id, -1: idle */
	uint64_t switch_end;  /* BASE_SWITCH: when the next task's work starts */
	uint64_t switch_mm;   /* BASE_SWITCH: cycles of it in switch_mm */
	bool in_irq;
	uint64_t irq_start;
	uint64_t cursor;      /* start of the current kernel step */
	uint64_t csd_start;
	/* As the caller of smp_call_function_many(). */
	uint64_t call_start, call_seen, flow_base;
	unsigned call_targets, call_pending;
	/* A local flush that runs after the IPIs are sent (5.13+, riscv), until
	 * the call it belongs to is known: its time in the model, and cycles. */
	uint64_t late_flush_at, late_flush;
	bool late_flush_in_call;
	/* Counter track. */
	uint64_t next_sample;
	bool sampled;
	unsigned occupancy;
	uint64_t walks;
	uint32_t counter_name;
};

struct trace {
	const struct machine *m;
	struct trace_options options;
	uint64_t mhz;
	uint64_t window_start, window_end; /* cycles */
	uint64_t counter_period;           /* cycles */
	unsigned nr_cpus;
	struct trace_cpu *cpus;
	unsigned nr_tasks;
	/* Each task's syscall in flight (name, args), to reopen its slice when
	 * the task slept inside it and runs again (trace_syscall_resume()). */
	uint32_t *task_syscall, *task_syscall_args;
	uint32_t *task_names;
	GArray *records;      /* struct record */
	GPtrArray *strings;   /* interned, by index */
	GHashTable *interned; /* string -> index + 1 */
	uint64_t next_flow;
	bool cut;
	uint64_t cut_at;
	uint64_t latest; /* the latest hook time seen */
	bool written;
	/* Interned names used on every hook. */
	uint32_t idle, context_switch, switch_mm, irq_name, handler_name, local_flush_name,
		send_name, ack_name, call_name, cut_name;
	uint32_t reasons[TRACE_NR_FLUSH_REASONS];
	char *meta; /* process name */
	char *other_data;
};

static const char *const reason_names[TRACE_NR_FLUSH_REASONS] = {
	[TRACE_TLB_FLUSH_ON_TASK_SWITCH] = "TLB_FLUSH_ON_TASK_SWITCH",
	[TRACE_TLB_REMOTE_SHOOTDOWN] = "TLB_REMOTE_SHOOTDOWN",
	[TRACE_TLB_LOCAL_SHOOTDOWN] = "TLB_LOCAL_SHOOTDOWN",
	[TRACE_TLB_LOCAL_MM_SHOOTDOWN] = "TLB_LOCAL_MM_SHOOTDOWN",
	[TRACE_TLB_REMOTE_SEND_IPI] = "TLB_REMOTE_SEND_IPI",
	[TRACE_TLB_REMOTE_WRONG_CPU] = "TLB_REMOTE_WRONG_CPU",
	[TRACE_TLB_BROADCAST] = "TLB_BROADCAST",
};

const char *trace_flush_reason_name(enum trace_flush_reason reason)
{
	g_assert(reason < TRACE_NR_FLUSH_REASONS);
	return reason_names[reason];
}

/* ---- strings ------------------------------------------------------------- */

static uint32_t intern_take(struct trace *t, char *s)
{
	gpointer found = g_hash_table_lookup(t->interned, s);
	if (found) {
		g_free(s);
		return (uint32_t)(GPOINTER_TO_UINT(found) - 1);
	}
	uint32_t index = t->strings->len;
	g_ptr_array_add(t->strings, s);
	g_hash_table_insert(t->interned, s, GUINT_TO_POINTER(index + 1));
	return index;
}

static uint32_t intern(struct trace *t, const char *s)
{
	return intern_take(t, g_strdup(s));
}

static uint32_t intern_printf(struct trace *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static uint32_t intern_printf(struct trace *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return intern_take(t, s);
}

/*
 * A JSON string body: quotes and backslashes escaped, control characters
 * replaced by '?' (Perfetto's JSON reader rejects \u escapes).
 */
static char *json_escape(const char *s)
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

/* ---- recording ------------------------------------------------------------ */

static uint64_t cycles_to_ns(const struct trace *t, uint64_t cycles)
{
	return (uint64_t)((u128)cycles * 1000 / t->mhz);
}

struct slice {
	char ph;
	unsigned cpu;
	uint64_t ts, dur;
	uint32_t name, args;
	enum depth depth;
	enum category category;
	uint64_t flow;
	enum flow_dir flow_dir;
	enum irq_part irq;
	enum shape shape;
};

static void trace_close_all(struct trace *t, uint64_t at);

/* Append without the window and budget checks (closing, cutting). */
static void append(struct trace *t, const struct slice *s)
{
	struct record r = {
		.ts = s->ts,
		.dur = s->dur,
		.flow = s->flow,
		.name = s->name,
		.args = s->args,
		.seq = t->records->len,
		.cpu = s->cpu == GLOBAL_TRACK ? GLOBAL_TRACK : (uint16_t)s->cpu,
		.ph = s->ph,
		.depth = (uint8_t)s->depth,
		.flow_dir = (uint8_t)s->flow_dir,
		.category = (uint8_t)s->category,
		.irq = (uint8_t)s->irq,
		.shape = (uint8_t)(s->shape != SHAPE_SPAN     ? s->shape
				   : s->ph == 'X' && s->dur == 0 ? SHAPE_POINT
								 : SHAPE_SPAN),
	};
	g_assert(t->records->len < UINT32_MAX);
	g_array_append_val(t->records, r);
}

static void record(struct trace *t, const struct slice *s)
{
	if (t->cut)
		return;
	if (s->ts > t->window_end || s->ts + s->dur < t->window_start)
		return;
	/* Records are indexed with 32 bits: that many is the limit even with
	 * no budget (and takes 170 GB of memory first). */
	uint64_t budget = t->options.max_events && t->options.max_events < UINT32_MAX - 1
				  ? t->options.max_events
				  : UINT32_MAX - 1;
	if (t->records->len >= budget) {
		/* Stop recording at the engine's clock: everything before it is
		 * complete.  trace_write() trims to the budget exactly. */
		uint64_t now = engine_now(t->m->engine);
		t->cut = true;
		t->cut_at = now;
		trace_close_all(t, now);
		return;
	}
	append(t, s);
}

static void slice_on(struct trace *t, unsigned cpu, uint64_t start, uint64_t end, uint32_t name,
		     uint32_t args, enum depth depth, enum category category)
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

/* End the open base slice at @at; @raw: past the window and budget checks. */
static void base_end(struct trace *t, unsigned cpu, uint64_t at, bool raw)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (at <= c->since)
		return;
	struct slice s = {.ph = 'X', .cpu = cpu, .ts = c->since, .dur = at - c->since,
			  .name = c->name, .args = c->args, .depth = DEPTH_BASE,
			  .category = c->category};
	/* A switch cut short (a wakeup on a CPU going idle) cuts its mm part. */
	uint64_t mm_end = c->since + c->switch_mm < at ? c->since + c->switch_mm : at;
	struct slice mm = {.ph = 'X', .cpu = cpu, .ts = c->since, .dur = mm_end - c->since,
			   .name = t->switch_mm, .args = NO_ARGS, .depth = DEPTH_CHILD,
			   .category = CAT_SCHED};
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
		      uint32_t args, enum category category, uint64_t at)
{
	struct trace_cpu *c = &t->cpus[cpu];
	c->kind = kind;
	c->since = at;
	c->name = name;
	c->args = args;
	c->category = category;
}

static void open_task(struct trace *t, unsigned cpu, uint64_t at)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (c->task < 0)
		base_open(t, cpu, BASE_IDLE, t->idle, NO_ARGS, CAT_SCHED, at);
	else
		base_open(t, cpu, BASE_TASK, t->task_names[c->task], NO_ARGS, CAT_SCHED, at);
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
			  .ph = 'C', .cpu = cpu, .ts = now, .name = c->counter_name,
			  .depth = DEPTH_COUNTER, .category = CAT_COUNTER,
			  .args = intern_printf(t, "{\"entries\":%u,\"page_walks\":%" PRIu64 "}",
						occupancy, walks)});
}

/* A late local flush no cross-call claimed is drawn where the model has it. */
static void late_flush_settle(struct trace *t, unsigned cpu)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (c->late_flush && !c->late_flush_in_call)
		slice_on(t, cpu, c->late_flush_at, c->late_flush_at + c->late_flush,
			 t->local_flush_name, NO_ARGS, DEPTH_CHILD, CAT_TLB);
	c->late_flush = 0;
}

/* Everything still open ends at @at: the end of the run, or a cut. */
static void trace_close_all(struct trace *t, uint64_t at)
{
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct trace_cpu *c = &t->cpus[cpu];
		settle_raw(t, cpu, at, true);
		if (c->in_irq && at > c->irq_start)
			append(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = c->irq_start,
						  .dur = at - c->irq_start, .name = t->irq_name,
						  .args = NO_ARGS, .depth = DEPTH_BASE,
						  .category = CAT_IRQ, .irq = IRQ_HANDLER});
		c->in_irq = false;
		base_end(t, cpu, at, true);
		c->since = at;
		c->late_flush = 0;
	}
}

/* ---- construction --------------------------------------------------------- */

static void name_tasks(struct trace *t, const char *const *tasks)
{
	t->nr_tasks = g_strv_length((char **)tasks);
	t->task_names = g_new(uint32_t, t->nr_tasks);
	t->task_syscall = g_new0(uint32_t, t->nr_tasks);
	t->task_syscall_args = g_new0(uint32_t, t->nr_tasks);
	for (unsigned id = 0; id < t->nr_tasks; id++)
		t->task_names[id] = intern(t, tasks[id]);
}

/* The handler's names as the kernel calls them on this machine. */
static void name_handlers(struct trace *t)
{
	const struct topology *topo = t->m->topology;
	const char *irq = "call_function_interrupt", *handler = "flush_tlb_func",
		   *local = "flush_tlb_func (local)";
	if (topo->arch == ARCH_RISCV) {
		irq = "handle_IPI";
		handler = "ipi_flush_tlb_range_asid";
		local = "local_flush_tlb_range_asid";
		if (topo->remote_flush == REMOTE_FLUSH_SBI) {
			/* The firmware interrupts the harts and fences in M-mode. */
			irq = "sbi_ipi (M-mode)";
			handler = "sbi_tlb_flush (M-mode)";
		}
	}
	t->irq_name = intern(t, irq);
	t->handler_name = intern(t, handler);
	t->local_flush_name = intern(t, local);
}

static char *metadata_text(const struct trace *t, const struct trace_labels *labels,
			   char **process)
{
	char *topo = json_escape(t->m->topology->name), *wl = json_escape(labels->workload),
	     *pol = json_escape(labels->policy);
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
			const struct trace_labels *labels)
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
	t->records = g_array_new(FALSE, FALSE, sizeof(struct record));
	t->strings = g_ptr_array_new_with_free_func(g_free);
	t->interned = g_hash_table_new(g_str_hash, g_str_equal);
	t->next_flow = 1;
	t->idle = intern(t, "idle");
	t->context_switch = intern(t, "context_switch");
	t->switch_mm = intern(t, "switch_mm");
	t->send_name = intern(t, "send IPI");
	t->ack_name = intern(t, "ack");
	t->call_name = intern(t, "smp_call_function_many");
	t->cut_name = intern(t, "trace cut here");
	for (unsigned r = 0; r < TRACE_NR_FLUSH_REASONS; r++)
		t->reasons[r] = intern(t, reason_names[r]);
	name_handlers(t);
	name_tasks(t, labels->tasks);
	t->cpus = g_new0(struct trace_cpu, t->nr_cpus);
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct trace_cpu *c = &t->cpus[cpu];
		c->task = -1;
		c->counter_name = intern_printf(t, "cpu %u TLB", cpu);
		base_open(t, cpu, BASE_IDLE, t->idle, NO_ARGS, CAT_SCHED, 0);
	}
	t->other_data = metadata_text(t, labels, &t->meta);
	return t;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	g_array_free(t->records, TRUE);
	g_hash_table_destroy(t->interned);
	g_ptr_array_free(t->strings, TRUE);
	g_free(t->task_names);
	g_free(t->task_syscall);
	g_free(t->task_syscall_args);
	g_free(t->cpus);
	g_free(t->meta);
	g_free(t->other_data);
	g_free(t);
}

uint64_t trace_nr_events(const struct trace *t)
{
	return t->records->len;
}

bool trace_truncated(const struct trace *t)
{
	return t->cut;
}

/* ---- hooks: scheduler ------------------------------------------------------ */

static const char *task_label(const struct trace *t, int task)
{
	return task < 0 ? "idle" : g_ptr_array_index(t->strings, t->task_names[task]);
}

void trace_switch(struct trace *t, unsigned cpu, int next, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	settle(t, cpu, now);
	base_close(t, cpu, now);
	int prev = c->task;
	g_assert(next >= -1 && next < (int)t->nr_tasks);
	c->task = next;
	char *from = json_escape(task_label(t, prev)), *to = json_escape(task_label(t, c->task));
	uint32_t args = intern_printf(t, "{\"prev\":\"%s\",\"next\":\"%s\"}", from, to);
	g_free(from);
	g_free(to);
	base_open(t, cpu, BASE_SWITCH, t->context_switch, args, CAT_SCHED, now);
	c->switch_end = UINT64_MAX;
	c->switch_mm = 0;
	c->cursor = now;
}

void trace_switch_done(struct trace *t, unsigned cpu, uint64_t end)
{
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

void trace_run(struct trace *t, unsigned cpu, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	settle(t, cpu, now);
	if (c->kind != BASE_TASK) {
		base_close(t, cpu, now);
		open_task(t, cpu, now);
	}
	sample(t, cpu, now, false);
}

/* ---- hooks: interrupts and cross-calls ------------------------------------- */

void trace_irq_enter(struct trace *t, unsigned cpu, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	settle(t, cpu, now);
	c->in_irq = true;
	c->irq_start = now;
	c->cursor = now;
}

void trace_irq_exit(struct trace *t, unsigned cpu, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	seen(t, now);
	record(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = c->irq_start,
				  .dur = now - c->irq_start, .name = t->irq_name, .args = NO_ARGS,
				  .depth = DEPTH_BASE, .category = CAT_IRQ, .irq = IRQ_HANDLER});
	c->in_irq = false;
	/* The model pushes the rest of a switch back by the handler's time. */
	if (c->kind == BASE_SWITCH && c->switch_end != UINT64_MAX && c->switch_end > c->irq_start)
		c->switch_end += now - c->irq_start;
	sample(t, cpu, now, true);
}

void trace_call_begin(struct trace *t, unsigned caller, unsigned nr_targets, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[caller];
	c->call_start = now;
	c->call_seen = now;
	c->call_targets = nr_targets;
	c->call_pending = nr_targets;
	c->flow_base = t->next_flow;
	t->next_flow += nr_targets;
	c->late_flush_in_call = c->late_flush != 0;
}

void trace_ipi_send(struct trace *t, unsigned caller, unsigned target, unsigned slot,
		    uint64_t sent)
{
	struct trace_cpu *c = &t->cpus[caller];
	uint64_t cost = t->m->topology->costs.ipi_send;
	g_assert(slot < c->call_targets);
	record(t, &(struct slice){.ph = 'X', .cpu = caller, .ts = sent - cost, .dur = cost,
				  .name = t->send_name,
				  .args = intern_printf(t, "{\"to\":%u}", target),
				  .depth = DEPTH_LEAF, .category = CAT_IPI,
				  .flow = c->flow_base + slot, .flow_dir = FLOW_OUT});
	/* The wait ends after the last send even if a handler that was already
	 * running took the request before its IPI landed. */
	c->call_seen = sent > c->call_seen ? sent : c->call_seen;
	if (slot + 1 == c->call_targets && c->late_flush_in_call) {
		uint64_t end = c->late_flush_at + c->late_flush;
		if (end > sent)
			slice_on(t, caller, sent, end, t->local_flush_name, NO_ARGS, DEPTH_LEAF,
				 CAT_TLB);
		c->call_seen = end > c->call_seen ? end : c->call_seen;
		c->late_flush = 0;
		c->late_flush_in_call = false;
	}
}

void trace_csd_begin(struct trace *t, unsigned cpu, unsigned caller, unsigned slot,
		     uint64_t now)
{
	(void)caller;
	(void)slot;
	t->cpus[cpu].csd_start = now;
	t->cpus[cpu].cursor = now;
}

void trace_ack(struct trace *t, unsigned cpu, unsigned caller, unsigned slot, uint64_t done,
	       uint64_t seen_at)
{
	struct trace_cpu *c = &t->cpus[caller];
	uint64_t flow = c->flow_base + slot;
	g_assert(c->call_pending > 0 && slot < c->call_targets);
	record(t, &(struct slice){.ph = 'X', .cpu = cpu, .ts = t->cpus[cpu].csd_start,
				  .dur = done - t->cpus[cpu].csd_start, .name = t->handler_name,
				  .args = intern_printf(t, "{\"from\":%u}", caller),
				  .depth = DEPTH_CHILD, .category = CAT_IRQ, .irq = IRQ_INSIDE,
				  .flow = flow, .flow_dir = FLOW_STEP});
	record(t, &(struct slice){.ph = 'X', .cpu = caller, .ts = seen_at, .name = t->ack_name,
				  .args = intern_printf(t, "{\"from\":%u}", cpu),
				  .depth = DEPTH_LEAF, .category = CAT_IPI, .flow = flow,
				  .flow_dir = FLOW_IN, .shape = SHAPE_TAIL});
	if (seen_at > c->call_seen)
		c->call_seen = seen_at;
	if (--c->call_pending == 0)
		slice_on(t, caller, c->call_start, c->call_seen, t->call_name,
			 intern_printf(t, "{\"targets\":%u}", c->call_targets), DEPTH_CHILD,
			 CAT_IPI);
}

/* ---- hooks: syscalls ------------------------------------------------------- */

void trace_syscall_enter(struct trace *t, unsigned cpu, const char *name,
			 const struct vma *vma, uint64_t start, uint64_t end, uint64_t now)
{
	if (t->cut)
		return;
	settle(t, cpu, now);
	base_close(t, cpu, now);
	uint32_t args;
	if (vma)
		args = intern_printf(t,
				     "{\"range\":\"0x%" PRIx64 "-0x%" PRIx64 "\",\"pages\":%" PRIu64
				     ",\"page_size\":\"%s\"}",
				     start, end, (end - start) >> page_size_shift(vma->page_size),
				     page_size_name(vma->page_size));
	else
		args = intern_printf(t, "{\"address\":\"0x%" PRIx64 "\"}", start);
	base_open(t, cpu, BASE_KERNEL, intern(t, name), args, CAT_SYSCALL, now);
	t->cpus[cpu].cursor = now;
	int task = t->cpus[cpu].task;
	if (task >= 0) {
		t->task_syscall[task] = t->cpus[cpu].name;
		t->task_syscall_args[task] = args;
	}
}

void trace_syscall_resume(struct trace *t, unsigned cpu, uint64_t now)
{
	struct trace_cpu *c = &t->cpus[cpu];
	if (t->cut)
		return;
	settle(t, cpu, now);
	g_assert(c->task >= 0);
	base_close(t, cpu, now);
	base_open(t, cpu, BASE_KERNEL, t->task_syscall[c->task], t->task_syscall_args[c->task],
		  CAT_SYSCALL, now);
	c->cursor = now;
}

void trace_syscall_exit(struct trace *t, unsigned cpu, uint64_t now)
{
	if (t->cut)
		return;
	seen(t, now);
	g_assert(t->cpus[cpu].kind == BASE_KERNEL);
	late_flush_settle(t, cpu);
	base_close(t, cpu, now);
	open_task(t, cpu, now);
	sample(t, cpu, now, true);
}

/* ---- hooks: flushes -------------------------------------------------------- */

void trace_cursor(struct trace *t, unsigned cpu, uint64_t now)
{
	t->cpus[cpu].cursor = now;
}

void trace_local_flush(struct trace *t, unsigned cpu, uint64_t start, uint64_t cycles)
{
	late_flush_settle(t, cpu);
	if (cycles)
		slice_on(t, cpu, start, start + cycles, t->local_flush_name, NO_ARGS, DEPTH_CHILD,
			 CAT_TLB);
}

void trace_local_flush_late(struct trace *t, unsigned cpu, uint64_t start, uint64_t cycles)
{
	struct trace_cpu *c = &t->cpus[cpu];
	late_flush_settle(t, cpu);
	c->late_flush_at = start;
	c->late_flush = cycles;
	c->late_flush_in_call = false;
}

void trace_tlb_flush(struct trace *t, unsigned cpu, enum trace_flush_reason reason,
		     uint64_t start, uint64_t end, uint64_t at)
{
	struct trace_cpu *c = &t->cpus[cpu];
	g_assert(reason < TRACE_NR_FLUSH_REASONS);
	if (at == TRACE_CURSOR)
		at = c->cursor;
	/* A handler flushes on behalf of the initiator (riscv's shared helper). */
	if (reason == TRACE_TLB_LOCAL_MM_SHOOTDOWN && c->in_irq)
		reason = TRACE_TLB_REMOTE_SHOOTDOWN;
	c->cursor = at;
	int64_t pages = end == FLUSH_ALL ? -1 : (int64_t)((end - start) >> 12);
	record(t, &(struct slice){.ph = 'i', .cpu = cpu, .ts = at, .name = t->reasons[reason],
				  .args = intern_printf(t, "{\"pages\":%" PRId64 "}", pages),
				  .depth = DEPTH_POINT, .category = CAT_TLB});
}

/* ---- writing --------------------------------------------------------------- */

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
		.args = intern_printf(t, "{\"max_events\":%" PRIu64 "}", max),
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
	char *name = json_escape(g_ptr_array_index(t->strings, r->name));
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
	char *process = json_escape(t->meta);
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
