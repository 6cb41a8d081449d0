/*
 * The tlbsim command's exit codes and CSV writing (cli.h).
 */
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

struct output_file *cli_csv_output(const char *output, bool append, const char *header,
				  const char *rows, GError **error)
{
	struct output_file *f;
	if (!output)
		f = output_open_fd(STDOUT_FILENO, "the CSV to standard output", error);
	else if (append)
		f = output_open_append(output, header, error);
	else
		f = output_open(output, error);
	if (!f)
		return NULL;
	if (header && !(output && append))
		fputs(header, output_stream(f));
	fputs(rows, output_stream(f));
	if (!output_finish(f, error)) {
		output_free(f);
		f = NULL;
	}
	return f;
}
