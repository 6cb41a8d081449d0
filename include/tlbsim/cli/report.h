#ifndef TLBSIM_REPORT_H
#define TLBSIM_REPORT_H
/*
 * Output: the CSV row per run, the per-CPU CSV, and the human summary line.
 * Columns are declared once, in a table in report.c; README documents each.
 * Every figure is computed with integer arithmetic, so the same run prints
 * the same bytes on any machine.
 */
#include <stdbool.h>
#include <glib.h>
#include "tlbsim/sim/sim.h"

struct report_meta {
	const char *topology;
	const char *workload;
	const char *policy;
	uint64_t seed;
	const struct topology *topo;
	const struct workload *w;
	bool host_time;      /* fill host_seconds (the only host-dependent column) */
	double host_seconds;
	bool sampled; /* --sample: sample_windows and the *_rel_ci95 columns follow */
	/* Leading columns' values (a sweep's run index and grid point, --label),
	 * NULL-terminated, one per name given to report_csv_header(); NULL: none. */
	const char *const *label_values;
};

/* @label_names: leading columns before the run's own, NULL-terminated; NULL:
 * none.  Check each with report_check_label() first. */
/* Appends @s as one CSV field, quoted only if it needs to be (RFC 4180). */
void report_csv_field(GString *out, const char *s);
void report_csv_header(GString *out, const char *const *label_names, bool sampled);
void report_csv_row(GString *out, const struct report_meta *meta, const struct sim_result *r);

/*
 * Did the run break what @policy promises (--strict)?  A frame reached again
 * through a stale entry (stale_reuse) or a PDE cached into a freed table
 * (stale_pwc) always; any stale hit where the initiator waits for every
 * target (flush_completion "remote_flush_done", Linux, or "handler_entry",
 * whose targets flush before user code runs again).  A lazy mechanism's
 * stale hits on frames it still holds are its design (LATR).
 */
bool report_stale_violation(const struct policy *policy, const struct sim_result *r);
/*
 * The columns that tie the per-CPU CSV and the time series to the run's row:
 * the labels (@label_names, as report_csv_header() takes them), topology,
 * workload, policy, seed, and clock_ghz (the clock the row's X_ns columns
 * were computed at; those files count cycles).  Each field is followed by
 * its comma.
 */
void report_run_key_header(GString *out, const char *const *label_names);
void report_run_key(GString *out, const struct report_meta *meta);
/* Header and one row per CPU: the run key, the CPU's place, its counters. */
void report_per_cpu_csv(GString *out, const struct report_meta *meta,
			const char *const *label_names, const struct sim_result *r);
/* The workload's summary template filled in (no newline). */
char *report_summary(const struct report_meta *meta, const struct sim_result *r);

/* @cycles in ps at the run's clock, as the CSV's X_ns columns have them
 * (in thousandths). */
uint64_t report_cycles_to_ps(const struct report_meta *meta, uint64_t cycles);

/* Column names in order, NULL-terminated (for docs and tests). */
const char *const *report_columns(void);
/* A label may name a leading column if it is not empty, holds no control
 * character and is not a run column's name (one header, no repeated name). */
bool report_check_label(const char *name, GError **error);

#endif
