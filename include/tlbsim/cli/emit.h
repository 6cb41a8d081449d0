#ifndef TLBSIM_EMIT_H
#define TLBSIM_EMIT_H
/*
 * tlbsim sweep --emit-commands: the single-run command each grid point stands
 * for, one line each, every word quoted for the shell where needed.
 */
#include "tlbsim/cli/options.h"

/* Prints the commands on stdout; returns the exit code (cli.h).  @argv0:
 * how this program was called, for its absolute path. */
int emit_commands(const struct options *o, const struct sweep_grid *grid, const char *argv0);

#endif
