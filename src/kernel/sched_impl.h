#ifndef TLBSIM_SCHED_IMPL_H
#define TLBSIM_SCHED_IMPL_H
/*
 * What the scheduler's two units share: the run queues.  sched.c runs them
 * (CFS on each CPU) and calls down into sched_balance.c, which keeps count of
 * the waiting tasks and moves them between queues, and reaches back only
 * through sched->activate.  Nothing outside the two includes this.
 */
#include <glib.h>
#include "tlbsim/kernel/policy.h"
#include "tlbsim/kernel/sched.h"

enum rq_action { ACTION_RUN, ACTION_BLOCK, ACTION_YIELD, ACTION_EXIT };

/* One CPU's own instance of one domain level (struct sched_domain's state). */
struct sched_domain {
	uint64_t balance_interval; /* cycles, before the busy factor */
	uint64_t last_balance;
	unsigned nr_balance_failed;
};

struct rq {
	_Alignas(HOST_LINE) struct sched *sched; /* CPUs of other cores run on other host threads */
	struct cpu *cpu;
	struct task *curr; /* NULL: idle */
	GPtrArray *queue;  /* runnable, not running */
	unsigned nr_assigned;
	uint64_t min_vruntime;
	uint64_t exec_start;

	uint64_t resume_gen;
	bool resume_pending;
	uint64_t resume_at;
	enum sched_work resume_work;
	enum rq_action resume_action;

	uint64_t slice_gen;
	bool slice_armed;
	bool need_resched;

	bool in_irq;
	bool irq_saved; /* work was pending at irq entry */
	uint64_t irq_saved_remaining;
	enum sched_work irq_saved_work;
	enum rq_action irq_saved_action;
	bool irq_deferred; /* a continuation was requested during the irq */
	uint64_t irq_deferred_at;
	enum sched_work irq_deferred_work;
	enum rq_action irq_deferred_action;
	bool switch_pending; /* idle CPU got a wakeup during an irq */

	/* Load balancing (sched_balance.c). */
	struct sched_domain sd[NR_SCHED_LEVELS];
	unsigned wakes_incoming; /* tasks woken onto it, not yet enqueued */
	uint64_t avg_idle;
	uint64_t idle_stamp;
	uint64_t balance_gen;
	bool balance_armed;
};

struct sched {
	struct kernel *k;
	unsigned nr_cpus;
	struct rq *rqs;
	GPtrArray *tasks; /* borrowed, by id order of addition */
	unsigned nr_alive;
	uint64_t last_exit; /* when the last task so far exited */
	uint64_t latency;
	uint64_t min_granularity;
	uint64_t wakeup_granularity;

	/* Load balancing (sched_balance.c). */
	bool balance;
	bool level_present[NR_SCHED_LEVELS];
	uint64_t min_interval[NR_SCHED_LEVELS]; /* cycles */
	uint64_t max_interval[NR_SCHED_LEVELS];
	uint64_t max_load_balance_interval;
	uint64_t migration_cost;
	unsigned nr_queued; /* tasks waiting in some queue */
	/* sched.c's: a task just put on @rq's queue from elsewhere runs if the
	 * CPU idles, or may preempt the current one (check_preempt_curr()). */
	void (*activate)(struct rq *rq, uint64_t now);
};

/* sched_balance.c: queue membership (it counts the tasks waiting) ... */
unsigned rq_nr_running(const struct rq *rq);
void rq_queue_add(struct rq *rq, struct task *task);
void rq_queue_remove(struct rq *rq, struct task *task);
/* ... and balancing. */
void sched_balance_init(struct sched *s);
/* select_task_rq_fair() for a wakeup: the CPU @task should wake on. */
unsigned select_task_rq(struct sched *s, const struct task *task);
/* Move a runnable task's accounting from its queue's CPU to @dst's. */
void migrate_task_rq(struct sched *s, struct task *task, struct rq *dst);
/* newidle_balance(): @rq is about to idle; pull a task into its queue. */
bool newidle_balance(struct rq *rq, uint64_t now);
/* The CPU went idle or came back (avg_idle), or a task began to wait. */
void sched_balance_idle(struct rq *rq, uint64_t now);
void sched_balance_busy(struct rq *rq, uint64_t now);
void sched_balance_kick(struct sched *s, uint64_t now);
bool rq_idle(const struct rq *rq);

#endif
