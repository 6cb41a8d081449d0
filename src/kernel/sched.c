/*
 * CFS in miniature, plus each CPU's execution context.
 *
 * Models: one run queue per CPU ordered by vruntime (all tasks weight 1024, so
 * vruntime advances 1:1 with cycles run); slices of latency/nr_running (at
 * least min_granularity) with the log2(cpus) tunable scaling; sleeper credit of
 * half a latency on wakeup; wakeup preemption beyond wakeup_granularity.  The
 * costs of a switch are the topology's context_switch plus whatever
 * context_switch_mm() charges (the policy's lazy-TLB era).
 * Placement and migration are sched_balance.c's.
 * Simplifies: ticks are not modelled, a slice ends exactly on time;
 * preemption of kernel work waits for the end of the current kernel step
 * (PREEMPT_VOLUNTARY).
 * Invariant: a CPU has at most one pending resume event that is current
 * (resume_gen), and while in_irq it has none.
 */
#include "sched_impl.h"
#include "tlbsim/kernel/pti.h"
#include "tlbsim/kernel/smp.h"
#include "tlbsim/kernel/tlbflush.h"
#include "tlbsim/kernel/tracepoint.h"

static void sched_switch(struct rq *rq, uint64_t t, bool prev_runnable);
static void rq_activated(struct rq *rq, uint64_t now);

/*
 * The mm half of context_switch(): enter_lazy_tlb() when @next is NULL (a
 * kernel thread or idle), switch_mm_irqs_off() otherwise, by the policy's
 * lazy-TLB era.  Returns the cycles it costs.
 */
static uint64_t context_switch_mm(struct kernel *k, struct cpu *cpu, struct mm *next,
				  uint64_t now)
{
	const struct lazy_tlb_ops *lazy = k->policy->lazy;
	if (!next)
		return lazy->enter_lazy_tlb(k, cpu, now);
	return lazy->switch_mm(k, cpu, tlbflush_state(k, cpu)->active_mm, next, now);
}

static unsigned ilog2_u(unsigned v)
{
	unsigned r = 0;
	while (v >>= 1)
		r++;
	return r;
}

struct sched *sched_new(struct kernel *k)
{
	struct sched *s = g_new0(struct sched, 1);
	const struct topology *topo = k->machine->topology;
	s->k = k;
	s->nr_cpus = k->machine->nr_cpus;
	s->rqs = g_aligned_alloc0(s->nr_cpus, sizeof(struct rq), HOST_LINE);
	s->tasks = g_ptr_array_new();
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		s->rqs[c].sched = s;
		s->rqs[c].cpu = &k->machine->cpus[c];
		s->rqs[c].queue = g_ptr_array_new();
	}
	/* SCHED_TUNABLESCALING_LOG: factor 1 + ilog2(min(online cpus, 8)). */
	unsigned factor = 1 + ilog2_u(s->nr_cpus < 8 ? s->nr_cpus : 8);
	const struct sched_params *p = &k->policy->sched;
	s->latency = topology_ns_to_cycles(topo, p->latency_ns * factor);
	s->min_granularity = topology_ns_to_cycles(topo, p->min_granularity_ns * factor);
	s->wakeup_granularity = topology_ns_to_cycles(topo, p->wakeup_granularity_ns * factor);
	k->sched = s;
	s->activate = rq_activated;
	sched_balance_init(s);
	return s;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	for (unsigned c = 0; c < s->nr_cpus; c++)
		g_ptr_array_free(s->rqs[c].queue, TRUE);
	g_ptr_array_free(s->tasks, TRUE);
	g_aligned_free(s->rqs);
	g_free(s);
}

uint64_t sched_slice_cycles(const struct kernel *k, unsigned nr_running)
{
	const struct sched *s = k->sched;
	if (nr_running == 0)
		nr_running = 1;
	uint64_t nr_latency = s->min_granularity ? s->latency / s->min_granularity : 1;
	uint64_t period = nr_running > nr_latency ? nr_running * s->min_granularity : s->latency;
	return period / nr_running;
}

static struct rq *cpu_rq(const struct kernel *k, const struct cpu *cpu)
{
	return &k->sched->rqs[cpu->id];
}

