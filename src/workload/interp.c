/*
 * Runs workload programs as simulated tasks.
 *
 * Each task is a struct task driven by interp_run(): it executes ops from a
 * small stack of loop frames, at a local time that starts at the dispatch
 * time.  Ops whose effects other CPUs can see (syscalls, faults, flags) first
 * bring local time back in step with the engine by asking to be resumed at the
 * local time, and their effects land through events at least the lookahead
 * later.  Memory accesses touch only this core's TLBs and read page tables and
 * flags, which change only at global events; so a CPU runs them ahead up to
 * machine_horizon(), running its quiet SMT siblings' accesses inline in
 * (time, cpu) order because they share TLBs.  Ties are ordered as the engine
 * orders resumes (after ordinary events, then by CPU), so the result is the
 * one stepping one access per event gives (tests/test_interp.c).
 *
 * Simplifies: the harness's per-access work outside translation is a fixed
 * cycle count from the workload; a random working set is drawn with
 * replacement, as the benchmark's rand() % size does.
 * Invariant: every task ends by sched_exit() or by a recorded run-time error.
 */
#include <string.h>
#include "tlbsim/kernel/sched.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/vm.h"
#include "tlbsim/util/error.h"
#include "tlbsim/util/rng.h"
#include "tlbsim/workload/interp.h"

#define REGION_ALIGN (UINT64_C(1) << 21)
/*
 * Work one dispatch may do before handing back to the engine even when
 * nothing bounds it, so that budgets and signals are checked: a program
 * looping on ops that take no time, or an access loop nobody stops.
 * Returning early is a resume at the same local time: results do not change.
 */
#define OPS_PER_DISPATCH 4096
#define ACCESSES_PER_DISPATCH 65536
#define LAYOUT_BASE (UINT64_C(1) << 32)

struct frame {
	const struct op *ops;
	unsigned nr;
	unsigned index;
	int64_t iter;
	int64_t count;
	const char *var;
};

struct access_state {
	bool active;
	const struct op *op;
	uint64_t *addrs;
	uint64_t nr;
	uint64_t pos;
	uint64_t rounds_left; /* UINT64_MAX: until the flag clears */
	struct vma *vma;      /* the one VMA every address is in, or NULL */
	bool write;
	uint64_t cycles;
	bool fault_seen; /* the current access faulted; handle it at the exact time */
	bool fault_done; /* the kernel handled it: retire the access */
	/* Cache for access_quiet(): every page present (and writable for
	 * writes) as of this epoch of @quiet_vma (or of the mm if NULL). */
	bool all_mapped;
	bool checked;
	const struct vma *quiet_vma;
	uint64_t quiet_epoch;
};

struct flag_store;

struct itask {
	struct task task;
	struct interp *interp;
	/* This task's flag stores not yet seen by the other cores, newest
	 * first: the task itself reads them at once (store forwarding). */
	struct flag_store *own_stores;
	unsigned group;
	unsigned thread;
	unsigned mm_index;
	struct rng rng;
	unsigned depth;
	struct frame frames[WORKLOAD_MAX_DEPTH + 1];
	struct access_state access;
	uint64_t syscall_start;
	enum op_kind syscall_kind;
	bool syscall_counted; /* issued inside the report phase (or there is none) */
	bool in_report_phase; /* between this task's begin and end of it */
	uint64_t accesses;
};

struct region_map {
	uint64_t base;
	struct vma **vmas; /* one per chunk, into the owning mm's VMA array */
};

struct interp {
	struct kernel *k;
	const struct workload *w;
	bool run_ahead;
	unsigned nr_mms;
	struct mm **mms;
	struct region_map *regions;
	unsigned nr_tasks;
	struct itask *tasks;
	int64_t *flags;
	GPtrArray **flag_waiters; /* struct itask * */
	GError *error;
	struct interp_results results;
};

static const struct task_ops interp_task_ops;

/* ---- expression variables ------------------------------------------------ */

static bool task_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct itask *ts = ctx;
	for (unsigned d = ts->depth; d-- > 0;) {
		const struct frame *f = &ts->frames[d];
		if (f->var && strcmp(f->var, name) == 0) {
			*value = f->iter;
			return true;
		}
	}
	if (strcmp(name, "thread") == 0) {
		*value = ts->thread;
		return true;
	}
	if (strcmp(name, "task") == 0) {
		*value = ts->task.id;
		return true;
	}
	if (strcmp(name, "cpus") == 0) {
		*value = ts->interp->k->machine->nr_cpus;
		return true;
	}
	return workload_param(ts->interp->w, name, value);
}

