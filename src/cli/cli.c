/*
 * The tlbsim command's exit codes and CSV writing (cli.h).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

int cli_exit_code(const GError *error)
{
	if (error->domain != TLBSIM_ERROR)
		return EXIT_INTERNAL;
	switch (error->code) {
	case TLBSIM_ERROR_LIMIT:
		return EXIT_BUDGET;
	case TLBSIM_ERROR_INTERRUPTED:
		return EXIT_INTERRUPTED;
	case TLBSIM_ERROR_INTERNAL:
		return EXIT_INTERNAL;
	default:
		return EXIT_INPUT;
	}
}

void cli_hold_signals(bool hold, sigset_t *saved)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (hold)
		pthread_sigmask(SIG_BLOCK, &set, saved);
	else
		pthread_sigmask(SIG_SETMASK, saved, NULL);
}


bool cli_write_csv(const char *output, bool append, const char *header, const char *rows,
		   GError **error)
{
	if (output && append)
		return output_append(output, header, rows, error);
	char *all = g_strconcat(header ? header : "", rows, NULL);
	bool ok;
	if (output)
		ok = output_write(output, all, strlen(all), error);
	else if (!(ok = output_write_fd(STDOUT_FILENO, all, strlen(all))))
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "cannot write the CSV to standard output: %s", g_strerror(errno));
	g_free(all);
	return ok;
}
