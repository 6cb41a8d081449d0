/*
 * Runs workload programs as simulated tasks.
 *
 * Each task is a struct task driven by interp_run(): it executes ops from a
 * small stack of loop frames, at a local time that starts at the dispatch
 * time.  Ops whose effects other CPUs can see (syscalls, faults, flags) first
 * bring local time back in step with the engine by asking to be resumed at the
 * local time, and their effects land through events at least the lookahead
 * later.  Memory accesses run ahead (access.c).
 * Invariant: every task ends by sched_exit() or by a recorded run-time error.
 */
#include "interp_impl.h"
#include "tlbsim/kernel/vm.h"
#include "tlbsim/util/error.h"

#define REGION_ALIGN (UINT64_C(1) << 21)
#define LAYOUT_BASE (UINT64_C(1) << 32)

/* ---- layout -------------------------------------------------------------- */

/*
 * One more unit of layout work (a VMA added, a page populated) done: every
 * LAYOUT_STOP_EVERY of them, well under a millisecond, the stop request is looked
 * at.  A 256 GiB region populated whole is 64 Mi pages, seconds of work.
 */
#define LAYOUT_STOP_EVERY 4096

static bool layout_step(uint64_t *work, const struct stop *stop, GError **error)
{
	return ++*work % LAYOUT_STOP_EVERY != 0 || stop_check(stop, error);
}

static bool populate_region(struct interp *ip, unsigned index, uint64_t *work,
			    const struct stop *stop, GError **error)
{
	const struct region *r = &ip->w->regions[index];
	struct mm *mm = ip->mms[r->mm];
	for (uint64_t c = 0; c < r->chunks && r->populate != POPULATE_NONE; c++) {
		struct vma *vma = ip->regions[index].vmas[c];
		uint64_t n = r->populate == POPULATE_ALL ? vma_pages(vma) : 1;
		for (uint64_t i = 0; i < n; i++) {
			if (!layout_step(work, stop, error))
				return false;
			mm_populate(mm, vma, vma->start + i * page_size_bytes(vma->page_size), true);
		}
	}
	return true;
}

/*
 * Where a region's mapping starts, relative to its 2 MiB aligned slot.  Under
 * ASLR mmap() places a mapping below a randomized base at page granularity,
 * so which chunks straddle a 2 MiB boundary, and so which munmap frees a
 * page-table page and how far pte_free_tlb() widens its flush, changes from
 * run to run; the seed picks one such run.
 */
static uint64_t region_offset(const struct region *r, unsigned index, uint64_t seed)
{
	if (r->placement == PLACEMENT_ALIGNED)
		return 0;
	struct rng rng;
	rng_seed_stream(&rng, seed, INTERP_LAYOUT_STREAM + index);
	uint64_t page = page_size_bytes(r->page_size);
	return rng_below(&rng, REGION_ALIGN / page) * page;
}

/* Region @i's chunks as VMAs of its process. */
static bool map_region(struct interp *ip, unsigned i, uint64_t *cursor, uint64_t seed,
		       uint64_t *work, const struct stop *stop, GError **error)
{
	const struct region *r = &ip->w->regions[i];
	struct mm *mm = ip->mms[r->mm];
	uint64_t base = cursor[r->mm] + region_offset(r, i, seed);
	ip->regions[i].base = base;
	ip->regions[i].vmas = g_new(struct vma *, r->chunks);
	/* Chunks are mmap()ed one after another, and mmap places each new
	 * mapping below the previous one (top-down): chunk 0 is highest.
	 * That decides which munmap frees a page-table page and so the
	 * range mmu_gather flushes. */
	for (uint64_t c = r->chunks; c-- > 0;) {
		if (!layout_step(work, stop, error))
			return false;
		mm_add_vma(mm, base + (r->chunks - 1 - c) * r->chunk_bytes, r->chunk_bytes,
			   r->page_size, r->hugetlb, i, (unsigned)c)->shared = r->shared;
	}
	/* A 2 MiB gap keeps regions from sharing page-table pages. */
	uint64_t end = base + r->chunks * r->chunk_bytes;
	cursor[r->mm] = (end + 2 * REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
	return true;
}

static bool layout(struct interp *ip, uint64_t seed, const struct stop *stop, GError **error)
{
	const struct workload *w = ip->w;
	uint64_t *cursor = g_new(uint64_t, ip->nr_mms);
	uint64_t work = 0;
	bool ok = true;
	for (unsigned m = 0; m < ip->nr_mms; m++)
		cursor[m] = LAYOUT_BASE;
	ip->regions = g_new0(struct region_map, w->nr_regions);
	for (unsigned i = 0; ok && i < w->nr_regions; i++)
		ok = map_region(ip, i, cursor, seed, &work, stop, error);
	g_free(cursor);
	if (!ok)
		return false;
	/* VMA arrays are final now: take pointers. */
	for (unsigned m = 0; m < ip->nr_mms; m++)
		mm_finish_layout(ip->mms[m]);
	for (unsigned m = 0; m < ip->nr_mms; m++) {
		struct mm *mm = ip->mms[m];
		for (unsigned v = 0; v < mm->nr_vmas; v++) {
			struct vma *vma = &mm->vmas[v];
			ip->regions[vma->region].vmas[vma->chunk] = vma;
		}
	}
	for (unsigned i = 0; ok && i < w->nr_regions; i++)
		ok = layout_step(&work, stop, error) && populate_region(ip, i, &work, stop, error);
	return ok;
}

/* ---- ops ------------------------------------------------------------------ */

static void interp_syscall_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct itask *ts = ctx;
	struct interp *ip = ts->interp;
	if (ts->syscall_kind == ip->w->report_op && ts->syscall_counted) {
		histogram_add(ip->results.op_cycles, time - ts->syscall_start);
	}
	sched_continue_at(k, &k->machine->cpus[ts->task.cpu], time, WORK_KERNEL);
}

