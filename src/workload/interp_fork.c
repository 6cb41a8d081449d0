/*
 * The fork op: the calling task forks a child process that exits at once,
 * and waits for it (fork + exit + waitpid), "count" times.
 *
 * The scheduler takes its tasks before the run starts (sched_add_task()), so
 * each task whose program forks gets one child task then, a kernel thread
 * (no mm) that blocks as soon as it first runs.  A fork gives it its own mm
 * again (fork_mm_new(), filled by dup_mmap()) and wakes it: it is placed as
 * any wakeup is (select_task_rq(): its previous CPU if idle, else an idle
 * one), which on a machine with idle CPUs is where 6.1's fork balancing
 * (find_idlest_cpu()) puts a new task too: not the busy parent's CPU.  The
 * switch to it is a switch to a new mm.  The child's return to user space
 * writes its rseq area (a copy-on-write fault, fork_cow_fault()); then it
 * exits (exit_mm()), wakes its parent (do_notify_parent()) and blocks until
 * the next fork.  The parent, once fork() returns, writes its stack while
 * the child still lives (another copy-on-write fault), then waits.
 * Simplifies: the wait4() syscall and the child's copy_process() outside the
 * mm cost nothing; the child task is reused fork after fork (one pid); it
 * exits for good when its parent does, and is counted in context switches
 * but not in the threads column; a fork op whose count is 0 does nothing.
 * Invariant: a child is woken only by its parent's fork or exit, and its
 * parent goes on only once the child has exited.
 */
#include "interp_impl.h"
#include "tlbsim/kernel/fork.h"

/* Where the notional stack and rseq pages are: the top of x86-64's user
 * address space, above any region the layout places. */
#define FORK_STACK_ADDR (UINT64_C(0x7ffffffde000))
#define FORK_RSEQ_ADDR (UINT64_C(0x7ffff7d80000))

enum child_state { CHILD_IDLE, CHILD_FORKED, CHILD_RETURNED, CHILD_EXITED, CHILD_DYING };

struct fork_child {
	struct task task;
	struct itask *parent;
	struct mm *mm; /* its address space, filled at each fork */
	enum child_state state;
};

static bool ops_fork(const struct op *ops, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++)
		if (ops[i].kind == OP_FORK ||
		    (ops[i].kind == OP_LOOP && ops_fork(ops[i].body, ops[i].nr_body)))
			return true;
	return false;
}

static void child_continue(struct kernel *k, void *ctx, uint64_t time)
{
	struct fork_child *c = ctx;
	sched_continue_at(k, &k->machine->cpus[c->task.cpu], time, WORK_KERNEL);
}

/* The child's steps, each run when the scheduler gives it its CPU. */
static void child_run(struct kernel *k, struct task *task, struct cpu *cpu, uint64_t now)
{
	struct fork_child *c = (struct fork_child *)task;
	struct kcont next = {.fn = child_continue, .ctx = c};
	switch (c->state) {
	case CHILD_IDLE:
		sched_block(k, cpu, now);
		return;
	case CHILD_FORKED:
		c->state = CHILD_RETURNED;
		fork_cow_fault(k, cpu, c->mm, FORK_RSEQ_ADDR, now, next);
		return;
	case CHILD_RETURNED:
		/* do_exit(): exit_mm() sets current->mm = NULL before mmput(). */
		c->state = CHILD_EXITED;
		c->task.mm = NULL;
		exit_mm(k, cpu, c->mm, now, next);
		return;
	case CHILD_EXITED:
		c->state = CHILD_IDLE;
		c->parent->child_exited = true;
		sched_wake(k, &c->parent->task, now);
		sched_block(k, cpu, now);
		return;
	case CHILD_DYING:
		sched_exit(k, cpu, now);
		return;
	}
	g_assert_not_reached();
}

static const struct task_ops child_task_ops = {.run = child_run};

unsigned interp_fork_children_count(const struct interp *ip)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ip->nr_tasks; i++)
		n += ops_fork(ip->w->groups[ip->tasks[i].group].ops,
			      ip->w->groups[ip->tasks[i].group].nr_ops);
	return n;
}

