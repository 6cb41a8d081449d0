/*
 * The access op: a loop of memory accesses, run ahead locally.
 *
 * Memory accesses touch only this core's TLBs and caches and read page
 * tables and flags, which change only at global events; so a CPU runs them
 * ahead up to machine_horizon(), running its quiet SMT siblings' accesses
 * inline in (time, cpu) order because they share TLBs.  Ties are ordered as
 * the engine orders resumes (after ordinary events, then by CPU), so the
 * result is the one stepping one access per event gives
 * (tests/test_interp.c).  A fault is taken in step with the engine, through
 * the kernel's handle_mm_fault().
 *
 * Simplifies: the harness's per-access work outside translation is a fixed
 * cycle count from the workload; a random working set is drawn with
 * replacement, as the benchmark's rand() % size does.
 */
#include "interp_impl.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/vm.h"

bool access_begin(struct itask *ts, const struct op *op)
{
	ts->began_access = true;
	struct interp *ip = ts->interp;
	const struct region *r = &ip->w->regions[op->region];
	struct access_state *a = &ts->access;
	uint64_t region_pages = r->chunks * (r->chunk_bytes / page_size_bytes(r->page_size));
	uint64_t base = ip->regions[op->region].base;
	int64_t pages = 0, rounds = 0, write = 0, cycles = 0, first = 0, chunk = -1;

	if (op->chunk) {
		if (!interp_eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
			return false;
		region_pages = r->chunk_bytes / page_size_bytes(r->page_size);
		base = ip->regions[op->region].vmas[chunk]->start;
	}
	if (!interp_eval(ts, op, op->pages, 1, 1 << 24, "pages", &pages) ||
	    (op->count && !interp_eval(ts, op, op->count, 0, INT64_MAX, "rounds", &rounds)) ||
	    !interp_eval(ts, op, op->write, 0, 1, "write", &write) ||
	    /* At least a cycle each: a spin of free accesses would stop the clock. */
	    !interp_eval(ts, op, op->cycles, 1, 1000000000, "cycles", &cycles) ||
	    (op->first &&
	     !interp_eval(ts, op, op->first, 0, (int64_t)region_pages - 1, "first", &first)))
		return false;
	if (!op->random && (uint64_t)(first + pages) > region_pages) {
		interp_fail(ip, ts, op, "pages %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT
			    " run past the end of the region (%" G_GUINT64_FORMAT " pages)",
			    first, first + pages - 1, region_pages);
		return false;
	}
	g_free(a->pages);
	g_assert(region_pages <= UINT32_MAX); /* the loader's cap on a run's pages */
	*a = (struct access_state){
		.active = true,
		.op = op,
		.pages = g_new(uint32_t, (gsize)pages),
		.base = base,
		.page_shift = page_size_shift(r->page_size),
		.nr = (uint64_t)pages,
		.rounds_left = op->count ? (uint64_t)rounds : UINT64_MAX,
		.vma = r->chunks == 1 ? ip->regions[op->region].vmas[0]
		       : op->chunk    ? ip->regions[op->region].vmas[chunk]
				      : NULL,
		.write = write != 0,
		.cycles = (uint64_t)cycles,
		.disturb_cpu = UINT_MAX, /* none seen yet */
	};
	for (uint64_t i = 0; i < a->nr; i++)
		a->pages[i] = (uint32_t)(op->random ? rng_below(&ts->rng, region_pages)
						    : (uint64_t)first + i);
	return true;
}

/* The address of the table's entry @i. */
static inline uint64_t access_addr(const struct access_state *a, uint64_t i)
{
	return a->base + ((uint64_t)a->pages[i] << a->page_shift);
}

/* At a round boundary: is another round due? */
static bool access_round_due(const struct itask *ts)
{
	const struct access_state *a = &ts->access;
	if (a->rounds_left == 0)
		return false;
	return a->op->while_flag < 0 || interp_flag_value(ts, (unsigned)a->op->while_flag) != 0;
}

/* The kernel handled the fault: the access retires at @time. */
static void access_fault_done(struct kernel *k, void *ctx, uint64_t time)
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
	if (interp_flag_value(ts, (unsigned)op->while_flag) == 0)
		return false;
	const struct interp *ip = ts->interp;
	const struct mm *mm = ts->task.mm;
	uint64_t epoch = a->quiet_vma ? a->quiet_vma->epoch : mm->epoch;
	if (a->checked && epoch == a->quiet_epoch)
		return a->all_mapped;
	a->all_mapped = true;
	a->quiet_vma = NULL;
	for (uint64_t i = 0; i < a->nr && a->all_mapped; i++) {
		const struct vma *vma = interp_region_vma(ip, op->region, access_addr(a, i));
		const struct pte *pte = vma_pte(vma, access_addr(a, i));
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
	return a->vma ? a->vma : interp_region_vma(ip, a->op->region, addr);
}

/*
 * Where in its page the access at position @i reads: workloads name pages,
 * and a program's byte within the page (munmap.c reads rand() % FILE_SIZE)
 * decides only which cache line it pulls in.  Fixed per (position, page), so
 * a loop reads the same lines every round, as a program walking a fixed
 * table of addresses does.
 */
static inline uint64_t access_byte(uint64_t addr, uint64_t i, const struct vma *vma)
{
	uint64_t h = (addr ^ i) * UINT64_C(0x9e3779b97f4a7c15);
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
	uint64_t addr = access_addr(a, i < a->nr ? i : i % a->nr);

	return vma_pte(access_vma(ip, a, addr), addr);
}

/*
 * SMT threads of a core that are issuing, @cpu included.  An independent
 * loop's access_cycles is an issue cost, and siblings share the issue slots:
 * Intel's selection points alternate between the logical processors unless
 * one cannot use the stage (IA-32 Optimization Reference Manual,
 * "Microarchitecture Pipeline and Hyper-Threading Technology"), so each of n
 * issuing threads issues at 1/n of the width.  A sibling that is idle or in
 * an interrupt does not issue (sched_cpu_issuing()).  A latency-bound
 * (dependent) loop leaves slots its sibling fills and is not charged.
 * Constant for a dispatch: a sibling starts or stops issuing only at an event
 * that bounds the horizon (its resume, an interrupt's entry or exit: its
 * lane), or is run inline and so is issuing.
 */
static unsigned core_issuing_threads(const struct kernel *k, const struct cpu *cpu)
{
	unsigned n = 1;
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		const struct cpu *other = &k->machine->cpus[cpu->core_cpus[i]];
		if (other != cpu && sched_cpu_issuing(k, other))
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
	uint64_t addr = access_addr(a, a->pos);
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
	machine_touch_data(k->machine, cpu, vma, addr + access_byte(addr, a->pos, vma));
	uint64_t spent = cycles + (op->independent ? a->cycles * issuing : a->cycles);
	*t += spent;
	cpu->sample_access_cycles += spent;
	cpu->counters.accesses++;
	ts->accesses++;
	if (++a->pos == a->nr) {
		a->pos = 0;
		if (a->rounds_left != UINT64_MAX)
			a->rounds_left--;
		ts->round_accesses += a->nr;
		a->rounds_simulated++;
	}
	return ACCESS_DONE;
}

/*
 * Sampled mode (machine.h, "Sampling"): in a period's skipped rest, a
 * settled loop is busy up to the horizon (never past the rest's end)
 * without simulating its accesses; the sampler estimates what they would
 * have counted.  Settled: access_quiet() (open-ended, cannot fault), and
 * past two transients that no window stands for, which are simulated: the
 * cold start, until the loop has run its table SAMPLE_WARM_ROUNDS times
 * access by access (its TLBs and caches filling); and the refill after a
 * disturbance, a flush that removed entries from its core's TLBs or a task
 * switch on its core, until it has made as many accesses as its table has
 * (every page translated again).
 */
#define SAMPLE_WARM_ROUNDS 4

static bool access_settled(const struct kernel *k, struct itask *ts, const struct cpu *cpu)
{
	struct access_state *a = &ts->access;
	uint64_t signature = machine_sample_signature(k->machine, cpu);
	if (cpu->id != a->disturb_cpu || signature != a->disturb_signature) {
		a->disturb_cpu = cpu->id;
		a->disturb_signature = signature;
		a->disturb_accesses = ts->accesses;
	}
	return a->rounds_simulated >= SAMPLE_WARM_ROUNDS &&
	       ts->accesses - a->disturb_accesses >= a->nr && access_quiet(ts);
}

/*
 * SMT siblings share the STLB, the page walkers and the caches: a loop
 * simulated beside a skipping sibling would have them to itself and run
 * faster than it does.  So a core skips as a whole: a CPU only when every
 * access loop on its core is settled too.
 */
static bool core_settled(const struct kernel *k, const struct interp *ip, const struct cpu *cpu)
{
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		const struct cpu *other = &k->machine->cpus[cpu->core_cpus[i]];
		struct task *task = sched_current(k, other);
		if (other == cpu || !task || task->data != ip)
			continue;
		struct itask *ots = (struct itask *)task;
		if (ots->access.active && !access_settled(k, ots, other))
			return false;
	}
	return true;
}