static enum step syscall_op(struct kernel *k, struct itask *ts, struct cpu *cpu,
			    const struct op *op, uint64_t local)
{
	struct interp *ip = ts->interp;
	const struct region *r = &ip->w->regions[op->region];
	int64_t chunk = 0;
	if (!interp_eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
		return STEP_FAILED;
	struct vma *vma = ip->regions[op->region].vmas[chunk];
	/* mmap needs the chunk unmapped, every other call mapped.  (A call of
	 * another task still in flight may change that later: see vm.c.) */
	if (vma->mapped == (op->kind == OP_MMAP)) {
		interp_fail(ip, ts, op, "%s of chunk %" G_GINT64_FORMAT " of %s, already %s",
			    workload_op_name(op->kind), chunk, r->name,
			    vma->mapped ? "mapped" : "unmapped");
		return STEP_FAILED;
	}
	ts->syscall_start = local;
	ts->syscall_kind = op->kind;
	/* Calls a task makes outside the report phase (a warm-up) are not the
	 * measurement. */
	ts->syscall_counted = ip->w->report_phase < 0 || ts->in_report_phase;
	struct kcont done = {.fn = interp_syscall_done, .ctx = ts};
	struct mm *mm = ts->task.mm;
	switch (op->kind) {
	case OP_MUNMAP:
		do_munmap(k, cpu, mm, vma, local, done);
		break;
	case OP_MMAP:
		do_mmap(k, cpu, mm, vma, local, done);
		break;
	case OP_MPROTECT:
		do_mprotect(k, cpu, mm, vma, op->writable, local, done);
		break;
	case OP_MADVISE: {
		uint64_t size = page_size_bytes(vma->page_size);
		int64_t nr = (int64_t)vma_pages(vma), first = 0, pages = nr;
		if ((op->first && !interp_eval(ts, op, op->first, 0, nr - 1, "first", &first)) ||
		    (op->pages && !interp_eval(ts, op, op->pages, 1, nr - first, "pages", &pages)))
			return STEP_FAILED;
		if (!op->pages)
			pages = nr - first;
		uint64_t start = vma->start + (uint64_t)first * size;
		uint64_t end = start + (uint64_t)pages * size;
		if (op->pageout)
			madvise_pageout(k, cpu, mm, vma, start, end, local, done);
		else
			madvise_dontneed(k, cpu, mm, vma, start, end, local, done);
		break;
	}
	default:
		g_assert_not_reached();
	}
	return STEP_RETURNED;
}

/* The store reaches every CPU: waiters re-check the value when they run. */
static void flag_store_event(void *target, uint64_t unused)
{
	(void)unused;
	struct flag_store *store = target;
	struct interp *ip = store->writer->interp;
	struct kernel *k = ip->k;
	GPtrArray *waiters = ip->flag_waiters[store->flag];
	ip->flags[store->flag] = store->value;
	struct flag_store **own = &store->writer->own_stores;
	while (*own != store)
		own = &(*own)->next_own;
	*own = store->next_own;
	sched_revoke_quiet(k); /* accesses looping on this flag may now stop */
	for (unsigned i = 0; i < waiters->len; i++) {
		struct itask *ts = g_ptr_array_index(waiters, i);
		sched_wake(k, &ts->task, engine_now(k->engine));
	}
	g_ptr_array_set_size(waiters, 0);
	kernel_release(k, store);
}

/* A store to a shared flag is seen by other cores a line transfer later, by
 * its own task at once. */
static void flag_set(struct kernel *k, struct itask *ts, unsigned flag, int64_t value,
		     uint64_t now)
{
	struct flag_store *store = kernel_alloc(k, sizeof(*store));
	*store = (struct flag_store){.writer = ts, .flag = flag, .value = value,
				     .next_own = ts->own_stores};
	ts->own_stores = store;
	engine_schedule(k->engine, now + k->machine->lookahead, LANE_GLOBAL, flag_store_event,
			store, 0);
}

static void push_frame(struct itask *ts, const struct op *ops, unsigned nr, int64_t count,
		       const char *var)
{
	g_assert(ts->depth <= WORKLOAD_MAX_DEPTH);
	ts->frames[ts->depth++] = (struct frame){.ops = ops, .nr = nr, .count = count, .var = var};
}

/*
 * Execute one op at *local.  STEP_NEXT: go on with the next op; otherwise the
 * task has asked the scheduler for something and run() must return.
 */
static enum step exec_op(struct kernel *k, struct itask *ts, struct cpu *cpu,
			 const struct op *op, uint64_t *local, uint64_t now)
{
	struct interp *ip = ts->interp;
	struct frame *f = &ts->frames[ts->depth - 1];
	int64_t v = 0;
	switch (op->kind) {
	case OP_ACCESS:
		if (!ts->access.active && !access_begin(ts, op))
			return STEP_FAILED;
		return access_run(k, ts, cpu, local, now);
	case OP_MUNMAP:
	case OP_MMAP:
	case OP_MPROTECT:
	case OP_MADVISE:
		if (!interp_in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		f->index++;
		return syscall_op(k, ts, cpu, op, *local);
	case OP_SLEEP:
		if (!interp_eval(ts, op, op->ns, 0, INT64_MAX / op->ns_scale / 16, "sleep", &v))
			return STEP_FAILED;
		f->index++;
		sched_wake(k, &ts->task,
			   *local + topology_ns_to_cycles(k->machine->topology,
							  (uint64_t)(v * op->ns_scale)));
		sched_block(k, cpu, *local);
		return STEP_RETURNED;
	case OP_YIELD:
		/* sched_yield() is a system call: it costs an entry and exit. */
		f->index++;
		sched_yield_at(k, cpu, *local + k->machine->topology->costs.syscall);
		return STEP_RETURNED;
	case OP_COMPUTE:
		if (!interp_eval(ts, op, op->cycles, 0, INT64_MAX / 16, "cycles", &v))
			return STEP_FAILED;
		*local += (uint64_t)v;
		return STEP_NEXT;
	case OP_SET_FLAG:
		if (!interp_in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		if (!interp_eval(ts, op, op->value, INT64_MIN, INT64_MAX, "value", &v))
			return STEP_FAILED;
		flag_set(k, ts, op->flag, v, now);
		/* The store takes the line for itself: an RMW on a line we own. */
		*local += k->machine->topology->costs.line_transfer[DIST_SELF];
		return STEP_NEXT;
	case OP_WAIT_FLAG:
		if (!interp_in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		if (!interp_eval(ts, op, op->value, INT64_MIN, INT64_MAX, "value", &v))
			return STEP_FAILED;
		if (interp_flag_value(ts, op->flag) == v)
			return STEP_NEXT;
		g_ptr_array_add(ip->flag_waiters[op->flag], ts);
		sched_block(k, cpu, *local);
		return STEP_RETURNED;
	case OP_LOOP:
		if (!interp_eval(ts, op, op->count, 0, INT64_MAX, "count", &v))
			return STEP_FAILED;
		f->index++;
		if (v > 0)
			push_frame(ts, op->body, op->nr_body, v, op->var);
		return STEP_PUSHED;
	case OP_FORK:
		return interp_fork_op(k, ts, cpu, op, local, now);
	case OP_PHASE:
		if ((int)op->phase == ip->w->report_phase)
			ts->in_report_phase = op->begin;
		if (op->begin && ip->results.phase_begin[op->phase] == UINT64_MAX)
			ip->results.phase_begin[op->phase] = *local;
		if (!op->begin)
			ip->results.phase_end[op->phase] = *local;
		return STEP_NEXT;
	case NR_OP_KINDS:
		break;
	}
	g_assert_not_reached();
}

static void interp_run(struct kernel *k, struct task *task, struct cpu *cpu, uint64_t now)
{
	struct itask *ts = (struct itask *)task;
	struct interp *ip = ts->interp;
	uint64_t local = now;
	if (ip->error)
		return;
	for (unsigned ops = 0;; ops++) {
		if (ops == OPS_PER_DISPATCH) {
			sched_continue_at(k, cpu, local, WORK_USER);
			return;
		}
		if (ts->depth == 0) {
			interp_fork_parent_exit(k, ts, local);
			sched_exit(k, cpu, local);
			return;
		}
		struct frame *f = &ts->frames[ts->depth - 1];
		if (f->index == f->nr) {
			if (++f->iter < f->count) {
				f->index = 0;
			} else {
				ts->depth--;
			}
			continue;
		}
		if (local > now && local >= machine_horizon(k->machine, cpu)) {
			sched_continue_at(k, cpu, local, WORK_USER);
			return;
		}
		const struct op *op = &f->ops[f->index];
		if (local != ts->still_at) {
			ts->still_at = local;
			ts->still_ops = 0;
		} else if (++ts->still_ops == OPS_AT_ONE_TIME) {
			interp_fail(
			    ip, ts, op,
			    "%" G_GUINT64_FORMAT " ops in a row without simulated time "
			    "passing: a loop whose body takes no time never ends (give it a "
			    "compute, a sleep or an access)",
			    OPS_AT_ONE_TIME);
			return;
		}
		enum step step = exec_op(k, ts, cpu, op, &local, now);
		if (step == STEP_RETURNED || step == STEP_FAILED)
			return;
		if (step == STEP_NEXT)
			f->index++;
	}
}

static const struct task_ops interp_task_ops = {.run = interp_run};

/* ---- construction ---------------------------------------------------------- */

static bool create_tasks(struct interp *ip, const char *file, uint64_t seed, GError **error)
{
	const struct workload *w = ip->w;
	struct kernel *k = ip->k;
	for (unsigned g = 0; g < w->nr_groups; g++)
		ip->nr_tasks += (unsigned)w->groups[g].count;
	ip->tasks = g_aligned_alloc0(ip->nr_tasks, sizeof(struct itask), HOST_LINE);
	unsigned id = 0;
	for (unsigned g = 0; g < w->nr_groups; g++) {
		const struct task_group *group = &w->groups[g];
		for (unsigned t = 0; t < group->count; t++, id++) {
			struct itask *ts = &ip->tasks[id];
			ts->interp = ip;
			ts->group = g;
			ts->thread = t;
			ts->task.id = id;
			ts->task.name = group->name;
			ts->task.mm = ip->mms[group->mm];
			ts->task.ops = &interp_task_ops;
			ts->task.data = ip;
			ts->task.pinned_cpu = -1;
			ts->accessor = workload_ops_access(group->ops, group->nr_ops);
			rng_seed_stream(&ts->rng, seed, id);
			push_frame(ts, group->ops, group->nr_ops, 1, NULL);
			if (group->cpu) {
				int64_t cpu = 0;
				GError *eval_error = NULL;
				if (!expr_eval(group->cpu, interp_task_lookup, ts, &cpu,
					       &eval_error)) {
					g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
						    "%s: $.tasks[%u].cpu: %s", file, g,
						    eval_error->message);
					g_error_free(eval_error);
					return false;
				}
				if (cpu < 0 || cpu >= (int64_t)k->machine->nr_cpus) {
					g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
						    "%s: $.tasks[%u].cpu: thread %u is pinned to CPU %"
						    G_GINT64_FORMAT ", but the machine has CPUs 0-%u",
						    file, g, t, cpu, k->machine->nr_cpus - 1);
					return false;
				}
				ts->task.pinned_cpu = (int)cpu;
			}
		}
	}
	/* mm ids are 1 .. nr_mms, then one per forking task's child. */
	unsigned forking = interp_fork_children_count(ip);
	if ((uint64_t)ip->nr_mms + forking > MM_MAX_ID) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: the workload needs %" G_GUINT64_FORMAT
			    " address spaces (its %u process(es) and a child for each of its %u "
			    "forking tasks); tlbsim has at most %u",
			    file, (uint64_t)ip->nr_mms + forking, ip->nr_mms, forking, MM_MAX_ID);
		return false;
	}
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		sched_add_task(k, &ip->tasks[i].task);
	/* After the workload's own tasks: their placement does not change. */
	ip->nr_children = forking;
	interp_fork_children_new(ip);
	ip->results.tasks = ip->nr_tasks;
	return true;
}

