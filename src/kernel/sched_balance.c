/*
 * Load balancing: where a waking task runs, and which waiting task an idle or
 * lightly loaded CPU pulls (kernel/sched/fair.c, in miniature).
 *
 * Models: scheduling domains from the topology (SMT: a core's threads, groups
 * of one CPU; LLC: a socket, groups of cores; top: the machine, groups of
 * sockets; a level with one group does not exist); select_idle_sibling() at
 * wakeup (the previous CPU if idle, else an idle core of its LLC, else an idle
 * CPU of it, else the previous CPU); newidle_balance() when a CPU is about to
 * idle (unless its avg_idle is under the migration cost); the periodic
 * rebalance_domains() of each CPU and level every balance_interval (times
 * busy_factor while the CPU is busy; doubled up to max_interval while
 * nothing moves); load_balance() as find_busiest_group() and
 * calculate_imbalance() decide it since 5.5, on task counts: a local group
 * with an idle CPU pulls from an overloaded group that runs two tasks more
 * (migrate_task); a busy one pulls only if the busiest group's load exceeds
 * the domain's average and its own by imbalance_pct, and a task's load,
 * shifted right by nr_balance_failed, fits the imbalance (migrate_load);
 * task_hot(): a task that ran within migration_cost stays unless the domain
 * failed more than cache_nice_tries times; a queue whose waiting tasks are
 * all pinned is passed over for the next busiest (LBF_ALL_PINNED).  A
 * migrated task's vruntime moves to the new queue's min_vruntime; its TLB
 * and caches are cold there, as they are (machine state is per CPU).
 * Simplifies: every task weighs the same and loads are task counts (no PELT
 * averages); no wake_affine() pull towards the waker, no active balancing (a
 * running task moves only once it waits in a queue), no NUMA imbalance
 * allowance, no limit on how many CPUs select_idle_cpu() scans; intervals in
 * cycles, not jiffies; periodic balancing runs only while some task waits
 * in a queue.  A task woken inside a kernel wait (kresume) wakes where it
 * slept: its continuation holds that CPU.
 * Invariant: a wakeup onto another CPU lands there at least the lookahead
 * later (machine.h), so no core that ran ahead sees it early.
 */
#include <string.h>
#include "sched_impl.h"

/* ---- run-queue membership -------------------------------------------------- */

unsigned rq_nr_running(const struct rq *rq)
{
	return (rq->curr ? 1 : 0) + rq->queue->len;
}

void rq_queue_add(struct rq *rq, struct task *task)
{
	struct sched *s = rq->sched;
	g_ptr_array_add(rq->queue, task);
	if (s->nr_queued++ == 0)
		sched_balance_kick(s, engine_now(s->k->engine));
}

void rq_queue_remove(struct rq *rq, struct task *task)
{
	gboolean found = g_ptr_array_remove_fast(rq->queue, task);
	g_assert(found);
	rq->sched->nr_queued--;
}

enum balance_idle { BALANCE_NEWLY_IDLE, BALANCE_IDLE, BALANCE_NOT_IDLE };

/* A level's group of @cpu: itself, its core, its socket. */
static unsigned level_group(const struct cpu *cpu, enum sched_level level)
{
	switch (level) {
	case SCHED_LEVEL_SMT:
		return cpu->thread;
	case SCHED_LEVEL_LLC:
		return cpu->core;
	case SCHED_LEVEL_TOP:
	case NR_SCHED_LEVELS:
		break;
	}
	return cpu->socket;
}

/* Whether @b is in @a's domain at @level. */
static bool level_spans(const struct cpu *a, const struct cpu *b, enum sched_level level)
{
	switch (level) {
	case SCHED_LEVEL_SMT:
		return a->core_id == b->core_id;
	case SCHED_LEVEL_LLC:
		return a->socket == b->socket;
	case SCHED_LEVEL_TOP:
	case NR_SCHED_LEVELS:
		break;
	}
	return true;
}

