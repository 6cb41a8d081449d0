#ifndef TLBSIM_CLI_H
#define TLBSIM_CLI_H
/*
 * What the tlbsim command's parts share: its exit codes, and the CSV as an
 * output file.  The layer is POSIX code (_POSIX_C_SOURCE, set by the
 * build for every file that uses it).
 */
#include <stdbool.h>
#include <glib.h>
#include "tlbsim/cli/output.h"

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
 * The CSV, finished and ready for output_commit_all(): for @output
 * (replaced whole, or appended to under a lock with @append) or, with
 * @output NULL, for standard output.  @header may be NULL.
 */
struct output_file *cli_csv_output(const char *output, bool append, const char *header,
				  const char *rows, GError **error);

#endif