struct task *sched_current(const struct kernel *k, const struct cpu *cpu)
{
	return cpu_rq(k, cpu)->curr;
}

bool sched_cpu_issuing(const struct kernel *k, const struct cpu *cpu)
{
	const struct rq *rq = cpu_rq(k, cpu);
	return rq->curr && !rq->in_irq;
}

unsigned sched_nr_alive(const struct kernel *k)
{
	return k->sched->nr_alive;
}

uint64_t sched_last_exit(const struct kernel *k)
{
	return k->sched->last_exit;
}

/* Least loaded CPU, then least loaded core (spread over idle cores), then lowest id. */
static unsigned sched_place(struct sched *s)
{
	const struct machine *m = s->k->machine;
	unsigned nr_cores = m->topology->sockets * m->topology->cores_per_socket;
	unsigned *core_load = g_new0(unsigned, nr_cores);
	for (unsigned c = 0; c < s->nr_cpus; c++)
		core_load[m->cpus[c].core_id] += s->rqs[c].nr_assigned;
	unsigned best = 0;
	for (unsigned c = 1; c < s->nr_cpus; c++) {
		unsigned load = s->rqs[c].nr_assigned, best_load = s->rqs[best].nr_assigned;
		if (load < best_load ||
		    (load == best_load &&
		     core_load[m->cpus[c].core_id] < core_load[m->cpus[best].core_id]))
			best = c;
	}
	g_free(core_load);
	return best;
}

void sched_add_task(struct kernel *k, struct task *task)
{
	struct sched *s = k->sched;
	g_assert(task->pinned_cpu < (int)s->nr_cpus);
	task->cpu = task->pinned_cpu >= 0 ? (unsigned)task->pinned_cpu : sched_place(s);
	task->state = TASK_RUNNABLE;
	task->vruntime = 0;
	task->has_remaining = false;
	struct rq *rq = &s->rqs[task->cpu];
	rq->nr_assigned++;
	rq_queue_add(rq, task);
	g_ptr_array_add(s->tasks, task);
	s->nr_alive++;
}

static void sched_resume_event(void *target, uint64_t gen);

static void rq_resume(struct rq *rq, uint64_t t, enum sched_work work, enum rq_action action)
{
	struct kernel *k = rq->sched->k;
	g_assert(!rq->in_irq);
	rq->resume_gen++;
	rq->resume_pending = true;
	rq->resume_at = t;
	rq->resume_work = work;
	rq->resume_action = action;
	/* A resume yields to any other event at the same time, so a CPU that
	 * ran ahead and one that stepped order their ties alike.  A quiet one
	 * touches only its core until the next tracked event (its promise):
	 * the engine may run it beside other cores' (machine_run_group()). */
	if (work == WORK_USER_QUIET)
		engine_schedule_independent(k->engine, t, machine_run_group(k->machine, rq->cpu),
					    rq->cpu->id, sched_resume_event, rq, rq->resume_gen);
	else
		engine_schedule_last(k->engine, t, cpu_lane(rq->cpu), rq->cpu->id,
				     sched_resume_event, rq, rq->resume_gen);
}

static void rq_cancel_resume(struct rq *rq)
{
	rq->resume_gen++;
	rq->resume_pending = false;
}

static uint64_t curr_vruntime(const struct rq *rq, uint64_t now)
{
	return rq->curr->vruntime + (now - rq->exec_start);
}

static void update_min_vruntime(struct rq *rq, uint64_t now)
{
	uint64_t v = UINT64_MAX;
	if (rq->curr)
		v = curr_vruntime(rq, now);
	for (unsigned i = 0; i < rq->queue->len; i++) {
		const struct task *t = g_ptr_array_index(rq->queue, i);
		if (t->vruntime < v)
			v = t->vruntime;
	}
	if (v != UINT64_MAX && v > rq->min_vruntime)
		rq->min_vruntime = v;
}

static void sched_slice_event(void *target, uint64_t gen);

