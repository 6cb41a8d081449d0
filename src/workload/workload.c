/*
 * Workload files: parse, resolve names, check every expression's variables
 * against its scope, and evaluate load-time sizes.  The programs' ops are
 * workload_ops.c's.  Nothing here runs; the interpreter (interp.c) executes
 * the ops.
 *
 * Invariant: a workload that loads has no dangling name (region, flag, phase,
 * process, variable), every region fits the limits, and each flag waited for
 * is set somewhere.
 */
#include <string.h>
#include "tlbsim/util/error.h"
#include "workload_impl.h"

/* Page-table entries a run may hold: 64 Mi PTEs, about 1 GiB of host memory. */
#define WORKLOAD_MAX_PTES (UINT64_C(64) << 20)
#define WORKLOAD_MAX_TASKS 65536
#define WORKLOAD_MAX_CHUNKS (UINT64_C(1) << 22)

static const char *const workload_keys[] = {"name",    "description", "imitates", "simplified",
					     "comment", "params",      "processes", "regions",
					     "tasks",   "report",
					     "$schema", /* docs/schema/workload.schema.json */
					     NULL};
static const char *const region_keys[] = {"name",	 "comment", "process", "size",
					  "chunks",	 "chunk_size", "page_size", "hugetlb",
					  "shared",	 "populate", "placement", NULL};
static const char *const task_keys[] = {"name", "comment", "count", "cpu", "process", "program",
					NULL};
static const char *const report_keys[] = {"op", "phase", "summary", "comment", NULL};
static const char *const populate_names[] = {"none", "first", "all", NULL};
static const char *const placement_names[] = {"aligned", "aslr", NULL};

/* Placeholders a summary template may use (filled by report.c). */
static const char *const summary_fields[] = {
	"phase_ms", "phase_ns", "op", "op_count", "op_ns_per_call", "op_ns_mean", "op_per_sec",
	"accesses_per_thread_ms", "access_cost_ns", "threads", "accesses", NULL,
};

static bool scope_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct workload *w = ctx;
	return workload_param(w, name, value);
}

struct load_ctx {
	const struct workload *w;
	unsigned nr_cpus;
	const struct stop *stop;
};

static bool load_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct load_ctx *lc = ctx;
	if (strcmp(name, "cpus") == 0) {
		*value = lc->nr_cpus;
		return true;
	}
	return scope_lookup((void *)lc->w, name, value);
}

/* Evaluate a load-time expression into [min, max]. */
static bool eval_load(const struct config_node *node, const char *key, const struct expr *expr,
		      const struct load_ctx *lc, int64_t min, int64_t max, int64_t *out,
		      GError **error)
{
	struct config_node child = config_child(node, key);
	GError *eval_error = NULL;
	if (!expr_eval(expr, load_lookup, (void *)lc, out, &eval_error)) {
		config_set_error(error, &child, "%s", eval_error->message);
		g_error_free(eval_error);
		return false;
	}
	if (*out < min || *out > max) {
		config_set_error(error, &child, "expected a value in [%" G_GINT64_FORMAT
				 ", %" G_GINT64_FORMAT "], got %" G_GINT64_FORMAT " (from \"%s\")",
				 min, max, *out, expr_text(expr));
		return false;
	}
	return true;
}

/* ---- params, processes, regions ----------------------------------------- */

static bool parse_params(const struct config_node *root, struct workload *w, unsigned nr_cpus,
			 GError **error)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(root->json, "params");
	if (!params)
		return true;
	struct config_node node = config_child(root, "params");
	if (!cJSON_IsObject(params)) {
		config_set_error(error, &node, "expected an object of name: value");
		return false;
	}
	struct scope scope = {.w = w};
	struct load_ctx lc = {.w = w, .nr_cpus = nr_cpus};
	const cJSON *item;
	w->params = g_new0(struct workload_param, cJSON_GetArraySize(params));
	cJSON_ArrayForEach(item, params)
	{
		struct config_node child = config_node_member(&node, item, item->string);
		if (!workload_is_identifier(item->string)) {
			config_set_error(error, &child, "a parameter name is letters, digits and _");
			return false;
		}
		if (strcmp(item->string, "thread") == 0 || strcmp(item->string, "task") == 0 ||
		    strcmp(item->string, "cpus") == 0) {
			config_set_error(error, &child, "\"%s\" is a built-in variable", item->string);
			return false;
		}
		struct expr *expr = NULL;
		/* Parameters see only the ones before them. */
		if (!workload_read_expr(&node, item->string, true, &scope, &expr, error))
			return false;
		int64_t value = 0;
		bool ok = eval_load(&node, item->string, expr, &lc, INT64_MIN, INT64_MAX, &value,
				    error);
		expr_free(expr);
		if (!ok)
			return false;
		w->params[w->nr_params] = (struct workload_param){g_strdup(item->string), value};
		workload_index_add(w->param_index, w->params[w->nr_params].name, w->nr_params);
		w->nr_params++;
	}
	return true;
}

