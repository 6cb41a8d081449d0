/*
 * The ops of a workload's programs (workload.h): each op's keys, its
 * expressions checked against the scope it stands in (loop variables nest),
 * its region, chunk and flag names resolved.
 */
#include <string.h>
#include "tlbsim/util/error.h"
#include "workload_impl.h"

static const char *const op_names[NR_OP_KINDS + 1] = {
	[OP_ACCESS] = "access",       [OP_MUNMAP] = "munmap",   [OP_MMAP] = "mmap",
	[OP_MPROTECT] = "mprotect",   [OP_MADVISE] = "madvise", [OP_SLEEP] = "sleep",
	[OP_YIELD] = "yield",         [OP_COMPUTE] = "compute", [OP_SET_FLAG] = "set_flag",
	[OP_WAIT_FLAG] = "wait_flag", [OP_LOOP] = "loop",       [OP_PHASE] = "phase",
	[OP_FORK] = "fork",
	[NR_OP_KINDS] = NULL,
};

/* Keys each op may have besides "op" and "comment". */
static const char *const *const op_keys[NR_OP_KINDS] = {
	[OP_ACCESS] = (const char *const[]){"op", "comment", "region", "chunk", "pattern", "pages",
					     "first", "rounds", "while_flag", "write", "cycles",
					     "loads", NULL},
	[OP_MUNMAP] = (const char *const[]){"op", "comment", "region", "chunk", NULL},
	[OP_MMAP] = (const char *const[]){"op", "comment", "region", "chunk", NULL},
	[OP_MPROTECT] = (const char *const[]){"op", "comment", "region", "chunk", "prot", NULL},
	[OP_MADVISE] = (const char *const[]){"op", "comment", "region", "chunk", "advice", "first",
					      "pages", NULL},
	[OP_SLEEP] = (const char *const[]){"op", "comment", "ns", "us", "ms", NULL},
	[OP_YIELD] = (const char *const[]){"op", "comment", NULL},
	[OP_COMPUTE] = (const char *const[]){"op", "comment", "cycles", NULL},
	[OP_SET_FLAG] = (const char *const[]){"op", "comment", "flag", "value", NULL},
	[OP_WAIT_FLAG] = (const char *const[]){"op", "comment", "flag", "value", NULL},
	[OP_LOOP] = (const char *const[]){"op", "comment", "count", "var", "body", NULL},
	[OP_PHASE] = (const char *const[]){"op", "comment", "name", "action", NULL},
	[OP_FORK] = (const char *const[]){"op", "comment", "count", NULL},
};

const char *workload_op_name(enum op_kind kind)
{
	return op_names[kind];
}

bool workload_ops_access(const struct op *ops, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++)
		if (ops[i].kind == OP_ACCESS ||
		    (ops[i].kind == OP_LOOP && workload_ops_access(ops[i].body, ops[i].nr_body)))
			return true;
	return false;
}

static bool parse_flag(const struct config_node *node, const char *key, struct workload *w,
		       unsigned *flag, GError **error)
{
	char *name = NULL;
	if (!config_get_string(node, key, true, &name, error))
		return false;
	*flag = workload_intern(&w->flag_names, &w->nr_flags, w->flag_index, name);
	g_free(name);
	return true;
}

/* A region of the task's own process: a task cannot touch another address space. */
static bool parse_region_ref(const struct config_node *node, const struct workload *w,
			     const struct scope *scope, unsigned *region, GError **error)
{
	bool ok = workload_find_name(node, "region", w->region_names, w->region_index, "region",
				     region, error);
	if (ok && w->regions[*region].mm != scope->mm) {
		struct config_node child = config_child(node, "region");
		config_set_error(error, &child,
				 "region \"%s\" belongs to process \"%s\", but this task runs in "
				 "process \"%s\"",
				 w->regions[*region].name, w->mm_names[w->regions[*region].mm],
				 w->mm_names[scope->mm]);
		ok = false;
	}
	return ok;
}

