/*
 * tlbsim import: a recorded memory-syscall stream to a workload (import.h,
 * docs/import.md).
 *
 * Two stages, as parse -> build elsewhere: a reader per format turns lines
 * into struct call (strace joins "<unfinished ...>" with "<... resumed>";
 * perf joins sys_enter_mmap with its sys_exit_mmap), and the builder maps
 * each call, in the order the trace completes them, onto the workload
 * vocabulary: a mapping is a region of one chunk, munmap/mmap/mprotect/
 * madvise ops name it, and a thread's gaps between calls are compute ops.
 *
 * Simplifications, each counted (enum approx) and reported:
 * - regions exist from time 0 (tlbsim lays them out before the run), so the
 *   first mmap() of a mapping is no op; an mmap() of the same address and
 *   size after its munmap() is an mmap op, exactly as tlbsim models it;
 * - the trace holds no memory accesses, so before each munmap, mprotect and
 *   madvise the task touches (once, "$touch" rounds) up to TOUCH_MAX_PAGES
 *   of the range, unless the mapping is PROT_NONE: otherwise nothing would
 *   be present to zap and no flush would happen;
 * - what tlbsim cannot say (part of a VMA unmapped, a call over several
 *   mappings, an address no traced mmap() gave) becomes the nearest thing it
 *   can, listed below.
 * Invariant: every op the builder emits is valid when it runs (it never
 * names an unmapped region, nor writes to a read-only one).
 */
#include "tlbsim/cli/import.h"
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "tlbsim/cli/cli.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

#define PAGE 4096u
/* 512 pages: one page-table page's worth, the most one touch faults in; a
 * real thread seldom dirtied more of a mapping between two calls. */
#define TOUCH_MAX_PAGES 512u
/* 1 GiB per region: 256 Ki PTEs, so that reservations (arenas, runtimes'
 * heaps) stay within the simulator's 64 Mi PTEs. */
#define REGION_MAX_BYTES (UINT64_C(1) << 30)

enum call_kind { CALL_MMAP, CALL_MUNMAP, CALL_MPROTECT, CALL_MADVISE, CALL_NONE };
static const char *const call_names[] = {"mmap", "munmap", "mprotect", "madvise", NULL};

enum advice { ADV_DONTNEED, ADV_FREE, ADV_PAGEOUT, ADV_OTHER };

struct call {
	enum call_kind kind;
	unsigned tid;
	unsigned line;
	uint64_t ns; /* when it started */
	uint64_t addr, len;
	uint64_t ret; /* mmap: the address it returned */
	bool failed;
	bool prot_write, prot_none;
	bool fixed, anon;
	enum advice advice;
};

enum approx {
	APPROX_PREMAPPED,
	APPROX_FILE,
	APPROX_UNPLACED,
	APPROX_PARTIAL_MUNMAP,
	APPROX_PARTIAL_MPROTECT,
	APPROX_PROT_NONE,
	APPROX_SPANNING,
	APPROX_FIXED_OVER,
	APPROX_CAPPED,
	APPROX_MADV_FREE,
	APPROX_MADV_OTHER,
	APPROX_FAILED,
	APPROX_UNFINISHED,
	APPROX_N
};

static const char *const approx_text[APPROX_N] = {
    [APPROX_PREMAPPED] = "mappings exist from time 0, not from their mmap() (tlbsim lays "
			 "regions out before the run; that mmap()'s own cost is left out)",
    [APPROX_FILE] = "file mappings became anonymous private regions",
    [APPROX_UNPLACED] = "calls named addresses no traced mmap() returned (mapped before the "
			"trace began): each went to a region of its own of the call's size",
    [APPROX_PARTIAL_MUNMAP] = "munmap()s of part of a mapping became MADV_DONTNEED of that "
			      "range (no VMA split); the region is unmapped with its last part",
    [APPROX_PARTIAL_MPROTECT] = "mprotect()s of part of a mapping changed all of it",
    [APPROX_PROT_NONE] = "mprotect(PROT_NONE)s became \"read\"",
    [APPROX_SPANNING] = "calls over several mappings became one op per mapping",
    [APPROX_FIXED_OVER] = "mmap(MAP_FIXED)s over a mapping were dropped (its region already "
			  "covers the range)",
    [APPROX_CAPPED] = "mappings larger than 1 GiB were cut to 1 GiB (ops beyond were dropped)",
    [APPROX_MADV_FREE] = "MADV_FREEs became MADV_DONTNEED",
    [APPROX_MADV_OTHER] = "madvise()s that flush nothing (MADV_HUGEPAGE, MADV_WILLNEED, ...) "
			  "were dropped",
    [APPROX_FAILED] = "failed calls were dropped",
    [APPROX_UNFINISHED] = "calls the trace never saw return were dropped",
};

struct region {
	uint64_t start, size; /* as traced; the workload's is min(size, REGION_MAX_BYTES) */
	uint64_t gone;        /* bytes unmapped by partial munmap()s */
	bool mapped;
	bool writable;  /* as tlbsim sees it: what a touch may do */
	bool prot_none; /* as the program saw it: nothing can be present */
	unsigned line;
	struct task *last_task; /* whose op on it came last, and that op */
	cJSON *last_op;
};

struct task {
	unsigned tid;
	uint64_t last_ns;
	cJSON *program;
};

struct builder {
	GArray *regions; /* struct region, in order of appearance = names r0, r1, ... */
	GPtrArray *tasks;
	GHashTable *task_of_tid;
	uint64_t t0, t_end;
	bool started;
	unsigned calls[CALL_NONE];
	unsigned ops[CALL_NONE];
	unsigned approx[APPROX_N];
	unsigned handoffs; /* flags h0, h1, ... */
};

/* ---- the builder: calls to ops ---- */

static uint64_t page_up(uint64_t n)
{
	return (n + PAGE - 1) / PAGE * PAGE;
}