static bool parse_processes(const struct config_node *root, struct workload *w, GError **error)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root->json, "processes");
	if (!list) {
		workload_intern(&w->mm_names, &w->nr_mms, w->mm_index, "main");
		return true;
	}
	struct config_node node = config_child(root, "processes");
	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
		config_set_error(error, &node, "expected a non-empty array of process names");
		return false;
	}
	int i = 0;
	for (const cJSON *item = list->child; item; item = item->next, i++) {
		struct config_node child = config_node_element(&node, item, i);
		if (!cJSON_IsString(item)) {
			config_set_error(error, &child, "expected a process name (string)");
			return false;
		}
		unsigned before = w->nr_mms;
		if (workload_intern(&w->mm_names, &w->nr_mms, w->mm_index, item->valuestring) !=
		    before) {
			config_set_error(error, &child, "duplicate process \"%s\"", item->valuestring);
			return false;
		}
	}
	return true;
}

static bool read_process(const struct config_node *node, const struct workload *w, unsigned *mm,
			 GError **error)
{
	*mm = 0;
	if (!cJSON_GetObjectItemCaseSensitive(node->json, "process"))
		return true;
	return workload_find_name(node, "process", w->mm_names, w->mm_index, "process", mm, error);
}

static bool parse_region(const struct config_node *node, struct workload *w,
			 const struct load_ctx *lc, struct region *r, uint64_t *ptes,
			 GError **error)
{
	struct scope scope = {.w = w};
	int populate = POPULATE_NONE;
	int placement = PLACEMENT_ALIGNED;
	char *page_size = NULL;
	bool hugetlb = false, shared = false;
	struct expr *size = NULL, *chunks = NULL, *chunk_size = NULL;
	bool ok = false;

	if (!config_check_keys(node, region_keys, error) ||
	    !config_get_string(node, "name", true, &r->name, error) ||
	    !read_process(node, w, &r->mm, error) ||
	    !config_get_string(node, "page_size", false, &page_size, error) ||
	    !config_get_bool(node, "hugetlb", false, &hugetlb, error) ||
	    !config_get_bool(node, "shared", false, &shared, error) ||
	    !config_get_enum(node, "populate", false, populate_names, &populate, error) ||
	    !config_get_enum(node, "placement", false, placement_names, &placement, error) ||
	    !workload_read_expr(node, "size", false, &scope, &size, error) ||
	    !workload_read_expr(node, "chunks", false, &scope, &chunks, error) ||
	    !workload_read_expr(node, "chunk_size", false, &scope, &chunk_size, error))
		goto out;
	r->populate = (enum region_populate)populate;
	r->hugetlb = hugetlb;
	r->shared = shared;
	if (hugetlb && !(page_size && strcmp(page_size, "2M") == 0)) {
		struct config_node child = config_child(node, "hugetlb");
		config_set_error(error, &child, "a hugetlb region needs \"page_size\": \"2M\"");
		goto out;
	}
	r->page_size = PS_4K;
	if (page_size) {
		int ps = page_size_from_name(page_size);
		if (ps < 0 || ps == PS_1G) {
			struct config_node child = config_child(node, "page_size");
			config_set_error(error, &child, "expected \"4K\" or \"2M\", got \"%s\"",
					 page_size);
			goto out;
		}
		r->page_size = (enum page_size)ps;
	}
	r->placement = (enum region_placement)placement;
	if (r->placement == PLACEMENT_ASLR && r->page_size != PS_4K) {
		/* The kernel aligns hugetlb mappings, and a THP region is modelled
		 * as huge pages throughout, which needs alignment too. */
		struct config_node child = config_child(node, "placement");
		config_set_error(error, &child,
				 "\"aslr\" needs 4K pages: a 2M region is always 2 MiB aligned");
		goto out;
	}
	uint64_t unit = page_size_bytes(r->page_size);
	int64_t v = 0;
	if (size && (chunks || chunk_size)) {
		config_set_error(error, node, "give either \"size\" or \"chunks\" with \"chunk_size\"");
		goto out;
	}
	if (size) {
		if (!eval_load(node, "size", size, lc, (int64_t)unit, INT64_C(1) << 46, &v, error))
			goto out;
		r->chunks = 1;
		r->chunk_bytes = (uint64_t)v;
	} else if (chunks && chunk_size) {
		if (!eval_load(node, "chunks", chunks, lc, 1, (int64_t)WORKLOAD_MAX_CHUNKS, &v, error))
			goto out;
		r->chunks = (uint64_t)v;
		if (!eval_load(node, "chunk_size", chunk_size, lc, (int64_t)unit, INT64_C(1) << 40,
			       &v, error))
			goto out;
		r->chunk_bytes = (uint64_t)v;
	} else {
		config_set_error(error, node, "missing \"size\" (or \"chunks\" with \"chunk_size\")");
		goto out;
	}
	if (r->chunk_bytes % unit) {
		struct config_node child = config_child(node, size ? "size" : "chunk_size");
		config_set_error(error, &child, "%" G_GUINT64_FORMAT " bytes is not a multiple of the %s page size",
				 r->chunk_bytes, page_size_name(r->page_size));
		goto out;
	}
	*ptes += r->chunks * (r->chunk_bytes / unit);
	if (*ptes > WORKLOAD_MAX_PTES) {
		config_set_error(error, node, "the regions so far need %" G_GUINT64_FORMAT
				 " page-table entries; the limit is %" G_GUINT64_FORMAT
				 " (about 1 GiB of host memory)", *ptes, WORKLOAD_MAX_PTES);
		goto out;
	}
	ok = true;
out:
	g_free(page_size);
	expr_free(size);
	expr_free(chunks);
	expr_free(chunk_size);
	return ok;
}