void sched_balance_init(struct sched *s)
{
	const struct kernel *k = s->k;
	const struct topology *topo = k->machine->topology;
	const struct sched_params *p = &k->policy->sched;
	const unsigned groups[NR_SCHED_LEVELS] = {topo->threads_per_core, topo->cores_per_socket,
						  topo->sockets};
	unsigned weight = 1;
	s->balance = p->load_balance;
	s->migration_cost = topology_ns_to_cycles(topo, p->migration_cost_ns);
	/* HZ * num_online_cpus() / 10 jiffies: a tenth of a second per CPU. */
	s->max_load_balance_interval =
	    topology_ns_to_cycles(topo, UINT64_C(100000000) * s->nr_cpus);
	for (unsigned l = 0; l < NR_SCHED_LEVELS; l++) {
		weight *= groups[l];
		s->level_present[l] = groups[l] > 1;
		uint64_t min_ms = p->min_interval_ms ? p->min_interval_ms : weight;
		uint64_t max_ms = p->max_interval_ms ? p->max_interval_ms : 2 * min_ms;
		s->min_interval[l] = topology_ns_to_cycles(topo, min_ms * 1000000);
		s->max_interval[l] = topology_ns_to_cycles(topo, max_ms * 1000000);
	}
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		struct rq *rq = &s->rqs[c];
		rq->avg_idle = 2 * s->migration_cost;
		for (unsigned l = 0; l < NR_SCHED_LEVELS; l++)
			rq->sd[l].balance_interval = s->min_interval[l];
	}
}

bool rq_idle(const struct rq *rq)
{
	return !rq->curr && rq->queue->len == 0 && rq->wakes_incoming == 0;
}

static bool core_idle(const struct sched *s, const struct cpu *cpu)
{
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++)
		if (!rq_idle(&s->rqs[cpu->core_cpus[i]]))
			return false;
	return true;
}

/*
 * select_idle_sibling() around the previous CPU: it if idle, else the first
 * wholly idle core of its LLC, else the first idle CPU of it, each scan
 * starting after the previous CPU and wrapping.
 */
static unsigned select_idle_sibling(const struct sched *s, unsigned prev)
{
	if (rq_idle(&s->rqs[prev]))
		return prev;
	const struct cpu *cpus = s->k->machine->cpus;
	int idle_cpu = -1;
	for (unsigned i = 1; i < s->nr_cpus; i++) {
		unsigned c = (prev + i) % s->nr_cpus;
		if (!level_spans(&cpus[prev], &cpus[c], SCHED_LEVEL_LLC) || !rq_idle(&s->rqs[c]))
			continue;
		if (core_idle(s, &cpus[c]))
			return c;
		if (idle_cpu < 0)
			idle_cpu = (int)c;
	}
	return idle_cpu >= 0 ? (unsigned)idle_cpu : prev;
}

unsigned select_task_rq(struct sched *s, const struct task *task)
{
	if (!s->balance || task->pinned_cpu >= 0 || task->kresume.fn)
		return task->cpu;
	return select_idle_sibling(s, task->cpu);
}

void migrate_task_rq(struct sched *s, struct task *task, struct rq *dst)
{
	struct rq *src = &s->rqs[task->cpu];
	/* vruntime is relative to the queue it waits in (migrate_task_rq_fair()):
	 * a sleeper behind its old queue's minimum stays as far behind. */
	int64_t lag = (int64_t)(task->vruntime - src->min_vruntime);
	task->vruntime =
	    lag < 0 && (uint64_t)-lag > dst->min_vruntime ? 0 : dst->min_vruntime + (uint64_t)lag;
	src->nr_assigned--;
	dst->nr_assigned++;
	task->cpu = dst->cpu->id;
	dst->cpu->counters.nr_migrations++;
}

/* ---- load_balance() -------------------------------------------------------- */

struct group_stats {
	unsigned nr_running;
	unsigned weight;
	unsigned idle_cpus;
};

enum group_type { GROUP_HAS_SPARE, GROUP_FULLY_BUSY, GROUP_OVERLOADED };