static uint64_t region_sim_size(const struct region *r)
{
	return r->size < REGION_MAX_BYTES ? r->size : REGION_MAX_BYTES;
}

static struct task *builder_task(struct builder *b, const struct call *c)
{
	struct task *t = g_hash_table_lookup(b->task_of_tid, GUINT_TO_POINTER(c->tid));
	if (!t) {
		t = g_new0(struct task, 1);
		t->tid = c->tid;
		t->last_ns = b->t0;
		t->program = cJSON_CreateArray();
		g_ptr_array_add(b->tasks, t);
		g_hash_table_insert(b->task_of_tid, GUINT_TO_POINTER(c->tid), t);
	}
	return t;
}

/* The op's task, with a compute op for the time since its previous call. */
static cJSON *builder_op(struct builder *b, const struct call *c, const char *op)
{
	struct task *t = builder_task(b, c);
	if (c->ns > t->last_ns) {
		cJSON *gap = cJSON_CreateObject();
		char cycles[64];
		snprintf(cycles, sizeof(cycles), "%" PRIu64 " * $cycles_per_us / 1000",
			 c->ns - t->last_ns);
		cJSON_AddStringToObject(gap, "op", "compute");
		cJSON_AddStringToObject(gap, "cycles", cycles);
		cJSON_AddItemToArray(t->program, gap);
		t->last_ns = c->ns;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddItemToArray(t->program, o);
	return o;
}

/* Insert @item after @after in @array, keeping cJSON's links: next to the
 * following item, prev to the one before, the first item's prev to the
 * last (cJSON inserts only before an index). */
static void insert_after(cJSON *array, cJSON *after, cJSON *item)
{
	item->prev = after;
	item->next = after->next;
	if (after->next)
		after->next->prev = item;
	else
		array->child->prev = item;
	after->next = item;
}

/*
 * An op of @c's task on region @i.  If another task's op came last on it,
 * the trace's order between the two is kept: that op is followed by a
 * set_flag and this one preceded by its wait_flag.  Without it the
 * simulated threads, whose timing is not the traced one, could unmap,
 * write-protect or map again a region another thread is still using (an
 * address the allocator reuses across threads).
 */
static cJSON *builder_region_op(struct builder *b, const struct call *c, unsigned i, const char *op)
{
	struct region *r = &g_array_index(b->regions, struct region, i);
	struct task *t = builder_task(b, c);
	if (r->last_task && r->last_task != t) {
		char flag[32];
		snprintf(flag, sizeof(flag), "h%u", b->handoffs++);
		cJSON *set = cJSON_CreateObject();
		cJSON_AddStringToObject(set, "op", "set_flag");
		cJSON_AddStringToObject(set, "flag", flag);
		cJSON_AddNumberToObject(set, "value", 1);
		insert_after(r->last_task->program, r->last_op, set);
		cJSON *wait = builder_op(b, c, "wait_flag");
		cJSON_AddStringToObject(wait, "flag", flag);
		cJSON_AddNumberToObject(wait, "value", 1);
	}
	cJSON *o = builder_op(b, c, op);
	char name[32];
	snprintf(name, sizeof(name), "r%u", i);
	cJSON_AddStringToObject(o, "region", name);
	r->last_task = t;
	r->last_op = o;
	return o;
}

static unsigned builder_new_region(struct builder *b, uint64_t start, uint64_t len, bool none,
				   unsigned line)
{
	struct region r = {.start = start,
			   .size = page_up(len),
			   .mapped = true,
			   .writable = true,
			   .prot_none = none,
			   .line = line};
	if (r.size == 0)
		r.size = PAGE;
	if (r.size > REGION_MAX_BYTES)
		b->approx[APPROX_CAPPED]++;
	g_array_append_val(b->regions, r);
	return b->regions->len - 1;
}

/* Pages [@lo, @hi) of region @i clipped to its simulated size; false if
 * nothing is left. */
static bool clip_pages(const struct region *r, uint64_t lo, uint64_t hi, uint64_t *first,
		       uint64_t *pages)
{
	uint64_t end = region_sim_size(r) / PAGE;
	*first = (lo - r->start) / PAGE;
	uint64_t last = (hi - r->start + PAGE - 1) / PAGE;
	if (last > end)
		last = end;
	if (*first >= last)
		return false;
	*pages = last - *first;
	return true;
}

/* Write (or read, if read-only) up to TOUCH_MAX_PAGES of the range once, so
 * that the call that follows has present pages to zap or change. */
static void builder_touch(struct builder *b, const struct call *c, unsigned i, uint64_t first,
			  uint64_t pages)
{
	const struct region *r = &g_array_index(b->regions, struct region, i);
	if (r->prot_none)
		return;
	cJSON *o = builder_region_op(b, c, i, "access");
	cJSON_AddStringToObject(o, "pattern", "sequential");
	cJSON_AddNumberToObject(o, "first", (double)first);
	cJSON_AddNumberToObject(o, "pages",
				(double)(pages < TOUCH_MAX_PAGES ? pages : TOUCH_MAX_PAGES));
	cJSON_AddStringToObject(o, "rounds", "$touch");
	cJSON_AddNumberToObject(o, "write", r->writable);
	cJSON_AddNumberToObject(o, "cycles", 1);
}

static void builder_madvise_range(struct builder *b, const struct call *c, unsigned i, uint64_t lo,
				  uint64_t hi, const char *advice)
{
	struct region *r = &g_array_index(b->regions, struct region, i);
	uint64_t first, pages;
	if (!clip_pages(r, lo, hi, &first, &pages))
		return;
	builder_touch(b, c, i, first, pages);
	cJSON *o = builder_region_op(b, c, i, "madvise");
	cJSON_AddStringToObject(o, "advice", advice);
	cJSON_AddNumberToObject(o, "first", (double)first);
	cJSON_AddNumberToObject(o, "pages", (double)pages);
	b->ops[CALL_MADVISE]++;
}

static void builder_munmap(struct builder *b, const struct call *c, unsigned i, uint64_t lo,
			   uint64_t hi)
{
	struct region *r = &g_array_index(b->regions, struct region, i);
	bool whole = lo == r->start && hi >= r->start + r->size;
	if (!whole) {
		b->approx[APPROX_PARTIAL_MUNMAP]++;
		r->gone += hi - lo;
		if (r->gone < r->size) {
			builder_madvise_range(b, c, i, lo, hi, "dontneed");
			return;
		}
	}
	uint64_t first, pages;
	if (clip_pages(r, lo, hi, &first, &pages))
		builder_touch(b, c, i, first, pages);
	builder_region_op(b, c, i, "munmap");
	r->mapped = false;
	b->ops[CALL_MUNMAP]++;
}

static void builder_mprotect(struct builder *b, const struct call *c, unsigned i, uint64_t lo,
			     uint64_t hi)
{
	struct region *r = &g_array_index(b->regions, struct region, i);
	if (lo != r->start || hi < r->start + r->size)
		b->approx[APPROX_PARTIAL_MPROTECT]++;
	uint64_t first, pages;
	if (clip_pages(r, lo, hi, &first, &pages))
		builder_touch(b, c, i, first, pages);
	cJSON *o = builder_region_op(b, c, i, "mprotect");
	cJSON_AddStringToObject(o, "prot", c->prot_write ? "write" : "read");
	r->writable = c->prot_write;
	r->prot_none = c->prot_none;
	b->ops[CALL_MPROTECT]++;
}

/* Apply @c to every mapped region it overlaps; to a region of its own if
 * none (an address from before the trace). */
static void builder_ranged(struct builder *b, const struct call *c)
{
	uint64_t lo = c->addr, hi = c->addr + page_up(c->len ? c->len : 1);
	unsigned hits = 0;
	for (unsigned i = 0; i < b->regions->len; i++) {
		struct region *r = &g_array_index(b->regions, struct region, i);
		if (!r->mapped || hi <= r->start || lo >= r->start + r->size)
			continue;
		uint64_t rlo = lo > r->start ? lo : r->start;
		uint64_t rhi = hi < r->start + r->size ? hi : r->start + r->size;
		hits++;
		if (c->kind == CALL_MUNMAP)
			builder_munmap(b, c, i, rlo, rhi);
		else if (c->kind == CALL_MPROTECT)
			builder_mprotect(b, c, i, rlo, rhi);
		else
			builder_madvise_range(b, c, i, rlo, rhi,
					      c->advice == ADV_PAGEOUT ? "pageout" : "dontneed");
	}
	if (hits > 1)
		b->approx[APPROX_SPANNING]++;
	if (hits == 0) {
		b->approx[APPROX_UNPLACED]++;
		builder_new_region(b, lo, hi - lo, false, c->line);
		struct call whole = *c;
		whole.addr = lo;
		builder_ranged(b, &whole);
	}
}

static void builder_mmap(struct builder *b, const struct call *c)
{
	uint64_t lo = c->ret, hi = c->ret + page_up(c->len);
	if (!c->anon)
		b->approx[APPROX_FILE]++;
	for (unsigned i = 0; i < b->regions->len; i++) {
		struct region *r = &g_array_index(b->regions, struct region, i);
		if (r->mapped && hi > r->start && lo < r->start + r->size) {
			b->approx[APPROX_FIXED_OVER]++;
			return;
		}
	}
	/* The latest unmapped region at this address and of this size: the
	 * mapping back where it was, tlbsim's own mmap. */
	for (unsigned i = b->regions->len; i-- > 0;) {
		struct region *r = &g_array_index(b->regions, struct region, i);
		if (r->mapped || r->start != lo || r->size != hi - lo)
			continue;
		builder_region_op(b, c, i, "mmap");
		r->mapped = true;
		r->writable = true;
		r->prot_none = c->prot_none;
		r->gone = 0;
		b->ops[CALL_MMAP]++;
		return;
	}
	b->approx[APPROX_PREMAPPED]++;
	builder_new_region(b, lo, hi - lo, c->prot_none, c->line);
}

static void builder_call(struct builder *b, const struct call *c)
{
	if (!b->started) {
		b->t0 = c->ns;
		b->started = true;
	}
	if (c->ns > b->t_end)
		b->t_end = c->ns;
	b->calls[c->kind]++;
	if (c->failed) {
		b->approx[APPROX_FAILED]++;
		return;
	}
	switch (c->kind) {
	case CALL_MMAP:
		builder_mmap(b, c);
		return;
	case CALL_MADVISE:
		if (c->advice == ADV_OTHER) {
			b->approx[APPROX_MADV_OTHER]++;
			return;
		}
		if (c->advice == ADV_FREE)
			b->approx[APPROX_MADV_FREE]++;
		break;
	case CALL_MPROTECT:
		if (c->prot_none)
			b->approx[APPROX_PROT_NONE]++;
		break;
	default:
		break;
	}
	builder_ranged(b, c);
}

/* ---- the readers ---- */

static bool parse_u64(const char *s, uint64_t *v)
{
	if (strcmp(s, "NULL") == 0) {
		*v = 0;
		return true;
	}
	char *end;
	if (!*s || *s == '-')
		return false;
	*v = g_ascii_strtoull(s, &end, 0);
	return *end == '\0';
}

/* "HH:MM:SS.frac" (strace -tt) or "SECONDS.frac" (-ttt, perf) to ns. */
static bool parse_time(const char *s, uint64_t *ns)
{
	uint64_t secs = 0;
	char *end;
	for (bool first = true;; first = false) {
		uint64_t part = g_ascii_strtoull(s, &end, 10);
		if (end == s)
			return false;
		secs = first ? part : secs * 60 + part;
		if (*end != ':')
			break;
		s = end + 1;
	}
	uint64_t frac = 0, scale = 1000000000;
	if (*end == '.') {
		for (s = end + 1; *s >= '0' && *s <= '9'; s++) {
			scale /= 10;
			frac += (uint64_t)(*s - '0') * scale;
		}
		end = (char *)s;
	}
	*ns = secs * 1000000000 + frac;
	return *end == '\0' || *end == ':';
}

static enum call_kind call_kind_of(const char *name)
{
	for (int k = 0; call_names[k]; k++)
		if (strcmp(name, call_names[k]) == 0)
			return (enum call_kind)k;
	return CALL_NONE;
}

static bool fail_at(GError **error, const char *file, unsigned line, const char *what,
		    const char *found)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE, "%s:%u: expected %s, found \"%.60s\"",
		    file, line, what, found);
	return false;
}