static bool parse_regions(const struct config_node *root, struct workload *w,
			  const struct load_ctx *lc, GError **error)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root->json, "regions");
	struct config_node node = config_child(root, "regions");
	if (!list)
		return true;
	if (!cJSON_IsArray(list)) {
		config_set_error(error, &node, "expected an array of regions");
		return false;
	}
	uint64_t ptes = 0;
	int n = cJSON_GetArraySize(list);
	w->regions = g_new0(struct region, n);
	w->region_names = g_new0(char *, n + 1);
	int i = 0;
	for (const cJSON *item = list->child; item; item = item->next, i++) {
		struct config_node child = config_node_element(&node, item, i);
		struct region *r = &w->regions[w->nr_regions++];
		if (!stop_check(lc->stop, error) || !parse_region(&child, w, lc, r, &ptes, error))
			return false;
		if (workload_index_find(w->region_index, r->name) >= 0) {
			config_set_error(error, &child, "duplicate region name \"%s\"", r->name);
			return false;
		}
		workload_index_add(w->region_index, r->name, (unsigned)i);
		w->region_names[i] = r->name;
	}
	return true;
}

static bool parse_tasks(const struct config_node *root, struct workload *w,
			const struct load_ctx *lc, GError **error)
{
	struct config_node node = config_child(root, "tasks");
	if (!cJSON_IsArray(node.json) || cJSON_GetArraySize(node.json) == 0) {
		config_set_error(error, &node, "expected a non-empty array of task groups");
		return false;
	}
	int n = cJSON_GetArraySize(node.json);
	w->groups = g_new0(struct task_group, n);
	uint64_t total = 0;
	int i = 0;
	for (const cJSON *item = node.json->child; item; item = item->next, i++) {
		struct config_node child = config_node_element(&node, item, i);
		struct task_group *g = &w->groups[w->nr_groups++];
		struct scope load_scope = {.w = w};
		struct scope run_scope = {.w = w, .runtime = true, .stop = lc->stop};
		struct expr *count = NULL;
		int64_t v = 1;
		if (!config_check_keys(&child, task_keys, error) ||
		    !config_get_string(&child, "name", true, &g->name, error) ||
		    !workload_read_expr(&child, "count", false, &load_scope, &count, error))
			return false;
		/* Task names label CSV columns, traces and messages: one each. */
		if (workload_index_find(w->group_index, g->name) >= 0) {
			expr_free(count);
			config_set_error(error, &child, "duplicate task name \"%s\"", g->name);
			return false;
		}
		workload_index_add(w->group_index, g->name, (unsigned)i);
		bool ok = !count || eval_load(&child, "count", count, lc, 1, WORKLOAD_MAX_TASKS, &v, error);
		expr_free(count);
		if (!ok)
			return false;
		g->count = (uint64_t)v;
		total += g->count;
		if (total > WORKLOAD_MAX_TASKS) {
			config_set_error(error, &child, "more than %d tasks in all", WORKLOAD_MAX_TASKS);
			return false;
		}
		struct config_node program = config_child(&child, "program");
		if (!workload_read_expr(&child, "cpu", false, &run_scope, &g->cpu, error) ||
		    !read_process(&child, w, &g->mm, error))
			return false;
		run_scope.mm = g->mm;
		if (!workload_parse_ops(&program, w, &run_scope, 0, &g->ops, &g->nr_ops, error))
			return false;
	}
	return true;
}