struct interp *interp_new(struct kernel *k, const struct workload *workload, const char *file,
			  uint64_t seed, bool run_ahead, const struct stop *stop, GError **error)
{
	struct interp *ip = g_new0(struct interp, 1);
	ip->k = k;
	ip->w = workload;
	ip->run_ahead = run_ahead;
	ip->nr_mms = workload->nr_mms;
	ip->mms = g_new0(struct mm *, ip->nr_mms);
	for (unsigned m = 0; m < ip->nr_mms; m++) {
		ip->mms[m] = mm_new(m + 1, k->machine->nr_cpus);
		ip->mms[m]->frames = k->machine->frames;
	}
	ip->flags = g_new0(int64_t, workload->nr_flags + 1);
	ip->flag_waiters = g_new0(GPtrArray *, workload->nr_flags + 1);
	for (unsigned f = 0; f < workload->nr_flags; f++)
		ip->flag_waiters[f] = g_ptr_array_new();
	ip->results.nr_phases = workload->nr_phases;
	ip->results.phase_begin = g_new(uint64_t, workload->nr_phases + 1);
	ip->results.phase_end = g_new0(uint64_t, workload->nr_phases + 1);
	for (unsigned p = 0; p < workload->nr_phases; p++)
		ip->results.phase_begin[p] = UINT64_MAX;
	ip->results.op_cycles = histogram_new();
	if (!layout(ip, seed, stop, error) || !create_tasks(ip, file, seed, error)) {
		interp_free(ip);
		return NULL;
	}
	return ip;
}

