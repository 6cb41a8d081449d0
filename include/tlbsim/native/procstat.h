#ifndef TLBSIM_NATIVE_PROCSTAT_H
#define TLBSIM_NATIVE_PROCSTAT_H
/*
 * The kernel's own counters around a native run: /proc/interrupts' "TLB"
 * row (per CPU, the shootdown IPIs it handled: flush_tlb_func() run for
 * another CPU, irq_tlb_count) and /proc/vmstat's nr_tlb_* items, which exist
 * only in kernels built with CONFIG_DEBUG_TLBFLUSH.  Both are system-wide:
 * a delta holds whatever else ran on the machine meanwhile.
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

/* The vmstat items tlbsim's CSV has columns of, in this order. */
#define PROCSTAT_NR_VMSTAT 4
extern const char *const procstat_vmstat_names[PROCSTAT_NR_VMSTAT];

struct procstat {
	unsigned nr_cpus;
	bool has_tlb_row; /* /proc/interrupts has a "TLB:" row (x86) */
	uint64_t *tlb;    /* per CPU, [nr_cpus] */
	bool has_vmstat;  /* all four nr_tlb_* items were found */
	uint64_t vmstat[PROCSTAT_NR_VMSTAT];
};

/**
 * procstat_parse_interrupts() - the "TLB:" row of /proc/interrupts @text.
 *
 * The header names the online CPUs ("CPU0 CPU2 ..."); each count lands at
 * its CPU's number, CPUs beyond @s->nr_cpus are ignored.  Sets
 * @s->has_tlb_row.  Errors: a header or TLB row that does not parse.
 */
bool procstat_parse_interrupts(const char *text, struct procstat *s, GError **error);
/* The nr_tlb_* items of /proc/vmstat @text; sets @s->has_vmstat. */
void procstat_parse_vmstat(const char *text, struct procstat *s);

/* A zeroed snapshot for @nr_cpus CPUs; procstat_clear() frees its array. */
void procstat_init(struct procstat *s, unsigned nr_cpus);
void procstat_clear(struct procstat *s);
/* Read both files now.  A file that cannot be read leaves its part absent. */
bool procstat_read(struct procstat *s, GError **error);
/* @after - @before into @delta (initialized for the same CPUs). */
void procstat_delta(const struct procstat *before, const struct procstat *after,
		    struct procstat *delta);

#endif
