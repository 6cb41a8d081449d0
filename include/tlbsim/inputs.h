#ifndef TLBSIM_INPUTS_H
#define TLBSIM_INPUTS_H
/*
 * Finding and loading a run's three input files: a topology, a workload and a
 * policy, each given as a path or as a bare name looked up in the bundled
 * folders (topologies/, workloads/, policies/; ".json" optional), with
 * "--set kind.path=value" overrides applied to the JSON before validation.
 *
 * Search order for bare names: $TLBSIM_DATADIR, the source tree the binary
 * was built from, the install prefix's share/tlbsim.
 */
#include <glib.h>
#include "tlbsim/policy.h"
#include "tlbsim/topology.h"
#include "tlbsim/workload.h"

enum inputs_kind { INPUT_TOPOLOGY, INPUT_WORKLOAD, INPUT_POLICY, NR_INPUT_KINDS };

struct inputs_request {
	const char *names[NR_INPUT_KINDS]; /* path or bare name each */
	const char *const *sets;           /* "topology.x.y=v" ...; NULL-terminated, may be NULL */
};

struct inputs {
	char *paths[NR_INPUT_KINDS];
	char *names[NR_INPUT_KINDS]; /* the files' "name" fields */
	struct topology *topology;
	struct workload *workload;
	struct policy *policy;
};

bool inputs_load(const struct inputs_request *request, struct inputs *inputs, GError **error);
void inputs_clear(struct inputs *inputs);

/* Resolve @name of @kind to a readable file path (g_free it). */
char *inputs_resolve(enum inputs_kind kind, const char *name, GError **error);
/* Bare names available for @kind, sorted, deduplicated (g_strfreev). */
char **inputs_list(enum inputs_kind kind);
/* "topologies", "workloads", "policies" */
const char *inputs_folder(enum inputs_kind kind);

#endif