void interp_fork_children_new(struct interp *ip)
{
	if (!ip->nr_children)
		return;
	ip->children = g_new0(struct fork_child, ip->nr_children);
	for (unsigned i = 0, n = 0; i < ip->nr_tasks; i++) {
		struct itask *ts = &ip->tasks[i];
		const struct task_group *g = &ip->w->groups[ts->group];
		if (!ops_fork(g->ops, g->nr_ops))
			continue;
		struct fork_child *c = &ip->children[n];
		c->parent = ts;
		c->mm = fork_mm_new(ts->task.mm, ip->nr_mms + 1 + n);
		c->task.id = ip->nr_tasks + n;
		c->task.name = g->name;
		c->task.ops = &child_task_ops;
		c->task.data = ip;
		c->task.pinned_cpu = -1;
		ts->child = c;
		sched_add_task(ip->k, &c->task);
		n++;
	}
}

void interp_fork_children_free(struct interp *ip)
{
	for (unsigned i = 0; i < ip->nr_children; i++)
		mm_free(ip->children[i].mm);
	g_free(ip->children);
}

void interp_fork_labels(const struct interp *ip, char **labels)
{
	for (unsigned i = 0; i < ip->nr_children; i++)
		labels[i] = g_strdup_printf("%s %u child", ip->children[i].parent->task.name,
					    ip->children[i].parent->thread);
}

void interp_fork_parent_exit(struct kernel *k, struct itask *ts, uint64_t now)
{
	if (!ts->child)
		return;
	ts->child->state = CHILD_DYING;
	sched_wake(k, &ts->child->task, now);
}

/* fork() returned in the parent at @time: wake_up_new_task() has made the
 * child runnable; the parent's own steps go on. */
static void fork_returned(struct kernel *k, void *ctx, uint64_t time)
{
	struct itask *ts = ctx;
	struct fork_child *c = ts->child;
	c->state = CHILD_FORKED;
	c->task.mm = c->mm;
	sched_wake(k, &c->task, time);
	sched_continue_at(k, &k->machine->cpus[ts->task.cpu], time, WORK_KERNEL);
}

static void parent_continue(struct kernel *k, void *ctx, uint64_t time)
{
	struct itask *ts = ctx;
	sched_continue_at(k, &k->machine->cpus[ts->task.cpu], time, WORK_KERNEL);
}

static void fork_start(struct kernel *k, struct itask *ts, struct cpu *cpu, uint64_t local)
{
	ts->syscall_start = local;
	ts->syscall_kind = OP_FORK;
	ts->syscall_counted = ts->interp->w->report_phase < 0 || ts->in_report_phase;
	ts->child_exited = false;
	ts->fork_step = FORK_IN_SYSCALL;
	struct kcont done = {.fn = fork_returned, .ctx = ts};
	dup_mmap(k, cpu, ts->task.mm, ts->child->mm, local, done);
}

enum step interp_fork_op(struct kernel *k, struct itask *ts, struct cpu *cpu, const struct op *op,
			 uint64_t *local, uint64_t now)
{
	struct interp *ip = ts->interp;
	struct kcont next = {.fn = parent_continue, .ctx = ts};
	switch (ts->fork_step) {
	case FORK_IDLE:
		if (!interp_in_step(k, cpu, *local, now))
			return STEP_RETURNED;
		if (!interp_eval(ts, op, op->count, 0, INT64_MAX, "count", &ts->forks_left))
			return STEP_FAILED;
		if (ts->forks_left == 0)
			return STEP_NEXT;
		fork_start(k, ts, cpu, *local);
		return STEP_RETURNED;
	case FORK_IN_SYSCALL:
		ts->fork_step = FORK_WAITING;
		/* Back in user space, the first store goes to the stack: copied
		 * while the child lives, reused once it is gone. */
		if (!ts->child_exited) {
			fork_cow_fault(k, cpu, ts->task.mm, FORK_STACK_ADDR, *local, next);
			return STEP_RETURNED;
		}
		/* waitpid() */
		/* fall through */
	case FORK_WAITING:
		if (!ts->child_exited) {
			sched_block(k, cpu, *local);
			return STEP_RETURNED;
		}
		if (ts->syscall_counted && ip->w->report_op == OP_FORK)
			histogram_add(ip->results.op_cycles, *local - ts->syscall_start);
		ts->fork_step = FORK_IDLE;
		if (--ts->forks_left > 0) {
			fork_start(k, ts, cpu, *local);
			return STEP_RETURNED;
		}
		return STEP_NEXT;
	}
	g_assert_not_reached();
}