static enum advice advice_of_name(const char *s)
{
	if (strcmp(s, "MADV_DONTNEED") == 0)
		return ADV_DONTNEED;
	if (strcmp(s, "MADV_FREE") == 0)
		return ADV_FREE;
	if (strcmp(s, "MADV_PAGEOUT") == 0)
		return ADV_PAGEOUT;
	return ADV_OTHER;
}

/* The arguments of "NAME(ARGS" as strace prints them. */
static bool strace_args(struct call *c, char **args, const char *file, GError **error)
{
	static const unsigned nr_args[] = {6, 2, 3, 3};
	if (g_strv_length(args) != nr_args[c->kind])
		return fail_at(error, file, c->line, "the arguments of a memory syscall",
			       args[0] ? args[0] : "");
	if (!parse_u64(args[0], &c->addr) || !parse_u64(args[1], &c->len))
		return fail_at(error, file, c->line, "an address and a length", args[0]);
	if (c->kind == CALL_MMAP || c->kind == CALL_MPROTECT) {
		c->prot_write = strstr(args[2], "PROT_WRITE") != NULL;
		c->prot_none = strcmp(args[2], "PROT_NONE") == 0;
	}
	if (c->kind == CALL_MMAP) {
		c->fixed = strstr(args[3], "MAP_FIXED") != NULL;
		c->anon = strstr(args[3], "MAP_ANONYMOUS") != NULL;
	}
	if (c->kind == CALL_MADVISE)
		c->advice = advice_of_name(args[2]);
	return true;
}