/* munmap / mmap / mprotect / madvise: a region and which chunk of it. */
static bool parse_chunk_op(const struct config_node *node, struct workload *w,
			   const struct scope *scope, struct op *op, GError **error)
{
	if (!parse_region_ref(node, w, scope, &op->region, error) ||
	    !workload_read_expr(node, "chunk", w->regions[op->region].chunks > 1, scope, &op->chunk,
				error))
		return false;
	if (!op->chunk)
		op->chunk = expr_constant(0);
	if (op->kind == OP_MPROTECT) {
		static const char *const prots[] = {"read", "write", NULL};
		int prot = 0;
		if (!config_get_enum(node, "prot", true, prots, &prot, error))
			return false;
		op->writable = prot == 1;
	}
	if (op->kind == OP_MADVISE) {
		static const char *const advice[] = {"dontneed", "pageout", NULL};
		int which = 0;
		if (!config_get_enum(node, "advice", true, advice, &which, error) ||
		    !workload_read_expr(node, "first", false, scope, &op->first, error) ||
		    !workload_read_expr(node, "pages", false, scope, &op->pages, error))
			return false;
		op->pageout = which == 1;
	}
	return true;
}

static bool parse_access(const struct config_node *node, struct workload *w,
			 const struct scope *scope, struct op *op, GError **error)
{
	static const char *const patterns[] = {"random", "sequential", NULL};
	/* Indexed by enum translate_overlap: dependent unless said otherwise. */
	static const char *const loads[] = {"dependent", "independent", NULL};
	int pattern = 0, overlap = 0;
	if (!parse_region_ref(node, w, scope, &op->region, error) ||
	    !workload_read_expr(node, "chunk", false, scope, &op->chunk, error) ||
	    !config_get_enum(node, "pattern", false, patterns, &pattern, error) ||
	    !workload_read_expr(node, "pages", true, scope, &op->pages, error) ||
	    !workload_read_expr(node, "first", false, scope, &op->first, error) ||
	    !workload_read_expr(node, "rounds", false, scope, &op->count, error) ||
	    !workload_read_expr(node, "write", false, scope, &op->write, error) ||
	    !workload_read_expr(node, "cycles", true, scope, &op->cycles, error) ||
	    !config_get_enum(node, "loads", false, loads, &overlap, error))
		return false;
	op->random = pattern == 0;
	op->independent = overlap == 1;
	if (op->random && op->first) {
		struct config_node child = config_child(node, "first");
		config_set_error(error, &child, "\"first\" applies to the sequential pattern only");
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(node->json, "while_flag")) {
		unsigned flag = 0;
		if (!parse_flag(node, "while_flag", w, &flag, error))
			return false;
		op->while_flag = (int)flag;
	}
	if (!op->count && op->while_flag < 0) {
		config_set_error(error, node, "an access op needs \"rounds\" or \"while_flag\" (or both)");
		return false;
	}
	if (!op->write)
		op->write = expr_constant(0);
	return true;
}

static bool parse_sleep(const struct config_node *node, const struct scope *scope, struct op *op,
			GError **error)
{
	static const struct {
		const char *key;
		int64_t scale;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}};
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (!cJSON_GetObjectItemCaseSensitive(node->json, units[i].key))
			continue;
		if (op->ns) {
			config_set_error(error, node, "give the duration once, in ns, us or ms");
			return false;
		}
		if (!workload_read_expr(node, units[i].key, true, scope, &op->ns, error))
			return false;
		op->ns_scale = units[i].scale;
	}
	if (!op->ns) {
		config_set_error(error, node, "missing the duration: \"ns\", \"us\" or \"ms\"");
		return false;
	}
	return true;
}

