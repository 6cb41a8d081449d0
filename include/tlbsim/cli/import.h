#ifndef TLBSIM_IMPORT_H
#define TLBSIM_IMPORT_H
/*
 * "tlbsim import": a recorded stream of memory syscalls (strace -f -tt, perf
 * script of the syscalls:sys_enter_* / sys_exit_mmap tracepoints, or perf trace)
 * turned into a workload file (docs/import.md).  Each thread becomes a task
 * of one process, each mapping a region, each call an op on its region, and
 * the gaps between a thread's calls compute ops.  What the workload
 * vocabulary cannot say is approximated, and every approximation is counted
 * by kind: in the notes and in the workload's "simplified" field.
 */
#include <stdbool.h>
#include <glib.h>

enum import_format {
	IMPORT_AUTO,       /* guessed from the first line that is not blank */
	IMPORT_STRACE,     /* strace -f -tt -e trace=memory */
	IMPORT_PERF,       /* perf script of syscalls:sys_enter_{mmap,munmap,mprotect,madvise},
			      sys_exit_mmap */
	IMPORT_PERF_TRACE, /* perf trace -e mmap,munmap,mprotect,madvise */
};

/**
 * import_trace() - the workload JSON (cJSON_Print's text and a newline;
 * g_free it) for the trace @text.
 * @text:   the whole trace
 * @file:   its name in messages and, without its directories, in the workload
 * @format: IMPORT_AUTO to guess
 * @name:   the workload's "name"
 * @notes:  gets one line per kind of approximation ("N partial munmaps ...")
 * @error:  TLBSIM_ERROR_PARSE naming FILE:LINE and what was expected
 */
char *import_trace(const char *text, const char *file, enum import_format format, const char *name,
		   GString *notes, GError **error);

/* "tlbsim import [--format strace|perf|perf-trace] TRACE [-o OUT.json] [--name NAME]":
 * @argv[0] is the program.  Exit codes: cli.h. */
int import_main(int argc, char **argv);

#endif