/* "NAME(ARGS) = RESULT": false with @error if malformed; c->kind CALL_NONE
 * for a call that is not one of ours (brk, ...). */
static bool strace_call(const char *text, struct call *c, const char *file, GError **error)
{
	const char *open = strchr(text, '(');
	if (!open)
		return fail_at(error, file, c->line, "NAME(ARGUMENTS) = RESULT", text);
	char *name = g_strndup(text, (size_t)(open - text));
	c->kind = call_kind_of(name);
	g_free(name);
	if (c->kind == CALL_NONE)
		return true;
	const char *close = g_strrstr(open, ") = ");
	if (!close)
		return fail_at(error, file, c->line, "\") = RESULT\" after the arguments", open);
	const char *result = close + 4;
	c->failed = *result == '-' || *result == '?';
	if (c->kind == CALL_MMAP && !c->failed) {
		char *r = g_strndup(result, strcspn(result, " "));
		bool ok = parse_u64(r, &c->ret);
		g_free(r);
		if (!ok)
			return fail_at(error, file, c->line, "mmap's result address", result);
	}
	char *inner = g_strndup(open + 1, (size_t)(close - open - 1));
	char **args = g_strsplit(inner, ", ", -1);
	bool ok = strace_args(c, args, file, error);
	g_strfreev(args);
	g_free(inner);
	return ok;
}

/* A call strace printed "<unfinished ...>": its start, until "resumed". */
struct pending {
	char *text;
	uint64_t ns;
	unsigned line;
};

static void pending_free(gpointer p)
{
	struct pending *u = p;
	g_free(u->text);
	g_free(u);
}

struct reader {
	const char *file;
	struct builder *b;
	GHashTable *pending; /* tid -> struct pending (strace) or struct call (perf) */
};

/* "[PID ]TIME REST" -> @tid, @ns and where REST starts. */
static bool strace_prefix(const char *line, unsigned lineno, const char *file, unsigned *tid,
			  uint64_t *ns, const char **rest, GError **error)
{
	char **tok = g_strsplit(line, " ", 3);
	bool ok = false;
	unsigned n = g_strv_length(tok);
	*tid = 0;
	int t = 0;
	if (n >= 2 && !strchr(tok[0], ':') && !strchr(tok[0], '.')) {
		uint64_t pid;
		if (!parse_u64(tok[0], &pid)) {
			fail_at(error, file, lineno, "a process id", tok[0]);
			goto out_free_tok;
		}
		*tid = (unsigned)pid;
		t = 1;
	}
	if (!tok[t] || !parse_time(tok[t], ns)) {
		fail_at(error, file, lineno, "a time (strace -tt)", tok[t] ? tok[t] : line);
		goto out_free_tok;
	}
	*rest = line;
	for (int i = 0; i <= t; i++)
		*rest = strchr(*rest, ' ') + 1;
	while (**rest == ' ')
		(*rest)++;
	ok = true;
out_free_tok:
	g_strfreev(tok);
	return ok;
}