static void interp_fail(struct interp *ip, const struct itask *ts, const struct op *op,
			const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static void interp_fail(struct interp *ip, const struct itask *ts, const struct op *op,
			const char *fmt, ...)
{
	if (!ip->error) {
		va_list args;
		va_start(args, fmt);
		char *msg = g_strdup_vprintf(fmt, args);
		va_end(args);
		g_set_error(&ip->error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: %s (task %s/%u at %.0f ns)", op ? op->path : "workload", msg,
			    ts->task.name, ts->thread,
			    topology_cycles_to_ns(ip->k->machine->topology, engine_now(ip->k->engine)));
		g_free(msg);
	}
	engine_stop(ip->k->engine);
}

static bool eval(struct itask *ts, const struct op *op, const struct expr *expr,
		 int64_t min, int64_t max, const char *what, int64_t *out)
{
	GError *error = NULL;
	if (!expr_eval(expr, task_lookup, ts, out, &error)) {
		interp_fail(ts->interp, ts, op, "%s: %s", what, error->message);
		g_error_free(error);
		return false;
	}
	if (*out < min || *out > max) {
		interp_fail(ts->interp, ts, op,
			    "%s is %" G_GINT64_FORMAT ", expected [%" G_GINT64_FORMAT
			    ", %" G_GINT64_FORMAT "] (\"%s\")",
			    what, *out, min, max, expr_text(expr));
		return false;
	}
	return true;
}

/* ---- layout -------------------------------------------------------------- */

static struct vma *region_vma(const struct interp *ip, unsigned region, uint64_t addr)
{
	const struct region *r = &ip->w->regions[region];
	const struct region_map *map = &ip->regions[region];
	uint64_t slot = r->chunks == 1 ? 0 : (addr - map->base) / r->chunk_bytes;
	return map->vmas[r->chunks - 1 - slot];
}

static void populate_region(struct interp *ip, unsigned index)
{
	const struct region *r = &ip->w->regions[index];
	struct mm *mm = ip->mms[r->mm];
	for (uint64_t c = 0; c < r->chunks; c++) {
		struct vma *vma = ip->regions[index].vmas[c];
		uint64_t n = r->populate == POPULATE_ALL ? vma_pages(vma) : 1;
		for (uint64_t i = 0; r->populate != POPULATE_NONE && i < n; i++)
			mm_populate(mm, vma, vma->start + i * page_size_bytes(vma->page_size), true);
	}
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

static void layout(struct interp *ip, uint64_t seed)
{
	const struct workload *w = ip->w;
	uint64_t *cursor = g_new(uint64_t, ip->nr_mms);
	for (unsigned m = 0; m < ip->nr_mms; m++)
		cursor[m] = LAYOUT_BASE;
	ip->regions = g_new0(struct region_map, w->nr_regions);
	for (unsigned i = 0; i < w->nr_regions; i++) {
		const struct region *r = &w->regions[i];
		struct mm *mm = ip->mms[r->mm];
		uint64_t base = cursor[r->mm] + region_offset(r, i, seed);
		ip->regions[i].base = base;
		ip->regions[i].vmas = g_new(struct vma *, r->chunks);
		/* Chunks are mmap()ed one after another, and mmap places each new
		 * mapping below the previous one (top-down): chunk 0 is highest.
		 * That decides which munmap frees a page-table page and so the
		 * range mmu_gather flushes. */
		for (uint64_t c = r->chunks; c-- > 0;)
			mm_add_vma(mm, base + (r->chunks - 1 - c) * r->chunk_bytes, r->chunk_bytes,
				   r->page_size, r->hugetlb, i, (unsigned)c)->shared = r->shared;
		/* A 2 MiB gap keeps regions from sharing page-table pages. */
		uint64_t end = base + r->chunks * r->chunk_bytes;
		cursor[r->mm] = (end + 2 * REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
	}
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
	for (unsigned i = 0; i < w->nr_regions; i++)
		populate_region(ip, i);
	g_free(cursor);
}

/* ---- ops ------------------------------------------------------------------ */

/* Resume at @local: used before any op other CPUs can observe. */
static bool in_step(struct kernel *k, struct cpu *cpu, uint64_t local,
		    uint64_t now)
{
	if (local == now)
		return true;
	sched_continue_at(k, cpu, local, WORK_USER);
	return false;
}

static bool access_begin(struct itask *ts, const struct op *op)
{
	struct interp *ip = ts->interp;
	const struct region *r = &ip->w->regions[op->region];
	struct access_state *a = &ts->access;
	uint64_t region_pages = r->chunks * (r->chunk_bytes / page_size_bytes(r->page_size));
	uint64_t base = ip->regions[op->region].base;
	int64_t pages = 0, rounds = 0, write = 0, cycles = 0, first = 0, chunk = -1;

	if (op->chunk) {
		if (!eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
			return false;
		region_pages = r->chunk_bytes / page_size_bytes(r->page_size);
		base = ip->regions[op->region].vmas[chunk]->start;
	}
	if (!eval(ts, op, op->pages, 1, 1 << 24, "pages", &pages) ||
	    (op->count && !eval(ts, op, op->count, 0, INT64_MAX, "rounds", &rounds)) ||
	    !eval(ts, op, op->write, 0, 1, "write", &write) ||
	    /* At least a cycle each: a spin of free accesses would stop the clock. */
	    !eval(ts, op, op->cycles, 1, 1000000000, "cycles", &cycles) ||
	    (op->first && !eval(ts, op, op->first, 0, (int64_t)region_pages - 1, "first", &first)))
		return false;
	if (!op->random && (uint64_t)(first + pages) > region_pages) {
		interp_fail(ip, ts, op, "pages %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT
			    " run past the end of the region (%" G_GUINT64_FORMAT " pages)",
			    first, first + pages - 1, region_pages);
		return false;
	}
	g_free(a->addrs);
	*a = (struct access_state){
		.active = true,
		.op = op,
		.addrs = g_new(uint64_t, (gsize)pages),
		.nr = (uint64_t)pages,
		.rounds_left = op->count ? (uint64_t)rounds : UINT64_MAX,
		.vma = r->chunks == 1 ? ip->regions[op->region].vmas[0]
		       : op->chunk    ? ip->regions[op->region].vmas[chunk]
				      : NULL,
		.write = write != 0,
		.cycles = (uint64_t)cycles,
	};
	uint64_t size = page_size_bytes(r->page_size);
	for (uint64_t i = 0; i < a->nr; i++) {
		uint64_t page = op->random ? rng_below(&ts->rng, region_pages) : (uint64_t)first + i;
		a->addrs[i] = base + page * size;
	}
	return true;
}

struct flag_store {
	struct itask *writer;
	unsigned flag;
	int64_t value;
	struct flag_store *next_own; /* the writer's older stores in flight */
};

/* A flag as @ts reads it: its own latest store, else what every core sees. */
static int64_t flag_value(const struct itask *ts, unsigned flag)
{
	for (const struct flag_store *st = ts->own_stores; st; st = st->next_own)
		if (st->flag == flag)
			return st->value;
	return ts->interp->flags[flag];
}

/* At a round boundary: is another round due? */
static bool access_round_due(const struct itask *ts)
{
	const struct access_state *a = &ts->access;
	if (a->rounds_left == 0)
		return false;
	return a->op->while_flag < 0 || flag_value(ts, (unsigned)a->op->while_flag) != 0;
}

/*
 * What an op did: STEP_NEXT, finished (the caller moves to the next op);
 * STEP_PUSHED, entered a loop body (already moved); STEP_RETURNED, handed the
 * CPU to the scheduler; STEP_FAILED, recorded a run-time error.
 */
enum step { STEP_NEXT, STEP_PUSHED, STEP_RETURNED, STEP_FAILED };

/*
 * Run accesses while local time stays before the next pending event.  Returns
 * STEP_NEXT when the op is finished, STEP_RETURNED after asking to resume.
 */
static void interp_fault_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct itask *ts = ctx;
	ts->access.fault_done = true;
	sched_continue_at(k, &k->machine->cpus[ts->task.cpu], time, WORK_KERNEL);
}

/*
 * May this task's resume be quiet (sched.h): an open-ended access loop (it ends
 * only when its flag changes, a global event) over pages that are all present,
 * and writable if it writes, so no access of it can fault.
 */
static bool access_quiet(struct itask *ts)
{
	struct access_state *a = &ts->access;
	const struct op *op = a->op;
	if (!a->active || op->count || op->while_flag < 0 || a->fault_seen || a->fault_done)
		return false;
	/* Once the flag is clear the loop ends at its next round, and what
	 * follows it may reach other cores: no promise then. */
	if (flag_value(ts, (unsigned)op->while_flag) == 0)
		return false;
	const struct interp *ip = ts->interp;
	const struct mm *mm = ts->task.mm;
	uint64_t epoch = a->quiet_vma ? a->quiet_vma->epoch : mm->epoch;
	if (a->checked && epoch == a->quiet_epoch)
		return a->all_mapped;
	a->all_mapped = true;
	a->quiet_vma = NULL;
	for (uint64_t i = 0; i < a->nr && a->all_mapped; i++) {
		const struct vma *vma = region_vma(ip, op->region, a->addrs[i]);
		const struct pte *pte = vma_pte(vma, a->addrs[i]);
		a->all_mapped = vma->mapped && pte->present && (!a->write || pte->writable);
		a->quiet_vma = i == 0 || a->quiet_vma == vma ? vma : NULL;
	}
	if (!a->all_mapped)
		a->quiet_vma = NULL;
	a->checked = true;
	a->quiet_epoch = a->quiet_vma ? a->quiet_vma->epoch : mm->epoch;
	return a->all_mapped;
}

enum access_result { ACCESS_DONE, ACCESS_FINISHED, ACCESS_FAULT, ACCESS_FAILED };

/* The VMA of @addr, one of the access op's addresses (VMA arrays never move). */
static inline struct vma *access_vma(const struct interp *ip, const struct access_state *a,
				     uint64_t addr)
{
	return a->vma ? a->vma : region_vma(ip, a->op->region, addr);
}

/*
 * Where in its page the access at position @i reads: workloads name pages,
 * and a program's byte within the page (munmap.c reads rand() % FILE_SIZE)
 * decides only which cache line it pulls in.  Fixed per (position, page), so
 * a loop reads the same lines every round, as a program walking a fixed
 * table of addresses does.
 */
static inline uint64_t access_byte(const struct access_state *a, uint64_t i,
				   const struct vma *vma)
{
	uint64_t h = (a->addrs[i] ^ i) * UINT64_C(0x9e3779b97f4a7c15);
	return (h >> 32) & (page_size_bytes(vma->page_size) - 1);
}

/*
 * Pages are drawn at random from regions of up to gigabytes, so the
 * page-table entry an access reads is rarely in the host's L1 cache: ask for
 * the one PREFETCH_AHEAD accesses ahead, which the walk or the stale check
 * will read then.  Only a hint: nothing is read, whatever the state.
 * (Prefetching the simulated caches' sets for it too was slower.)
 */
#define PREFETCH_AHEAD 4

/* (Returned, not prefetched here: GCC deletes calls of a static function
 * whose only effect is a prefetch.) */
static inline const struct pte *access_pte_ahead(const struct interp *ip,
						 const struct access_state *a)
{
	uint64_t i = a->pos + PREFETCH_AHEAD;
	uint64_t addr = a->addrs[i < a->nr ? i : i % a->nr];

	return vma_pte(access_vma(ip, a, addr), addr);
}

/*
 * SMT threads of a core that are executing, @cpu included.  An independent
 * loop's access_cycles is an issue cost, and siblings share the issue slots:
 * Intel's selection points alternate between the logical processors unless
 * one cannot use the stage (IA-32 Optimization Reference Manual,
 * "Microarchitecture Pipeline and Hyper-Threading Technology"), so each of n
 * executing threads issues at 1/n of the width.  A latency-bound (dependent)
 * loop leaves slots its sibling fills and is not charged.  Constant for a
 * dispatch: a sibling starts or stops only at an event that bounds the
 * horizon (its resume, its lane), or is run inline and so is executing.
 */
static unsigned core_issuing_threads(const struct kernel *k, const struct cpu *cpu)
{
	unsigned n = 1;
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		const struct cpu *other = &k->machine->cpus[cpu->core_cpus[i]];
		if (other != cpu && sched_cpu_busy(k, other))
			n++;
	}
	return n;
}

/*
 * One access of @ts's access op on @cpu, starting at *@t, with @issuing
 * threads sharing the core's issue slots.  ACCESS_FINISHED:
 * the op is over (no access made).  ACCESS_FAULT: the access faulted; the
 * caller must handle it at exactly *@t (translation cycles already added).
 */
static enum access_result access_one(struct kernel *k, struct itask *ts, struct cpu *cpu,
				     uint64_t *t, unsigned issuing)
{
	struct interp *ip = ts->interp;
	struct access_state *a = &ts->access;
	const struct op *op = a->op;
	if (a->pos == 0 && !a->fault_seen && !a->fault_done && !access_round_due(ts)) {
		a->active = false;
		return ACCESS_FINISHED;
	}
	uint64_t addr = a->addrs[a->pos];
	struct vma *vma = access_vma(ip, a, addr);
	uint64_t cycles = 0;
	__builtin_prefetch(access_pte_ahead(ip, a));
	if (a->fault_done) {
		/* The kernel has mapped the page and filled the TLB. */
		a->fault_done = false;
	} else if (a->fault_seen) {
		return ACCESS_FAULT;
	} else if (machine_translate(k->machine, cpu, tlbflush_state(k, cpu)->loaded_asid, vma,
				     addr, a->write, *t,
				     op->independent ? TRANSLATE_INDEPENDENT : TRANSLATE_DEPENDENT,
				     &cycles) == TRANSLATE_FAULT) {
		/* A hit, even on a stale entry of an unmapped page, succeeds as
		 * the hardware lets it; only a walk finds the mapping gone. */
		*t += cycles;
		if (!vma->mapped) {
			interp_fail(ip, ts, op, "access to unmapped memory (%s chunk %u): SIGSEGV",
				    ip->w->regions[op->region].name, vma->chunk);
			return ACCESS_FAILED;
		}
		if (a->write && !vma->writable) {
			interp_fail(ip, ts, op, "write to read-only memory: SIGSEGV");
			return ACCESS_FAILED;
		}
		a->fault_seen = true;
		return ACCESS_FAULT;
	}
	machine_touch_data(k->machine, cpu, vma, addr + access_byte(a, a->pos, vma));
	*t += cycles + (op->independent ? a->cycles * issuing : a->cycles);
	cpu->counters.accesses++;
	ts->accesses++;
	if (++a->pos == a->nr) {
		a->pos = 0;
		if (a->rounds_left != UINT64_MAX)
			a->rounds_left--;
		ip->results.round_accesses += a->nr;
	}
	return ACCESS_DONE;
}

/* A sibling whose accesses may be run inline, in time order with ours. */
struct sibling_run {
	struct cpu *cpu;
	struct itask *ts;
	uint64_t t;
	bool active; /* its next step is still an access */
	bool moved;
};

static bool sibling_mergeable(const struct kernel *k, const struct cpu *cpu, struct itask **out)
{
	struct task *task = sched_current(k, cpu);
	if (!task || task->ops != &interp_task_ops)
		return false;
	struct itask *ts = (struct itask *)task;
	const struct access_state *a = &ts->access;
	if (!a->active || a->fault_seen || a->fault_done || (a->pos == 0 && !access_round_due(ts)))
		return false;
	*out = ts;
	return true;
}

/*
 * Collect the SMT siblings that can be run inline (only if @merge: run-ahead);
 * the others bound the horizon at their next resume, quiet or not, since
 * siblings share the core's TLBs and walkers and must take their accesses in
 * time order.
 */
static unsigned gather_siblings(struct kernel *k, const struct cpu *cpu, bool merge,
				struct sibling_run *sib, uint64_t *horizon)
{
	unsigned n = 0;
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		struct cpu *other = &k->machine->cpus[cpu->core_cpus[i]];
		uint64_t at;
		bool quiet;
		struct itask *ts;
		if (other == cpu || !sched_pending_resume(k, other, &at, &quiet))
			continue;
		if (merge && quiet && sibling_mergeable(k, other, &ts))
			sib[n++] = (struct sibling_run){.cpu = other, .ts = ts, .t = at, .active = true};
		else
			*horizon = MIN(*horizon, at);
	}
	return n;
}

static void release_siblings(struct kernel *k, struct sibling_run *sib, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!sib[i].moved)
			continue;
		enum sched_work work = sib[i].active && access_quiet(sib[i].ts) ? WORK_USER_QUIET
										 : WORK_USER;
		sched_move_resume(k, sib[i].cpu, sib[i].t, work);
	}
}