void interp_free(struct interp *ip)
{
	if (!ip)
		return;
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		g_free(ip->tasks[i].access.pages);
	interp_fork_children_free(ip);
	g_aligned_free(ip->tasks);
	for (unsigned i = 0; ip->regions && i < ip->w->nr_regions; i++)
		g_free(ip->regions[i].vmas); /* NULL past a stopped layout */
	g_free(ip->regions);
	for (unsigned m = 0; m < ip->nr_mms; m++)
		mm_free(ip->mms[m]);
	g_free(ip->mms);
	for (unsigned f = 0; f < ip->w->nr_flags; f++)
		g_ptr_array_free(ip->flag_waiters[f], TRUE);
	g_free(ip->flag_waiters);
	g_free(ip->flags);
	g_free(ip->results.phase_begin);
	g_free(ip->results.phase_end);
	histogram_free(ip->results.op_cycles);
	if (ip->error)
		g_error_free(ip->error);
	g_free(ip);
}

char **interp_task_labels(const struct interp *ip)
{
	char **labels = g_new0(char *, ip->nr_tasks + ip->nr_children + 1);
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		labels[i] = g_strdup_printf("%s %u", ip->tasks[i].task.name, ip->tasks[i].thread);
	interp_fork_labels(ip, labels + ip->nr_tasks);
	return labels;
}