static bool strace_line(struct reader *rd, const char *line, unsigned lineno, GError **error)
{
	unsigned tid;
	uint64_t ns;
	const char *rest;
	if (!strace_prefix(line, lineno, rd->file, &tid, &ns, &rest, error))
		return false;
	if (g_str_has_prefix(rest, "+++") || g_str_has_prefix(rest, "---"))
		return true; /* exits and signals */
	char *joined = NULL;
	struct call c = {.tid = tid, .line = lineno, .ns = ns};
	if (g_str_has_prefix(rest, "<... ")) {
		struct pending *u = g_hash_table_lookup(rd->pending, GUINT_TO_POINTER(tid));
		const char *tail = strstr(rest, " resumed>");
		if (!u || !tail)
			return fail_at(error, rd->file, lineno,
				       "an earlier \"<unfinished ...>\" line of this thread", rest);
		joined = g_strconcat(u->text, tail + 9, NULL);
		c.ns = u->ns;
		c.line = u->line;
		g_hash_table_remove(rd->pending, GUINT_TO_POINTER(tid));
	} else if (g_str_has_suffix(rest, " <unfinished ...>")) {
		struct pending *u = g_new0(struct pending, 1);
		u->text = g_strndup(rest, strlen(rest) - strlen(" <unfinished ...>"));
		u->ns = ns;
		u->line = lineno;
		g_hash_table_replace(rd->pending, GUINT_TO_POINTER(tid), u);
		return true;
	}
	bool ok = strace_call(joined ? joined : rest, &c, rd->file, error);
	g_free(joined);
	if (ok && c.kind != CALL_NONE)
		builder_call(rd->b, &c);
	return ok;
}

static enum advice advice_of_number(uint64_t n)
{
	switch (n) {
	case 4:
		return ADV_DONTNEED;
	case 8:
		return ADV_FREE;
	case 21:
		return ADV_PAGEOUT;
	default:
		return ADV_OTHER;
	}
}

/* "key: value, key: value" of a sys_enter_* event, by position. */
static bool perf_args(struct call *c, const char *text, const char *file, GError **error)
{
	static const unsigned nr_args[] = {6, 2, 3, 3};
	char **fields = g_strsplit(text, ", ", -1);
	uint64_t v[6] = {0};
	bool ok = g_strv_length(fields) == nr_args[c->kind];
	for (unsigned i = 0; ok && fields[i]; i++) {
		const char *colon = strstr(fields[i], ": ");
		ok = colon && parse_u64(colon + 2, &v[i]);
	}
	if (!ok) {
		g_strfreev(fields);
		return fail_at(error, file, c->line, "\"key: 0xVALUE\" arguments", text);
	}
	g_strfreev(fields);
	c->addr = v[0];
	c->len = v[1];
	c->prot_write = (v[2] & 2) != 0; /* PROT_WRITE */
	c->prot_none = v[2] == 0;
	c->fixed = (v[3] & 0x10) != 0; /* MAP_FIXED */
	c->anon = (v[3] & 0x20) != 0;  /* MAP_ANONYMOUS */
	if (c->kind == CALL_MADVISE)
		c->advice = advice_of_number(v[2]);
	return true;
}

/* "comm [PID/]TID [CPU] SECS.USECS: " -> @tid, @ns. */
static bool perf_prefix(const char *prefix, unsigned lineno, const char *file, unsigned *tid,
			uint64_t *ns, GError **error)
{
	char **tok = g_strsplit_set(prefix, " \t", -1);
	GPtrArray *words = g_ptr_array_new();
	for (char **t = tok; *t; t++)
		if (**t)
			g_ptr_array_add(words, *t);
	bool ok = false;
	unsigned n = words->len;
	if (n < 2 || !parse_time(words->pdata[n - 1], ns)) {
		fail_at(error, file, lineno, "\"comm TID [CPU] SECONDS:\" before the event",
			prefix);
		goto out_free;
	}
	const char *id = words->pdata[n - 2];
	if (id[0] == '[' && n >= 3)
		id = words->pdata[n - 3];
	const char *slash = strchr(id, '/');
	uint64_t v;
	if (!parse_u64(slash ? slash + 1 : id, &v)) {
		fail_at(error, file, lineno, "a thread id (TID or PID/TID)", id);
		goto out_free;
	}
	*tid = (unsigned)v;
	ok = true;
out_free:
	g_ptr_array_free(words, TRUE);
	g_strfreev(tok);
	return ok;
}

static bool perf_line(struct reader *rd, const char *line, unsigned lineno, GError **error)
{
	const char *ev = strstr(line, " syscalls:sys_");
	if (!ev)
		return fail_at(error, rd->file, lineno,
			       "a perf script line of a syscalls:sys_enter_* event", line);
	char *prefix = g_strndup(line, (size_t)(ev - line));
	struct call c = {.line = lineno};
	bool ok = perf_prefix(prefix, lineno, rd->file, &c.tid, &c.ns, error);
	g_free(prefix);
	if (!ok)
		return false;
	ev += strlen(" syscalls:sys_");
	const char *colon = strchr(ev, ':');
	if (!colon)
		return fail_at(error, rd->file, lineno, "\"sys_enter_NAME: ARGUMENTS\"", ev);
	char *event = g_strndup(ev, (size_t)(colon - ev));
	const char *args = colon + 1 + (colon[1] == ' ');
	bool enter = g_str_has_prefix(event, "enter_");
	c.kind = call_kind_of(event + (enter ? 6 : 5));
	g_free(event);
	if (c.kind == CALL_NONE || (!enter && c.kind != CALL_MMAP))
		return true;
	gpointer key = GUINT_TO_POINTER(c.tid);
	if (!enter) {
		struct call *m = g_hash_table_lookup(rd->pending, key);
		if (!m)
			return fail_at(error, rd->file, lineno,
				       "an earlier sys_enter_mmap of this thread", line);
		if (!parse_u64(args, &m->ret))
			return fail_at(error, rd->file, lineno, "mmap's result (0xADDRESS)", args);
		m->failed = m->ret > UINT64_MAX - 4096; /* -errno */
		builder_call(rd->b, m);
		g_hash_table_remove(rd->pending, key);
		return true;
	}
	if (!perf_args(&c, args, rd->file, error))
		return false;
	if (c.kind == CALL_MMAP)
		g_hash_table_replace(rd->pending, key, g_memdup2(&c, sizeof(c)));
	else
		builder_call(rd->b, &c);
	return true;
}

/* ---- perf trace: "MS ( DUR ms): comm/TID NAME(key: value, ...) = RESULT" ---- */

/* The value of "@key: " in perf trace's argument list, NULL if left out
 * (perf trace leaves out zero arguments). */