static bool parse_loop(const struct config_node *node, struct workload *w, struct scope *scope,
		       unsigned depth, struct op *op, GError **error)
{
	/*
	 * This loop is number depth + 1 counted from the outside; checked before
	 * its variable is pushed, since scope->vars holds WORKLOAD_MAX_DEPTH.
	 */
	if (depth >= WORKLOAD_MAX_DEPTH) {
		config_set_error(error, node, "loops nested deeper than %d", WORKLOAD_MAX_DEPTH);
		return false;
	}
	if (!workload_read_expr(node, "count", true, scope, &op->count, error) ||
	    !config_get_string(node, "var", false, &op->var, error))
		return false;
	bool pushed = false;
	if (op->var) {
		struct config_node child = config_child(node, "var");
		if (!workload_is_identifier(op->var)) {
			config_set_error(error, &child, "a variable name is letters, digits and _");
			return false;
		}
		if (workload_scope_has(scope, op->var) || strcmp(op->var, "thread") == 0 ||
		    strcmp(op->var, "task") == 0) {
			config_set_error(error, &child, "\"%s\" already names a variable here", op->var);
			return false;
		}
		scope->vars[scope->nr_vars++] = op->var;
		pushed = true;
	}
	struct config_node body = config_child(node, "body");
	bool ok = workload_parse_ops(&body, w, scope, depth + 1, &op->body, &op->nr_body, error);
	if (pushed)
		scope->nr_vars--;
	return ok;
}

static bool parse_op(const struct config_node *node, struct workload *w, struct scope *scope,
		     unsigned depth, struct op *op, GError **error)
{
	int kind = 0;
	op->while_flag = -1;
	op->path = g_strdup(node->path);
	if (!cJSON_IsObject(node->json)) {
		config_set_error(error, node, "expected an op object such as {\"op\": \"sleep\", \"ms\": 1}");
		return false;
	}
	if (!config_get_enum(node, "op", true, op_names, &kind, error))
		return false;
	op->kind = (enum op_kind)kind;
	if (!config_check_keys(node, op_keys[kind], error))
		return false;
	switch (op->kind) {
	case OP_ACCESS:
		return parse_access(node, w, scope, op, error);
	case OP_MUNMAP:
	case OP_MMAP:
	case OP_MPROTECT:
	case OP_MADVISE:
		return parse_chunk_op(node, w, scope, op, error);
	case OP_SLEEP:
		return parse_sleep(node, scope, op, error);
	case OP_YIELD:
		return true;
	case OP_COMPUTE:
		return workload_read_expr(node, "cycles", true, scope, &op->cycles, error);
	case OP_SET_FLAG:
	case OP_WAIT_FLAG:
		if (!parse_flag(node, "flag", w, &op->flag, error) ||
		    !workload_read_expr(node, "value", false, scope, &op->value, error))
			return false;
		if (!op->value)
			op->value = expr_constant(1);
		return true;
	case OP_LOOP:
		return parse_loop(node, w, scope, depth, op, error);
	case OP_FORK:
		if (!workload_read_expr(node, "count", false, scope, &op->count, error))
			return false;
		if (!op->count)
			op->count = expr_constant(1);
		return true;
	case OP_PHASE: {
		static const char *const actions[] = {"begin", "end", NULL};
		int action = 0;
		char *name = NULL;
		if (!config_get_string(node, "name", true, &name, error))
			return false;
		op->phase = workload_intern(&w->phase_names, &w->nr_phases, w->phase_index, name);
		g_free(name);
		if (!config_get_enum(node, "action", true, actions, &action, error))
			return false;
		op->begin = action == 0;
		return true;
	}
	case NR_OP_KINDS:
		break;
	}
	g_assert_not_reached();
}

bool workload_parse_ops(const struct config_node *node, struct workload *w, struct scope *scope,
		      unsigned depth, struct op **ops, unsigned *nr, GError **error)
{
	g_assert(depth <= WORKLOAD_MAX_DEPTH);
	if (!cJSON_IsArray(node->json) || cJSON_GetArraySize(node->json) == 0) {
		config_set_error(error, node, "expected a non-empty array of ops");
		return false;
	}
	int n = cJSON_GetArraySize(node->json);
	*ops = g_new0(struct op, n);
	int i = 0;
	for (const cJSON *item = node->json->child; item; item = item->next, i++) {
		struct config_node child = config_node_element(node, item, i);
		(*nr)++;
		if (!stop_check(scope->stop, error) ||
		    !parse_op(&child, w, scope, depth, &(*ops)[i], error))
			return false;
	}
	return true;
}

/* ---- tasks, cross-checks, report ---------------------------------------- */