char *interp_blocked_summary(const struct interp *ip)
{
	GString *out = g_string_new(NULL);
	unsigned shown = 0, blocked = 0;
	for (unsigned f = 0; f < ip->w->nr_flags; f++) {
		const GPtrArray *waiters = ip->flag_waiters[f];
		for (unsigned i = 0; i < waiters->len; i++, blocked++) {
			const struct itask *ts = g_ptr_array_index(waiters, i);
			if (shown == 4)
				continue;
			shown++;
			const struct frame *fr = &ts->frames[ts->depth - 1];
			g_string_append_printf(out, "%s%s %u at %s waits on flag \"%s\" (now %"
					       G_GINT64_FORMAT ")", out->len ? "; " : "",
					       ts->task.name, ts->thread, fr->ops[fr->index].path,
					       ip->w->flag_names[f], ip->flags[f]);
		}
	}
	if (blocked > 4)
		g_string_append_printf(out, "; and %u more", blocked - 4);
	return g_string_free(out, FALSE);
}

const GError *interp_error(const struct interp *ip)
{
	return ip->error;
}

const struct interp_results *interp_results(struct interp *ip)
{
	uint64_t accessors = 0, accesses = 0, round_accesses = 0, asked = 0, idle = 0;
	for (unsigned i = 0; i < ip->nr_tasks; i++) {
		const struct itask *ts = &ip->tasks[i];
		accesses += ts->accesses;
		round_accesses += ts->round_accesses;
		accessors += ts->accesses > 0;
		asked += ts->accessor;
		idle += ts->accessor && !ts->began_access;
	}
	ip->results.accessor_threads = accessors;
	ip->results.access_tasks = asked;
	ip->results.access_tasks_idle = idle;
	ip->results.accesses = accesses;
	ip->results.round_accesses = round_accesses;
	return &ip->results;
}
