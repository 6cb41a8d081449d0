#ifndef TLBSIM_NATIVE_TRACEFS_H
#define TLBSIM_NATIVE_TRACEFS_H
/*
 * The kernel's tlb:tlb_flush tracepoint around a native run: the event
 * enabled in tracefs, its buffer read back and counted by reason and CPU,
 * the way tlbsim counts its own trace_tlb_flush() calls.  A session records
 * into a tracing instance of its own, removed when it is closed: the
 * machine's tracing state is not touched.
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

/* The tracepoint's reasons (enum tlb_flush_reason, include/linux/mm_types.h)
 * by their number, as the event prints it last: "reason:remote shootdown (1)". */
#define TRACEFS_NR_REASONS 6
/* The CSV column of reason i ("tlb_remote_shootdown"); "_full" follows it. */
extern const char *const tracefs_reason_columns[TRACEFS_NR_REASONS];
extern const char *const tracefs_reason_full_columns[TRACEFS_NR_REASONS];

struct tracefs_cpu {
	uint64_t events;
	uint64_t reason[TRACEFS_NR_REASONS];
	uint64_t full[TRACEFS_NR_REASONS]; /* of them, "pages:-1" (TLB_FLUSH_ALL) */
};

struct tracefs_counts {
	unsigned nr_cpus;
	struct tracefs_cpu total;
	struct tracefs_cpu *cpu; /* [nr_cpus] */
};

void tracefs_counts_init(struct tracefs_counts *c, unsigned nr_cpus);
void tracefs_counts_clear(struct tracefs_counts *c);

/**
 * tracefs_parse() - count the tlb_flush lines of trace file @text into @c.
 *
 * Lines of other events and '#' comments are skipped.  Errors: a tlb_flush
 * line without "[CPU]", "pages:" or "(reason)", a reason number this
 * program does not know, a CPU beyond @c's, and a "[LOST n EVENTS]" mark.
 */
bool tracefs_parse(const char *text, struct tracefs_counts *c, GError **error);
/* Events a per_cpu/cpuN/stats @text says were lost ("overrun",
 * "dropped events"). */
uint64_t tracefs_parse_lost(const char *text);

struct tracefs;

/**
 * tracefs_open() - find tracefs (mounting it at /sys/kernel/tracing if it is
 * not mounted and we may) and make this session's instance in it.
 *
 * Return: NULL with an error saying why when the tlb_flush event cannot be
 * enabled here (no tracefs, not writable, no such event).
 */
struct tracefs *tracefs_open(unsigned nr_cpus, unsigned buffer_kb, GError **error);
/* Clear the buffer, size it, enable tlb:tlb_flush only... and tracing. */
bool tracefs_start(struct tracefs *t, GError **error);
/* Disable the event, check nothing was lost, count the buffer into @c. */
bool tracefs_stop(struct tracefs *t, struct tracefs_counts *c, GError **error);
/* Remove the instance (and unmount what was mounted); NULL is a no-op. */
void tracefs_close(struct tracefs *t);
/* The instance in use ("/sys/kernel/tracing/instances/tlbsim-native-PID"). */
const char *tracefs_dir(const struct tracefs *t);

#endif