static void arm_slice(struct rq *rq, uint64_t now)
{
	if (!rq->curr || rq->queue->len == 0 || rq->slice_armed)
		return;
	struct kernel *k = rq->sched->k;
	uint64_t end = rq->exec_start + sched_slice_cycles(k, rq->queue->len + 1);
	rq->slice_armed = true;
	rq->slice_gen++;
	engine_schedule(k->engine, end > now ? end : now, cpu_lane(rq->cpu), sched_slice_event, rq,
			rq->slice_gen);
}

/* Take the CPU from user work right now; kernel work is left to finish its step. */
static void try_preempt(struct rq *rq, uint64_t now)
{
	rq->need_resched = true;
	if (rq->in_irq)
		machine_cpu_taint(rq->sched->k->machine, rq->cpu);
	if (rq->in_irq || !rq->curr || !rq->resume_pending || rq->resume_work == WORK_KERNEL ||
	    rq->resume_action != ACTION_RUN)
		return;
	rq->curr->remaining = rq->resume_at - now;
	rq->curr->has_remaining = true;
	/* A quiet promise holds only until the next flag store, which revokes
	 * pending resumes, not those of tasks off the CPU: it does not survive. */
	rq->curr->remaining_work = rq->resume_work == WORK_USER_QUIET ? WORK_USER : rq->resume_work;
	sched_switch(rq, now, true);
}

static void sched_slice_event(void *target, uint64_t gen)
{
	struct rq *rq = target;
	if (gen != rq->slice_gen)
		return;
	rq->slice_armed = false;
	if (!rq->curr || rq->queue->len == 0)
		return;
	try_preempt(rq, engine_now(rq->sched->k->engine));
}

static struct task *pick_next(struct rq *rq)
{
	if (rq->queue->len == 0)
		return NULL;
	unsigned best = 0;
	for (unsigned i = 1; i < rq->queue->len; i++) {
		const struct task *a = g_ptr_array_index(rq->queue, i);
		const struct task *b = g_ptr_array_index(rq->queue, best);
		if (a->vruntime < b->vruntime || (a->vruntime == b->vruntime && a->id < b->id))
			best = i;
	}
	/* Order of the remaining tasks does not matter: picking scans them all. */
	rq->sched->nr_queued--;
	return g_ptr_array_remove_index_fast(rq->queue, best);
}

/*
 * context_switch(): account the outgoing task, pick the next one, charge the
 * switch, and schedule the next task's first resume.  @prev_runnable puts the
 * current task back in the queue (preemption, yield).
 */
static void sched_switch(struct rq *rq, uint64_t t, bool prev_runnable)
{
	struct kernel *k = rq->sched->k;
	struct cpu *cpu = rq->cpu;
	struct task *prev = rq->curr;

	rq_cancel_resume(rq);
	rq->slice_gen++;
	rq->slice_armed = false;
	rq->need_resched = false;
	if (prev) {
		prev->vruntime += t - rq->exec_start;
		prev->last_ran = t;
		prev->has_run = true;
		if (prev_runnable) {
			prev->state = TASK_RUNNABLE;
			rq_queue_add(rq, prev);
		}
	}
	struct task *next = pick_next(rq);
	if (!next && newidle_balance(rq, t))
		next = pick_next(rq);
	if (!next && !prev)
		return; /* idle stays idle */
	/* __schedule() work of the policy's flush transport (LATR's sweep). */
	if (k->policy->transport->schedule)
		t += k->policy->transport->schedule(k, cpu, t);
	rq->curr = next;
	rq->exec_start = t;
	if (!next)
		sched_balance_idle(rq, t);
	else if (!prev)
		sched_balance_busy(rq, t);
	update_min_vruntime(rq, t);
	if (next == prev && next) {
		/* Nobody better: keep running without a switch. */
		next->state = TASK_RUNNING;
		arm_slice(rq, t);
		uint64_t rest = next->has_remaining ? next->remaining : 0;
		enum sched_work work = next->has_remaining ? next->remaining_work : WORK_KERNEL;
		next->has_remaining = false;
		rq_resume(rq, t + rest, work, ACTION_RUN);
		return;
	}
	cpu->counters.context_switches++;
	trace_switch(k, cpu->id, next ? (int)next->id : -1, t);
	uint64_t cost = k->machine->topology->costs.context_switch +
			context_switch_mm(k, cpu, next ? next->mm : NULL, t);
	if (next && next->mm) /* the task returns to user (or to its syscall, which will) */
		cost += pti_return_to_user(k, cpu, true);
	trace_switch_done(k, cpu->id, t + cost);
	if (!next)
		return;
	next->state = TASK_RUNNING;
	next->cpu = cpu->id;
	arm_slice(rq, t);
	uint64_t rest = next->has_remaining ? next->remaining : 0;
	enum sched_work work = next->has_remaining ? next->remaining_work : WORK_KERNEL;
	next->has_remaining = false;
	rq_resume(rq, t + cost + rest, work, ACTION_RUN);
}

