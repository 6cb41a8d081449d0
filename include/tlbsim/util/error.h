#ifndef TLBSIM_ERROR_H
#define TLBSIM_ERROR_H
/*
 * One GError domain for every recoverable error in tlbsim: bad input files, bad
 * command-line values, limits exceeded.  Broken invariants are bugs and abort
 * (g_assert) instead.
 */
#include <glib.h>

#define TLBSIM_ERROR (tlbsim_error_quark())

enum tlbsim_error_code {
	TLBSIM_ERROR_IO,       /* a file could not be read or written */
	TLBSIM_ERROR_PARSE,    /* not valid JSON / not a valid expression */
	TLBSIM_ERROR_INVALID,  /* well-formed, but a value is wrong or a key unknown */
	TLBSIM_ERROR_LIMIT,    /* a run exceeded its event, simulated- or wall-time budget */
	TLBSIM_ERROR_INTERRUPTED, /* stopped by a signal */
	TLBSIM_ERROR_INTERNAL, /* should not happen; reported as exit code 1 */
};

GQuark tlbsim_error_quark(void);

#endif
