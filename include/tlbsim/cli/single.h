#ifndef TLBSIM_SINGLE_H
#define TLBSIM_SINGLE_H
/*
 * One run of the tlbsim command: load the inputs, simulate, and write the
 * CSV and the other outputs all or nothing (output.h); and the listings of
 * bundled inputs.
 */
#include <stdatomic.h>
#include "tlbsim/cli/options.h"
#include "tlbsim/sim/inputs.h"

/* Returns the exit code (cli.h); messages go to stderr.  @cancel: set by a
 * signal, stops the run. */
int single_run(const struct options *o, const struct labels *labels,
	       const struct trace_options *trace, const atomic_int *cancel);

/* One line per bundled input of @kind: its name and, with @with_descriptions,
 * its description. */
int single_list(enum inputs_kind kind, bool with_descriptions);
/* --list-keys: one line per key --set can change in the inputs @o names
 * (inputs_keys()); at least one of them must be named. */
int single_list_keys(const struct options *o);

#endif
