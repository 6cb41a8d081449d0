#ifndef TLBSIM_OBSERVE_TRACE_IMPL_H
#define TLBSIM_OBSERVE_TRACE_IMPL_H
/*
 * The timeline's state, shared by its recording (trace.c) and its writing
 * (trace_write.c); private to observe/.  See trace.c's notes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "tlbsim/kernel/tracepoint.h"
#include "tlbsim/observe/trace.h"

#define NO_ARGS UINT32_MAX
#define GLOBAL_TRACK UINT16_MAX

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
	 * the task slept inside it and runs again (probe_syscall_resume()). */
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
	uint32_t reasons[NR_TLB_FLUSH_REASONS];
	char *meta; /* process name */
	char *other_data;
};

/* Intern a formatted string; its index in t->strings. */
uint32_t trace_intern_printf(struct trace *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* A JSON string body: quotes and backslashes escaped, control characters
 * replaced by '?' (Perfetto's JSON reader rejects \u escapes); g_free(). */
char *trace_json_escape(const char *s);
/* Everything still open ends at @at: the end of the run, or a cut. */
void trace_close_all(struct trace *t, uint64_t at);

#endif