/*
 * Run accesses of this task, and inline those of quiet SMT siblings, in
 * (time, cpu) order while the earliest is before the horizon.  Returns
 * STEP_NEXT when this task's op is over, STEP_RETURNED after asking to resume.
 */
static enum step access_run(struct kernel *k, struct itask *ts, struct cpu *cpu, uint64_t *local,
			    uint64_t now)
{
	struct interp *ip = ts->interp;
	struct sibling_run sib[8];
	uint64_t horizon = machine_horizon(k->machine, cpu);
	unsigned nr_sib = gather_siblings(k, cpu, ip->run_ahead, sib, &horizon);
	unsigned issuing = core_issuing_threads(k, cpu);

	for (unsigned steps = 0; steps < ACCESSES_PER_DISPATCH; steps++) {
		/* Whose access is next: ours, or an inline sibling's? */
		int next = -1;
		uint64_t t = *local;
		for (unsigned i = 0; i < nr_sib; i++)
			if (sib[i].active &&
			    (sib[i].t < t || (sib[i].t == t && sib[i].cpu->id < cpu->id))) {
				next = (int)i;
				t = sib[i].t;
			}
		/* The access at the dispatch time is the one this event stands for. */
		if (t >= horizon && !(next < 0 && t == now))
			break;
		if (next >= 0) {
			struct sibling_run *r = &sib[next];
			enum access_result res = access_one(k, r->ts, r->cpu, &r->t, issuing);
			r->moved = true;
			if (res == ACCESS_FAILED)
				return STEP_FAILED;
			if (res != ACCESS_DONE) {
				r->active = false;
				horizon = MIN(horizon, r->t);
			}
			continue;
		}
		enum access_result res = access_one(k, ts, cpu, local, issuing);
		if (res == ACCESS_FAILED)
			return STEP_FAILED;
		if (res == ACCESS_FINISHED) {
			release_siblings(k, sib, nr_sib);
			return STEP_NEXT;
		}
		if (res == ACCESS_FAULT) {
			release_siblings(k, sib, nr_sib);
			/* A fault changes a PTE every CPU can see: take it in step. */
			if (!in_step(k, cpu, *local, now))
				return STEP_RETURNED;
			ts->access.fault_seen = false;
			struct kcont done = {.fn = interp_fault_done, .ctx = ts};
			handle_mm_fault(k, cpu, ts->task.mm, region_vma(ip, ts->access.op->region,
					ts->access.addrs[ts->access.pos]), ts->access.addrs[ts->access.pos],
					ts->access.write, *local, done);
			return STEP_RETURNED;
		}
		if (!ip->run_ahead)
			break;
	}
	release_siblings(k, sib, nr_sib);
	sched_continue_at(k, cpu, *local, access_quiet(ts) ? WORK_USER_QUIET : WORK_USER);
	return STEP_RETURNED;
}