static enum group_type group_classify(const struct group_stats *g)
{
	if (g->nr_running > g->weight)
		return GROUP_OVERLOADED;
	return g->nr_running < g->weight ? GROUP_HAS_SPARE : GROUP_FULLY_BUSY;
}

/* Task loads per group, scaled by 1024 per CPU (avg_load). */
static uint64_t group_avg_load(const struct group_stats *g)
{
	return (uint64_t)g->nr_running * 1024 / g->weight;
}

struct lb_env {
	struct sched *s;
	struct rq *dst;
	enum sched_level level;
	enum balance_idle idle;
	uint64_t now;
	struct group_stats *groups;
	unsigned nr_groups;
	bool *excluded; /* CPUs whose waiting tasks are all pinned (LBF_ALL_PINNED) */
	unsigned local, busiest;
	uint64_t imbalance; /* load (migrate_load), or 0: one task (migrate_task) */
};

static void update_sd_lb_stats(struct lb_env *env)
{
	const struct cpu *cpus = env->s->k->machine->cpus;
	const struct cpu *self = env->dst->cpu;
	memset(env->groups, 0, env->nr_groups * sizeof(*env->groups));
	for (unsigned c = 0; c < env->s->nr_cpus; c++) {
		if (!level_spans(self, &cpus[c], env->level) || env->excluded[c])
			continue;
		struct group_stats *g = &env->groups[level_group(&cpus[c], env->level)];
		g->weight++;
		g->nr_running += rq_nr_running(&env->s->rqs[c]);
		g->idle_cpus += rq_idle(&env->s->rqs[c]);
	}
	env->local = level_group(self, env->level);
}

/*
 * The busiest group other than the local one: by type, then average load.
 * The domain's groups are a ring that starts at the local one, and the first
 * of equally busy groups after it wins (update_sd_pick_busiest() wants more).
 */
static bool find_busiest_group(struct lb_env *env)
{
	int best = -1;
	for (unsigned j = 1; j < env->nr_groups; j++) {
		unsigned i = (env->local + j) % env->nr_groups;
		const struct group_stats *g = &env->groups[i];
		if (g->weight == 0)
			continue;
		if (best >= 0) {
			const struct group_stats *b = &env->groups[best];
			if (group_classify(g) < group_classify(b) ||
			    (group_classify(g) == group_classify(b) &&
			     group_avg_load(g) <= group_avg_load(b)))
				continue;
		}
		best = (int)i;
	}
	/* Without active balancing only a waiting task can move. */
	if (best < 0 || group_classify(&env->groups[best]) != GROUP_OVERLOADED)
		return false;
	env->busiest = (unsigned)best;
	return true;
}

/* calculate_imbalance(), for an overloaded busiest group. */
static bool calculate_imbalance(struct lb_env *env)
{
	const struct group_stats *local = &env->groups[env->local];
	const struct group_stats *busiest = &env->groups[env->busiest];
	if (group_classify(local) == GROUP_HAS_SPARE) {
		env->imbalance = 0;
		return busiest->nr_running >= local->nr_running + 2;
	}
	unsigned total = 0, weight = 0;
	for (unsigned i = 0; i < env->nr_groups; i++) {
		total += env->groups[i].nr_running;
		weight += env->groups[i].weight;
	}
	uint64_t avg = (uint64_t)total * 1024 / weight;
	uint64_t local_load = group_avg_load(local), busiest_load = group_avg_load(busiest);
	uint64_t pct = env->s->k->policy->sched.imbalance_pct[env->level];
	if (local_load >= busiest_load || local_load >= avg ||
	    100 * busiest_load <= pct * local_load)
		return false;
	env->imbalance =
	    MIN((busiest_load - avg) * busiest->weight, (avg - local_load) * local->weight);
	return true;
}