static char *ptrace_arg(char **args, const char *key)
{
	size_t n = strlen(key);
	for (char **a = args; *a; a++)
		if (strncmp(*a, key, n) == 0 && strncmp(*a + n, ": ", 2) == 0)
			return *a + n + 2;
	return NULL;
}

static bool ptrace_num(char **args, const char *key, uint64_t *v)
{
	const char *s = ptrace_arg(args, key);
	*v = 0;
	return !s || parse_u64(s, v);
}

/* "NAME(ARGS" as perf trace prints it, the arguments by name. */
static bool ptrace_args(struct call *c, const char *inner, const char *file, GError **error)
{
	char **args = g_strsplit(inner, ", ", -1);
	const char *addr_key =
	    c->kind == CALL_MPROTECT || c->kind == CALL_MADVISE ? "start" : "addr";
	const char *len_key = c->kind == CALL_MADVISE ? "len_in" : "len";
	bool ok = ptrace_num(args, addr_key, &c->addr) && ptrace_num(args, len_key, &c->len);
	if (ok) {
		const char *prot = ptrace_arg(args, "prot");
		const char *flags = ptrace_arg(args, "flags");
		const char *behavior = ptrace_arg(args, "behavior");
		c->prot_write = prot && strstr(prot, "WRITE");
		c->prot_none = !prot || strcmp(prot, "NONE") == 0;
		c->fixed = flags && strstr(flags, "FIXED");
		c->anon = flags && strstr(flags, "ANONYMOUS");
		uint64_t n;
		if (behavior)
			c->advice = parse_u64(behavior, &n) ? advice_of_number(n)
							    : advice_of_name(behavior);
	}
	g_strfreev(args);
	return ok || fail_at(error, file, c->line, "\"key: NUMBER\" arguments", inner);
}

/* " = RESULT" at the end of @text: the call's result. */
static bool ptrace_result(struct call *c, const char *text, const char *file, GError **error)
{
	const char *eq = g_strrstr(text, " = ");
	if (!eq)
		return fail_at(error, file, c->line, "\" = RESULT\" at the end", text);
	const char *result = eq + 3;
	c->failed = *result == '-';
	if (c->kind != CALL_MMAP || c->failed)
		return true;
	char *r = g_strndup(result, strcspn(result, " "));
	bool ok = parse_u64(r, &c->ret);
	g_free(r);
	return ok || fail_at(error, file, c->line, "mmap's result address", result);
}

/* "comm/TID " (comm may hold spaces and slashes): where the call starts. */
static const char *ptrace_tid(const char *s, unsigned *tid)
{
	for (const char *p = strchr(s, '/'); p; p = strchr(p + 1, '/')) {
		size_t digits = strspn(p + 1, "0123456789");
		if (digits && p[1 + digits] == ' ') {
			*tid = (unsigned)g_ascii_strtoull(p + 1, NULL, 10);
			return p + 1 + digits + strspn(p + 1 + digits, " ");
		}
	}
	return NULL;
}

static bool ptrace_line(struct reader *rd, const char *line, unsigned lineno, GError **error)
{
	const char *close = strstr(line, "): ");
	char *ms = g_strndup(line, strcspn(line, " ("));
	struct call c = {.line = lineno};
	bool ok = close && parse_time(ms, &c.ns);
	g_free(ms);
	if (!ok)
		return fail_at(error, rd->file, lineno, "\"MS ( DURATION ms): comm/TID CALL\"",
			       line);
	c.ns /= 1000; /* milliseconds, read as seconds */
	const char *call = ptrace_tid(close + 3, &c.tid);
	if (!call)
		return fail_at(error, rd->file, lineno, "comm/TID", close + 3);
	gpointer key = GUINT_TO_POINTER(c.tid);
	if (g_str_has_prefix(call, "... [continued]: ")) {
		struct call *u = g_hash_table_lookup(rd->pending, key);
		if (!u)
			return ok; /* the start of a call we do not read, or before the trace */
		ok = ptrace_result(u, call, rd->file, error);
		if (ok)
			builder_call(rd->b, u);
		g_hash_table_remove(rd->pending, key);
		return ok;
	}
	const char *open = strchr(call, '(');
	const char *end = open ? strchr(open, ')') : NULL;
	if (!end)
		return fail_at(error, rd->file, lineno, "NAME(ARGUMENTS)", call);
	char *name = g_strndup(call, (size_t)(open - call));
	c.kind = call_kind_of(name);
	g_free(name);
	if (c.kind == CALL_NONE)
		return true;
	char *inner = g_strndup(open + 1, (size_t)(end - open - 1));
	ok = ptrace_args(&c, inner, rd->file, error);
	g_free(inner);
	if (!ok)
		return false;
	if (g_str_has_suffix(call, " ...")) { /* the result comes "[continued]" */
		g_hash_table_replace(rd->pending, key, g_memdup2(&c, sizeof(c)));
		return true;
	}
	ok = ptrace_result(&c, end, rd->file, error);
	if (ok)
		builder_call(rd->b, &c);
	return ok;
}

/* What the first line that is not blank or a comment looks like: a perf
 * script event, a perf trace call ("( 0.013 ms): "), else strace. */
static enum import_format guess_format(const char *text)
{
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		char *line = g_strstrip(g_strndup(p, n));
		bool decides = *line && *line != '#';
		enum import_format f = !decides                         ? IMPORT_AUTO
				       : strstr(line, " syscalls:sys_") ? IMPORT_PERF
				       : strstr(line, " ms): ")         ? IMPORT_PERF_TRACE
									: IMPORT_STRACE;
		g_free(line);
		if (decides)
			return f;
		p += n + (p[n] == '\n');
	}
	return IMPORT_STRACE;
}