static void interp_syscall_done(struct kernel *k, void *ctx, uint64_t time)
{
	struct itask *ts = ctx;
	struct interp *ip = ts->interp;
	if (ts->syscall_kind == ip->w->report_op && ts->syscall_counted) {
		uint64_t latency = time - ts->syscall_start;
		g_array_append_val(ip->results.op_cycles, latency);
	}
	sched_continue_at(k, &k->machine->cpus[ts->task.cpu], time, WORK_KERNEL);
}

static enum step syscall_op(struct kernel *k, struct itask *ts, struct cpu *cpu,
			    const struct op *op, uint64_t local)
{
	struct interp *ip = ts->interp;
	const struct region *r = &ip->w->regions[op->region];
	int64_t chunk = 0;
	if (!eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
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
		if ((op->first && !eval(ts, op, op->first, 0, nr - 1, "first", &first)) ||
		    (op->pages && !eval(ts, op, op->pages, 1, nr - first, "pages", &pages)))
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
		if (!in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		f->index++;
		return syscall_op(k, ts, cpu, op, *local);
	case OP_SLEEP:
		if (!eval(ts, op, op->ns, 0, INT64_MAX / op->ns_scale / 16, "sleep", &v))
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
		if (!eval(ts, op, op->cycles, 0, INT64_MAX / 16, "cycles", &v))
			return STEP_FAILED;
		*local += (uint64_t)v;
		return STEP_NEXT;
	case OP_SET_FLAG:
		if (!in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		if (!eval(ts, op, op->value, INT64_MIN, INT64_MAX, "value", &v))
			return STEP_FAILED;
		flag_set(k, ts, op->flag, v, now);
		/* The store takes the line for itself: an RMW on a line we own. */
		*local += k->machine->topology->costs.line_transfer[DIST_SELF];
		return STEP_NEXT;
	case OP_WAIT_FLAG:
		if (!in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		if (!eval(ts, op, op->value, INT64_MIN, INT64_MAX, "value", &v))
			return STEP_FAILED;
		if (flag_value(ts, op->flag) == v)
			return STEP_NEXT;
		g_ptr_array_add(ip->flag_waiters[op->flag], ts);
		sched_block(k, cpu, *local);
		return STEP_RETURNED;
	case OP_LOOP:
		if (!eval(ts, op, op->count, 0, INT64_MAX, "count", &v))
			return STEP_FAILED;
		f->index++;
		if (v > 0)
			push_frame(ts, op->body, op->nr_body, v, op->var);
		return STEP_PUSHED;
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
	ip->tasks = g_new0(struct itask, ip->nr_tasks);
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
			ts->task.pinned_cpu = -1;
			rng_seed_stream(&ts->rng, seed, id);
			push_frame(ts, group->ops, group->nr_ops, 1, NULL);
			if (group->cpu) {
				int64_t cpu = 0;
				GError *eval_error = NULL;
				if (!expr_eval(group->cpu, task_lookup, ts, &cpu, &eval_error)) {
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
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		sched_add_task(k, &ip->tasks[i].task);
	ip->results.tasks = ip->nr_tasks;
	return true;
}

struct interp *interp_new(struct kernel *k, const struct workload *workload, const char *file,
			  uint64_t seed, bool run_ahead, GError **error)
{
	struct interp *ip = g_new0(struct interp, 1);
	ip->k = k;
	ip->w = workload;
	ip->run_ahead = run_ahead;
	ip->nr_mms = workload->nr_mms;
	ip->mms = g_new0(struct mm *, ip->nr_mms);
	for (unsigned m = 0; m < ip->nr_mms; m++)
		ip->mms[m] = mm_new(m + 1, k->machine->nr_cpus);
	ip->flags = g_new0(int64_t, workload->nr_flags + 1);
	ip->flag_waiters = g_new0(GPtrArray *, workload->nr_flags + 1);
	for (unsigned f = 0; f < workload->nr_flags; f++)
		ip->flag_waiters[f] = g_ptr_array_new();
	ip->results.nr_phases = workload->nr_phases;
	ip->results.phase_begin = g_new(uint64_t, workload->nr_phases + 1);
	ip->results.phase_end = g_new0(uint64_t, workload->nr_phases + 1);
	for (unsigned p = 0; p < workload->nr_phases; p++)
		ip->results.phase_begin[p] = UINT64_MAX;
	ip->results.op_cycles = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	layout(ip, seed);
	if (!create_tasks(ip, file, seed, error)) {
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
		g_free(ip->tasks[i].access.addrs);
	g_free(ip->tasks);
	for (unsigned i = 0; ip->regions && i < ip->w->nr_regions; i++)
		g_free(ip->regions[i].vmas);
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
	g_array_free(ip->results.op_cycles, TRUE);
	if (ip->error)
		g_error_free(ip->error);
	g_free(ip);
}

char **interp_task_labels(const struct interp *ip)
{
	char **labels = g_new0(char *, ip->nr_tasks + 1);
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		labels[i] = g_strdup_printf("%s %u", ip->tasks[i].task.name, ip->tasks[i].thread);
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
	uint64_t accessors = 0, accesses = 0;
	for (unsigned i = 0; i < ip->nr_tasks; i++) {
		accesses += ip->tasks[i].accesses;
		accessors += ip->tasks[i].accesses > 0;
	}
	ip->results.accessor_threads = accessors;
	ip->results.accesses = accesses;
	return &ip->results;
}