/* find_busiest_queue(): the busiest group's CPU with the most tasks waiting. */
static struct rq *find_busiest_queue(const struct lb_env *env)
{
	const struct cpu *cpus = env->s->k->machine->cpus;
	struct rq *best = NULL;
	for (unsigned c = 0; c < env->s->nr_cpus; c++) {
		struct rq *rq = &env->s->rqs[c];
		if (!level_spans(env->dst->cpu, &cpus[c], env->level) || env->excluded[c] ||
		    level_group(&cpus[c], env->level) != env->busiest || rq->queue->len == 0)
			continue;
		if (!best || rq_nr_running(rq) > rq_nr_running(best))
			best = rq;
	}
	return best;
}

/* Whether @task may run on another CPU at all (its affinity, in the kernel). */
static bool task_movable(const struct task *task)
{
	/* A task woken inside a kernel wait holds its CPU: its continuation
	 * does (select_task_rq()). */
	return task->pinned_cpu < 0 && !task->kresume.fn;
}

static bool all_pinned(const struct rq *rq)
{
	for (unsigned i = 0; i < rq->queue->len; i++)
		if (task_movable(g_ptr_array_index(rq->queue, i)))
			return false;
	return true;
}

static bool task_hot(const struct lb_env *env, const struct task *task)
{
	return task->has_run && env->now - task->last_ran < env->s->migration_cost;
}

/* can_migrate_task() over @src's waiting tasks, least recently run first. */
static struct task *detach_one_task(const struct lb_env *env, struct rq *src)
{
	const struct sched_domain *sd = &env->dst->sd[env->level];
	uint64_t tries = env->s->k->policy->sched.cache_nice_tries[env->level];
	struct task *best = NULL;
	if (env->imbalance && (UINT64_C(1024) >> MIN(sd->nr_balance_failed, 63)) > env->imbalance)
		return NULL;
	for (unsigned i = 0; i < src->queue->len; i++) {
		struct task *t = g_ptr_array_index(src->queue, i);
		if (!task_movable(t) || (task_hot(env, t) && sd->nr_balance_failed <= tries))
			continue;
		if (!best || t->last_ran < best->last_ran ||
		    (t->last_ran == best->last_ran && t->id < best->id))
			best = t;
	}
	return best;
}

static bool load_balance(struct rq *dst, enum sched_level level, enum balance_idle idle,
			 uint64_t now)
{
	struct sched *s = dst->sched;
	const struct topology *topo = s->k->machine->topology;
	const unsigned nr_groups[NR_SCHED_LEVELS] = {topo->threads_per_core, topo->cores_per_socket,
						     topo->sockets};
	struct lb_env env = {.s = s,
			     .dst = dst,
			     .level = level,
			     .idle = idle,
			     .now = now,
			     .nr_groups = nr_groups[level]};
	env.groups = g_new(struct group_stats, env.nr_groups);
	env.excluded = g_new0(bool, s->nr_cpus);
	struct sched_domain *sd = &dst->sd[level];
	struct rq *src = NULL;
	struct task *task = NULL;
	for (;;) {
		update_sd_lb_stats(&env);
		if (!find_busiest_group(&env) || !calculate_imbalance(&env))
			break;
		src = find_busiest_queue(&env);
		task = src ? detach_one_task(&env, src) : NULL;
		if (task || !src || !all_pinned(src))
			break;
		/* LBF_ALL_PINNED: nothing there may move; look again without it. */
		env.excluded[src->cpu->id] = true;
		src = NULL;
	}
	g_free(env.groups);
	g_free(env.excluded);
	if (!task) {
		/* A queue whose tasks could move but did not (hot, or too heavy
		 * for the imbalance) is a failure that wears down the refusal. */
		if (src && idle != BALANCE_NEWLY_IDLE)
			sd->nr_balance_failed++;
		return false;
	}
	sd->nr_balance_failed = 0;
	rq_queue_remove(src, task);
	migrate_task_rq(s, task, dst);
	rq_queue_add(dst, task);
	return true;
}

bool newidle_balance(struct rq *rq, uint64_t now)
{
	struct sched *s = rq->sched;
	if (!s->balance || s->nr_queued == 0 || rq->avg_idle < s->migration_cost)
		return false;
	for (unsigned l = 0; l < NR_SCHED_LEVELS; l++)
		if (s->level_present[l] && load_balance(rq, l, BALANCE_NEWLY_IDLE, now))
			return true;
	return false;
}