static bool read_lines(struct reader *rd, const char *text, enum import_format format,
		       GError **error)
{
	char **lines = g_strsplit(text, "\n", -1);
	bool ok = true;
	for (unsigned i = 0; ok && lines[i]; i++) {
		char *line = g_strstrip(lines[i]);
		if (!*line || *line == '#')
			continue;
		ok = format == IMPORT_PERF         ? perf_line(rd, line, i + 1, error)
		     : format == IMPORT_PERF_TRACE ? ptrace_line(rd, line, i + 1, error)
						   : strace_line(rd, line, i + 1, error);
	}
	g_strfreev(lines);
	rd->b->approx[APPROX_UNFINISHED] += g_hash_table_size(rd->pending);
	return ok;
}

/* ---- the workload ---- */

static char *describe(const struct builder *b, const char *base, const char *fmt)
{
	GString *s = g_string_new(NULL);
	g_string_printf(s,
			"Imported by tlbsim import from %s (%s): %u threads, %u mmap, %u munmap, "
			"%u mprotect, %u madvise calls over %" PRIu64
			" us, each thread a task, each mapping a region, the gaps between a "
			"thread's calls compute ops of cycles_per_us (3400: haswell-i7's clock). "
			"docs/import.md",
			base, fmt, b->tasks->len, b->calls[CALL_MMAP], b->calls[CALL_MUNMAP],
			b->calls[CALL_MPROTECT], b->calls[CALL_MADVISE], (b->t_end - b->t0) / 1000);
	return g_string_free(s, FALSE);
}

static char *simplified(const struct builder *b)
{
	GString *s = g_string_new(
	    "The trace records no memory accesses: before each munmap, mprotect and madvise "
	    "the task touches up to 512 pages of the range once (rounds $touch; 0 turns it "
	    "off), writing unless read-only, nothing if PROT_NONE. Gaps include the tracer's "
	    "own overhead. Approximations:");
	bool any = false;
	for (int k = 0; k < APPROX_N; k++)
		if (b->approx[k]) {
			g_string_append_printf(s, "%s %u %s", any ? ";" : "", b->approx[k],
					       approx_text[k]);
			any = true;
		}
	g_string_append(s, any ? "." : " none.");
	return g_string_free(s, FALSE);
}

static cJSON *regions_json(const struct builder *b)
{
	cJSON *list = cJSON_CreateArray();
	for (unsigned i = 0; i < b->regions->len; i++) {
		const struct region *r = &g_array_index(b->regions, struct region, i);
		cJSON *o = cJSON_CreateObject();
		char name[32], comment[96];
		snprintf(name, sizeof(name), "r%u", i);
		snprintf(comment, sizeof(comment), "0x%" PRIx64 ", %" PRIu64 " bytes, line %u",
			 r->start, r->size, r->line);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddNumberToObject(o, "size", (double)region_sim_size(r));
		cJSON_AddStringToObject(o, "comment", comment);
		cJSON_AddItemToArray(list, o);
	}
	return list;
}

static cJSON *tasks_json(const struct builder *b)
{
	cJSON *list = cJSON_CreateArray();
	for (unsigned i = 0; i < b->tasks->len; i++) {
		struct task *t = b->tasks->pdata[i];
		cJSON *o = cJSON_CreateObject();
		char name[32];
		snprintf(name, sizeof(name), "tid%u", t->tid);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddNumberToObject(o, "count", 1);
		cJSON_AddItemToObject(o, "program", t->program);
		t->program = NULL;
		cJSON_AddItemToArray(list, o);
	}
	return list;
}

/* The report describes the syscall the workload makes most (munmap first
 * on a tie): what the op_* columns of its runs are about. */
static cJSON *report_json(const struct builder *b)
{
	static const enum call_kind order[] = {CALL_MUNMAP, CALL_MADVISE, CALL_MPROTECT, CALL_MMAP};
	enum call_kind best = CALL_NONE;
	for (unsigned i = 0; i < G_N_ELEMENTS(order); i++)
		if (b->ops[order[i]] && (best == CALL_NONE || b->ops[order[i]] > b->ops[best]))
			best = order[i];
	if (best == CALL_NONE)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", call_names[best]);
	cJSON_AddStringToObject(o, "summary", "{op_count} {op} calls, {op_ns_mean} ns mean");
	return o;
}

static char *workload_text(const struct builder *b, const char *file, const char *fmt,
			   const char *name)
{
	char *base = g_path_get_basename(file);
	cJSON *w = cJSON_CreateObject();
	cJSON_AddStringToObject(w, "name", name);
	char *text = describe(b, base, fmt);
	cJSON_AddStringToObject(w, "description", text);
	g_free(text);
	text = g_strdup_printf("the program recorded in %s", base);
	cJSON_AddStringToObject(w, "imitates", text);
	g_free(text);
	text = simplified(b);
	cJSON_AddStringToObject(w, "simplified", text);
	g_free(text);
	cJSON *params = cJSON_AddObjectToObject(w, "params");
	cJSON_AddNumberToObject(params, "cycles_per_us", 3400);
	cJSON_AddNumberToObject(params, "touch", 1);
	cJSON_AddItemToObject(w, "regions", regions_json(b));
	cJSON_AddItemToObject(w, "tasks", tasks_json(b));
	cJSON *report = report_json(b);
	if (report)
		cJSON_AddItemToObject(w, "report", report);
	char *json = cJSON_Print(w);
	char *out = g_strconcat(json, "\n", NULL);
	cJSON_free(json);
	cJSON_Delete(w);
	g_free(base);
	return out;
}

static void task_free(gpointer p)
{
	struct task *t = p;
	cJSON_Delete(t->program);
	g_free(t);
}

