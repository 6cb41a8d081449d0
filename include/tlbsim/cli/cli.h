#ifndef TLBSIM_CLI_H
#define TLBSIM_CLI_H
/*
 * What the tlbsim command's parts share: its exit codes, and writing the CSV
 * with signals held.  The layer is POSIX code (_POSIX_C_SOURCE, set by the
 * build for every file that uses it).
 */
#include <signal.h>
#include <stdbool.h>
#include <glib.h>

enum exit_code {
	EXIT_OK = 0,
	EXIT_INTERNAL = 1,
	EXIT_INPUT = 2,
	EXIT_STALE = 3,
	EXIT_BUDGET = 4,
	EXIT_INTERRUPTED = 130, /* 128 + SIGINT, as shells report it */
};

/* The exit code for a failed run's @error (TLBSIM_ERROR codes). */
int cli_exit_code(const GError *error);

/*
 * While the outputs are written, a signal waits: no half-renamed file.  The
 * calling thread's mask: a sweep's workers may still exist, and a signal
 * they take only sets the flag, without interrupting this thread's writes.
 * @hold true saves the old mask in *@saved, false restores it.
 */
void cli_hold_signals(bool hold, sigset_t *saved);

/*
 * The CSV to @output (replaced atomically, or appended under a lock with
 * @append) or, with @output NULL, to stdout; @header may be NULL.  Call with
 * signals held.
 */
bool cli_write_csv(const char *output, bool append, const char *header, const char *rows,
		   GError **error);

#endif