/* ---- rebalance_domains() ------------------------------------------------- */

/* should_we_balance(): the first idle CPU of the local group, else its first. */
static bool should_we_balance(const struct rq *rq, enum sched_level level)
{
	const struct sched *s = rq->sched;
	const struct cpu *cpus = s->k->machine->cpus;
	int first = -1;
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		if (!level_spans(rq->cpu, &cpus[c], level) ||
		    level_group(&cpus[c], level) != level_group(rq->cpu, level))
			continue;
		if (rq_idle(&s->rqs[c]))
			return c == rq->cpu->id;
		if (first < 0)
			first = (int)c;
	}
	return first == (int)rq->cpu->id;
}

static uint64_t balance_interval(const struct rq *rq, enum sched_level level)
{
	const struct sched *s = rq->sched;
	uint64_t interval = rq->sd[level].balance_interval;
	if (!rq_idle(rq))
		interval *= s->k->policy->sched.busy_factor;
	return MIN(interval, s->max_load_balance_interval);
}

static void rebalance_event(void *target, uint64_t gen);

static void arm_rebalance(struct rq *rq, uint64_t now)
{
	struct sched *s = rq->sched;
	uint64_t next = UINT64_MAX;
	for (unsigned l = 0; l < NR_SCHED_LEVELS; l++)
		if (s->level_present[l])
			next = MIN(next, rq->sd[l].last_balance + balance_interval(rq, l));
	if (next == UINT64_MAX)
		return;
	rq->balance_armed = true;
	rq->balance_gen++;
	engine_schedule(s->k->engine, MAX(next, now), cpu_lane(rq->cpu), rebalance_event, rq,
			rq->balance_gen);
}

static void rebalance_domains(struct rq *rq, uint64_t now)
{
	struct sched *s = rq->sched;
	for (unsigned l = 0; l < NR_SCHED_LEVELS; l++) {
		struct sched_domain *sd = &rq->sd[l];
		if (!s->level_present[l] || now < sd->last_balance + balance_interval(rq, l))
			continue;
		enum balance_idle idle = rq_idle(rq) ? BALANCE_IDLE : BALANCE_NOT_IDLE;
		bool moved = should_we_balance(rq, l) && load_balance(rq, l, idle, now);
		sd->last_balance = now;
		if (moved) {
			sd->balance_interval = s->min_interval[l];
			s->activate(rq, now);
		} else if (sd->balance_interval < s->max_interval[l]) {
			sd->balance_interval = MIN(2 * sd->balance_interval, s->max_interval[l]);
		}
	}
}

static void rebalance_event(void *target, uint64_t gen)
{
	struct rq *rq = target;
	if (gen != rq->balance_gen)
		return;
	rq->balance_armed = false;
	uint64_t now = engine_now(rq->sched->k->engine);
	rebalance_domains(rq, now);
	if (rq->sched->nr_queued > 0)
		arm_rebalance(rq, now);
}

void sched_balance_kick(struct sched *s, uint64_t now)
{
	if (!s->balance)
		return;
	for (unsigned c = 0; c < s->nr_cpus; c++)
		if (!s->rqs[c].balance_armed)
			arm_rebalance(&s->rqs[c], now);
}

void sched_balance_idle(struct rq *rq, uint64_t now)
{
	rq->idle_stamp = now;
	/* An idle CPU balances at its idle interval, not its busy one. */
	if (rq->sched->balance && rq->sched->nr_queued > 0)
		arm_rebalance(rq, now);
}

void sched_balance_busy(struct rq *rq, uint64_t now)
{
	/* update_avg() of the idle time, capped at twice the migration cost. */
	uint64_t max = 2 * rq->sched->migration_cost;
	int64_t delta = (int64_t)(now - rq->idle_stamp) - (int64_t)rq->avg_idle;
	rq->avg_idle = (uint64_t)((int64_t)rq->avg_idle + delta / 8);
	if (rq->avg_idle > max)
		rq->avg_idle = max;
}