static void sched_do_block(struct rq *rq, uint64_t now)
{
	struct task *task = rq->curr;
	if (task->wake_pending) {
		/* Woken before it got to sleep: keep running, as try_to_wake_up
		 * setting TASK_RUNNING before schedule() would. */
		task->wake_pending = false;
		rq_resume(rq, now, WORK_KERNEL, ACTION_RUN);
		return;
	}
	task->state = TASK_BLOCKED;
	sched_switch(rq, now, false);
}

static void sched_do_exit(struct rq *rq, uint64_t now)
{
	struct task *task = rq->curr;
	task->state = TASK_DEAD;
	rq->sched->nr_alive--;
	rq->sched->last_exit = now;
	rq->nr_assigned--;
	sched_switch(rq, now, false);
}

static void sched_do_yield(struct rq *rq, uint64_t now)
{
	if (rq->queue->len == 0) {
		rq_resume(rq, now, WORK_KERNEL, ACTION_RUN);
		return;
	}
	/* sched_yield_at() under CFS: let everyone queued run before us. */
	uint64_t max_v = 0;
	for (unsigned i = 0; i < rq->queue->len; i++) {
		const struct task *t = g_ptr_array_index(rq->queue, i);
		if (t->vruntime > max_v)
			max_v = t->vruntime;
	}
	struct task *curr = rq->curr;
	uint64_t v = curr_vruntime(rq, now);
	if (v <= max_v)
		curr->vruntime = max_v + 1 - (now - rq->exec_start);
	sched_switch(rq, now, true);
}

static void sched_resume_event(void *target, uint64_t gen)
{
	struct rq *rq = target;
	if (gen != rq->resume_gen || !rq->resume_pending)
		return;
	struct kernel *k = rq->sched->k;
	uint64_t now = engine_now(k->engine);
	rq->resume_pending = false;
	g_assert(rq->curr);
	switch (rq->resume_action) {
	case ACTION_BLOCK:
		sched_do_block(rq, now);
		return;
	case ACTION_EXIT:
		sched_do_exit(rq, now);
		return;
	case ACTION_YIELD:
		sched_do_yield(rq, now);
		return;
	case ACTION_RUN:
		break;
	}
	if (rq->need_resched && rq->queue->len > 0) {
		sched_switch(rq, now, true);
		return;
	}
	rq->need_resched = false;
	struct task *curr = rq->curr;
	if (curr->kresume.fn) {
		struct kcont resume = curr->kresume;
		curr->kresume = (struct kcont){0};
		trace_syscall_resume(k, rq->cpu->id, now);
		kcont_call(k, resume, now);
		return;
	}
	trace_run(k, rq->cpu->id, now);
	curr->ops->run(k, curr, rq->cpu, now);
}

static void sched_request(struct kernel *k, struct cpu *cpu, uint64_t time, enum sched_work work,
			  enum rq_action action)
{
	struct rq *rq = cpu_rq(k, cpu);
	g_assert(rq->curr);
	g_assert(time >= engine_now(k->engine));
	if (rq->in_irq) {
		/* Only the running task asks for quiet work, never from inside an
		 * interrupt, so a deferred resume never needs revoking. */
		g_assert(work != WORK_USER_QUIET);
		machine_cpu_taint(k->machine, cpu);
		rq->irq_deferred = true;
		rq->irq_deferred_at = time;
		rq->irq_deferred_work = work;
		rq->irq_deferred_action = action;
		return;
	}
	rq_resume(rq, time, work, action);
}

void sched_continue_at(struct kernel *k, struct cpu *cpu, uint64_t time, enum sched_work work)
{
	sched_request(k, cpu, time, work, ACTION_RUN);
}