struct usage {
	bool *flag_set;
	bool *flag_waited;
	bool *flag_looped; /* an access's while_flag */
	bool *phase_begun;
	bool *phase_ended;
	int first_syscall;
};

static void collect_usage(const struct op *ops, unsigned nr, struct usage *u)
{
	for (unsigned i = 0; i < nr; i++) {
		const struct op *op = &ops[i];
		switch (op->kind) {
		case OP_SET_FLAG:
			u->flag_set[op->flag] = true;
			break;
		case OP_WAIT_FLAG:
			u->flag_waited[op->flag] = true;
			break;
		case OP_ACCESS:
			if (op->while_flag >= 0)
				u->flag_looped[op->while_flag] = true;
			break;
		case OP_PHASE:
			if (op->begin)
				u->phase_begun[op->phase] = true;
			else
				u->phase_ended[op->phase] = true;
			break;
		case OP_MUNMAP:
		case OP_MMAP:
		case OP_MPROTECT:
		case OP_MADVISE:
		case OP_FORK:
			if (u->first_syscall < 0)
				u->first_syscall = op->kind;
			break;
		case OP_LOOP:
			collect_usage(op->body, op->nr_body, u);
			break;
		default:
			break;
		}
	}
}

static bool check_usage(const struct config_node *root, struct workload *w, GError **error)
{
	struct usage u = {
		.flag_set = g_new0(bool, w->nr_flags + 1),
		.flag_waited = g_new0(bool, w->nr_flags + 1),
		.flag_looped = g_new0(bool, w->nr_flags + 1),
		.phase_begun = g_new0(bool, w->nr_phases + 1),
		.phase_ended = g_new0(bool, w->nr_phases + 1),
		.first_syscall = -1,
	};
	bool ok = true;
	for (unsigned g = 0; g < w->nr_groups; g++)
		collect_usage(w->groups[g].ops, w->groups[g].nr_ops, &u);
	for (unsigned f = 0; ok && f < w->nr_flags; f++) {
		if ((u.flag_waited[f]) && !u.flag_set[f]) {
			config_set_error(error, root, "flag \"%s\" is waited for but never set: the run would never end",
					 w->flag_names[f]);
			ok = false;
		}
	}
	for (unsigned f = 0; ok && f < w->nr_flags; f++) {
		if (!u.flag_looped[f] || u.flag_set[f])
			continue;
		/* Flags start at 0: such a loop would make no round at all. */
		const char **set = g_new0(const char *, w->nr_flags + 1);
		for (unsigned g = 0, n = 0; g < w->nr_flags; g++)
			if (u.flag_set[g])
				set[n++] = w->flag_names[g];
		const char *near = config_suggest(w->flag_names[f], set);
		config_set_error(error, root,
				 "flag \"%s\" is an access's while_flag but never set: the loop would "
				 "make no round%s%s%s",
				 w->flag_names[f], near ? " (did you mean \"" : "", near ? near : "",
				 near ? "\"?)" : "");
		g_free(set);
		ok = false;
	}
	for (unsigned p = 0; ok && p < w->nr_phases; p++) {
		if (!u.phase_begun[p] || !u.phase_ended[p]) {
			config_set_error(error, root, "phase \"%s\" has no \"%s\" op", w->phase_names[p],
					 u.phase_begun[p] ? "end" : "begin");
			ok = false;
		}
	}
	w->report_op = u.first_syscall < 0 ? NR_OP_KINDS : (enum op_kind)u.first_syscall;
	g_free(u.flag_set);
	g_free(u.flag_waited);
	g_free(u.flag_looped);
	g_free(u.phase_begun);
	g_free(u.phase_ended);
	return ok;
}

static bool check_summary(const struct config_node *node, const char *summary, GError **error)
{
	for (const char *p = strchr(summary, '{'); p; p = strchr(p + 1, '{')) {
		const char *close = strchr(p, '}');
		struct config_node child = config_child(node, "summary");
		if (!close) {
			config_set_error(error, &child, "unclosed '{' in the summary template");
			return false;
		}
		char *field = g_strndup(p + 1, (gsize)(close - p - 1));
		bool known = g_strv_contains(summary_fields, field);
		if (!known) {
			const char *hint = config_suggest(field, summary_fields);
			config_set_error(error, &child, "unknown placeholder {%s}%s%s%s", field,
					 hint ? " (did you mean {" : "", hint ? hint : "",
					 hint ? "}?)" : "");
		}
		g_free(field);
		if (!known)
			return false;
	}
	return true;
}

