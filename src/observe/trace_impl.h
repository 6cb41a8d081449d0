#ifndef TLBSIM_OBSERVE_TRACE_IMPL_H
#define TLBSIM_OBSERVE_TRACE_IMPL_H
/*
 * The timeline's state, shared by its three stages, private to observe/:
 * trace.c records what the tracepoints report (struct record, in cycles),
 * trace_stream.c cuts the records around interrupt handlers, clips them to
 * the window and hands them on in nanoseconds as soon as nothing recorded
 * later can come before them, and trace_write.c orders them and writes the
 * file while the run goes on.  Calls go one way: trace.c -> trace_stream.c ->
 * trace_write.c (and trace.c -> trace_write.c).  See trace.c's notes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>
#include "tlbsim/kernel/tracepoint.h"
#include "tlbsim/observe/trace.h"

#define GLOBAL_TRACK UINT16_MAX
/* A record's place in recording order, not known (yet). */
#define NO_SEQ UINT32_MAX

enum flow_dir { FLOW_NONE = 0, FLOW_OUT = 1, FLOW_IN = 2, FLOW_STEP = 3 };

/* Ties at one timestamp: outer slices first, then inner, then points. */
enum depth { DEPTH_BASE, DEPTH_CHILD, DEPTH_LEAF, DEPTH_POINT, DEPTH_COUNTER };

enum category { CAT_SCHED, CAT_IRQ, CAT_SYSCALL, CAT_IPI, CAT_TLB, CAT_COUNTER, CAT_TRACE };

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

/*
 * An event's arguments, kept as numbers and formatted when the event is
 * written: interned as text, every munmap's range and every counter sample
 * would be a new string, and the strings would grow with the run.
 */
enum args_kind {
	ARGS_NONE,
	ARGS_TO,         /* {"to":a} */
	ARGS_FROM,       /* {"from":a} */
	ARGS_TARGETS,    /* {"targets":a} */
	ARGS_PAGES,      /* {"pages":(int64)a} */
	ARGS_COUNTER,    /* {"entries":a,"page_walks":b} */
	ARGS_SWITCH,     /* {"prev":task a - 1,"next":task b - 1} (0: idle) */
	ARGS_RANGE,      /* {"range":"0xa-0xb","pages":...,"page_size":...} */
	ARGS_ADDRESS,    /* {"address":"0xa"} */
	ARGS_MAX_EVENTS, /* {"max_events":a} */
};

struct args {
	uint64_t a, b;
	uint8_t kind;      /* enum args_kind */
	uint8_t page_size; /* ARGS_RANGE: enum page_size */
};

/* Which part of a context switch a record is (trace_stream.c passes an
 * ended switch on before it is recorded). */
enum switch_part { PART_NONE, PART_SWITCH, PART_SWITCH_MM };

/* What the probes record: times in cycles. */
struct record {
	uint64_t ts;   /* cycles */
	uint64_t dur;  /* slices only */
	uint64_t flow; /* bind id, 0: none */
	struct args args;
	uint32_t name; /* index in trace.names */
	uint32_t seq;  /* recording order, the last tie-break */
	uint16_t cpu;  /* GLOBAL_TRACK: a global instant */
	char ph;       /* 'X', 'i' or 'C' */
	uint8_t depth;
	uint8_t flow_dir;
	uint8_t category;
	uint8_t irq;
	uint8_t shape;
	uint8_t part; /* enum switch_part */
};

enum base_kind { BASE_IDLE, BASE_SWITCH, BASE_TASK, BASE_KERNEL };

struct trace_cpu {
	enum base_kind kind;
	uint64_t since;       /* start of the open base slice */
	uint32_t name;        /* of the open base slice */
	struct args args;
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

struct stream;
struct writer;

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
	 * the task slept inside it and runs again (probe_syscall_resume()). */
	uint32_t *task_syscall;
	struct args *task_syscall_args;
	uint32_t *task_names;
	char **task_json;     /* task labels, escaped for JSON, by task id */
	/* Names, interned: a fixed set (tasks, syscalls, reasons, CPUs). */
	GPtrArray *names;      /* escaped for JSON, by index */
	GHashTable *interned;  /* name -> index + 1 */
	uint64_t nr_recorded;  /* records so far, the next one's seq */
	uint64_t next_flow;
	bool cut;
	uint64_t cut_at;
	uint64_t latest; /* the latest hook time seen */
	bool written;
	/* Interned names used on every hook. */
	uint32_t idle, context_switch, switch_mm, irq_name, handler_name, local_flush_name,
		send_name, ack_name, call_name, cut_name;
	uint32_t reasons[NR_TLB_FLUSH_REASONS];
	char *meta; /* process name */
	char *other_data;
	struct stream *stream;
	struct writer *writer;
};