void sched_block(struct kernel *k, struct cpu *cpu, uint64_t time)
{
	sched_request(k, cpu, time, WORK_KERNEL, ACTION_BLOCK);
}

void sched_yield_at(struct kernel *k, struct cpu *cpu, uint64_t time)
{
	sched_request(k, cpu, time, WORK_KERNEL, ACTION_YIELD);
}

void sched_exit(struct kernel *k, struct cpu *cpu, uint64_t time)
{
	sched_request(k, cpu, time, WORK_KERNEL, ACTION_EXIT);
}

bool sched_pending_resume(const struct kernel *k, const struct cpu *cpu, uint64_t *at,
			  bool *quiet)
{
	const struct rq *rq = cpu_rq(k, cpu);
	if (!rq->curr || !rq->resume_pending)
		return false;
	*at = rq->resume_at;
	*quiet = !rq->in_irq && rq->resume_action == ACTION_RUN &&
		 rq->resume_work == WORK_USER_QUIET && !(rq->need_resched && rq->queue->len > 0);
	return true;
}

void sched_move_resume(struct kernel *k, struct cpu *cpu, uint64_t at, enum sched_work work)
{
	struct rq *rq = cpu_rq(k, cpu);
	g_assert(rq->resume_pending && rq->resume_work == WORK_USER_QUIET && at >= rq->resume_at);
	rq_resume(rq, at, work, ACTION_RUN);
}

void sched_revoke_quiet(struct kernel *k)
{
	struct sched *s = k->sched;
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct rq *rq = &s->rqs[c];
		if (rq->resume_pending && rq->resume_work == WORK_USER_QUIET)
			rq_resume(rq, rq->resume_at, WORK_USER, rq->resume_action);
		/* A resume an interrupt holds back comes back as it was saved:
		 * it must not come back quiet either. */
		if (rq->irq_saved_work == WORK_USER_QUIET) {
			rq->irq_saved_work = WORK_USER;
			if (rq->in_irq)
				machine_cpu_taint(k->machine, rq->cpu);
		}
	}
}

static void rq_activated(struct rq *rq, uint64_t now)
{
	struct sched *s = rq->sched;
	if (rq->in_irq)
		machine_cpu_taint(s->k->machine, rq->cpu);
	if (!rq->curr) {
		if (rq->in_irq)
			rq->switch_pending = true;
		else
			sched_switch(rq, now, false);
		return;
	}
	const struct task *task = NULL;
	for (unsigned i = 0; i < rq->queue->len; i++) {
		const struct task *t = g_ptr_array_index(rq->queue, i);
		if (!task || t->vruntime < task->vruntime)
			task = t;
	}
	if (task && task->vruntime + s->wakeup_granularity < curr_vruntime(rq, now))
		try_preempt(rq, now);
	else
		arm_slice(rq, now);
}

/* ttwu_do_activate(): @task, woken, joins the queue of its CPU. */
static void ttwu_do_activate(struct sched *s, struct task *task, uint64_t now)
{
	struct rq *rq = &s->rqs[task->cpu];
	uint64_t credit = s->latency / 2;
	uint64_t floor = rq->min_vruntime > credit ? rq->min_vruntime - credit : 0;
	if (task->vruntime < floor)
		task->vruntime = floor;
	task->state = TASK_RUNNABLE;
	task->wake_pending = false;
	rq_queue_add(rq, task);
	if (!rq->curr) {
		rq_activated(rq, now);
		return;
	}
	if (task->vruntime + s->wakeup_granularity < curr_vruntime(rq, now))
		try_preempt(rq, now);
	else
		arm_slice(rq, now);
}

static void sched_wake_remote_event(void *target, uint64_t task_index)
{
	struct sched *s = target;
	struct task *task = g_ptr_array_index(s->tasks, task_index);
	g_assert(task->state == TASK_WAKING);
	s->rqs[task->cpu].wakes_incoming--;
	ttwu_do_activate(s, task, engine_now(s->k->engine));
}

static guint task_index(const struct sched *s, const struct task *task)
{
	guint index;
	gboolean found = g_ptr_array_find(s->tasks, task, &index);
	g_assert(found);
	return index;
}