static bool access_skip(const struct kernel *k, struct itask *ts, struct cpu *cpu, uint64_t *t,
			uint64_t horizon)
{
	/* Noted in windows too: a window measures only settled loops. */
	bool settled = access_settled(k, ts, cpu);
	machine_sample_note(cpu, settled);
	uint64_t skip_end = machine_sample_skip_end(&k->machine->sample, *t);
	if (skip_end <= *t || *t >= horizon || !settled ||
	    !core_settled(k, ts->interp, cpu))
		return false;
	uint64_t to = MIN(horizon, skip_end);
	cpu->sample_skipped_cycles += to - *t;
	*t = to;
	return true;
}

/* A sibling whose accesses may be run inline, in time order with ours. */
struct sibling_run {
	struct cpu *cpu;
	struct itask *ts;
	uint64_t t;
	bool active; /* its next step is still an access */
	bool moved;
};

/* Is the task on @cpu one of @ip's with an access to run next? */
static bool sibling_mergeable(const struct interp *ip, const struct cpu *cpu, struct itask **out)
{
	struct task *task = sched_current(ip->k, cpu);
	if (!task || task->data != ip)
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
static unsigned gather_siblings(const struct interp *ip, const struct cpu *cpu, bool merge,
				struct sibling_run *sib, uint64_t *horizon)
{
	const struct kernel *k = ip->k;
	unsigned n = 0;
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		struct cpu *other = &k->machine->cpus[cpu->core_cpus[i]];
		uint64_t at;
		bool quiet;
		struct itask *ts;
		if (other == cpu || !sched_pending_resume(k, other, &at, &quiet))
			continue;
		if (merge && quiet && sibling_mergeable(ip, other, &ts))
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
enum step access_run(struct kernel *k, struct itask *ts, struct cpu *cpu, uint64_t *local,
			    uint64_t now)
{
	struct interp *ip = ts->interp;
	struct sibling_run sib[8];
	uint64_t horizon = machine_horizon(k->machine, cpu);
	unsigned nr_sib = gather_siblings(ip, cpu, ip->run_ahead, sib, &horizon);
	unsigned issuing = core_issuing_threads(k, cpu);
	/* Sampled mode skips only ahead of the event queue. */
	const bool sampling = k->machine->sample.on && ip->run_ahead;

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
			if (sampling && access_skip(k, r->ts, r->cpu, &r->t, horizon)) {
				r->moved = true;
				continue;
			}
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
		if (sampling && access_skip(k, ts, cpu, local, horizon))
			continue;
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
			if (!interp_in_step(k, cpu, *local, now))
				return STEP_RETURNED;
			ts->access.fault_seen = false;
			struct kcont done = {.fn = access_fault_done, .ctx = ts};
			uint64_t addr = access_addr(&ts->access, ts->access.pos);
			handle_mm_fault(k, cpu, ts->task.mm,
					interp_region_vma(ip, ts->access.op->region, addr), addr,
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