static inline uint64_t trace_cycles_to_ns(const struct trace *t, uint64_t cycles)
{
	__extension__ typedef unsigned __int128 u128;
	return (uint64_t)((u128)cycles * 1000 / t->mhz);
}

/* ---- trace_stream.c ---------------------------------------------------------- */

struct stream *stream_new(struct trace *t);
void stream_free(struct stream *s);
/* A record the recording kept (its seq set), other than a base slice that
 * stream_base_open() follows. */
void stream_record(struct trace *t, const struct record *r);
/* A record with flow @flow that the window left out. */
void stream_flow_dropped(struct trace *t, uint64_t flow);
/* The CPU's base slice (t->cpus[cpu]) has just been opened. */
void stream_base_open(struct trace *t, unsigned cpu);
/* It ends at @at; @seq: its place in recording order, NO_SEQ if the window
 * left it out.  Base slices other than switches only (stream_follows()). */
void stream_base_close(struct trace *t, unsigned cpu, uint64_t at, uint32_t seq);
bool stream_follows(enum base_kind kind);
/* The CPU's interrupt handler [start, end) ended; @kept: it was recorded, so
 * it cuts the CPU's other slices. */
void stream_handler(struct trace *t, unsigned cpu, uint64_t start, uint64_t end, bool kept);
/* Between hooks: pass on what has become final if enough has piled up. */
void stream_poll(struct trace *t);
/* After the last record: pass everything on and end the file. */
bool stream_finish(struct trace *t, GError **error);

/* ---- trace_write.c ----------------------------------------------------------- */

#define NO_ITEM UINT32_MAX
#define NO_CELL UINT32_MAX
#define DUR_OPEN UINT64_MAX

/*
 * An event as the file has it: in nanoseconds, cut around handlers and
 * clipped, with its sort key (start, longer first, depth, then recording
 * order: @later, @major, @minor; see trace_write.c).  A slice's length may
 * not be known yet (DUR_OPEN: a base slice still running, at least @lo), nor
 * its @major (@cell: the base slice it belongs to, whose seq comes when it
 * closes).
 */
struct item_init {
	uint64_t ts, dur, lo;
	uint64_t flow;
	struct args args;
	uint32_t name;
	uint32_t major, minor, cell;
	uint16_t cpu;
	char ph;
	uint8_t depth, later, flow_dir, category;
};

struct writer *writer_new(struct trace *t, FILE *out);
void writer_free(struct writer *w);
/* A new event; NO_ITEM once the file has been cut.  The caller holds one
 * reference to an open one until writer_item_end(). */
uint32_t writer_item_new(struct writer *w, const struct item_init *init);
/* An open item: it lasts at least @lo ns, or exactly @dur (its end). */
void writer_item_lo(struct writer *w, uint32_t item, uint64_t lo);
void writer_item_end(struct writer *w, uint32_t item, uint64_t dur);
/* The cell of a base slice: its seq, set when the slice closes. */
uint32_t writer_cell_new(struct writer *w);
void writer_cell_set(struct writer *w, uint32_t cell, uint32_t seq);
void writer_cell_release(struct writer *w, uint32_t cell);
/* One end of flow @flow was seen: kept at @ts (ns), or left out. */
void writer_flow_end(struct writer *w, uint64_t flow, bool kept, uint64_t ts);
/* Nothing that still comes starts before @frontier (ns): write up to it. */
void writer_advance(struct writer *w, uint64_t frontier);
/* The recording stopped at @at ns (--trace-max-events). */
void writer_set_cut(struct writer *w, uint64_t at);
/* Everything has been passed on: the rest of the file. */
bool writer_finish(struct writer *w, GError **error);
/* Events written (the file's otherData.events), and whether the file was cut. */
uint64_t writer_nr_events(const struct writer *w);
bool writer_truncated(const struct writer *w);
/* A JSON string body: quotes and backslashes escaped, control characters
 * replaced by '?' (Perfetto's JSON reader rejects \u escapes); g_free(). */
char *trace_json_escape(const char *s);

#endif
