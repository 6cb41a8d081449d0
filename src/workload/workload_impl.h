#ifndef TLBSIM_WORKLOAD_WORKLOAD_IMPL_H
#define TLBSIM_WORKLOAD_WORKLOAD_IMPL_H
/*
 * What the workload loader's parts share (workload.c: the file, params,
 * regions, tasks and checks; workload_ops.c: the programs; workload_scope.c:
 * names and expressions); private to workload/.
 */
#include <stdbool.h>
#include <glib.h>
#include "tlbsim/util/config.h"
#include "tlbsim/util/stop.h"
#include "tlbsim/workload/workload.h"

/* The variables an expression may use where it stands. */
struct scope {
	const struct workload *w;
	bool runtime;           /* $thread, $task and loop variables exist */
	unsigned mm;            /* at run time: the task's process */
	unsigned nr_vars;
	const char *vars[WORKLOAD_MAX_DEPTH];
	/* Not a variable: what a program's op parser polls once per op (a
	 * signal, the wall-time budget) wherever it stands; may be NULL. */
	const struct stop *stop;
};

/* Does @name exist in @scope ($cpus, $thread and $task at run time, loop
 * variables, params)? */
bool workload_scope_has(const struct scope *scope, const char *name);
/*
 * Read @key as an expression: a JSON integer, a boolean (0/1) or a string in
 * expr.h syntax whose variables all exist in @scope.  Absent and optional:
 * *out stays NULL.
 */
bool workload_read_expr(const struct config_node *node, const char *key, bool required,
			const struct scope *scope, struct expr **out, GError **error);
/* Is @s a name for a parameter or a loop variable: [A-Za-z_][A-Za-z0-9_]*? */
bool workload_is_identifier(const char *s);
/*
 * Lookups by name (workload.h): a hash table from a name (borrowed) to its
 * index + 1, so that loading is linear in the number of names.
 */
GHashTable *workload_index_new(void);
void workload_index_add(GHashTable *index, const char *name, unsigned i);
/* @name's index, or -1. */
int workload_index_find(const GHashTable *index, const char *name);
/* @name's index in the NULL-terminated *@names of *@nr (looked up in
 * @index), added to both if new. */
unsigned workload_intern(char ***names, unsigned *nr, GHashTable *index, const char *name);
/* String member @key, a name in @index (a @what: "region", "phase"); *out
 * its index.  An unknown name is an error with a suggestion among @names
 * (NULL-terminated; may be NULL). */
bool workload_find_name(const struct config_node *node, const char *key, char *const *names,
			const GHashTable *index, const char *what, unsigned *out, GError **error);
/* An op list (a task's program, a loop's body) at loop depth @depth. */
bool workload_parse_ops(const struct config_node *node, struct workload *w, struct scope *scope,
			unsigned depth, struct op **ops, unsigned *nr, GError **error);

#endif