static bool parse_report(const struct config_node *root, struct workload *w, GError **error)
{
	w->report_phase = -1;
	if (!cJSON_GetObjectItemCaseSensitive(root->json, "report"))
		return true;
	struct config_node node = config_child(root, "report");
	static const char *const syscall_names[] = {"munmap", "mmap", "mprotect", "madvise", "fork",
						     NULL};
	static const enum op_kind syscall_kinds[] = {OP_MUNMAP, OP_MMAP, OP_MPROTECT, OP_MADVISE,
						     OP_FORK};
	int op = -1;
	if (!config_check_keys(&node, report_keys, error) ||
	    !config_get_enum(&node, "op", false, syscall_names, &op, error) ||
	    !config_get_string(&node, "summary", false, &w->summary, error))
		return false;
	if (op >= 0)
		w->report_op = syscall_kinds[op];
	if (cJSON_GetObjectItemCaseSensitive(node.json, "phase")) {
		unsigned phase = 0;
		if (!workload_find_name(&node, "phase", w->phase_names, w->phase_index, "phase",
					&phase, error))
			return false;
		w->report_phase = (int)phase;
	}
	return !w->summary || check_summary(&node, w->summary, error);
}

struct workload *workload_from_json(const cJSON *json, const char *file, unsigned nr_cpus,
				    const struct stop *stop, GError **error)
{
	struct config_node root = config_root(json, file);
	struct workload *w = g_new0(struct workload, 1);
	struct load_ctx lc = {.w = w, .nr_cpus = nr_cpus, .stop = stop};
	w->param_index = workload_index_new();
	w->mm_index = workload_index_new();
	w->region_index = workload_index_new();
	w->flag_index = workload_index_new();
	w->phase_index = workload_index_new();
	w->group_index = workload_index_new();
	if (!config_check_keys(&root, workload_keys, error) ||
	    !config_get_string(&root, "name", true, &w->name, error) ||
	    !config_get_string(&root, "description", false, &w->description, error) ||
	    !config_get_string(&root, "imitates", false, &w->imitates, error) ||
	    !config_get_string(&root, "simplified", false, &w->simplified, error) ||
	    !parse_params(&root, w, nr_cpus, error) || !parse_processes(&root, w, error) ||
	    !parse_regions(&root, w, &lc, error) || !parse_tasks(&root, w, &lc, error) ||
	    !check_usage(&root, w, error) || !parse_report(&root, w, error)) {
		workload_free(w);
		return NULL;
	}
	return w;
}

static void free_ops(struct op *ops, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		struct op *op = &ops[i];
		g_free(op->path);
		expr_free(op->chunk);
		expr_free(op->count);
		expr_free(op->pages);
		expr_free(op->first);
		expr_free(op->cycles);
		expr_free(op->ns);
		expr_free(op->value);
		expr_free(op->write);
		g_free(op->var);
		free_ops(op->body, op->nr_body);
	}
	g_free(ops);
}

void workload_free(struct workload *w)
{
	if (!w)
		return;
	g_free(w->name);
	g_free(w->description);
	g_free(w->imitates);
	g_free(w->simplified);
	for (unsigned i = 0; i < w->nr_params; i++)
		g_free(w->params[i].name);
	g_free(w->params);
	g_strfreev(w->mm_names);
	for (unsigned i = 0; i < w->nr_regions; i++)
		g_free(w->regions[i].name);
	g_free(w->regions);
	for (unsigned i = 0; i < w->nr_groups; i++) {
		g_free(w->groups[i].name);
		expr_free(w->groups[i].cpu);
		free_ops(w->groups[i].ops, w->groups[i].nr_ops);
	}
	g_free(w->groups);
	g_strfreev(w->flag_names);
	g_strfreev(w->phase_names);
	g_free(w->summary);
	GHashTable *indexes[] = {w->param_index, w->mm_index,    w->region_index,
				 w->flag_index,  w->phase_index, w->group_index};
	for (size_t i = 0; i < G_N_ELEMENTS(indexes); i++)
		if (indexes[i])
			g_hash_table_destroy(indexes[i]);
	g_free(w->region_names);
	g_free(w);
}