char *import_trace(const char *text, const char *file, enum import_format format, const char *name,
		   GString *notes, GError **error)
{
	struct builder b = {.regions = g_array_new(FALSE, FALSE, sizeof(struct region)),
			    .tasks = g_ptr_array_new_with_free_func(task_free),
			    .task_of_tid = g_hash_table_new(NULL, NULL)};
	if (format == IMPORT_AUTO)
		format = guess_format(text);
	struct reader rd = {.file = file, .b = &b};
	rd.pending = g_hash_table_new_full(NULL, NULL, NULL,
					   format == IMPORT_STRACE ? pending_free : g_free);
	char *out = NULL;
	if (!read_lines(&rd, text, format, error))
		goto out_free;
	if (b.tasks->len == 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s: no mmap, munmap, mprotect or madvise call in it", file);
		goto out_free;
	}
	static const char *const format_names[] = {[IMPORT_STRACE] = "strace",
						   [IMPORT_PERF] = "perf script",
						   [IMPORT_PERF_TRACE] = "perf trace"};
	out = workload_text(&b, file, format_names[format], name);
	for (int k = 0; k < APPROX_N; k++)
		if (b.approx[k])
			g_string_append_printf(notes, "%u %s\n", b.approx[k], approx_text[k]);
out_free:
	g_hash_table_destroy(rd.pending);
	g_hash_table_destroy(b.task_of_tid);
	g_ptr_array_free(b.tasks, TRUE);
	g_array_free(b.regions, TRUE);
	return out;
}

/* ---- the command ---- */

/* @json (import_trace()'s text) with "$schema": @uri as its first key. */
static char *with_schema(char *json, const char *uri)
{
	cJSON *w = cJSON_Parse(json);
	g_assert(w); /* import_trace() printed it */
	cJSON *s = cJSON_CreateString(uri);
	cJSON_AddItemToObject(w, "$schema", s);
	cJSON_DetachItemViaPointer(w, s);
	cJSON_InsertItemInArray(w, 0, s);
	char *printed = cJSON_Print(w);
	char *text = g_strconcat(printed, "\n", NULL);
	cJSON_free(printed);
	cJSON_Delete(w);
	g_free(json);
	return text;
}

static int import_file(const char *path, enum import_format format, const char *name,
		       const char *schema, const char *output)
{
	GError *error = NULL;
	char *text = NULL;
	GString *notes = g_string_new(NULL);
	char *json = NULL;
	if (g_file_get_contents(path, &text, NULL, &error)) {
		char *base = g_path_get_basename(path);
		char *dot = strchr(base, '.');
		if (dot)
			*dot = '\0';
		json = import_trace(text, path, format, name ? name : base, notes, &error);
		if (json && schema)
			json = with_schema(json, schema);
		g_free(base);
	}
	bool ok = json != NULL;
	if (ok) {
		struct output_file *out = cli_csv_output(output, false, NULL, json, &error);
		ok = out && output_commit_all(&out, 1, NULL, &error);
		output_free(out);
	}
	char **lines = g_strsplit(notes->str, "\n", -1);
	for (char **l = lines; *l && **l; l++)
		g_printerr("tlbsim import: note: %s\n", *l);
	g_strfreev(lines);
	if (!ok)
		g_printerr("tlbsim import: %s\n", error->message);
	g_clear_error(&error);
	g_string_free(notes, TRUE);
	g_free(json);
	g_free(text);
	return ok ? EXIT_OK : EXIT_INPUT;
}

static const char import_notes[] =
    "Formats: strace -f -tt -e trace=memory -o T.strace PROGRAM (-ttt too), and\n"
    "perf script of perf record -e 'syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,\n"
    "syscalls:sys_enter_munmap,syscalls:sys_enter_mprotect,syscalls:sys_enter_madvise'.\n"
    "Without --format, the first line decides.  Each approximation the workload\n"
    "needed is noted on stderr and in its \"simplified\" field (docs/import.md).\n"
    "\n"
    "Exit codes: 0 success; 2 usage or input error (nothing is written).\n";

int import_main(int argc, char **argv)
{
	char *format = NULL, *name = NULL, *output = NULL, *schema = NULL;
	const GOptionEntry entries[] = {
	    {"format", 0, 0, G_OPTION_ARG_STRING, &format,
	     "strace, perf (script) or perf-trace (default: guess)", "FORMAT"},
	    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
	     "Write the workload here instead of stdout (atomically)", "FILE"},
	    {"name", 0, 0, G_OPTION_ARG_STRING, &name,
	     "The workload's name (default: the trace's file name up to its first dot)", "NAME"},
	    {"schema", 0, 0, G_OPTION_ARG_STRING, &schema,
	     "Name this JSON Schema in the workload's \"$schema\" (editors check it)", "URI"},
	    {NULL, 0, 0, 0, NULL, NULL, NULL},
	};
	GOptionContext *context =
	    g_option_context_new("TRACE - a workload file from a recorded memory-syscall trace");
	g_option_context_add_main_entries(context, entries, NULL);
	g_option_context_set_summary(
	    context, "Example: strace -f -tt -e trace=memory -o t.strace PROGRAM\n"
		     "         tlbsim import t.strace -o t.json && tlbsim -T haswell-i7 -w t.json");
	g_option_context_set_description(context, import_notes);
	GError *error = NULL;
	int code = EXIT_INPUT;
	enum import_format f = IMPORT_AUTO;
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("tlbsim import: %s (see tlbsim import --help)\n", error->message);
		g_error_free(error);
	} else if (format && strcmp(format, "strace") != 0 && strcmp(format, "perf") != 0 &&
		   strcmp(format, "perf-trace") != 0) {
		g_printerr("tlbsim import: unknown --format \"%s\": expected strace, perf or "
			   "perf-trace\n",
			   format);
	} else if (argc != 2) {
		g_printerr("tlbsim import: give one TRACE file (see tlbsim import --help)\n");
	} else {
		if (format)
			f = strcmp(format, "perf") == 0         ? IMPORT_PERF
			    : strcmp(format, "perf-trace") == 0 ? IMPORT_PERF_TRACE
								: IMPORT_STRACE;
		code = import_file(argv[1], f, name, schema, output);
	}
	g_option_context_free(context);
	g_free(format);
	g_free(name);
	g_free(schema);
	g_free(output);
	return code;
}