static void sched_do_wake(struct sched *s, struct task *task, uint64_t now)
{
	if (task->state != TASK_BLOCKED) {
		if (task->state == TASK_RUNNING)
			task->wake_pending = true;
		return;
	}
	unsigned cpu = select_task_rq(s, task);
	if (cpu == task->cpu) {
		ttwu_do_activate(s, task, now);
		return;
	}
	/* Another CPU's run queue: the wakeup reaches it no sooner than any
	 * other effect of this event on another core (the lookahead). */
	struct rq *dst = &s->rqs[cpu];
	migrate_task_rq(s, task, dst);
	task->state = TASK_WAKING;
	dst->wakes_incoming++;
	engine_schedule(s->k->engine, kernel_global_time(s->k, now), cpu_lane(dst->cpu),
			sched_wake_remote_event, s, task_index(s, task));
}

static void sched_wake_event(void *target, uint64_t task_index)
{
	struct sched *s = target;
	struct task *task = g_ptr_array_index(s->tasks, task_index);
	sched_do_wake(s, task, engine_now(s->k->engine));
}

void sched_wake(struct kernel *k, struct task *task, uint64_t time)
{
	struct sched *s = k->sched;
	uint64_t now = engine_now(k->engine);
	g_assert(time >= now);
	if (time == now) {
		sched_do_wake(s, task, now);
		return;
	}
	engine_schedule(k->engine, time, fabric_cpu_lane(task->cpu), sched_wake_event, s,
			task_index(s, task));
}

void sched_wake_kernel(struct kernel *k, struct task *task, uint64_t time, struct kcont resume)
{
	g_assert(!task->kresume.fn && resume.fn);
	task->kresume = resume;
	sched_wake(k, task, time);
}

void sched_irq_enter(struct kernel *k, struct cpu *cpu, uint64_t time)
{
	struct rq *rq = cpu_rq(k, cpu);
	g_assert(!rq->in_irq);
	if (rq->resume_pending) {
		g_assert(rq->resume_at >= time);
		rq->irq_saved = true;
		rq->irq_saved_remaining = rq->resume_at - time;
		rq->irq_saved_work = rq->resume_work;
		rq->irq_saved_action = rq->resume_action;
		rq_cancel_resume(rq);
	}
	rq->in_irq = true;
}

bool sched_irq_from_user(const struct kernel *k, const struct cpu *cpu)
{
	const struct rq *rq = cpu_rq(k, cpu);
	return rq->in_irq && rq->irq_saved && rq->irq_saved_work != WORK_KERNEL;
}

bool sched_irq_quiet(const struct kernel *k, const struct cpu *cpu)
{
	const struct rq *rq = cpu_rq(k, cpu);
	return rq->in_irq && rq->curr && rq->irq_saved && rq->irq_saved_work == WORK_USER_QUIET &&
	       rq->irq_saved_action == ACTION_RUN && !rq->irq_deferred && !rq->switch_pending &&
	       !rq->need_resched;
}

void sched_irq_exit(struct kernel *k, struct cpu *cpu, uint64_t time)
{
	struct rq *rq = cpu_rq(k, cpu);
	g_assert(rq->in_irq);
	rq->in_irq = false;
	if (rq->irq_saved) {
		rq->irq_saved = false;
		rq_resume(rq, time + rq->irq_saved_remaining, rq->irq_saved_work,
			  rq->irq_saved_action);
	} else if (rq->irq_deferred) {
		rq->irq_deferred = false;
		uint64_t at = rq->irq_deferred_at > time ? rq->irq_deferred_at : time;
		rq_resume(rq, at, rq->irq_deferred_work, rq->irq_deferred_action);
	}
	if (rq->switch_pending) {
		rq->switch_pending = false;
		if (!rq->curr)
			sched_switch(rq, time, false);
		return;
	}
	if (rq->need_resched && rq->queue->len > 0)
		try_preempt(rq, time);
}

void sched_start(struct kernel *k)
{
	struct sched *s = k->sched;
	for (unsigned c = 0; c < s->nr_cpus; c++)
		sched_switch(&s->rqs[c], 0, false);
}
