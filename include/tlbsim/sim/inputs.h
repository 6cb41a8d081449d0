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
#include <cjson/cJSON.h>
#include <glib.h>
#include "tlbsim/kernel/policy.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/stop.h"
#include "tlbsim/workload/workload.h"

enum inputs_kind { INPUT_TOPOLOGY, INPUT_WORKLOAD, INPUT_POLICY, NR_INPUT_KINDS };

struct inputs_request {
	const char *names[NR_INPUT_KINDS]; /* path or bare name each */
	const char *const *sets;           /* "topology.x.y=v" ...; NULL-terminated, may be NULL */
	/* Polled while the files are read and the workload is loaded (a
	 * signal, the wall-time budget); may be NULL. */
	const struct stop *stop;
};

struct inputs {
	char *paths[NR_INPUT_KINDS];
	char *names[NR_INPUT_KINDS]; /* the files' "name" fields */
	struct topology *topology;
	struct workload *workload;
	struct policy *policy;
	/* The machine's CPUs for a workload loaded without a topology
	 * (inputs_load_workload()); 0 otherwise. */
	unsigned nr_cpus;
};

/**
 * inputs_load() - resolve, parse, override and read the three inputs.
 *
 * Errors name the file and the JSON path, and the --set option they come
 * from: a --set whose key is given twice (inputs_check_sets()), a malformed
 * one, and one whose value the reader refuses ("--set
 * topology.costs.ipi_latency.sockett=5: FILE: $.costs.ipi_latency: unknown
 * key ..."): when the file alone does not fail so, the option without which
 * the error goes away is named in front of the file's message.  A stop
 * (request->stop) fails with stop_check()'s error, whatever else failed.
 * Loading takes time linear in the files' sizes (docs/limits.md).
 */
bool inputs_load(const struct inputs_request *request, struct inputs *inputs, GError **error);
void inputs_clear(struct inputs *inputs);
/**
 * inputs_load_workload() - inputs_load() for the workload alone, on a
 * machine of @nr_cpus CPUs (its $cpus and pinning checks): what
 * tlbsim-native runs, with no topology or policy.  request->names other
 * than the workload's are ignored; --set options of other kinds are skipped
 * (the caller refuses them).  Errors as inputs_load()'s.
 */
bool inputs_load_workload(const struct inputs_request *request, unsigned nr_cpus,
			  struct inputs *inputs, GError **error);

/**
 * inputs_keys() - the keys --set can change in the files @request names.
 *
 * For each kind whose name is given (the policy also when only the topology
 * is, as its default), with the kind's --set options applied: every leaf of
 * the file as "KIND.PATH" ("topology.costs.ipi_send", "topology.tlbs[0].ways",
 * a number with its source as one key), in file order, a workload's
 * parameters first in their short form ("workload.threads").  Left out: the
 * top-level "name" and text for people (comment, description, imitates,
 * simplified), and keys a file leaves at their default (--set may add them).
 *
 * Return: NULL-terminated (g_strfreev), or NULL with an error if a file does
 * not resolve or load, or a --set does not apply.
 */
char **inputs_keys(const struct inputs_request *request, GError **error);

/*
 * Resolve @name of @kind to a file path (g_free it).  A name with a '/' is a
 * path; any other is a file here if there is one, else a bundled name.
 * Errors (TLBSIM_ERROR_IO) say "no such file" or "is a directory" for a
 * name that is a path, ends in ".json" or is a directory here, and give a
 * suggestion or the bundled names otherwise.
 */
char *inputs_resolve(enum inputs_kind kind, const char *name, GError **error);
/**
 * inputs_load_tree() - the file at @path of @kind, parsed, its "extends"
 * chain merged in (docs/inputs.md, "Inheritance"): what the kind's reader
 * is given, before any --set.  A bundled base is found by name, any other
 * relative to the extending file.  Errors name the extending file, the
 * JSON path and the reason: a base that does not resolve, a key the base
 * lacks ("the base \"haswell-i7\" has no key \"socketz\" (did you mean
 * ...)"), a cycle, a chain deeper than 8.  cJSON_Delete() the result.
 */
cJSON *inputs_load_tree(enum inputs_kind kind, const char *path, const struct stop *stop,
			GError **error);
/* Bare names available for @kind, sorted, deduplicated (g_strfreev). */
char **inputs_list(enum inputs_kind kind);
/* "topologies", "workloads", "policies" */
const char *inputs_folder(enum inputs_kind kind);
/* "topology", "workload", "policy": the kind as options and keys name it. */
const char *inputs_kind_name(enum inputs_kind kind);
/*
 * The kind a --set or --vary key starts with, from its first @len bytes
 * ("workload" of "workload.threads"): both options parse KIND.PATH through
 * this.  -1 if it names none, with *@hint the closest kind name or NULL.
 */
int inputs_key_kind(const char *key, size_t len, const char **hint);

/*
 * The setting the key of a --set or --vary option names, for duplicate
 * checks (g_free): the @len bytes of @key ("workload.threads", without
 * "=VALUE"), with a "$." after the kind dropped and "workload.params.NAME"
 * written as its short form "workload.NAME", so that two spellings of one
 * setting compare equal.
 */
char *inputs_set_key(const char *key, size_t len);
/* Refuse two --set options of one setting (inputs_set_key()): the second
 * would silently win.  Errors: TLBSIM_ERROR_INVALID, naming both. */
bool inputs_check_sets(const char *const *sets, GError **error);

#endif
