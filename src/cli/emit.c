/*
 * The commands of tlbsim sweep --emit-commands (emit.h).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/emit.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

/* Characters a shell word may hold unquoted: emitted commands stay readable. */
static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!g_ascii_isalnum(*p) && !strchr("_./=:,+@%-", *p))
			return false;
	return true;
}

static void append_word(GString *line, const char *word)
{
	if (line->len)
		g_string_append_c(line, ' ');
	if (shell_safe(word)) {
		g_string_append(line, word);
	} else {
		char *quoted = g_shell_quote(word);
		g_string_append(line, quoted);
		g_free(quoted);
	}
}

/* This program's absolute path, for commands that run elsewhere. */
static char *program_path(const char *argv0)
{
	char *self = g_file_read_link("/proc/self/exe", NULL);
	if (self)
		return self;
	char *found = strchr(argv0, '/') ? g_strdup(argv0) : g_find_program_in_path(argv0);
	char *path = g_canonicalize_filename(found ? found : argv0, NULL);
	g_free(found);
	return path;
}

/*
 * --emit-commands: one single-run command per grid point, in grid order.
 * To stdout, the first run prints the header and the others --no-header, so
 * that "parallel -k :::: jobs.txt" prints the sweep's CSV.  With --append -o
 * FILE, every command appends to FILE and whichever comes first writes the
 * header (append_locked()).  Built whole before printing: an error prints
 * nothing.
 */
int emit_commands(const struct options *o, const struct sweep_grid *grid,
			 const char *argv0)
{
	struct sweep_config config;
	options_sweep_config(o, &config);
	GError *error = NULL;
	char *self = program_path(argv0);
	char *output = o->output ? g_canonicalize_filename(o->output, NULL) : NULL;
	GString *all = g_string_new(NULL);
	GString *line = g_string_new(NULL);
	int code = EXIT_OK;
	for (size_t i = 0; i < sweep_grid_size(grid); i++) {
		char **args = sweep_command(grid, &config, i, &error);
		if (!args) {
			g_printerr("tlbsim sweep: %s\n", error->message);
			code = cli_exit_code(error);
			g_error_free(error);
			break;
		}
		g_string_truncate(line, 0);
		append_word(line, self);
		for (char **a = args; *a; a++)
			append_word(line, *a);
		g_strfreev(args);
		append_word(line, "-q");
		if (o->strict)
			append_word(line, "--strict");
		if (output) {
			append_word(line, "--append");
			append_word(line, "-o");
			append_word(line, output);
		}
		if (o->no_header || (!output && i > 0))
			append_word(line, "--no-header");
		g_string_append_len(all, line->str, (gssize)line->len);
		g_string_append_c(all, '\n');
	}
	if (code == EXIT_OK && !output_write_fd(STDOUT_FILENO, all->str, all->len)) {
		g_printerr("tlbsim sweep: cannot write the commands to standard output: %s\n",
			   g_strerror(errno));
		code = EXIT_INPUT;
	}
	g_string_free(line, TRUE);
	g_string_free(all, TRUE);
	g_free(output);
	g_free(self);
	return code;
}
