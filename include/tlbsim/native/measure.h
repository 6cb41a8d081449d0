#ifndef TLBSIM_NATIVE_MEASURE_H
#define TLBSIM_NATIVE_MEASURE_H
/*
 * What a native run measured, written as tlbsim's CSV: the same header
 * (report_columns(), after the --label columns), one row whose columns hold
 * what was measured and are empty where nothing was (docs/native.md lists
 * which).  Times are wall-clock ns; the figures use report.c's definitions.
 */
#include <stdint.h>
#include <glib.h>
#include "tlbsim/native/procstat.h"
#include "tlbsim/native/tracefs.h"

struct measure {
	const char *workload;
	const char *policy; /* "linux-" + uname -r */
	uint64_t seed;
	unsigned nr_cpus;
	const char *op;   /* the report op's name, NULL: none */
	uint64_t threads; /* tasks that made an access */
	uint64_t access_tasks;
	uint64_t window_ns; /* start barrier to the last task's end */
	uint64_t phase_ns;  /* the report phase, or the window */
	uint64_t op_count;
	uint64_t op_ns_sum;
	uint64_t accesses;
	uint64_t round_accesses;            /* accesses of completed rounds */
	unsigned ghz_milli;                 /* the --ghz clock, in thousandths */
	const struct procstat *proc;        /* deltas; NULL: not read */
	const struct tracefs_counts *trace; /* NULL: not traced */
	const char *const *label_values;    /* NULL-terminated; NULL: none */
};

/* One row under report_csv_header()'s header. */
void measure_csv_row(GString *out, const struct measure *m);
/* The per-CPU CSV, report_per_cpu_csv()'s header and one row per CPU. */
void measure_per_cpu_csv(GString *out, const struct measure *m, const char *const *label_names);

#endif
